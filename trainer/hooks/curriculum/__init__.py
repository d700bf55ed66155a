"""The difficulty curriculum: its schedule, the rows at every level, the pass-rate variant, verl's hook."""
