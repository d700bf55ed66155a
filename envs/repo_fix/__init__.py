"""repo-fix-v0: fix a bug in a generated multi-file Python repository; hidden tests, graded outside the sandbox."""
