"""Data files bundled with the games (a package so that wheels ship them)."""
