"""A minimal OpenEnv server (openenv-core 0.3.0's protocol, written from its source) for the adapter's tests.

`python tests/envs/openenv_server.py --port N` serves three OpenEnv envs, one per path prefix (OpenEnv
serves one env per server; a prefix stands for a server): `/guess` (a text action), `/grid` (an action of
a tag and a number: no single text field) and `/faulty` (answers the way broken servers do). Each has
`/health`, `/schema`, `/metadata` and the `/ws` session protocol: `{"type": "reset"|"step"|"state"|
"close", "data"}` in, `{"type": "observation"|"state"|"error", "data"}` out, with OpenEnv's error codes,
pydantic action models (`extra="forbid"`), `serialize_observation`'s shape and its capacity refusal.
openenv-core itself is not installed: it pulls gradio, fastmcp and an older pillow than the project's.
"""

from __future__ import annotations

import argparse
import inspect
import json
import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Action(BaseModel):
    """openenv.core.env_server.types.Action."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    """openenv.core.env_server.types.Observation."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    done: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class State(BaseModel):
    """openenv.core.env_server.types.State."""

    model_config = ConfigDict(extra="allow")
    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


# ----- /guess: find a number from 1 to 20 in 5 guesses ------------------------------------------------
class GuessAction(Action):
    guess: str = Field(..., description="Your guess, a whole number")


class GuessObservation(Observation):
    prompt: str = ""


class GuessEnv:
    def __init__(self) -> None:
        self.target, self.left, self.state = 0, 0, State()

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> GuessObservation:
        self.target = random.Random(seed).randint(1, 20)
        self.left, self.state = 5, State(episode_id=episode_id or "guess", step_count=0)
        return GuessObservation(prompt="Guess my number from 1 to 20. You have 5 guesses.")

    def step(self, action: GuessAction) -> GuessObservation:
        self.state.step_count += 1
        self.left -= 1
        try:
            guess = int(action.guess.strip())
        except ValueError:
            return GuessObservation(
                prompt=f"{action.guess!r} is not a number.", reward=-0.5, done=self.left == 0
            )
        if guess == self.target:
            return GuessObservation(prompt="Correct!", reward=1.0, done=True)
        hint = "higher" if self.target > guess else "lower"
        return GuessObservation(prompt=f"{guess} is wrong, go {hint}.", reward=0.0, done=self.left == 0)


# ----- /grid: walk from (0, 0) to (2, 1) ------------------------------------------------------------
class MoveAction(Action):
    direction: Literal["up", "down", "left", "right"]
    steps: int = Field(1, ge=1, le=3)


class GridObservation(Observation):
    position: list[int] = Field(default_factory=list)
    goal: list[int] = Field(default_factory=list)


class GridEnv:
    GOAL = [2, 1]

    def __init__(self) -> None:
        self.position, self.state = [0, 0], State()

    def reset(self) -> GridObservation:
        self.position, self.state = [0, 0], State(episode_id="grid")
        return GridObservation(position=self.position, goal=self.GOAL)

    def step(self, action: MoveAction) -> GridObservation:
        self.state.step_count += 1
        dx, dy = {"up": (0, 1), "down": (0, -1), "left": (-1, 0), "right": (1, 0)}[action.direction]
        self.position = [self.position[0] + dx * action.steps, self.position[1] + dy * action.steps]
        done = self.position == self.GOAL
        return GridObservation(
            position=self.position, goal=self.GOAL, reward=1.0 if done else None, done=done
        )


# ----- /faulty: the message names the fault ---------------------------------------------------------
class SayAction(Action):
    message: str


class SayObservation(Observation):
    echoed: str = ""


class FaultyEnv:
    def __init__(self) -> None:
        self.state = State()

    def reset(self) -> SayObservation:
        return SayObservation(echoed="ready")

    def step(self, action: SayAction) -> SayObservation:
        if action.message == "raise":
            raise RuntimeError("the env fell over")
        return SayObservation(echoed=action.message, reward=0.5)


#: Raw answers for `/faulty` step messages, sent instead of the env's observation.
FAULTS = {
    "nonjson": "this is not JSON",
    "noobs": json.dumps({"type": "observation", "data": {"reward": 1.0, "done": False}}),
    "badreward": json.dumps({"type": "observation", "data": {"observation": {}, "reward": "lots"}}),
    "baddone": json.dumps({"type": "observation", "data": {"observation": {}, "done": "maybe"}}),
    "wrongtype": json.dumps({"type": "state", "data": {}}),
}

