"""A custom tool, registered by YAML, offered to the agent during training.

    python examples/custom_tool.py                      # CPU, embedded tiny model, a few steps

`examples/configs/percent_tools.yaml` points at `percent_of` below; `env.kwargs.tools=<yaml>` adds it
to the env's own tools, so the rollout shows its schema to the model and the env runs its calls.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tools

TOOLS_YAML = Path(__file__).resolve().parent / "configs" / "percent_tools.yaml"


@tools.tool
def percent_of(percent: float, value: float) -> str:
    """Compute `percent` % of `value`.

    Args:
        percent: the percentage, e.g. 15 for 15 %.
        value: the number to take the percentage of.
    """
    return f"{percent * value / 100:g}"


if __name__ == "__main__":
    from trainer.run import main

    defaults = [
        "env.id=calculator-qa-v0",
        f"env.kwargs.tools={TOOLS_YAML}",
        # makes `examples` importable here and in every worker, wherever this is launched from
        "turngym.import_modules=[examples.custom_tool]",
        "turngym.output_dir=outputs/custom-tool",
        "trainer.total_training_steps=5",
    ]
    sys.exit(main(defaults + sys.argv[1:]))
