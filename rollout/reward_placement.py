"""Where an episode's rewards sit in its response tokens: each turn's reward on that turn's last
generated token (DESIGN.md, "Rewards"). The one placement used by the training path (the agent
loop's ``rm_scores`` for verl) and by ``to_dataproto``.
"""

from __future__ import annotations

from collections.abc import Sequence


def place_turn_rewards(length: int, positions: Sequence[int], rewards: Sequence[float]) -> list[float]:
    """A reward per response token: ``rewards[i]`` on token ``positions[i]``, 0 elsewhere.

    Outcome estimators (GRPO, RLOO) read the row sum, which is the episode return; turn-level ones
    read where each turn's reward sits.

    Args:
        length: response length in tokens.
        positions: index in the response of each turn's last generated token.
        rewards: each turn's reward, in the same order.

    Returns:
        ``length`` floats; empty when the response is (there is no token to carry a reward).

    Raises:
        ValueError: positions and rewards differ in count, or a position is outside the response.

    >>> place_turn_rewards(6, [1, 4], [0.5, 1.0])
    [0.0, 0.5, 0.0, 0.0, 1.0, 0.0]
    """
    if len(positions) != len(rewards):
        raise ValueError(f"{len(rewards)} turn rewards for {len(positions)} positions")
    scores = [0.0] * length
    if not length:
        return scores
    for position, reward in zip(positions, rewards, strict=True):
        if not 0 <= int(position) < length:
            raise ValueError(f"reward position {position} outside a response of {length} tokens")
        scores[int(position)] += float(reward)
    return scores
