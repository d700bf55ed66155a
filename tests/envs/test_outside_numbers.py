"""Numbers from outside (a served env's client, a dataset row) are finite and bounded at the boundary.

The attack: a client may only make `format_penalty` dearer, but any finite float passed, so 1e308 made
an episode's return -inf and its group's GRPO advantages NaN.
"""

from __future__ import annotations

import math

import pytest

import envs
from envs.registry.client_kwargs import MAX_FORMAT_PENALTY, MAX_TURNS, ClientKwargError, check_client_kwargs


def _return_with(penalty: float) -> float:
    # Three unreadable replies on maze: what the penalty does to the return when nothing stops it.
    env = envs.make("maze-v0", format_penalty=penalty, max_turns=3)
    env.reset(seed=0)
    total = 0.0
    for _ in range(3):
        _, reward, terminated, truncated, _ = env.step("banana")
        total += reward
        if terminated or truncated:
            break
    env.close()
    return total


def test_the_attack_value_is_refused_by_make_too():
    # 1e308 made the return -inf; envs.make bounds it as well now (envs/core/number_bounds.py, the
    # operator's bound of 100 over the client's 10), so it never reaches a return.
    with pytest.raises(ValueError, match="format_penalty"):
        _return_with(1e308)


@pytest.mark.parametrize(
    "value", [1e308, 1.7976931348623157e308, 1e20, MAX_FORMAT_PENALTY + 0.001, float("inf"), float("nan")]
)
def test_a_client_cannot_set_a_format_penalty_over_the_bound(value):
    with pytest.raises(ClientKwargError) as refused:
        check_client_kwargs(envs.spec("maze-v0"), {"format_penalty": value})
    message = str(refused.value)
    assert refused.value.key == "format_penalty" and "\n" not in message
    if math.isfinite(value):
        assert str(MAX_FORMAT_PENALTY) in message


@pytest.mark.parametrize("value", [10**30, MAX_TURNS + 1])
def test_a_client_cannot_ask_for_an_absurd_turn_count_even_where_the_env_has_no_limit(value):
    spec = envs.spec("maze-v0")
    with pytest.raises(ClientKwargError) as refused:
        check_client_kwargs(spec, {"max_turns": value}, operator={"max_turns": None})
    assert refused.value.key == "max_turns" and str(MAX_TURNS) in str(refused.value)


def test_values_inside_the_bounds_still_pass():
    spec = envs.spec("maze-v0")
    assert check_client_kwargs(spec, {"format_penalty": MAX_FORMAT_PENALTY, "max_turns": 3}) == {
        "format_penalty": MAX_FORMAT_PENALTY,
        "max_turns": 3,
    }
    assert math.isfinite(_return_with(MAX_FORMAT_PENALTY))


def test_an_operator_floor_over_the_bound_is_still_reachable():
    # The operator's own value is theirs: a client may send it even when it is over the client bound.
    spec = envs.spec("maze-v0")
    out = check_client_kwargs(spec, {"format_penalty": 25.0}, operator={"format_penalty": 25.0})
    assert out == {"format_penalty": 25.0}
