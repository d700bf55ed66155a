"""The Ray cluster a run joins, and where each of its processes ran."""
