"""Token drift (rollout/token_drift.py) on the embedded model's real tokenizer, and the per-episode
health numbers the agent loop hands the trainer (rollout/agent_loop.py `episode_health`)."""

from __future__ import annotations

from rollout.agent_loop import episode_health, trajectory_to_output
from rollout.episode_result import EpisodeResult
from rollout.token_drift import drifted_turns, turn_drifts
from rollout.trajectory import Trajectory, TurnRecord


def _spelled_apart(tokenizer, text: str) -> list[int]:
    """`text` as one token per character: ids the tokenizer itself would merge."""
    return [i for ch in text for i in tokenizer.encode(ch, add_special_tokens=False)]


def test_ids_the_tokenizer_would_write_do_not_drift_spelled_apart_ones_do(tokenizer):
    word = "guess the number"
    own = tokenizer.encode(word, add_special_tokens=False)
    apart = _spelled_apart(tokenizer, word)
    assert apart != own  # the tokenizer merges characters: spelling them apart is another sequence
    assert not turn_drifts(tokenizer, own)
    assert turn_drifts(tokenizer, apart)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert not turn_drifts(tokenizer, [*own, end])  # a turn's closing special token is kept as is
    response = own + [end] + apart
    assert drifted_turns(tokenizer, response, [(0, len(own) + 1), (len(own) + 1, len(response))]) == 1


def test_episode_health_counts_valid_tool_turns_drift_and_generated_tokens(tokenizer):
    own = tokenizer.encode("50", add_special_tokens=False)
    apart = _spelled_apart(tokenizer, "guess the number")
    turns = [
        TurnRecord(start=0, end=len(own), tool_calls=1),  # a valid call
        TurnRecord(start=len(own), end=len(own) + len(apart), tool_calls=1, tool_errors=1),  # the tool failed
        TurnRecord(start=len(own) + len(apart), end=len(own) + len(apart), format_error="no call"),
    ]
    traj = Trajectory(
        prompt_ids=[1],
        response_ids=own + apart,
        loss_mask=[1] * (len(own) + len(apart)),
        logprobs=[0.0] * (len(own) + len(apart)),
        tools=[{"type": "function", "function": {"name": "guess"}}],
        turns=turns,
    )
    health = episode_health(traj, tokenizer)
    assert health == {
        "tool_env": True,
        "valid_tool_turns": 1,
        "drifted_turns": 1,
        "generated_tokens": len(own) + len(apart),
    }
    out = trajectory_to_output(traj, tokenizer, None)
    assert EpisodeResult.from_extra_fields(out.extra_fields).health.to_dict() == health
