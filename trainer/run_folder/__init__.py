"""A run folder: its files, its lock, its checkpoints."""
