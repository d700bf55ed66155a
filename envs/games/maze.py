"""maze-v0: walk from A to G through a grid maze drawn as text."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from envs.core.number_bounds import check_env_numbers
from envs.core.step_result import StepResult
from envs.games.grid_game import GridMoves
from envs.games.grid_moves import STEPS
from envs.games.text_game import TextGame
from turngym.chat.message import system, user

Cell = tuple[int, int]


def generate_maze(rng, rows: int, cols: int) -> list[list[str]]:
    """A perfect maze of rows x cols rooms by randomized depth-first search, as a (2r+1) x (2c+1) grid."""
    grid = [["#"] * (2 * cols + 1) for _ in range(2 * rows + 1)]
    start = (int(rng.integers(rows)), int(rng.integers(cols)))
    seen = {start}
    stack = [start]
    grid[2 * start[0] + 1][2 * start[1] + 1] = "."
    while stack:
        r, c = stack[-1]
        options = [
            (r + dr, c + dc)
            for dr, dc in STEPS.values()
            if 0 <= r + dr < rows and 0 <= c + dc < cols and (r + dr, c + dc) not in seen
        ]
        if not options:
            stack.pop()
            continue
        nr, nc = options[int(rng.integers(len(options)))]
        grid[r + nr + 1][c + nc + 1] = "."  # the wall between the two rooms
        grid[2 * nr + 1][2 * nc + 1] = "."
        seen.add((nr, nc))
        stack.append((nr, nc))
    return grid


def open_walls(rng, grid: list[list[str]], wall_density: float) -> None:
    """Open each wall between two rooms with probability ``1 - wall_density``, in place.

    A perfect maze (``generate_maze``) has one path between any two rooms; opening walls adds
    shortcuts and loops, so the shortest path gets shorter and a wandering walk finds the goal sooner.
    Pillars (even row, even column) and the outer wall stay: the map stays readable as a grid of rooms.
    """
    for r in range(1, len(grid) - 1):
        for c in range(1, len(grid[0]) - 1):
            if (r + c) % 2 == 1 and grid[r][c] == "#" and rng.random() >= wall_density:
                grid[r][c] = "."


def shortest_path(grid: list[list[str]], start: Cell, goal: Cell) -> list[str]:
    """The moves of a shortest path from `start` to `goal` (breadth-first search)."""
    came: dict[Cell, tuple[Cell, str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            break
        for name, (dr, dc) in STEPS.items():
            nxt = (cell[0] + dr, cell[1] + dc)
            if nxt not in came and grid[nxt[0]][nxt[1]] != "#":
                came[nxt] = (cell, name)
                queue.append(nxt)
    if goal not in came:
        raise ValueError(f"{goal} is not reachable from {start}")
    moves: list[str] = []
    cell = goal
    while (link := came[cell]) is not None:
        cell, name = link
        moves.append(name)
    return moves[::-1]


def distances(grid: list[list[str]], start: Cell) -> dict[Cell, int]:
    """Steps from `start` to every reachable floor square."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in STEPS.values():
            nxt = (r + dr, c + dc)
            if nxt not in dist and grid[nxt[0]][nxt[1]] != "#":
                dist[nxt] = dist[(r, c)] + 1
                queue.append(nxt)
    return dist


