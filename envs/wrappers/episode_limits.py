"""EpisodeLimits: `MaxTurns(ActionFormat(env, penalty), max_turns)` in one layer, the stack `envs.make` applies."""

from __future__ import annotations

from envs.wrappers.max_turns import MaxTurns

# The turn limit of "no limit": no turn count reaches it (a float compares with any int).
_NO_LIMIT = float("inf")


class EpisodeLimits(MaxTurns):
    """Charge `penalty` per unreadable reply and truncate after `max_turns` turns (None: no limit).

    Behaves as `MaxTurns(ActionFormat(env, penalty=penalty), max_turns)` (as `ActionFormat(env,
    penalty=penalty)` alone when `max_turns` is None): the same results, info keys in the same order, the
    same refusals after the end. One layer instead of two, because `make` builds this stack for every
    episode and every step went through both layers (see docs/envs.md, Wrappers).
    """

    def __init__(self, env, *, max_turns: int | None, penalty: float = 0.1):
        # ActionFormat's check, then MaxTurns': the order the two-layer stack was built in.
        if penalty < 0:
            raise ValueError(f"penalty must be >= 0 (it is subtracted), got {penalty}")
        # MaxTurns checks the limit, counts turns and resets the count; "no limit" passes it a valid 1
        # and then lifts the turn it truncates at.
        super().__init__(env, 1 if max_turns is None else max_turns)
        self.max_turns = max_turns
        self.penalty = penalty
        if max_turns is None:
            self._last_turn = _NO_LIMIT

    def step(self, action):
        """Step the wrapped env; readable replies (almost every step) are handled here, the rest by `on_step`."""
        if self._ended is not None:
            return self._refusal()
        result = self.env.step(action)
        # A refusal after the end carries a format_error, so it goes to `_after_step`, which passes it on.
        if result[4].get("format_error") is not None:
            return self._after_step(result)
        # `on_step` and `_record_end` for a readable reply, inlined: no penalty, one turn counted.
        messages, reward, terminated, truncated, info = result
        if not (terminated or truncated):
            turns = self._turns = self._turns + 1
            if turns < self._last_turn:
                return result
            truncated = True
            info["truncated_reason"] = "max_turns"
        elif info.get("episode_ended"):  # an env's refusal without a format_error (not a TextEnv's)
            return result
        else:
            self._turns += 1
        self._record_end(terminated, truncated)
        return messages, reward, terminated, truncated, info

    def on_step(self, messages, reward, terminated, truncated, info):
        """ActionFormat's penalty, then MaxTurns' count and truncation, in that order (their info keys too)."""
        if info.get("format_error") is not None:
            reward -= self.penalty
            info["format_penalty"] = self.penalty
        return super().on_step(messages, reward, terminated, truncated, info)
