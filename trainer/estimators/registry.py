"""turngym's advantage estimators, registered in verl's own registry by one explicit call.

Each estimator lives in its own module of this package as a plain function with verl's estimator
signature. Nothing registers on import: `register_estimators()` puts every one of them in verl's
registry (`verl.trainer.ppo.core_algos.register_adv_est`), and turngym's trainer calls it when it is
built (trainer/task_runner.py), as does the config check (trainer/checks/registry_checks.py). A new
estimator is a module here plus one line in `ESTIMATORS`. An estimator of your own can also register
itself with verl's hook from a module listed in ``turngym.import_modules`` (examples/custom_algorithm.py).

After the call, ``get_adv_estimator_fn("turn_grpo")`` (verl) is `compute_turn_grpo_advantage`.
"""

from __future__ import annotations

from collections.abc import Callable

from trainer.estimators.grpo_valid import VALID_GRPO, compute_valid_grpo_advantage
from trainer.estimators.positive_grpo import POSITIVE_GRPO, compute_positive_grpo_advantage
from trainer.estimators.turn_gigpo import TURN_GIGPO, compute_turn_gigpo_advantage
from trainer.estimators.turn_grpo import TURN_GRPO, compute_turn_grpo_advantage

# name in ``algorithm.adv_estimator`` -> the function verl calls
ESTIMATORS: dict[str, Callable] = {
    TURN_GRPO: compute_turn_grpo_advantage,
    TURN_GIGPO: compute_turn_gigpo_advantage,
    POSITIVE_GRPO: compute_positive_grpo_advantage,
    VALID_GRPO: compute_valid_grpo_advantage,
}


def register_estimators() -> None:
    """Register every estimator of `ESTIMATORS` in verl's registry; calling it again changes nothing."""
    from verl.trainer.ppo.core_algos import register_adv_est

    for name, estimator in ESTIMATORS.items():
        register_adv_est(name)(estimator)
