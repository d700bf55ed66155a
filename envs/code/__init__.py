"""Code envs: write a program, test it in a sandbox, submit it against hidden tests."""
