"""frozen-lake-v0: cross a frozen lake to the goal without falling through a hole (RAGEN's FrozenLake).

RAGEN plays Gymnasium's FrozenLake (a random map with frozen tiles at probability `p` = 0.8, slippery
ice; see RAGEN's `FrozenLakeEnvConfig`: `size`, `p`, `is_slippery`) and draws it with the symbols used
here (`P _ O G X √`). Our ice slips to either side of the intended move with a set probability, and a map
is only used when the start lies in the lake's *almost-sure winning set*: the cells from which some policy
reaches the goal with probability 1 whatever the slips. That policy is the scripted expert, so it never
falls in and, given enough moves, always arrives.
"""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

from envs.core.step_result import StepResult
from envs.games.grid_game import GridMoves
from envs.games.grid_moves import STEPS
from envs.games.text_game import TextGame
from turngym.chat.message import system, user

Cell = tuple[int, int]
LEGEND = "P you, _ frozen ice, O hole, G goal"
_SIDES = {"up": ("left", "right"), "down": ("left", "right"), "left": ("up", "down"), "right": ("up", "down")}


def outcomes(size: int, cell: Cell, move: str, slip: float) -> list[tuple[Cell, float, str]]:
    """(cell reached, probability, direction actually taken) for `move` from `cell` on ice that slips."""
    taken = [(move, 1.0 - slip)]
    if slip > 0:
        taken += [(side, slip / 2) for side in _SIDES[move]]
    result = []
    for direction, p in taken:
        dr, dc = STEPS[direction]
        r, c = cell[0] + dr, cell[1] + dc
        # A move off the lake leaves the player where it was, as in Gymnasium's FrozenLake.
        result.append(((r, c) if 0 <= r < size and 0 <= c < size else cell, p, direction))
    return result


def winning_policy(size: int, holes: set[Cell], goal: Cell, slip: float) -> dict[Cell, tuple[str, float]]:
    """For each cell of the almost-sure winning set, (its safe move, expected moves to the goal).

    The set is the largest one where every cell has a move whose every outcome stays in the set, and from
    which the goal is reachable with such moves. Of those moves, each cell gets the one with the fewest
    expected moves to the goal; following them reaches the goal with probability 1.
    """
    every = {
        (r, c): {m: outcomes(size, (r, c), m, slip) for m in STEPS} for r in range(size) for c in range(size)
    }
    win = set(every) - holes
    while True:
        safe = {
            cell: [m for m in STEPS if all(o in win for o, _, _ in every[cell][m])]
            for cell in win
            if cell != goal
        }
        # Backward breadth-first search: a cell reaches `o` if one of its safe moves may land there.
        comes_from: dict[Cell, set[Cell]] = {}
        for cell, moves in safe.items():
            for m in moves:
                for o, p, _ in every[cell][m]:
                    if p > 0 and o != cell:
                        comes_from.setdefault(o, set()).add(cell)
        dist = {goal: 0}
        frontier = deque([goal])
        while frontier:
            nxt = frontier.popleft()
            for cell in sorted(comes_from.get(nxt, ())):
                if cell not in dist:
                    dist[cell] = dist[nxt] + 1
                    frontier.append(cell)
        if set(dist) == win:
            break
        win = set(dist)
    # Among the safe moves, the fewest expected moves to the goal, by policy iteration. It starts from a
    # move that may get closer (a proper policy) and every step costs 1, so it never settles on circling.
    import numpy as np

    cells = sorted(safe)
    index = {cell: i for i, cell in enumerate(cells)}
    outs = {(cell, m): every[cell][m] for cell, moves in safe.items() for m in moves}
    choice = {
        cell: next(m for m in moves if any(dist[o] < dist[cell] for o, _, _ in outs[(cell, m)]))
        for cell, moves in safe.items()
    }
    value: dict[Cell, float] = {goal: 0.0}
    for _ in range(100):
        system_matrix = np.eye(len(cells))
        for cell in cells:
            for o, p, _ in outs[(cell, choice[cell])]:
                if o != goal:
                    system_matrix[index[cell], index[o]] -= p
        solved = np.linalg.solve(system_matrix, np.ones(len(cells)))
        value = {goal: 0.0, **{cell: float(solved[index[cell]]) for cell in cells}}
        changed = False
        for cell, moves in safe.items():
            costs = {m: 1.0 + sum(p * value[o] for o, p, _ in outs[(cell, m)]) for m in moves}
            best = min(moves, key=lambda m: (costs[m], list(STEPS).index(m)))
            if costs[best] < costs[choice[cell]] - 1e-9:
                choice[cell], changed = best, True
        if not changed:
            break
    policy: dict[Cell, tuple[str, float]] = {cell: (m, value[cell]) for cell, m in choice.items()}
    return policy


