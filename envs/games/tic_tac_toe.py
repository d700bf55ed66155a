"""tic-tac-toe-v0: three in a row against a built-in opponent of selectable strength."""

from __future__ import annotations

import functools
import random
import re
from typing import Any, Literal

from envs.core.errors import InvalidAction
from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.games.text_game import TextGame, one_move
from turngym.chat.message import system, user

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
EMPTY = "."
# A cell is a digit 1-9 or a coordinate: column letter a-c (left to right), row digit 1-3 (top to bottom).
_CELL = re.compile(r"(?<![A-Za-z0-9])([a-cA-C][1-3]|[1-9])(?![A-Za-z0-9])")
Mark = Literal["X", "O", "random"]
#: The `opponent` knob's names -> the difficulties' opponent kinds, weakest first.
OPPONENTS = {"random": "random", "blocking": "heuristic", "expert": "perfect"}


def winner(board: str) -> str | None:
    """ "X" or "O" when that mark has three in a row, else None."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return None


def other(mark: str) -> str:
    """The opponent's mark."""
    return "O" if mark == "X" else "X"


@functools.cache
def minimax(board: str, to_move: str) -> int:
    """The value for X under perfect play: 10 - plies for an X win, plies - 10 for an O win, 0 for a draw."""
    won = winner(board)
    plies = 9 - board.count(EMPTY)
    if won is not None:
        return 10 - plies if won == "X" else plies - 10
    if EMPTY not in board:
        return 0
    values = [minimax(play_on(board, i, to_move), other(to_move)) for i in empty_cells(board)]
    return max(values) if to_move == "X" else min(values)


def value_for(board: str, mark: str, to_move: str) -> int:
    """The perfect-play value of `board` from `mark`'s side."""
    v = minimax(board, to_move)
    return v if mark == "X" else -v


def empty_cells(board: str) -> list[int]:
    """Indices (0-8) of the free cells."""
    return [i for i, c in enumerate(board) if c == EMPTY]


def play_on(board: str, index: int, mark: str) -> str:
    """The board after `mark` takes cell `index` (0-8)."""
    return board[:index] + mark + board[index + 1 :]


def best_move(board: str, mark: str) -> int:
    """A perfect move for `mark`: fastest win / slowest loss, then most losing replies left to the opponent."""

    def key(i: int) -> tuple[int, int, int]:
        after = play_on(board, i, mark)
        value = value_for(after, mark, other(mark))
        traps = sum(value_for(play_on(after, j, other(mark)), mark, mark) > value for j in empty_cells(after))
        return value, traps, -i

    return max(empty_cells(board), key=key)


def draw_board(board: str) -> str:
    """Three rows; free cells show their number."""
    cells = [c if c != EMPTY else str(i + 1) for i, c in enumerate(board)]
    return "\n".join(" ".join(cells[r * 3 : r * 3 + 3]) for r in range(3))


