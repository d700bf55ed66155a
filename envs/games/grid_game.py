"""GridMoves: how the grid games (maze, sokoban, frozen lake) read moves and spend their move budget."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from envs.games.grid_moves import move_args_model, moves_from_tool, parse_moves


class GridMoves:
    """A mixin for `TextGame[list[str]]` games played with up/down/left/right moves and a move budget.

    A reply's one block of move lines (see `envs.games.grid_moves.parse_moves`) and the `move(directions)`
    tool both give a list of directions; `budgeted` walks them while counting `moves_used` against
    `max_moves`, which the game sets in `_start`. List it before `TextGame` so its methods are the ones used:

    >>> from envs.games.text_game import TextGame
    >>> class Corridor(GridMoves, TextGame[list[str]]):
    ...     difficulties = {"medium": {}}
    >>> Corridor().parse_action("up, up\\nleft")
    ['up', 'up', 'left']
    """

    action_tool_name: ClassVar[str] = "move"
    action_help: ClassVar[str] = "Reply with moves: up, down, left or right, separated by spaces."
    reset_options: ClassVar[dict[str, Any] | None] = {"difficulty": ("easy", "medium", "hard")}
    #: How many moves the scripted expert sends per reply.
    expert_moves_per_turn: ClassVar[int] = 4
    moves_used: int
    max_moves: int

    def parse_action(self, text: str) -> list[str]:
        """The moves of the reply's one block of move-only lines (prose lines around it are ignored).

        Args:
            text: the assistant's reply.

        Returns:
            The directions, in order; InvalidAction says what is wrong with a reply holding none or two lists.
        """
        return parse_moves(text)

    @classmethod
    def action_args_model(cls):
        """`move(directions: list["up" | "down" | "left" | "right"])`; a single direction string is accepted too."""
        return move_args_model()

    def action_from_tool(self, args: Any) -> list[str]:
        """The moves from the `move` tool's validated `directions` argument (an empty list is refused)."""
        return moves_from_tool(args)

    def budgeted(self, moves: Iterable[str]) -> Iterator[str]:
        """`moves` in order, each counted in `moves_used` as it is taken; stops once `max_moves` are used.

        Args:
            moves: the directions of one reply.

        Returns:
            An iterator over the moves the budget still allows; a move the game stops at (a wall) is counted.
        """
        for move in moves:
            if self.moves_used >= self.max_moves:
                return
            self.moves_used += 1
            yield move
