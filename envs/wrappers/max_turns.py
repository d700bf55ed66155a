"""MaxTurns: truncate an episode after a fixed number of assistant turns."""

from __future__ import annotations

from envs.wrappers.text_wrapper import TextWrapper


class MaxTurns(TextWrapper):
    """Truncate after `max_turns` assistant turns (`info["truncated_reason"] = "max_turns"`)."""

    def __init__(self, env, max_turns: int):
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        super().__init__(env)
        self.max_turns = max_turns
        self._last_turn = max_turns  # the turn the limit truncates at (EpisodeLimits: inf for no limit)
        self._turns = 0

    def step(self, action):
        """TextWrapper's step, with a shortcut for a turn that neither ends the episode nor uses the budget up."""
        if self._ended is None:
            result = self.env.step(action)
            # A refusal after the end is terminated or truncated, so it never takes the shortcut.
            if self._turns + 1 < self._last_turn and not (result[2] or result[3]):
                self._turns += 1
                return result
            return self._after_step(result)
        return self._refusal()

    def reset(self, *, seed=None, options=None):
        """TextWrapper's reset with `on_reset` inlined: it runs once per episode of every env."""
        opening = self.env.reset(seed=seed, options=options)
        self._ended = None
        self._turns = 0
        return opening

    def on_reset(self, messages, info):
        """Start counting from zero."""
        self._turns = 0
        return messages, info

    def on_step(self, messages, reward, terminated, truncated, info):
        """Truncate when the budget of turns is used up."""
        self._turns += 1
        if self._turns >= self._last_turn and not terminated and not truncated:
            truncated = True
            info["truncated_reason"] = "max_turns"
        return messages, reward, terminated, truncated, info
