"""TextGame: a TextEnv whose turns are moves of a game, read from plain text or from the game's action tool."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from envs.core.assistant_turn import AssistantTurn
from envs.core.errors import InvalidAction
from envs.core.step_result import StepResult
from envs.core.text_env import TextEnv

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tools import Tool

A = TypeVar("A")
M = TypeVar("M", bound=Hashable)


def one_move(found: Sequence[tuple[str, M]], *, what: str, missing: str) -> M:
    """The single move among `found` (pairs of how it was written and what it means), or InvalidAction.

    The same move written twice (`b2 (cell 5)`) is one move. Different ones (`42 or 43`, a list of every
    number) are refused rather than one picked: a reader taking the first or last candidate lets a policy
    hedge, and a hedge must never be graded as an answer.
    """
    moves: dict[M, str] = {}
    for written, move in found:
        moves.setdefault(move, written)
    if not moves:
        raise InvalidAction(missing)
    if len(moves) > 1:
        shown = ", ".join(list(moves.values())[:6]) + (", ..." if len(moves) > 6 else "")
        raise InvalidAction(f"the reply holds several {what}s ({shown}); reply with exactly one {what}")
    return next(iter(moves))


def non_ascii_digits(text: str) -> bool:
    """Whether `text` writes a digit other than 0-9 (Arabic-Indic, fullwidth, superscript...)."""
    if text.isascii():  # most replies: no per-character scan
        return False
    return any(not c.isascii() and (c.isdigit() or c.isnumeric()) for c in text)


class TextGame(TextEnv, Generic[A]):
    """Game logic (`play`) kept apart from reading moves (`parse_action`, `action_from_tool`).

    Subclasses set `difficulties` (name -> parameters), `action_tool_name`/`action_tool_description`,
    and implement `_start`, `parse_action`, `action_args_model`, `action_from_tool`, `play` and
    `expert_action`. The difficulty is chosen at construction (`difficulty=`) or per episode
    (`reset(options={"difficulty": ...})`).
    """

    difficulties: ClassVar[dict[str, dict[str, Any]]] = {}
    default_difficulty: ClassVar[str] = "medium"
    action_tool_name: ClassVar[str] = "move"
    action_tool_description: ClassVar[str] = "Make a move."
    #: Constructor kwargs a served env's clients may choose (envs.registry.client_kwargs); the operator sets the rest.
    client_kwargs: ClassVar[tuple[str, ...]] = ("difficulty", "action_tool")

    def __init__(
        self,
        *,
        difficulty: str | None = None,
        tools=None,
        action_tool: bool = True,
        render_mode: str | None = None,
    ):
        # Set before TextEnv's __init__, which may resolve the tool list.
        self.action_tool = bool(action_tool)
        super().__init__(tools=tools, render_mode=render_mode)
        self.difficulty = self._check_difficulty(difficulty or self.default_difficulty)
        self.won = False

    @classmethod
    def difficulty_ladder(cls, difficulty: str | None = None) -> list[dict[str, Any]]:
        """The levels a curriculum may play this game at, as constructor kwargs, easiest first.

        The last level is always `{}`: the game at `difficulty` itself, as evaluation plays it. Games
        with difficulty knobs (maze's size and walls, wordle's answers and hints, tic-tac-toe's opponent,
        guess-number's range) list easier settings before it; a game without knobs has that one level.

        Args:
            difficulty: the game the ladder ends at (default: the class's default difficulty).

        Returns:
            Kwargs per level; each is added to the episode's own kwargs.

        >>> TextGame.difficulty_ladder()
        [{}]
        """
        return [{}]

    # ----- what each game implements -------------------------------------------------------------
    def _start(self, params: dict[str, Any]) -> tuple[list[dict], dict[str, Any]]:
        """Set up a new game with `self.np_random` and the difficulty's parameters; return the opening."""
        raise NotImplementedError

    def parse_action(self, text: str) -> A:
        """Read a move from the assistant's text; raise InvalidAction saying what is wrong."""
        raise NotImplementedError

    @classmethod
    def action_args_model(cls) -> type[BaseModel]:
        """The pydantic model of the action tool's arguments."""
        raise NotImplementedError

    def action_from_tool(self, args: BaseModel) -> A:
        """Turn validated action-tool arguments into a move; raise InvalidAction if illegal."""
        raise NotImplementedError

    def play(self, action: A) -> StepResult:
        """Apply a move; return the feedback message, reward and whether the game ended."""
        raise NotImplementedError

    # ----- plumbing --------------------------------------------------------------------------------
    def _check_difficulty(self, difficulty: str) -> str:
        if difficulty not in self.difficulties:
            raise ValueError(
                f"{type(self).__name__}: unknown difficulty {difficulty!r}; choose from {sorted(self.difficulties)}"
            )
        return difficulty

    def _reset(self, options: dict[str, Any]):
        difficulty = options.pop("difficulty", self.difficulty) if options else self.difficulty
        params = self.difficulties.get(difficulty)
        if params is None:
            self._check_difficulty(difficulty)  # raises, naming the valid ones
        self.won = False
        messages, info = self._start(dict(params))
        info["difficulty"] = difficulty
        return messages, info

    def _respond(self, turn: AssistantTurn) -> StepResult:
        """Read the move from the reply's text and play it; an unreadable move is a format error."""
        try:
            action = self.parse_action(turn.content)
        except InvalidAction as e:
            return self._format_error(str(e))
        return self.play(action)

    def own_tools(self) -> list[Tool]:
        """The game's action tool, so a model can move by tool call as well as by text.

        `action_tool=False` leaves it out: moves are then text only, and the prompt is shorter by the
        tool's schema (most of a small game's opening, which matters on a CPU).
        """
        if not self.action_tool:
            return []
        from envs.games.game_action_tool import GameActionTool

        return [GameActionTool.for_game(type(self))]
