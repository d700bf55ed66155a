"""EpisodeResult (rollout/episode_result.py): what an episode returns to verl, written and read back.

The agent loop writes it (`trajectory_to_output`), the trainer reads it; these tests hold both ends
to one shape, and read rows that a missing, None or older key leaves incomplete.
"""

from __future__ import annotations

import numpy as np
import pytest

from rollout.episode_result import EpisodeHealth, EpisodeResult, TurnSpan
from rollout.trajectory import Trajectory, TurnRecord


class _Tokenizer:
    """The two things trajectory_to_output asks a tokenizer: its pad id, and (for drift) decode/encode."""

    pad_token_id = 0

    def decode(self, ids, **_kw):
        return " ".join(str(i) for i in ids)

    def encode(self, text, **_kw):
        return [int(t) for t in text.split()]


def _trajectory(**kw) -> Trajectory:
    turns = [
        TurnRecord(start=0, end=2, reward=-0.1, stop_reason="completed"),
        TurnRecord(start=4, end=6, reward=1.0, stop_reason="completed", format_error="no move"),
    ]
    base = dict(
        prompt_ids=[1, 2],
        response_ids=[5, 6, 7, 8, 9, 10],
        loss_mask=[1, 1, 0, 0, 1, 1],
        logprobs=[0.0] * 6,
        messages=[
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "closing feedback"},
        ],
        turns=turns,
        env_id="guess-number-v0",
        seed=3,
        termination="terminated",
        success=True,
        metrics={"format_errors": 1, "turns_cut": 0, "overflow": False, "behaviour": {"followed": 1}},
        extra_fields={"min_global_steps": 4, "max_global_steps": 5},
    )
    return Trajectory(**{**base, **kw})


def _full() -> EpisodeResult:
    return EpisodeResult(
        env_id="maze-v0",
        turns=(TurnSpan(0, 3, 0.0), TurnSpan(5, 9, 1.5)),
        anchors=("a", "b"),
        failed=False,
        error=None,
        termination="max_turns",
        health=EpisodeHealth(tool_env=True, valid_tool_turns=1, drifted_turns=0, generated_tokens=7),
        behaviour={"followed": 2},
        success=True,
        assistant_turns=2,
        overflow=True,
        turns_cut=1,
        format_errors=1,
        behaviour_columns={"followed": 2.0, "after_feedback": 0.0},
        env_moves=1,
        replayed=True,
        failover="http://a -> http://b after 1 steps: died",
        other={"min_global_steps": 3},
    )


def test_a_result_round_trips_through_extra_fields():
    result = _full()
    fields = result.to_extra_fields()
    assert EpisodeResult.from_extra_fields(fields) == result
    # verl's own column names are what it reads: the per-turn rewards and the reward columns.
    assert fields["turn_scores"] == [0.0, 1.5] and fields["turn_reward_positions"] == [2, 8]
    assert fields["reward_extra_info"]["behaviour_followed"] == 2.0
    assert fields["min_global_steps"] == 3


def test_every_written_key_is_owned_or_passed_through():
    fields = _full().to_extra_fields()
    assert set(fields) == EpisodeResult.owned_keys() | {"min_global_steps"}


def test_the_agent_loop_writes_through_the_result():
    from rollout.agent_loop import trajectory_to_output

    traj = _trajectory()
    out = trajectory_to_output(traj, _Tokenizer(), None)
    result = EpisodeResult.from_extra_fields(out.extra_fields)
    assert result.turns == (TurnSpan(0, 2, -0.1), TurnSpan(4, 6, 1.0))
    assert [(t.start, t.end) for t in result.turns] == [(t.start, t.end) for t in traj.turns]
    assert result.env_id == "guess-number-v0" and result.termination == "terminated"
    assert result.success is True and result.format_errors == 1 and not result.failed
    assert result.behaviour == {"followed": 1} and result.behaviour_columns["followed"] == 1.0
    assert len(result.anchors) == 2 and result.health.generated_tokens == 4
    assert result.other == {"min_global_steps": 4, "max_global_steps": 5}
    assert (result.env_moves, result.replayed, result.failover) == (0, False, "")


