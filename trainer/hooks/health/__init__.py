"""Training health: per-step metrics, the guards on them, the halt, and the hook into verl's trainer."""
