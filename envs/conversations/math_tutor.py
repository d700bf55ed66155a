"""math-tutor-v0: solve a generated arithmetic or word problem; hints after wrong answers, reward decays."""

from __future__ import annotations

from typing import Any

from envs.conversations.interaction_env import InteractionEnv
from envs.conversations.math_problems import DIFFICULTIES, generate
from envs.core.number_bounds import check_env_numbers


class MathTutorEnv(InteractionEnv):
    """A tutor poses one problem (easy/medium/hard, generated from the seed) and checks `Answer: ...`.

    A right answer at attempt k scores `decay ** (k - 1)`; after a wrong one the tutor gives the next,
    more specific hint and says whether the answer was too high or too low. The episode ends when the
    answer is right or after `max_attempts`. A reply without `Answer: ...` costs no attempt (it is a
    format error). `reset(options={"difficulty": ...})` changes the tier for one episode;
    `options={"question": ..., "answer": ...}` poses a given problem.
    """

    system_prompt = (
        "You are a student solving a maths problem set by a tutor. Think step by step, then give your "
        "final answer on the last line as `Answer: <number>`."
    )
    action_help = "End your reply with `Answer: <your answer>`."
    reset_options = {
        "difficulty": ("easy", "medium", "hard"),
        "question": str,
        "answer": (int, float, str),
        "hints": (list, tuple),
        "solution": str,
    }

    def __init__(
        self,
        *,
        difficulty: str = "medium",
        max_attempts: int = 3,
        decay: float = 0.5,
        interaction=None,
        interaction_config: dict[str, Any] | None = None,
        tools=None,
        render_mode: str | None = None,
    ):
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"MathTutorEnv: unknown difficulty {difficulty!r}; choose from {list(DIFFICULTIES)}"
            )
        self.difficulty = difficulty
        check_env_numbers(type(self).__name__, max_attempts=max_attempts, decay=decay)
        if interaction is None:
            from interactions.answer_feedback import AnswerFeedback

            interaction = AnswerFeedback(max_attempts=max_attempts, decay=decay)
        super().__init__(
            interaction=interaction,
            interaction_config=interaction_config,
            tools=tools,
            render_mode=render_mode,
        )

    def episode_info(self, options: dict[str, Any]) -> dict[str, Any]:
        """A generated problem of the episode's tier, unless the options pose one."""
        difficulty = options.pop("difficulty", self.difficulty)
        if difficulty not in DIFFICULTIES:
            raise ValueError(
                f"MathTutorEnv: unknown difficulty {difficulty!r}; choose from {list(DIFFICULTIES)}"
            )
        if "question" in options and "answer" in options:
            return {"difficulty": difficulty, **options}
        problem = generate(self.np_random, difficulty)
        return {
            "difficulty": difficulty,
            "kind": problem.kind,
            "question": problem.question,
            "answer": problem.answer,
            "hints": problem.hints,
            "solution": problem.solution,
            **options,
        }
