"""Checks before anything is written or Ray starts: config, command-line numbers, registry names, the run folder."""
