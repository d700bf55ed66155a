"""guess-number-v0: find a hidden integer with higher/lower feedback."""

from __future__ import annotations

import math
import random
import re
from functools import lru_cache
from typing import Any

from envs.core.errors import InvalidAction
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.games.text_game import TextGame, non_ascii_digits, one_move

# A number not inside a word or after a decimal point; a `-` right after a digit is a dash (`1-100`).
_NUMBER = re.compile(r"(?<![\w.])-?[0-9]+(?:\.[0-9]+)?")
# What may stand before the guess: markup, quotes, and a label such as "Guess:" or "My answer is".
# Anything else (a sentence) means the number was found in prose, and prose is not a guess: a policy
# that echoes the feedback ("Exactly 6 guesses left.") must not have its echo read as a move.
_TAG = re.compile(r"</?[A-Za-z_]+>")
_MARKUP = r"(?:[\s*_`#>\"'(\[]|</?[A-Za-z_]+>)*"
_LEAD = re.compile(_MARKUP + r"(?:(?:my\s+)?(?:guess|answer)(?:\s+is)?\s*[:=]?)?" + _MARKUP, re.I)
_SYSTEM_PROMPT = "You are playing a number guessing game. Answer with a number only."
_SYSTEM_PROMPT_TOOL = "You are playing a number guessing game. Make each guess by calling the guess tool."


@lru_cache(maxsize=64)
def _game_constants(low: int, high: int, max_guesses: int, tool: bool) -> tuple[str, int, int]:
    """(opening prompt, guesses binary search needs, digits of `high`) of one range, built once.

    The prompt names one way to answer: the `guess` tool when the game offers it, else the bare number
    (both are read either way, but a small model given two formats at once writes neither).
    """
    how = (
        "Call the guess tool with your number."
        if tool
        else f"Answer with the number only, for example: {(low + high) // 2}"
    )
    prompt = (
        f"I am thinking of a whole number between {low} and {high}. "
        f"You have {max_guesses} guesses. After each guess I tell you whether it is too low or too high. {how}"
    )
    return prompt, math.ceil(math.log2(high - low + 1)), len(str(high))