ENVS = {
    "guess": (GuessEnv, GuessAction, GuessObservation),
    "grid": (GridEnv, MoveAction, GridObservation),
    "faulty": (FaultyEnv, SayAction, SayObservation),
}


def serialize_observation(observation: Observation) -> dict[str, Any]:
    """openenv.core.env_server.serialization.serialize_observation."""
    fields = observation.model_dump(exclude={"reward", "done", "metadata"})
    return {"observation": fields, "reward": observation.reward, "done": observation.done}


def _valid_kwargs(method, data: dict[str, Any]) -> dict[str, Any]:
    # OpenEnv passes on only the reset arguments the env's signature takes.
    params = inspect.signature(method).parameters
    return {k: v for k, v in data.items() if k in params}


def create_app(max_sessions: int):
    """The Starlette app: each env under its prefix, sessions over `/ws`."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route, WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    active = {"sessions": 0}

    def mount(name: str) -> Mount:
        env_cls, action_cls, observation_cls = ENVS[name]

        async def health(_request):
            return JSONResponse({"status": "healthy"})

        async def schema(_request):
            return JSONResponse(
                {
                    "action": action_cls.model_json_schema(),
                    "observation": observation_cls.model_json_schema(),
                    "state": State.model_json_schema(),
                }
            )

        async def metadata(_request):
            return JSONResponse({"name": name, "description": f"test env {name}"})

        async def session(websocket):
            await websocket.accept()
            if active["sessions"] >= max_sessions:
                await _send(websocket, "error", {"message": "server at capacity", "code": "CAPACITY_REACHED"})
                await websocket.close()
                return
            active["sessions"] += 1
            env = env_cls()
            try:
                while True:
                    raw = await websocket.receive_text()
                    try:
                        message = json.loads(raw)
                    except json.JSONDecodeError as exc:
                        await _send(
                            websocket, "error", {"message": f"Invalid JSON: {exc}", "code": "INVALID_JSON"}
                        )
                        continue
                    kind, data = message.get("type"), message.get("data") or {}
                    try:
                        if kind == "reset":
                            observation = env.reset(**_valid_kwargs(env.reset, data))
                            await _send(websocket, "observation", serialize_observation(observation))
                        elif kind == "step":
                            action = action_cls.model_validate(data)
                            fault = getattr(action, "message", None) if name == "faulty" else None
                            if fault == "hang":
                                # Never answers: waits for the client to go away.
                                while True:
                                    await websocket.receive_text()
                            elif fault == "drop":
                                await websocket.close()
                                return
                            elif fault in FAULTS:
                                await websocket.send_text(FAULTS[fault])
                            else:
                                await _send(websocket, "observation", serialize_observation(env.step(action)))
                        elif kind == "state":
                            await _send(websocket, "state", env.state.model_dump())
                        elif kind == "close":
                            break
                        else:
                            await _send(
                                websocket,
                                "error",
                                {"message": f"Unknown message type: {kind}", "code": "UNKNOWN_TYPE"},
                            )
                    except ValidationError as exc:
                        errors = exc.errors(include_url=False, include_context=False, include_input=False)
                        data = {"message": "Invalid message", "code": "VALIDATION_ERROR", "errors": errors}
                        await _send(websocket, "error", data)
                    except Exception as exc:
                        await _send(websocket, "error", {"message": str(exc), "code": "EXECUTION_ERROR"})
            except WebSocketDisconnect:
                pass
            finally:
                active["sessions"] -= 1

        return Mount(
            f"/{name}",
            routes=[
                Route("/health", health),
                Route("/schema", schema),
                Route("/metadata", metadata),
                WebSocketRoute("/ws", session),
            ],
        )

    async def sessions(_request):
        return JSONResponse(active)

    return Starlette(routes=[Route("/sessions", sessions), *(mount(name) for name in ENVS)])


async def _send(websocket, kind: str, data: dict[str, Any]) -> None:
    await websocket.send_text(json.dumps({"type": kind, "data": data}, default=str))


def main() -> None:
    """Serve on loopback until killed."""
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-sessions", type=int, default=4)
    args = parser.parse_args()
    uvicorn.run(create_app(args.max_sessions), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
