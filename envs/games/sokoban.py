"""sokoban-v0: push every box onto a target in a warehouse drawn as text (RAGEN's Sokoban benchmark).

Levels follow the recipe RAGEN takes from gym-sokoban (`ragen/env/sokoban/env.py`, `generate_room`):
carve a room by a random walk, put the boxes on their targets, then play backwards (the player walks
and *pulls* boxes off the targets). Every pull reversed is a push, so a level made this way is solvable;
each one is also solved by the breadth-first push solver below before it is used, and that solver is
the scripted expert. The drawing uses RAGEN's symbols (`# _ O X √ P S`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, ClassVar

from envs.core.step_result import StepResult
from envs.games.grid_game import GridMoves
from envs.games.grid_moves import STEPS
from envs.games.text_game import TextGame
from turngym.chat.message import system, user

Cell = tuple[int, int]
LEGEND = "# wall, _ floor, O target, X box, √ box on a target, P you, S you on a target"


def _add(cell: Cell, d: tuple[int, int], k: int = 1) -> Cell:
    return cell[0] + k * d[0], cell[1] + k * d[1]


def carve_room(rng, rows: int, cols: int, floor_cells: int) -> set[Cell]:
    """Floor cells carved by a random walk inside a rows x cols room whose border is wall."""
    interior = (rows - 2) * (cols - 2)
    floor_cells = min(floor_cells, interior)
    pos = (1 + int(rng.integers(rows - 2)), 1 + int(rng.integers(cols - 2)))
    floor = {pos}
    direction = list(STEPS.values())[int(rng.integers(4))]
    while len(floor) < floor_cells:
        if rng.random() < 0.35:
            direction = list(STEPS.values())[int(rng.integers(4))]
        nxt = _add(pos, direction)
        if 1 <= nxt[0] <= rows - 2 and 1 <= nxt[1] <= cols - 2:
            pos = nxt
            floor.add(pos)
    return floor


def reachable(floor: set[Cell], boxes: Iterable[Cell], start: Cell) -> set[Cell]:
    """Cells the player can walk to from `start` without pushing a box."""
    blocked = set(boxes)
    seen = {start}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for d in STEPS.values():
            nxt = _add(cell, d)
            if nxt in floor and nxt not in blocked and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def walk(floor: set[Cell], boxes: Iterable[Cell], start: Cell, goal: Cell) -> list[str] | None:
    """The moves of a shortest walk from `start` to `goal` that pushes nothing (None if there is none)."""
    blocked = set(boxes)
    came: dict[Cell, tuple[Cell, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            moves: list[str] = []
            while (link := came[cell]) is not None:
                cell, name = link
                moves.append(name)
            return moves[::-1]
        for name, d in STEPS.items():
            nxt = _add(cell, d)
            if nxt in floor and nxt not in blocked and nxt not in came:
                came[nxt] = (cell, name)
                queue.append(nxt)
    return None


def live_squares(floor: set[Cell], targets: Iterable[Cell]) -> set[Cell]:
    """Squares from which a lone box can still be pushed onto some target (the rest are dead ends)."""
    live = set(targets)
    queue = deque(live)
    while queue:
        cell = queue.popleft()
        for d in STEPS.values():
            # A box at cell+d is pushed onto cell by a player standing at cell+2d.
            src, stand = _add(cell, d), _add(cell, d, 2)
            if src in floor and stand in floor and src not in live:
                live.add(src)
                queue.append(src)
    return live


def solve(
    floor: set[Cell],
    targets: Iterable[Cell],
    boxes: Iterable[Cell],
    player: Cell,
    max_states: int = 200_000,
) -> list[str] | None:
    """A solution with the fewest pushes (breadth-first search over pushes), as moves; None if unsolvable."""
    targets = frozenset(targets)
    start_boxes = frozenset(boxes)
    if start_boxes == targets:
        return []
    live = live_squares(floor, targets)
    if any(b not in live for b in start_boxes):
        return None

    # A state is the boxes and the player's region (named by its smallest cell): where in the region the
    # player stands does not change which pushes are possible.
    region = reachable(floor, start_boxes, player)
    first = (start_boxes, min(region))
    # state key -> (previous key, box pushed, direction, player cell after the push)
    parents: dict[Any, tuple[Any, Cell, str, Cell] | None] = {first: None}
    queue = deque([(start_boxes, region, first)])
    while queue:
        bx, region, k = queue.popleft()
        for box in sorted(bx):
            for name, d in STEPS.items():
                stand, dest = _add(box, d, -1), _add(box, d)
                if stand not in region or dest not in live or dest in bx:
                    continue
                nb = (bx - {box}) | {dest}
                new_region = reachable(floor, nb, box)
                nk = (nb, min(new_region))
                if nk in parents:
                    continue
                parents[nk] = (k, box, name, box)
                if nb == targets:
                    return _moves_of(floor, parents, nk, start_boxes, player)
                if len(parents) > max_states:
                    return None
                queue.append((nb, new_region, nk))
    return None


def _moves_of(floor, parents, last, boxes: frozenset[Cell], player: Cell) -> list[str]:
    pushes = []
    k = last
    while (link := parents[k]) is not None:
        k, box, name, _ = link
        pushes.append((box, name))
    moves: list[str] = []
    current = set(boxes)
    for box, name in reversed(pushes):
        d = STEPS[name]
        path = walk(floor, current, player, _add(box, d, -1))
        assert path is not None  # the search only pushes from cells the player can reach
        moves.extend(path)
        moves.append(name)
        current.remove(box)
        current.add(_add(box, d))
        player = box
    return moves


def apply_moves(
    floor: set[Cell], boxes: frozenset[Cell], player: Cell, moves: Iterable[str]
) -> tuple[frozenset[Cell], Cell]:
    """The boxes and player after `moves` (blocked moves leave everything where it was)."""
    bx = set(boxes)
    for name in moves:
        d = STEPS[name]
        nxt = _add(player, d)
        if nxt not in floor:
            continue
        if nxt in bx:
            beyond = _add(nxt, d)
            if beyond not in floor or beyond in bx:
                continue
            bx.remove(nxt)
            bx.add(beyond)
        player = nxt
    return frozenset(bx), player


class SokobanEnv(GridMoves, TextGame[list[str]]):
    """Push every box (X) onto a target (O); the player (P) walks and pushes, never pulls.

    Text action: moves up/down/left/right (also u/d/l/r, n/s/e/w, north/south/east/west) separated by
    spaces or commas, applied in order, as one block of move lines (two blocks split by prose are a format
    error). A move into a wall, or pushing a box into a wall or another box, uses one move, does nothing
    and stops the rest of the reply. Tool: `move(directions)` as in maze-v0.

    Reward at the end: 1.0 when every box is on a target; when the move budget runs out, 0.25 x the share
    of boxes on targets. Levels: easy 6x6 with one box, medium 7x7 with two, hard 8x8 with three (walls
    included), each generated by reverse play and checked by the solver.
    """

    difficulties = {
        "easy": {"rows": 6, "cols": 6, "boxes": 1, "floor": 11, "min_pushes": 2, "max_moves": 40},
        "medium": {"rows": 7, "cols": 7, "boxes": 2, "floor": 18, "min_pushes": 4, "max_moves": 80},
        "hard": {"rows": 8, "cols": 8, "boxes": 3, "floor": 25, "min_pushes": 7, "max_moves": 120},
    }
    default_difficulty = "easy"
    action_tool_description = "Walk (and push boxes): one or more steps, applied in order."
    #: Reverse-play walks tried per room; the one that moves the boxes farthest is kept.
    _WALKS_PER_ROOM: ClassVar[int] = 8

    def _start(self, params: dict[str, Any]):
        self.rows, self.cols = params["rows"], params["cols"]
        self.floor, self.targets, self.boxes, self.player, self.solution = self._generate(params)
        self.num_boxes = params["boxes"]
        self.max_moves = params["max_moves"]
        self.moves_used = 0
        self.pushes = 0
        self._plan: list[str] = []
        self._plan_state: tuple[frozenset[Cell], Cell] | None = None
        prompt = (
            f"Push every box onto a target. {LEGEND}. Reply with moves: up, down, left or right, separated "
            f"by spaces; you push a box by walking into it, and boxes cannot be pulled. You have "
            f"{self.max_moves} moves.\n{self.draw()}"
        )
        opening = [system("You are solving a Sokoban puzzle."), user(prompt)]
        return opening, {
            "boxes": self.num_boxes,
            "max_moves": self.max_moves,
            "solution_length": len(self.solution),
        }

    def _generate(self, params: dict[str, Any]):
        rng = self.np_random
        rows, cols, n = params["rows"], params["cols"], params["boxes"]
        for _ in range(1000):
            floor = carve_room(rng, rows, cols, params["floor"])
            cells = sorted(floor)
            if len(cells) < n + 2:
                continue
            picks = rng.permutation(len(cells))
            targets = frozenset(cells[int(i)] for i in picks[:n])
            start = cells[int(picks[n])]
            best = None
            for _ in range(self._WALKS_PER_ROOM):
                boxes, player = self._reverse_play(rng, floor, targets, start, steps=6 * len(cells))
                if boxes & targets:
                    continue  # every box must start off the targets
                spread = sum(min(abs(b[0] - t[0]) + abs(b[1] - t[1]) for t in targets) for b in boxes)
                if best is None or spread > best[0]:
                    best = (spread, boxes, player)
            if best is None:
                continue
            _, boxes, player = best
            solution = solve(floor, targets, boxes, player)
            pushes = None if solution is None else _count_pushes(floor, boxes, player, solution)
            if solution is not None and pushes >= params["min_pushes"]:
                return floor, targets, boxes, player, solution
        raise RuntimeError("could not generate a Sokoban level")  # never seen; the loop has ample tries

    @staticmethod
    def _reverse_play(rng, floor: set[Cell], targets: frozenset[Cell], player: Cell, steps: int):
        boxes = set(targets)
        names = list(STEPS)
        for _ in range(steps):
            d = STEPS[names[int(rng.integers(4))]]
            nxt = _add(player, d)
            if nxt not in floor or nxt in boxes:
                continue
            behind = _add(player, d, -1)
            if behind in boxes and rng.random() < 0.7:
                boxes.remove(behind)
                boxes.add(player)
            player = nxt
        return frozenset(boxes), player

    def draw(self) -> str:
        """The warehouse in RAGEN's symbols."""
        lines = []
        for r in range(self.rows):
            row = []
            for c in range(self.cols):
                cell = (r, c)
                target = cell in self.targets
                if cell == self.player:
                    row.append("S" if target else "P")
                elif cell in self.boxes:
                    row.append("√" if target else "X")
                elif cell in self.floor:
                    row.append("O" if target else "_")
                else:
                    row.append("#")
            lines.append("".join(row))
        return "\n".join(lines)

    def play(self, action: list[str]) -> StepResult:
        """Walk and push in order; stop at a blocked move, when solved, or when the budget runs out."""
        made: list[str] = []
        blocked = None
        for name in self.budgeted(action):
            d = STEPS[name]
            nxt = _add(self.player, d)
            if nxt not in self.floor:
                blocked = f"Wall {name}"
                break
            if nxt in self.boxes:
                beyond = _add(nxt, d)
                if beyond not in self.floor or beyond in self.boxes:
                    blocked = f"The box {name} cannot move"
                    break
                self.boxes = (self.boxes - {nxt}) | {beyond}
                self.pushes += 1
            self.player = nxt
            made.append(name)
            if self.boxes == self.targets:
                break
        parts = [f"Moved {' '.join(made)}." if made else "No move made."]
        if blocked:
            parts.append(f"{blocked}; stopped.")
        on_target = len(self.boxes & self.targets)
        info = {"boxes_on_target": on_target, "moves_used": self.moves_used, "pushes": self.pushes}
        if self.boxes == self.targets:
            self.won = True
            parts.append(f"Every box is on a target after {self.moves_used} moves.")
            return StepResult([user(" ".join(parts))], 1.0, terminated=True, info={**info, "success": True})
        left = self.max_moves - self.moves_used
        if left == 0:
            parts.append(f"No moves left; {on_target} of {self.num_boxes} boxes on targets.")
            reward = 0.25 * on_target / self.num_boxes
            return StepResult(
                [user(" ".join(parts) + "\n" + self.draw())],
                reward,
                terminated=True,
                info={**info, "success": False},
            )
        parts.append(f"{on_target} of {self.num_boxes} boxes on targets; {left} moves left.")
        return StepResult([user(" ".join(parts) + "\n" + self.draw())], info=info)

    def expert_action(self) -> str:
        """The next moves of a fewest-pushes solution (breadth-first push search from the current state)."""
        state = (self.boxes, self.player)
        if state != self._plan_state or not self._plan:
            self._plan = solve(self.floor, self.targets, self.boxes, self.player) or []
        if not self._plan:
            # Unsolvable now (a box pushed into a dead end): any legal-looking reply keeps the game going.
            self._plan_state = None
            return "up"
        moves, self._plan = self._plan[: self.expert_moves_per_turn], self._plan[self.expert_moves_per_turn :]
        self._plan_state = apply_moves(self.floor, self.boxes, self.player, moves)
        return " ".join(moves)


def _count_pushes(floor: set[Cell], boxes: frozenset[Cell], player: Cell, moves: list[str]) -> int:
    pushes = 0
    bx = boxes
    for name in moves:
        nb, player = apply_moves(floor, bx, player, [name])
        pushes += nb != bx
        bx = nb
    return pushes
