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
