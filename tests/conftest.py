"""Shared pytest configuration."""

import os

# Ray, tokenizers and torch each start thread pools sized to the machine; tests share 2 cores.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
