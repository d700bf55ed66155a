"""The torch warm start in a child process: ``python -m trainer.warm_start.sft_loop_process ARGS.json``.

A training process keeps what its allocator took: after the loop in the trainer's own process, that
process stayed ~6 GB larger for the whole RL run (SmolLM2-135M, batch 8: the fp32 logits over a 49k
vocabulary and their gradients), which is a quarter of a 24 GB machine beside Ray's workers. In a child
the memory is the operating system's again when the loop ends. Each step's loss is written as verl's
file logger writes it (``{"step", "data": {"train/loss"}}``), so the runner reads both engines alike.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    """Run :func:`trainer.warm_start.sft_loop.run_sft_loop` with the keyword arguments in the JSON file argv[0].

    The file holds ``base_model``, ``demos``, ``dest``, ``metrics`` (the JSONL file the losses go to) and
    the loop's keyword arguments.
    """
    from trainer.warm_start.sft_loop import run_sft_loop

    args = json.loads(Path(argv[0]).read_text())
    metrics = Path(args.pop("metrics"))

    with metrics.open("a") as out:

        def log_step(step: int, total: int, loss: float) -> None:
            out.write(json.dumps({"step": step, "data": {"train/loss": loss}}) + "\n")
            out.flush()

        run_sft_loop(
            args.pop("base_model"), Path(args.pop("demos")), Path(args.pop("dest")), on_step=log_step, **args
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
