"""wordle-v0: find a hidden 5-letter word from per-letter feedback."""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path
from typing import Any, ClassVar

from envs.core.errors import InvalidAction
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.games.text_game import TextGame, one_move
from turngym.chat.message import system, user

WORD_LIST = Path(__file__).parent / "data" / "wordle_words.txt"
_LETTERS = re.compile(r"[A-Za-z]+")
_NAMES = {"G": "correct", "Y": "present", "_": "absent"}


@functools.cache
def load_words() -> tuple[str, ...]:
    """The bundled word list (lowercase, most common words first); every guess must be one of these."""
    return tuple(w.strip() for w in WORD_LIST.read_text().split() if w.strip())


def feedback(guess: str, answer: str) -> str:
    """The G/Y/_ pattern of `guess` against `answer` (duplicate letters: greens first, then yellows left to right)."""
    pattern = ["_"] * 5
    unmatched: dict[str, int] = {}
    for i in range(5):
        if guess[i] == answer[i]:
            pattern[i] = "G"
        else:
            unmatched[answer[i]] = unmatched.get(answer[i], 0) + 1
    for i in range(5):
        if pattern[i] == "_" and unmatched.get(guess[i], 0) > 0:
            pattern[i] = "Y"
            unmatched[guess[i]] -= 1
    return "".join(pattern)