class GuessNumberEnv(TextGame[int]):
    """The agent guesses a hidden integer in [low, high]; each wrong guess is answered "higher" or "lower".

    Reward at the end: a win scores 1.0 when it takes no more guesses than binary search needs, then 0.1
    less per extra guess (at least 0.5); running out of guesses scores up to 0.25 for how close the best
    guess came. Text action: a whole number; a reply holding several different numbers is a format error
    (uses no guess). Tool: `guess(number)`.

    Difficulty knob (over the difficulty's range; a curriculum turns it, see `difficulty_ladder`): `high`,
    the range becomes 1..high with the difficulty's number of guesses.
    """

    difficulties = {
        "easy": {"low": 1, "high": 20, "max_guesses": 7},
        "medium": {"low": 1, "high": 100, "max_guesses": 9},
        "hard": {"low": 1, "high": 1000, "max_guesses": 12},
    }
    action_tool_name = "guess"
    reset_options = {"difficulty": ("easy", "medium", "hard")}
    action_tool_description = "Guess the hidden number."
    action_help = "Answer with the number only, for example: 10"
    #: How `info["behaviour"]`'s counts turn into rates (envs/baselines/behaviour.py): name -> (count, out of).
    behaviour_rates = {
        "follow_rate": ("followed", "after_feedback"),
        "in_range_rate": ("in_range", "guesses"),
        "repeat_rate": ("repeats", "guesses"),
        "with_text_rate": ("with_text", "guesses"),
    }

    client_kwargs = ("difficulty", "action_tool", "high")

    def __init__(
        self,
        *,
        high: int | None = None,
        reveal_range: bool = False,
        ruled_out_penalty: float = 0.0,
        progress_reward: float = 0.0,
        **kwargs: Any,
    ):
        # With reveal_range each answer also states the range the feedback has narrowed the number to,
        # so a good next guess depends on the last message alone, not on remembering every answer.
        self.reveal_range = bool(reveal_range)
        # A per-turn reward for using the feedback: a guess the answers so far have already ruled out
        # (outside known_low..known_high, a repeat included) costs this much on its own turn. It can
        # only take reward away, so no policy earns more from it than by winning. Keep it at most the
        # format penalty: a format error uses no guess, so a dearer ruled-out guess teaches the policy
        # to babble instead (measured: at 0.5 against a 0.1 format penalty, format errors per episode
        # rose from 0.9 to 4.0 in 16 steps).
        if ruled_out_penalty or progress_reward:  # 0, the default, needs no look-up: make runs per episode
            check_env_numbers(
                type(self).__name__, ruled_out_penalty=ruled_out_penalty, progress_reward=progress_reward
            )
        self.ruled_out_penalty = float(ruled_out_penalty)
        # A per-turn reward for narrowing the search: each guess earns this times the share of the
        # range's information it took away, log(size before / size after) / log(range size). A win
        # collects exactly `progress_reward` whatever the path (the sizes telescope to 1), so it
        # changes no ranking among wins; it ranks the losses, which otherwise all score alike, by how
        # far each got. A group whose samples all lose still has a reward spread, and a turn-level
        # estimator credits the jump that halved the range over a step of one.
        self.progress_reward = float(progress_reward)
        if high is not None:
            check_env_numbers(type(self).__name__, high=high)
        self.high_knob = None if high is None else int(high)
        super().__init__(**kwargs)
        if self.action_tool:
            self.action_help = "Call the guess tool with your number."

    @classmethod
    def difficulty_ladder(cls, difficulty: str | None = None) -> list[dict[str, Any]]:
        """Knob settings from a range of 2 numbers up to the game at `difficulty` (the last entry, `{}`).

        Args:
            difficulty: the game the ladder ends at (default: the class's default difficulty).

        Returns:
            Kwargs per level, easiest first: ranges 1..2, 1..4, ... doubling below the game's own.

        >>> GuessNumberEnv.difficulty_ladder("easy")
        [{'high': 2}, {'high': 4}, {'high': 8}, {'high': 14}, {}]
        """
        top = cls.difficulties[difficulty or cls.default_difficulty]["high"]
        # 14, not 16: the random player wins 1..16 about as often as 1..20 in six turns (32 % vs 27 %).
        highs = (2, 4, 8, 14, 32, 64, 128, 256, 512)
        return [{"high": h} for h in highs if h < top] + [{}]

    def _start(self, params: dict[str, Any]):
        self.low, self.high = params["low"], self.high_knob or params["high"]
        self.max_guesses = params["max_guesses"]
        # quick_random, not np_random: numpy's draw alone cost more than the rest of an episode.
        self.secret = self.quick_random.integers(self.low, self.high + 1)
        self.guesses: list[int] = []
        # Behaviour counts (info["behaviour"]): how the guesses used the feedback.
        self._followed = self._after_feedback = self._in_range_count = self._repeats = self._with_text = 0
        self._read_with_text = False
        self._last_answer: tuple[int, str] | None = None
        # What the feedback so far has revealed; the expert plays from this, never from `secret`.
        self.known_low, self.known_high = self.low, self.high
        prompt, self.optimal_guesses, self._high_digits = _game_constants(
            self.low, self.high, self.max_guesses, self.action_tool
        )
        system = _SYSTEM_PROMPT_TOOL if self.action_tool else _SYSTEM_PROMPT
        opening = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        return opening, {"max_guesses": self.max_guesses}

    def parse_action(self, text: str) -> int:
        """The guess: the one number in the reply (the same number repeated counts once), which must lead it.

        Only markup or a label ("Guess:", "My answer is") may stand before the number; text after it is
        allowed and counted (`with_text`). A reply holding several different numbers is refused.
        """
        stripped = text.strip()
        if stripped.isdigit() and stripped.isascii():
            # The usual reply, read as the general path below reads it: one run of ASCII digits is the
            # one match of _NUMBER, with the same length and range checks.
            if len(stripped) <= self._high_digits:  # short enough without dropping leading zeros
                guess = int(stripped)
            else:
                digits = stripped.lstrip("0") or "0"
                if len(digits) > self._high_digits:
                    raise InvalidAction(f"{stripped[:20]}... is outside {self.low}..{self.high}")
                guess = int(digits)
            if self.low <= guess <= self.high:  # `_in_range`, inlined on the usual path
                return guess
            raise InvalidAction(f"{guess} is outside {self.low}..{self.high}")
        if not stripped:
            raise InvalidAction("the reply is empty")
        # isdigit() admits superscripts and other digits int() rejects; only ASCII digits are a guess.
        if non_ascii_digits(stripped):
            raise InvalidAction("write the number with the digits 0-9")
        found = []
        for written in _NUMBER.findall(stripped):
            if "." in written:
                raise InvalidAction(f"{written[:40]} is not a whole number")
            digits = written.lstrip("-").lstrip("0") or "0"
            if len(digits) > self._high_digits:
                # Out of range anyway; int() of thousands of digits would raise instead of answering.
                raise InvalidAction(f"{written[:20]}... is outside {self.low}..{self.high}")
            found.append((written, -int(digits) if written.startswith("-") else int(digits)))
        guess = self._in_range(one_move(found, what="number", missing="no number found in the reply"))
        first = _NUMBER.search(stripped)
        if _LEAD.fullmatch(stripped[: first.start()]) is None:
            raise InvalidAction("start the reply with your guess; a number inside a sentence is not read")
        rest = _TAG.sub("", stripped[: first.start()] + stripped[first.end() :])
        self._read_with_text = any(c.isalpha() for c in rest)
        return guess

    def _in_range(self, guess: int) -> int:
        if not self.low <= guess <= self.high:
            raise InvalidAction(f"{guess} is outside {self.low}..{self.high}")
        return guess

    @classmethod
    def action_args_model(cls):
        """`guess(number: int)`."""
        from pydantic import BaseModel, Field

        class GuessArgs(BaseModel):
            number: int = Field(description="Your guess, a whole number in the announced range.")

        return GuessArgs

    def action_from_tool(self, args) -> int:
        """The guess from the tool's `number` argument."""
        return self._in_range(args.number)

    def play(self, action: int) -> StepResult:
        """Compare the guess with the secret and answer higher, lower or correct."""
        in_range = self.known_low <= action <= self.known_high
        self._count_behaviour(action, in_range)
        self.guesses.append(action)
        n = len(self.guesses)
        shaping = 0.0 if in_range else -self.ruled_out_penalty
        size_before = self.known_high - self.known_low + 1
        if action == self.secret:
            self.won = True
            reward = max(0.5, 1.0 - 0.1 * max(0, n - self.optimal_guesses)) + self._progress(size_before, 1)
            content = f"Correct! The number was {self.secret}. You used {n} guesses."
            return (
                [{"role": "user", "content": content}],
                reward,
                True,
                False,
                {"success": True, "guesses": n, "behaviour": self.behaviour()},
            )
        if action < self.secret:
            if action >= self.known_low:
                self.known_low = action + 1
            hint = "higher"
        else:
            if action <= self.known_high:
                self.known_high = action - 1
            hint = "lower"
        shaping += self._progress(size_before, self.known_high - self.known_low + 1)
        left = self.max_guesses - n
        if left == 0:
            closest = min(abs(g - self.secret) for g in self.guesses)
            reward = 0.25 * (1.0 - closest / (self.high - self.low))
            content = f"No guesses left. The number was {self.secret}."
            return (
                [{"role": "user", "content": content}],
                reward + shaping,
                True,
                False,
                {"success": False, "guesses": n, "behaviour": self.behaviour()},
            )
        self._last_answer = (action, hint)
        # The answer names only the guess it judges: a count of guesses left was the number a small
        # model echoed back most ("Exactly 6 guesses left."); the opening states the budget once.
        text = f"{action} is too {'low' if hint == 'higher' else 'high'}. Guess a {hint} number."
        if self.reveal_range:
            text += f" It is between {self.known_low} and {self.known_high}. {left} guesses left."
        return [{"role": "user", "content": text}], shaping, False, False, {"behaviour": self.behaviour()}

    def _progress(self, size_before: int, size_after: int) -> float:
        """`progress_reward` times the share of the range's log-size one guess removed (0 when off)."""
        if not self.progress_reward or size_after >= size_before:
            return 0.0
        return self.progress_reward * math.log(size_before / size_after) / math.log(self.high - self.low + 1)

    def _count_behaviour(self, action: int, in_range: bool) -> None:
        self._in_range_count += in_range
        self._repeats += action in self.guesses
        self._with_text += self._read_with_text
        self._read_with_text = False
        if self._last_answer is not None:
            last, hint = self._last_answer
            self._after_feedback += 1
            self._followed += action > last if hint == "higher" else action < last

    def behaviour(self) -> dict[str, int]:
        """How this episode's guesses used the feedback so far (counts; `behaviour_rates` makes rates).

        `followed` of `after_feedback`: guesses that went the way the last answer said; `in_range`:
        guesses the answers so far had not ruled out; `repeats`: guesses made before; `with_text`:
        guesses read from a reply that held more than the number.

        >>> env = GuessNumberEnv(difficulty="easy", action_tool=False)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step("1"); _ = env.step("1")
        >>> env.behaviour()
        {'guesses': 2, 'after_feedback': 1, 'followed': 0, 'in_range': 1, 'repeats': 1, 'with_text': 0}
        """
        return {
            "guesses": len(self.guesses),
            "after_feedback": self._after_feedback,
            "followed": self._followed,
            "in_range": self._in_range_count,
            "repeats": self._repeats,
            "with_text": self._with_text,
        }

    def expert_action(self) -> str:
        """Binary search on what the feedback has revealed."""
        return str((self.known_low + self.known_high) // 2)

    def random_action(self, rng: random.Random) -> str:
        """A guess drawn uniformly from the whole announced range, ignoring the feedback."""
        return str(rng.randint(self.low, self.high))
