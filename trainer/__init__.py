"""turngym trainer: Hydra config, datasets from env seeds, launching verl (CPU plugin included)."""