class WordleEnv(TextGame[str]):
    """Guess a hidden 5-letter word; each guess is answered letter by letter.

    Feedback line: `crane -> C:absent R:present A:correct N:absent E:absent (_YG__). 5 tries left.`
    (G = right letter, right place; Y = in the word elsewhere; _ = not in the word, or no more copies of it).
    The answer comes from the first `pool` words of the bundled list (common words first); any word of the
    list may be guessed. A word outside the list is a format error and uses no try.

    Reward at the end: a win scores 1.0 within 3 tries, then 0.1 less per extra try (at least 0.5); running
    out of tries scores up to 0.25 for the best guess (greens count 1, yellows 0.5, out of 5).
    Text action: a 5-letter word; a reply holding several different 5-letter words is a format error
    (uses no try). Tool: `guess(word)`.

    Difficulty knobs (over the difficulty's parameters; a curriculum turns them, see
    `difficulty_ladder`): `pool` the number of answers (the most common words first), `revealed` letters
    of the answer given in the opening (0-4, always the same positions for a seed). Training-only
    shaping: `progress_reward` pays this share of a full reward for each letter a guess places right
    (green) for the first time, out of the 5 (revealed letters count as placed): a win collects what is
    left of it, so it ranks losses by how many letters they placed and changes no text and no success.
    """

    difficulties = {
        "easy": {"pool": 150, "max_tries": 8},
        "medium": {"pool": 400, "max_tries": 6},
        "hard": {"pool": 800, "max_tries": 6},
    }
    action_tool_name = "guess"
    reset_options = {"difficulty": ("easy", "medium", "hard")}
    action_tool_description = "Guess the hidden 5-letter word."
    action_help = "Reply with one 5-letter English word."
    #: Full-strength rewards up to this many tries.
    par_tries: ClassVar[int] = 3
    client_kwargs = ("difficulty", "action_tool", "pool", "revealed")
    #: How `info["behaviour"]`'s counts become rates (envs/baselines/behaviour.py). A word outside the
    #: list is an illegal move; a word guessed before is a repeat.
    behaviour_rates = {
        "legal_move_rate": ("legal_moves", "moves"),
        "repeat_rate": ("repeats", "guesses"),
    }

    def __init__(
        self,
        *,
        pool: int | None = None,
        revealed: int | None = None,
        progress_reward: float = 0.0,
        **kwargs: Any,
    ):
        if (
            pool is not None or revealed is not None or progress_reward
        ):  # the defaults need no look-up: make runs once per episode
            check_env_numbers(
                type(self).__name__, pool=pool, revealed=revealed, progress_reward=progress_reward
            )
        self.pool_size = None if pool is None else int(pool)
        self.revealed = 0 if revealed is None else int(revealed)
        self.progress_reward = float(progress_reward)
        super().__init__(**kwargs)

    @classmethod
    def difficulty_ladder(cls, difficulty: str | None = None) -> list[dict[str, Any]]:
        """Knob settings from 2 answers with 4 letters given up to the game at `difficulty` (`{}`).

        Args:
            difficulty: the game the ladder ends at (default: the class's default difficulty).

        Returns:
            Kwargs per level, easiest first: fewer letters given, then more answers.

        >>> WordleEnv.difficulty_ladder("easy")[:3], WordleEnv.difficulty_ladder("easy")[-1]
        ([{'pool': 2, 'revealed': 4}, {'pool': 5, 'revealed': 3}, {'pool': 10, 'revealed': 3}], {})
        """
        top = cls.difficulties[difficulty or cls.default_difficulty]["pool"]
        steps = [(2, 4), (5, 3), (10, 3), (10, 2), (25, 2), (25, 1), (50, 1), (50, 0), (100, 0), (200, 0)]
        return [{"pool": p, "revealed": r} for p, r in steps if p < top] + [{}]

    def _start(self, params: dict[str, Any]):
        words = load_words()
        self.words = frozenset(words)
        self.pool = words[: self.pool_size or params["pool"]]
        self.max_tries = params["max_tries"]
        self.answer = self.pool[int(self.np_random.integers(len(self.pool)))]
        self.guesses: list[tuple[str, str]] = []
        self._moves = self._legal_moves = self._repeats = 0
        prompt = (
            f"Guess my 5-letter English word in {self.max_tries} tries. Reply with one word. "
            "For each letter I say correct (G), present elsewhere (Y) or absent (_)."
        )
        self.placed: set[int] = set()
        self.hints: dict[int, str] = {}
        if self.revealed:
            # Drawn after the answer, so revealed=0 (or none) plays the very same episodes.
            shown = sorted(int(i) for i in self.np_random.choice(5, size=self.revealed, replace=False))
            self.placed = set(shown)
            self.hints = {i: self.answer[i] for i in shown}
            given = ", ".join(f"letter {i + 1} is {self.answer[i].upper()}" for i in shown)
            prompt += f" A hint: {given}."
        opening = [system("You are playing Wordle."), user(prompt)]
        return opening, {"max_tries": self.max_tries, "pool": len(self.pool)}

    def parse_action(self, text: str) -> str:
        """The guess: the one 5-letter word in the reply (the same word repeated counts once)."""
        candidates = [(w, w.lower()) for w in _LETTERS.findall(text) if len(w) == 5]
        missing = "no 5-letter word found in the reply" if text.strip() else "the reply is empty"
        return self._in_list(one_move(candidates, what="5-letter word", missing=missing))

    def _in_list(self, word: str) -> str:
        # A reply that names a word is a move, legal or not; one with no word at all is not a move.
        self._moves += 1
        word = word.strip().lower()
        if len(word) != 5 or not word.isalpha():
            raise InvalidAction(f"{word[:40]!r} is not a 5-letter word")
        if word not in self.words:
            raise InvalidAction(f"{word!r} is not in the word list; this did not use a try")
        self._legal_moves += 1
        return word

    def _format_error(self, problem: str) -> StepResult:
        result = super()._format_error(problem)
        result.info["behaviour"] = self.behaviour()
        return result

    def behaviour(self) -> dict[str, int]:
        """This episode's counts so far (`behaviour_rates` makes rates).

        `moves`: replies naming a 5-letter word; `legal_moves`: those in the word list; `guesses`: tries
        used; `repeats`: guesses of a word guessed before.

        >>> env = WordleEnv(difficulty="easy", action_tool=False)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step("crane"); _ = env.step("crane"); _ = env.step("zzzzz")
        >>> env.behaviour()
        {'moves': 3, 'legal_moves': 2, 'guesses': 2, 'repeats': 1}
        """
        return {
            "moves": self._moves,
            "legal_moves": self._legal_moves,
            "guesses": len(self.guesses),
            "repeats": self._repeats,
        }

    @classmethod
    def action_args_model(cls):
        """`guess(word: str)`."""
        from pydantic import BaseModel, Field

        class GuessArgs(BaseModel):
            word: str = Field(description="Your guess, a 5-letter English word.")

        return GuessArgs

    def action_from_tool(self, args) -> str:
        """The guess from the tool's `word` argument."""
        return self._in_list(args.word)

    def play(self, action: str) -> StepResult:
        """Score the guess letter by letter; end on a win or when the tries run out."""
        pattern = feedback(action, self.answer)
        self._repeats += any(g == action for g, _ in self.guesses)
        self.guesses.append((action, pattern))
        newly = {i for i, p in enumerate(pattern) if p == "G"} - self.placed
        self.placed |= newly
        shaping = self.progress_reward * len(newly) / 5
        n = len(self.guesses)
        letters = " ".join(f"{c.upper()}:{_NAMES[p]}" for c, p in zip(action, pattern, strict=True))
        line = f"{action} -> {letters} ({pattern})."
        if pattern == "GGGGG":
            self.won = True
            reward = max(0.5, 1.0 - 0.1 * max(0, n - self.par_tries))
            return StepResult(
                [user(f"{line} You won in {n} tries!")],
                reward + shaping,
                terminated=True,
                info={"success": True, "tries": n, "behaviour": self.behaviour()},
            )
        left = self.max_tries - n
        if left == 0:
            best = max(p.count("G") + 0.5 * p.count("Y") for _, p in self.guesses)
            return StepResult(
                [user(f"{line} No tries left. The word was {self.answer}.")],
                0.25 * best / 5 + shaping,
                terminated=True,
                info={"success": False, "tries": n, "behaviour": self.behaviour()},
            )
        return StepResult([user(f"{line} {left} tries left.")], shaping, info={"behaviour": self.behaviour()})

    def expert_action(self) -> str:
        """The word that best splits the answers still consistent with all feedback (no peeking)."""
        candidates = [
            w
            for w in self.pool
            if all(feedback(g, w) == p for g, p in self.guesses)
            and all(w[i] == c for i, c in self.hints.items())
        ]
        if len(candidates) <= 2:
            return candidates[0] if candidates else load_words()[0]
        if not self.guesses and not self.hints:
            return _best_opener(len(self.pool))
        return _best_split(load_words(), candidates)

    def random_action(self, rng: random.Random) -> str:
        """A word drawn uniformly from the answers this game may pick, ignoring the feedback."""
        return rng.choice(self.pool)


def _best_split(guesses: tuple[str, ...], candidates: list[str]) -> str:
    """The guess minimising the expected number of candidates left; ties go to candidates, then list order."""
    possible = set(candidates)
    best, best_key = candidates[0], None
    for guess in guesses:
        buckets: dict[str, int] = {}
        for answer in candidates:
            p = feedback(guess, answer)
            buckets[p] = buckets.get(p, 0) + 1
        key = (sum(b * b for b in buckets.values()), guess not in possible)
        if best_key is None or key < best_key:
            best, best_key = guess, key
    return best


@functools.cache
def _best_opener(pool_size: int) -> str:
    # The opening candidates are the whole pool: the same for every episode, so computed once.
    words = load_words()
    return _best_split(words, list(words[:pool_size]))
