"""Registrations of the envs that ship with turngym (entry points are strings: nothing loads until `make`)."""

from __future__ import annotations

from envs.registration import register

register(
    "guess-number-v0",
    "envs.games.guess_number:GuessNumberEnv",
    category="text-game",
    description="Find a hidden number from higher/lower feedback.",
    max_turns=20,
)

register(
    "wordle-v0",
    "envs.games.wordle:WordleEnv",
    category="text-game",
    description="Find a hidden 5-letter word from per-letter feedback.",
    max_turns=12,
)

register(
    "math-tutor-v0",
    "envs.conversations.math_tutor:MathTutorEnv",
    category="conversation",
    description="Solve a generated arithmetic or word problem; hints after wrong answers, reward decays per attempt.",
    max_turns=12,
)
