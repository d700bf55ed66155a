"""The table of numeric keys (trainer/checks/number_checks.py) names keys that exist, and the defaults pass it."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from trainer.checks.number_checks import RANGES, Bound, check_numbers
from trainer.compose import compose_config


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_every_checked_key_exists_and_the_defaults_pass(algorithm):
    cfg = compose_config(["env=guess-number", f"algorithm={algorithm}", "trainer.device=cpu"])
    absent = [k for k in RANGES if OmegaConf.select(cfg, k, default="<absent>") == "<absent>"]
    assert absent == []
    check_numbers(cfg, cfg, set())


def test_bounds_say_what_they_accept():
    assert Bound(whole=True, low=1).describe() == "a whole number >= 1"
    assert Bound(whole=False, low=0, high=1, open_low=True).describe() == "a number in (0, 1]"
    assert Bound(whole=True, low=1, words=("auto",)).describe() == "a whole number >= 1 (or auto)"
