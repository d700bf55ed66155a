"""The adaptive mixture of envs and its hook into verl's trainer."""