class MazeEnv(GridMoves, TextGame[list[str]]):
    """Walk the agent A to the goal G in a maze drawn as text (`#` wall, `.` floor); the map is fully visible.

    Text action: one or more moves separated by spaces or commas, applied in order: up/down/left/right
    (also u/d/l/r, n/s/e/w, north/south/east/west), on one line or on consecutive lines made only of moves;
    prose lines are ignored, and two lists of moves separated by prose are a format error.
    A move into a wall stops the rest of that reply (it still uses one move of the budget). Tool:
    `move(directions: list of "up"/"down"/"left"/"right")` (a single direction string also works).

    Reward at the end: reaching G scores 1.0 on a shortest path, less by 0.5 x extra steps / shortest path
    length (at least 0.5). Using up the move budget ends the game with up to 0.25 for progress: the closest
    the agent came to G relative to where it started (path distance).

    Difficulty knobs (over the difficulty's parameters; a curriculum turns them, see
    `difficulty_ladder`): `size` rooms per side (2-12), `wall_density` the share of the walls between
    rooms kept (1: a perfect maze, the default; 0: an open grid of rooms). Training-only shaping:
    `progress_reward` pays this share of a full reward for each step that brings A closer to G than it
    has been (path distance over the start's): a win collects exactly `progress_reward`, so it ranks the
    losses by how far they got and changes no text and no success.
    """

    difficulties = {
        "easy": {"rows": 3, "cols": 3, "max_moves": 30},
        "medium": {"rows": 5, "cols": 5, "max_moves": 80},
        "hard": {"rows": 7, "cols": 7, "max_moves": 150},
    }
    action_tool_description = "Move through the maze: one or more steps, applied in order."
    client_kwargs = ("difficulty", "action_tool", "size", "wall_density")
    #: How `info["behaviour"]`'s counts become rates (envs/baselines/behaviour.py).
    behaviour_rates = {
        "legal_move_rate": ("legal_moves", "moves"),
        "repeat_rate": ("repeats", "moves"),
    }

    def __init__(
        self,
        *,
        size: int | None = None,
        wall_density: float | None = None,
        progress_reward: float = 0.0,
        **kwargs: Any,
    ):
        if size is not None or wall_density is not None or progress_reward:  # defaults: no look-up per make
            check_env_numbers(
                type(self).__name__, size=size, wall_density=wall_density, progress_reward=progress_reward
            )
        self.size = None if size is None else int(size)
        self.wall_density = None if wall_density is None else float(wall_density)
        self.progress_reward = float(progress_reward)
        super().__init__(**kwargs)

    @classmethod
    def difficulty_ladder(cls, difficulty: str | None = None) -> list[dict[str, Any]]:
        """Knob settings from an open 2x2 grid up to the game at `difficulty` (the last entry, `{}`).

        Args:
            difficulty: the game the ladder ends at (default: the class's default difficulty).

        Returns:
            Kwargs per level, easiest first; each level is a bigger or more walled maze than the one before.

        >>> MazeEnv.difficulty_ladder("easy")
        [{'size': 2, 'wall_density': 0.0}, {'size': 2, 'wall_density': 1.0}, {'size': 3, 'wall_density': 0.0}, {'size': 3, 'wall_density': 0.5}, {}]
        """
        params = cls.difficulties[difficulty or cls.default_difficulty]
        top = min(params["rows"], params["cols"])
        ladder: list[dict[str, Any]] = []
        for size in range(2, top + 1):
            densities = (0.0, 1.0) if size == 2 else (0.0, 0.5, 1.0)
            ladder += [{"size": size, "wall_density": d} for d in densities]
        return ladder[:-1] + [{}]  # the top is the game itself, with its own size and walls

    def _start(self, params: dict[str, Any]):
        if self.size is not None:
            params["rows"] = params["cols"] = self.size
        self.grid = generate_maze(self.np_random, params["rows"], params["cols"])
        if self.wall_density is not None and self.wall_density < 1.0:
            # Drawn after the perfect maze, so wall_density=1 (or none) plays the very same episodes.
            open_walls(self.np_random, self.grid, self.wall_density)
        rooms = [(2 * r + 1, 2 * c + 1) for r in range(params["rows"]) for c in range(params["cols"])]
        self.pos = rooms[int(self.np_random.integers(len(rooms)))]
        from_start = distances(self.grid, self.pos)
        # The goal is a room at least half as far as the farthest one, so no maze is trivially short.
        far = max(from_start[room] for room in rooms)
        goals = [room for room in rooms if 2 * from_start[room] >= far and room != self.pos]
        self.goal = goals[int(self.np_random.integers(len(goals)))]
        self.to_goal = distances(self.grid, self.goal)
        self.shortest = self.to_goal[self.pos]
        self.closest = self.shortest
        self.max_moves = params["max_moves"]
        self.moves_used = 0
        self.steps_taken = 0
        # Behaviour counts (info["behaviour"]): moves tried, moves not into a wall, moves onto a square
        # visited before (walking back and forth).
        self._moves = self._legal_moves = self._repeats = 0
        self._visited = {self.pos}
        prompt = (
            f"Move A to G. # is wall, . is floor. Reply with moves: up, down, left or right, "
            f"separated by spaces. You have {self.max_moves} moves.\n{self.draw()}"
        )
        opening = [system("You are in a maze."), user(prompt)]
        return opening, {"shortest": self.shortest, "max_moves": self.max_moves}

    def draw(self) -> str:
        """The map with the agent (A) and the goal (G)."""
        rows = [list(row) for row in self.grid]
        rows[self.goal[0]][self.goal[1]] = "G"
        rows[self.pos[0]][self.pos[1]] = "A"
        return "\n".join("".join(row) for row in rows)

    def play(self, action: list[str]) -> StepResult:
        """Walk the moves in order; stop at a wall, at G, or when the move budget runs out."""
        made: list[str] = []
        blocked = None
        closest_before = self.closest
        for direction in self.budgeted(action):
            dr, dc = STEPS[direction]
            nxt = (self.pos[0] + dr, self.pos[1] + dc)
            self._moves += 1
            if self.grid[nxt[0]][nxt[1]] == "#":
                blocked = direction
                break
            self._legal_moves += 1
            self._repeats += nxt in self._visited
            self._visited.add(nxt)
            self.pos = nxt
            self.steps_taken += 1
            made.append(direction)
            self.closest = min(self.closest, self.to_goal[self.pos])
            if self.pos == self.goal:
                break
        # Only a new closest approach pays, so walking back and forth earns nothing.
        shaping = self.progress_reward * (closest_before - self.closest) / self.shortest
        parts = [f"Moved {' '.join(made)}." if made else "No move made."]
        if blocked:
            parts.append(f"Wall {blocked}; stopped.")
        if self.pos == self.goal:
            self.won = True
            extra = self.steps_taken - self.shortest
            reward = max(0.5, 1.0 - 0.5 * extra / self.shortest)
            parts.append(f"You reached G in {self.steps_taken} steps (shortest {self.shortest}).")
            return StepResult(
                [user(" ".join(parts))],
                reward + shaping,
                terminated=True,
                info={
                    "success": True,
                    "steps": self.steps_taken,
                    "shortest": self.shortest,
                    "behaviour": self.behaviour(),
                },
            )
        left = self.max_moves - self.moves_used
        if left == 0:
            reward = 0.25 * (1.0 - self.closest / self.shortest)
            parts.append("No moves left.")
            return StepResult(
                [user(" ".join(parts) + "\n" + self.draw())],
                reward + shaping,
                terminated=True,
                info={
                    "success": False,
                    "steps": self.steps_taken,
                    "shortest": self.shortest,
                    "behaviour": self.behaviour(),
                },
            )
        parts.append(f"{left} moves left.")
        return StepResult(
            [user(" ".join(parts) + "\n" + self.draw())], shaping, info={"behaviour": self.behaviour()}
        )

    def behaviour(self) -> dict[str, int]:
        """This episode's move counts so far (`behaviour_rates` makes rates).

        `moves`: directions tried; `legal_moves`: those not into a wall; `repeats`: steps onto a square
        visited before in this episode.

        >>> env = MazeEnv(difficulty="easy", action_tool=False)
        >>> _ = env.reset(seed=0)
        >>> sorted(env.behaviour())
        ['legal_moves', 'moves', 'repeats']
        """
        return {"moves": self._moves, "legal_moves": self._legal_moves, "repeats": self._repeats}

    def expert_action(self) -> str:
        """The next few moves of a shortest path (breadth-first search on the visible map)."""
        path = shortest_path(self.grid, self.pos, self.goal)
        return " ".join(path[: self.expert_moves_per_turn]) or "up"

    def random_action(self, rng: random.Random) -> str:
        """One direction drawn uniformly, ignoring the map (a wall is a wasted turn, as for a model)."""
        return rng.choice(("up", "down", "left", "right"))