def test_num_turns_is_verls_message_count_and_turns_the_assistants():
    from rollout.agent_loop import trajectory_to_output

    traj = _trajectory()
    out = trajectory_to_output(traj, _Tokenizer(), None)
    assert traj.assistant_turns == traj.num_turns == 2 and traj.chat_turns == 6
    assert out.num_turns == traj.chat_turns  # verl: every chat turn, as its tool agent loop counts
    assert EpisodeResult.from_extra_fields(out.extra_fields).assistant_turns == 2
    assert out.extra_fields["reward_extra_info"]["turns"] == 2.0


def test_a_failed_episode_is_a_flagged_placeholder():
    from rollout.agent_loop import trajectory_to_output

    traj = Trajectory(prompt_ids=[], env_id="no-such-env-v0", seed=1, failed=True, termination="failed")
    traj.error = "KeyError: no-such-env-v0 (at registration.py:10 in make)"
    out = trajectory_to_output(
        traj, _Tokenizer(), None, failover={"env_moves": 1, "replayed": False, "failover": "a -> nowhere"}
    )
    result = EpisodeResult.from_extra_fields(out.extra_fields)
    assert result.failed and result.error == traj.error and result.turns == ()
    assert result.termination == "failed" and result.success is False
    assert out.extra_fields["reward_extra_info"]["episode_failed"] == 1.0
    assert (result.env_moves, result.replayed) == (1, False) and out.num_turns == 0
    assert out.response_mask == [0] and out.reward_score == 0.0


@pytest.mark.parametrize("fields", [None, {}, "not a mapping", 7, {"reward_extra_info": None}])
def test_nothing_reads_as_the_defaults(fields):
    result = EpisodeResult.from_extra_fields(fields)
    assert result == EpisodeResult()
    assert not result.failed and result.turns == () and result.success is None
    assert result.assistant_turns is None and result.termination is None


def test_an_older_row_without_spans_rebuilds_them_from_the_mask():
    # Written before turn_spans existed: only each turn's last generated token.
    old = {"turn_scores": [0.5, 1.0], "turn_reward_positions": [1, 4], "turngym_termination": "terminated"}
    mask = [1, 1, 0, 1, 1, 0]
    with_mask = EpisodeResult.from_extra_fields(old, response_mask=mask)
    assert with_mask.turns == (TurnSpan(0, 2, 0.5), TurnSpan(3, 5, 1.0))
    # Without a mask only the rewarded token is known.
    assert EpisodeResult.from_extra_fields(old).turns == (TurnSpan(1, 2, 0.5), TurnSpan(4, 5, 1.0))
    # A position outside the response is dropped, not guessed.
    assert EpisodeResult.from_extra_fields(old, response_mask=[1, 1]).turns == (TurnSpan(0, 2, 0.5),)


def test_malformed_and_numpy_values_read_as_what_they_can_be():
    fields = {
        "turn_scores": np.array([1.0, 2.0]),
        "turn_spans": [np.array([0, 2]), ["x", 3]],  # the second is unreadable: dropped
        "turngym_failed": None,
        "turngym_error": 12,
        "turngym_termination": "",
        "turngym_health": "broken",
        "turngym_behaviour": ["not", "counts"],
        "turngym_env_moves": "two",
        "reward_extra_info": {"turns": "many", "format_errors": float("nan"), "behaviour_followed": None},
    }
    result = EpisodeResult.from_extra_fields(fields)
    assert result.turns == (TurnSpan(0, 2, 1.0),)
    assert not result.failed and result.error is None and result.termination is None
    assert result.health == EpisodeHealth() and result.behaviour is None
    assert result.env_moves == 0 and result.assistant_turns is None and result.format_errors == 0
    assert result.behaviour_columns == {}


def test_a_top_level_success_wins_over_the_column():
    # A reward function may report success at the top level (trainer/report/progress.py reads it first).
    fields = {"success": False, "reward_extra_info": {"success": 1.0}}
    assert EpisodeResult.from_extra_fields(fields).success is False
    assert EpisodeResult.from_extra_fields({"reward_extra_info": {"success": 1.0}}).success is True


def test_health_leaves_out_what_was_not_measured():
    assert EpisodeHealth(tool_env=True).to_dict() == {"tool_env": True, "valid_tool_turns": 0}
    old = EpisodeHealth.from_mapping({"tool_env": True, "valid_tool_turns": 2})
    assert old.drifted_turns is None and old.generated_tokens is None
