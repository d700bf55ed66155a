"""`python -m envs check`: the battery every text env must pass (`env_check`), run in a child process
that bounds each call (`env_check_process`), with every env call watched (`env_call_watch`).

It sits on top of envs/: it makes envs by id (the registry) and plays the baseline players (`baselines`).
"""