class TicTacToeEnv(TextGame[int]):
    """Tic-tac-toe against a built-in opponent: easy plays at random, medium wins or blocks when it can
    (but plays at random 30% of the time), hard plays perfectly (random among its best moves).

    The agent plays X (moves first) or O, by `agent_mark` ("X", "O", or "random": chosen by the seed);
    `reset(options={"agent_mark": ...})` overrides it per episode. Text action: a cell number 1-9 (rows
    top to bottom: 1 2 3 / 4 5 6 / 7 8 9) or a coordinate a1..c3 (column a-c, row 1-3); a reply naming
    several different cells is a format error. Tool: `place(cell)`. A taken cell is a format error and
    uses no turn.

    Reward at the end: win 1.0, draw 0.5, loss 0. `info["success"]` is a win, except on hard: a perfect
    opponent cannot be beaten, a draw is the best possible result there, so not losing counts as success.

    Difficulty knobs (over the difficulty's parameters; a curriculum turns them, see
    `difficulty_ladder`): `opponent` "random" -> "blocking" (wins or blocks when it can) -> "expert"
    (perfect; a draw is then a success), and `blunder_rate`, how often the blocking opponent plays at
    random instead (the medium game's is 0.3).
    """

    difficulties = {
        "easy": {"opponent": "random", "draw_is_success": False},
        "medium": {"opponent": "heuristic", "draw_is_success": False},
        "hard": {"opponent": "perfect", "draw_is_success": True},
    }
    action_tool_name = "place"
    reset_options = {"difficulty": ("easy", "medium", "hard"), "agent_mark": ("X", "O", "random")}
    client_kwargs = ("difficulty", "action_tool", "agent_mark", "opponent", "blunder_rate")
    #: How `info["behaviour"]`'s counts become rates (envs/baselines/behaviour.py). A taken cell is an
    #: illegal move; naming a cell of one's own earlier move is a repeat; a block is a move onto the
    #: empty cell of a line where the opponent has two marks, when the agent had no win of its own.
    behaviour_rates = {
        "legal_move_rate": ("legal_moves", "moves"),
        "repeat_rate": ("repeats", "moves"),
        "block_rate": ("blocks", "block_chances"),
    }
    action_tool_description = "Put your mark on an empty cell (1-9, rows top to bottom)."
    action_help = "Reply with the number (1-9) of an empty cell."
    #: How often the medium opponent ignores its win/block rules and plays at random.
    medium_blunder_rate = 0.3

    def __init__(
        self,
        *,
        agent_mark: Mark = "random",
        opponent: str | None = None,
        blunder_rate: float | None = None,
        difficulty: str | None = None,
        tools=None,
        action_tool: bool = True,
        render_mode=None,
    ):
        if opponent is not None and opponent not in OPPONENTS:
            raise ValueError(f"TicTacToeEnv: opponent must be one of {list(OPPONENTS)}, got {opponent!r}")
        if blunder_rate is not None:  # the defaults need no look-up: make runs once per episode
            check_env_numbers(type(self).__name__, blunder_rate=blunder_rate)
        self.opponent_knob = opponent
        self.blunder_rate = None if blunder_rate is None else float(blunder_rate)
        super().__init__(difficulty=difficulty, tools=tools, action_tool=action_tool, render_mode=render_mode)
        self.agent_mark = self._check_mark(agent_mark)

    @classmethod
    def difficulty_ladder(cls, difficulty: str | None = None) -> list[dict[str, Any]]:
        """Knob settings from a random opponent that lets the agent move first up to the game at
        `difficulty` (the last entry, `{}`).

        Args:
            difficulty: the game the ladder ends at (default: the class's default difficulty).

        Returns:
            Kwargs per level, easiest first: random opponent with the agent as X, random, then blocking
            with fewer and fewer blunders.

        >>> TicTacToeEnv.difficulty_ladder("easy")
        [{'opponent': 'random', 'agent_mark': 'X'}, {}]
        >>> [level.get("blunder_rate") for level in TicTacToeEnv.difficulty_ladder("medium")]
        [None, None, 0.8, 0.6, 0.45, None]
        """
        params = cls.difficulties[difficulty or cls.default_difficulty]
        # Moving first is worth most against a random opponent (a random X wins ~58 % of games).
        ladder: list[dict[str, Any]] = [{"opponent": "random", "agent_mark": "X"}]
        if params["opponent"] == "random":
            return ladder + [{}]
        ladder.append({"opponent": "random"})
        ladder += [{"opponent": "blocking", "blunder_rate": b} for b in (0.8, 0.6, 0.45)]
        if params["opponent"] == "perfect":
            ladder += [
                {"opponent": "blocking", "blunder_rate": b} for b in (cls.medium_blunder_rate, 0.15, 0.0)
            ]
        return ladder + [{}]

    @staticmethod
    def _check_mark(mark: str) -> str:
        if mark not in ("X", "O", "random"):
            raise ValueError(f"agent_mark must be 'X', 'O' or 'random', got {mark!r}")
        return mark

    def _reset(self, options: dict[str, Any]):
        self._episode_mark = self._check_mark(options.pop("agent_mark", self.agent_mark))
        return super()._reset(options)

    def _start(self, params: dict[str, Any]):
        self.opponent = params["opponent"]
        self.draw_is_success = params["draw_is_success"]
        if self.opponent_knob is not None:
            self.opponent = OPPONENTS[self.opponent_knob]
            self.draw_is_success = self.opponent == "perfect"
        self.opponent_blunder_rate = (
            self.medium_blunder_rate if self.blunder_rate is None else self.blunder_rate
        )
        self._moves = self._legal_moves = self._repeats = self._block_chances = self._blocks = 0
        self._mine: set[int] = set()
        mark = self._episode_mark
        if mark == "random":
            mark = "X" if self.np_random.random() < 0.5 else "O"
        self.mark, self.their_mark = mark, other(mark)
        self.board = EMPTY * 9
        if self.mark == "X":
            intro = "You are X and move first."
        else:
            first = self._opponent_move()
            self.board = play_on(self.board, first, self.their_mark)
            intro = f"You are O. X played {first + 1}."
        prompt = f"{intro} Reply with the number of an empty cell.\n{draw_board(self.board)}"
        opening = [system("You are playing tic-tac-toe."), user(prompt)]
        return opening, {"agent_mark": self.mark, "opponent": self.opponent}

    def parse_action(self, text: str) -> int:
        """The cell (0-8): the one cell number or coordinate in the reply (`b2 (cell 5)` is one cell)."""
        found = [(cell, _index(cell.lower())) for cell in _CELL.findall(text)]
        missing = "no cell (1-9) found in the reply" if text.strip() else "the reply is empty"
        return self._free(one_move(found, what="cell", missing=missing))

    def _free(self, index: int) -> int:
        self._moves += 1
        self._repeats += index in self._mine
        if self.board[index] != EMPTY:
            raise InvalidAction(f"cell {index + 1} is taken; choose an empty cell")
        self._legal_moves += 1
        return index

    def _format_error(self, problem: str) -> StepResult:
        result = super()._format_error(problem)
        result.info["behaviour"] = self.behaviour()
        return result

    def behaviour(self) -> dict[str, int]:
        """This episode's counts so far (`behaviour_rates` makes rates).

        `moves`: replies naming a cell; `legal_moves`: those naming an empty cell; `repeats`: naming a
        cell the agent took before; `block_chances`: moves made while the opponent had two in a line with
        the third cell empty and the agent no win of its own; `blocks`: those that took that third cell.

        >>> env = TicTacToeEnv(difficulty="easy", agent_mark="X", action_tool=False)
        >>> _ = env.reset(seed=0)
        >>> _ = env.step("5"); _ = env.step("5")
        >>> env.behaviour()["moves"], env.behaviour()["legal_moves"], env.behaviour()["repeats"]
        (2, 1, 1)
        """
        return {
            "moves": self._moves,
            "legal_moves": self._legal_moves,
            "repeats": self._repeats,
            "block_chances": self._block_chances,
            "blocks": self._blocks,
        }

    def _count_block(self, index: int) -> None:
        free = empty_cells(self.board)
        if any(winner(play_on(self.board, i, self.mark)) == self.mark for i in free):
            return  # a win was there to take: not blocking is no mistake
        threats = {i for i in free if winner(play_on(self.board, i, self.their_mark)) == self.their_mark}
        if threats:
            self._block_chances += 1
            self._blocks += index in threats

    @classmethod
    def action_args_model(cls):
        """`place(cell: int)`."""
        from pydantic import BaseModel, Field

        class PlaceArgs(BaseModel):
            cell: int = Field(description="An empty cell, 1-9: 1 2 3 top row, 4 5 6 middle, 7 8 9 bottom.")

        return PlaceArgs

    def action_from_tool(self, args) -> int:
        """The cell from the tool's `cell` argument (1-9)."""
        if not 1 <= args.cell <= 9:
            raise InvalidAction(f"cell {args.cell} does not exist; use 1-9")
        return self._free(args.cell - 1)

    def play(self, action: int) -> StepResult:
        """Place the agent's mark, then the opponent's; end on three in a row or a full board."""
        self._count_block(action)
        self._mine.add(action)
        self.board = play_on(self.board, action, self.mark)
        said = f"You played {action + 1}."
        if winner(self.board) == self.mark:
            return self._end(f"{said} You win!", "win")
        if EMPTY not in self.board:
            return self._end(f"{said} Draw.", "draw")
        reply = self._opponent_move()
        self.board = play_on(self.board, reply, self.their_mark)
        said += f" Opponent played {reply + 1}."
        if winner(self.board) == self.their_mark:
            return self._end(f"{said} You lose.", "loss")
        if EMPTY not in self.board:
            return self._end(f"{said} Draw.", "draw")
        return StepResult([user(f"{said}\n{draw_board(self.board)}")], info={"behaviour": self.behaviour()})

    def _end(self, text: str, outcome: str) -> StepResult:
        self.won = outcome == "win"
        success = self.won or (outcome == "draw" and self.draw_is_success)
        reward = {"win": 1.0, "draw": 0.5, "loss": 0.0}[outcome]
        return StepResult(
            [user(f"{text}\n{draw_board(self.board)}")],
            reward,
            terminated=True,
            info={"success": success, "outcome": outcome, "behaviour": self.behaviour()},
        )

    def _opponent_move(self) -> int:
        free = empty_cells(self.board)
        me = self.their_mark
        if self.opponent == "perfect":
            values = {i: value_for(play_on(self.board, i, me), me, other(me)) for i in free}
            # Any move keeping the best result (win/draw/loss) is perfect; picking among them varies games.
            best = max(_sign(v) for v in values.values())
            free = [i for i in free if _sign(values[i]) == best]
        elif self.opponent == "heuristic" and self.np_random.random() >= self.opponent_blunder_rate:
            for mark in (me, other(me)):  # win if possible, else block
                hits = [i for i in free if winner(play_on(self.board, i, mark)) == mark]
                if hits:
                    return hits[int(self.np_random.integers(len(hits)))]
            if 4 in free:
                return 4
        return free[int(self.np_random.integers(len(free)))]

    def expert_action(self) -> str:
        """A perfect move (minimax), preferring quick wins and moves that leave the opponent ways to go wrong."""
        return str(best_move(self.board, self.mark) + 1)

    def random_action(self, rng: random.Random) -> str:
        """A cell drawn uniformly from the empty ones (a legal move that ignores the position)."""
        free = empty_cells(self.board)
        return str(rng.choice(free) + 1) if free else "1"  # a full board: any cell (the game has ended)


def _index(cell: str) -> int:
    return int(cell) - 1 if cell.isdigit() else (int(cell[1]) - 1) * 3 + "abc".index(cell[0])


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)
