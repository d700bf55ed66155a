"""Modules that repo-fix-v0 copies into each generated repository (the correct versions; bugs are injected
as text edits by `envs.repo_fix.catalogue`). They import each other relatively, so any package name works."""