class FrozenLakeEnv(GridMoves, TextGame[list[str]]):
    """Walk P across the ice to G; stepping on a hole (O) ends the game. Slippery ice may slide a move sideways.

    Text action: moves up/down/left/right (also u/d/l/r, n/s/e/w, north/south/east/west) separated by
    spaces or commas, as one block of move lines, applied in order until the goal, a hole or the end of the
    move budget. Each move may slip to either side (probability `slip`, half each way); a move off the lake
    leaves you in place. Tool: `move(directions)` as in maze-v0.

    Reward: 1.0 for reaching G, 0 for a hole or for running out of moves. Levels: easy 4x4 without slips,
    medium 6x6 slipping 20% of the time, hard 8x8 slipping a third of the time (Gymnasium's is two thirds).
    """

    difficulties = {
        "easy": {"size": 4, "frozen": 0.8, "slip": 0.0, "min_path": 4, "max_expected": 20, "max_moves": 20},
        "medium": {"size": 6, "frozen": 0.8, "slip": 0.2, "min_path": 6, "max_expected": 15, "max_moves": 60},
        "hard": {
            "size": 8,
            "frozen": 0.8,
            "slip": 1 / 3,
            "min_path": 8,
            "max_expected": 25,
            "max_moves": 120,
        },
    }
    default_difficulty = "easy"
    action_tool_description = "Walk on the ice: one or more steps, applied in order (each may slip)."
    #: How many moves the scripted expert sends per reply on ice that does not slip (one when it does).
    expert_moves_per_turn: ClassVar[int] = 4

    def _start(self, params: dict[str, Any]):
        self.size, self.slip = params["size"], params["slip"]
        self.holes, self.start, self.goal, self.policy = self._generate(params)
        self.pos = self.start
        self.max_moves = params["max_moves"]
        self.moves_used = 0
        self.slips = 0
        slip_text = (
            "The ice is not slippery."
            if self.slip == 0
            else f"The ice is slippery: each move slides to one side instead {self.slip:.0%} of the time."
        )
        prompt = (
            f"Reach the goal G without stepping on a hole. {LEGEND}. {slip_text} Moving off the lake leaves "
            f"you in place. Reply with moves: up, down, left or right, separated by spaces. You have "
            f"{self.max_moves} moves.\n{self.draw()}"
        )
        opening = [system("You are crossing a frozen lake."), user(prompt)]
        return opening, {"max_moves": self.max_moves, "slip": self.slip}

    def _generate(self, params: dict[str, Any]):
        rng, size = self.np_random, params["size"]
        cells = [(r, c) for r in range(size) for c in range(size)]
        for _ in range(10_000):
            i, j = (int(x) for x in rng.choice(len(cells), size=2, replace=False))
            start, goal = cells[i], cells[j]
            if abs(start[0] - goal[0]) + abs(start[1] - goal[1]) < params["min_path"]:
                continue
            holes = {cell for cell in cells if cell not in (start, goal) and rng.random() >= params["frozen"]}
            policy = winning_policy(size, holes, goal, params["slip"])
            # Expected moves well under the budget (a quarter at most), so the expert practically never
            # runs out of moves on slippery ice.
            if start in policy and policy[start][1] <= params["max_expected"]:
                return holes, start, goal, policy
        raise RuntimeError("could not generate a frozen lake")  # never seen; the loop has ample tries

    def draw(self) -> str:
        """The lake in RAGEN's symbols (X: you in a hole, √: you on the goal)."""
        lines = []
        for r in range(self.size):
            row = []
            for c in range(self.size):
                cell = (r, c)
                if cell == self.pos:
                    row.append("X" if cell in self.holes else "√" if cell == self.goal else "P")
                else:
                    row.append("O" if cell in self.holes else "G" if cell == self.goal else "_")
            lines.append("".join(row))
        return "\n".join(lines)

    def play(self, action: list[str]) -> StepResult:
        """Take the moves in order (each may slip); stop at the goal, in a hole or when the budget runs out."""
        shown: list[str] = []
        for move in self.budgeted(action):
            outs = outcomes(self.size, self.pos, move, self.slip)
            pick = 0
            if self.slip > 0:
                # One draw per move, always: the same seed and moves give the same slips.
                u = float(self.np_random.random())
                while pick < len(outs) - 1 and u >= outs[pick][1]:
                    u -= outs[pick][1]
                    pick += 1
            nxt, _, taken = outs[pick]
            if taken != move:
                self.slips += 1
                shown.append(f"{move} (slipped {taken})")
            elif nxt == self.pos:
                shown.append(f"{move} (edge of the lake)")
            else:
                shown.append(move)
            self.pos = nxt
            if self.pos in self.holes or self.pos == self.goal:
                break
        text = f"Moved {', '.join(shown)}." if shown else "No move made."
        info = {"moves_used": self.moves_used, "slips": self.slips}
        if self.pos == self.goal:
            self.won = True
            text += f" You reached the goal in {self.moves_used} moves."
            return StepResult([user(text)], 1.0, terminated=True, info={**info, "success": True})
        if self.pos in self.holes:
            text += " You fell through a hole."
            return StepResult(
                [user(text + "\n" + self.draw())], 0.0, terminated=True, info={**info, "success": False}
            )
        left = self.max_moves - self.moves_used
        if left == 0:
            text += " No moves left."
            return StepResult(
                [user(text + "\n" + self.draw())], 0.0, terminated=True, info={**info, "success": False}
            )
        return StepResult([user(f"{text} {left} moves left.\n{self.draw()}")], info=info)

    def expert_action(self) -> str:
        """The almost-sure winning policy's move (a few moves of a shortest path when the ice does not slip)."""
        if self.pos not in self.policy:
            return "up"  # only after a fall, when the game is over anyway
        if self.slip > 0:
            return self.policy[self.pos][0]
        moves, pos = [], self.pos
        while pos != self.goal and len(moves) < self.expert_moves_per_turn:
            move = self.policy[pos][0]
            moves.append(move)
            pos = outcomes(self.size, pos, move, 0.0)[0][0]
        return " ".join(moves)
