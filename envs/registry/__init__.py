"""Naming and making envs: `register`, `make`, `spec` and `list_envs` (`registration`), the built-in ids
(`builtin_envs`), the kwargs a remote client may choose (`client_kwargs`) and the contract checker
`check_env` (`env_check`)."""
