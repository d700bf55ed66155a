"""Evaluate a trained model: export the run's latest checkpoint to a Hugging Face directory, then play episodes.

    python examples/evaluate.py outputs/text-game [guess-number-v0] [n=64] [env.difficulty=easy]

Step 1 is `turngym.engines.checkpoint_export.resolve_model`: verl's own model merger turns the FSDP shards
of the latest checkpoint into a Hugging Face directory (cached in <run>/export/global_step_N). Step 2
is turngym's eval CLI (`python -m rollout.eval`), which prints mean reward, success rate, turns and
format errors, with the run's envs and token budgets unless the command line sets them. The CLI does
both steps by itself: `python -m rollout.eval model=outputs/text-game`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rollout import eval as rollout_eval
from turngym.engines.checkpoint_export import resolve_model


def main(argv: list[str]) -> int:
    """Export the run's latest checkpoint, then evaluate it (on one env id, or the run's envs)."""
    if not argv:
        print(__doc__)
        return 2
    run, rest = Path(argv[0]), argv[1:]
    if rest and "=" not in rest[0]:
        rest = [f"env={rest[0]}", *rest[1:]]
    model = resolve_model(run)
    print(f"exported {run} -> {model}")
    # The run folder (not the export) keeps the run's envs and budgets as defaults.
    return rollout_eval.cli([f"model={run}", "engine=hf", "n=32", *rest])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
