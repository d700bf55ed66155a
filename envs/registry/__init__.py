"""Naming and making envs: `register`, `make`, `spec` and `list_envs` (`registration`), the built-in ids
(`builtin_envs`, `textarena_envs`) and the kwargs a remote client may choose (`client_kwargs`). The
contract checker `python -m envs check` sits above, in `envs.check`: it plays the baselines."""
