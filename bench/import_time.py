"""Cumulative `python -X importtime` of `import envs` and `import tools`, beside `import gymnasium` in the same run.

Run: python bench/import_time.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys


def cumulative_us(module: str) -> int:
    """Cumulative import time of `module` in a fresh interpreter, in microseconds."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    for line in reversed(err.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    raise RuntimeError(f"no importtime line for {module}")


def main() -> None:
    """Median of 7 fresh imports each; prints ms and the ratio to gymnasium."""
    runs = 7
    result = {}
    for module in ["gymnasium", "envs", "tools"]:
        result[module] = statistics.median(cumulative_us(module) for _ in range(runs)) / 1000
        print(f"import {module:<10} {result[module]:8.1f} ms (median of {runs})")
    for module in ["envs", "tools"]:
        print(f"{module}/gymnasium: {result[module] / result['gymnasium']:.2f} (goal <= 1.3 for envs)")


if __name__ == "__main__":
    main()
