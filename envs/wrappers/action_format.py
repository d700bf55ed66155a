"""ActionFormat: penalise replies the env could not read, and optionally end the episode after too many."""

from __future__ import annotations

from envs.wrappers.text_wrapper import TextWrapper


class ActionFormat(TextWrapper):
    """Subtract `penalty` for each unreadable reply; `message` (with `{error}`) replaces what the agent is told.

    With `max_consecutive`, that many unreadable replies in a row truncate the episode.
    """

    def __init__(
        self, env, *, penalty: float = 0.1, message: str | None = None, max_consecutive: int | None = None
    ):
        if penalty < 0:
            raise ValueError(f"penalty must be >= 0 (it is subtracted), got {penalty}")
        super().__init__(env)
        self.penalty = penalty
        self.message = message
        self.max_consecutive = max_consecutive
        self._consecutive = 0

    def step(self, action):
        """TextWrapper's step, with a shortcut for the usual readable reply mid-episode (nothing to adjust)."""
        if self._ended is None:
            result = self.env.step(action)
            # A refusal after the end carries a format_error, so it never takes the shortcut.
            if result[4].get("format_error") is None and not (result[2] or result[3]):
                self._consecutive = 0
                return result
            return self._after_step(result)
        return self._refusal()

    def reset(self, *, seed=None, options=None):
        """TextWrapper's reset with `on_reset` inlined: it runs once per episode of every env."""
        opening = self.env.reset(seed=seed, options=options)
        self._ended = None
        self._consecutive = 0
        return opening

    def on_reset(self, messages, info):
        """Forget earlier episodes' errors."""
        self._consecutive = 0
        return messages, info

    def on_step(self, messages, reward, terminated, truncated, info):
        """Apply the penalty and the custom message to unreadable replies."""
        error = info.get("format_error")
        if error is None:
            self._consecutive = 0
            return messages, reward, terminated, truncated, info
        self._consecutive += 1
        reward -= self.penalty
        info["format_penalty"] = self.penalty
        if self.message is not None:
            messages = [{"role": "user", "content": self.message.format(error=error)}]
        if self.max_consecutive is not None and self._consecutive >= self.max_consecutive and not terminated:
            truncated = True
            info["truncated_reason"] = "format_errors"
        return messages, reward, terminated, truncated, info
