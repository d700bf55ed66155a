"""A custom env in ~30 lines, then trained with turngym's trainer.

    python examples/custom_env.py                          # CPU: embedded tiny model, a few steps
    python examples/custom_env.py trainer.total_training_steps=20 model=/path/to/hf-model

`turngym.import_modules` makes every training process (Ray workers included) import this module,
so the `register` call below runs wherever the agent loop calls `envs.make("countdown-v0")`.
"""

from __future__ import annotations

import sys

from envs import StepResult, TextEnv, register


class CountdownEnv(TextEnv):
    """Say the number that comes before N; three tries."""

    action_help = "Reply with one whole number."

    def _reset(self, options):
        self.n = int(self.np_random.integers(2, 50))
        return [
            {"role": "user", "content": f"Which number comes right before {self.n}? Reply with the number."}
        ], {}

    def _respond(self, turn):
        ok = turn.content.strip() == str(self.n - 1)
        feedback = "Correct." if ok else f"No, try again. Which number comes right before {self.n}?"
        return StepResult(
            [{"role": "user", "content": feedback}], float(ok), terminated=ok, info={"success": ok}
        )

    def expert_action(self) -> str:
        return str(self.n - 1)


register(
    "countdown-v0",
    "examples.custom_env:CountdownEnv",
    category="demo",
    description="Predecessor of N.",
    max_turns=3,
)

if __name__ == "__main__":
    from trainer.run import main

    defaults = [
        "env.id=countdown-v0",
        "turngym.import_modules=[examples.custom_env]",
        "turngym.output_dir=outputs/countdown",
        "trainer.total_training_steps=5",
    ]
    sys.exit(main(defaults + sys.argv[1:]))
