"""What a run shows: the line per step, the metrics file, plots and the tables a run ends with."""
