"""The env registry: `register`, `make`, `list_envs`; every id is mirrored into Gymnasium as `turngym/<id>`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium

from envs.errors import UnknownEnvError
from envs.protocol import EnvProtocol
from envs.wrappers import EpisodeLimits
from tools.registration import Registry, check_entry_point, load_entry_point

GYM_NAMESPACE = "turngym"
# `name-vN`: lowercase, mirrored into Gymnasium as `turngym/name-vN`.
_PLAIN_ID = re.compile(r"^[a-z0-9][a-z0-9\-_.]*-v\d+$")
# `namespace/Name-vN[-variant]`: ids taken verbatim from another suite (`textarena/Sudoku-v0`,
# `textarena/2048-v0-3x3`), already valid Gymnasium ids, so mirrored as themselves. The variant after the
# version is TextArena's convention; Gymnasium reads such an id as an unversioned name.
_NAMESPACED_ID = re.compile(
    r"^(?P<namespace>[a-z0-9][a-z0-9\-_]*)/[A-Za-z0-9][A-Za-z0-9\-_.]*-v\d+(?:-[A-Za-z0-9\-_.]+)?$"
)


@dataclass(frozen=True)
class EnvSpec:
    """How to build one registered env, and how it is described in listings."""

    id: str
    entry_point: str | Callable[..., Any]
    category: str = "misc"
    description: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_turns: int | None = None
    format_penalty: float = 0.1

    @property
    def gym_id(self) -> str:
        """The id under which Gymnasium knows this env: `turngym/<id>`, or a namespaced id itself."""
        return self.id if "/" in self.id else f"{GYM_NAMESPACE}/{self.id}"

    def load(self) -> Callable[..., Any]:
        """The env class or factory behind `entry_point` (imported once, then cached)."""
        return load_entry_point(self.entry_point)


_REGISTRY: Registry[EnvSpec] = Registry(
    "env",
    unknown_error=UnknownEnvError,
    listing=lambda r: f"`python -m envs list` shows all {len(r)} envs.",
)
_UNSET = object()

#: `envs.make("openenv", base_url=...)`: an OpenEnv server played as a turngym env. Not registered: it
#: needs a server URL, and `python -m envs serve` must not connect to URLs its clients name.
OPENENV_ID = "openenv"
_OPENENV_SPEC = EnvSpec(
    OPENENV_ID,
    "envs.remote.openenv_env:OpenEnvEnv",
    category="remote",
    description="An OpenEnv server's /ws session as a text env (base_url=http://host:port).",
)

# TextEnv's own limits: env classes need not list them in their constructors, `make` applies them after.
TURN_LIMIT_KWARGS = ("max_action_chars", "max_tool_calls_per_turn", "max_tool_time_s")

# `make(id)` with no arguments (verl's agent loop: a fresh env per episode), by id: what the full path
# found (spec, factory, Gymnasium's spec, its id), so the next such call builds the env at once.
_PLAIN_MAKES: dict[str, tuple[EnvSpec, Callable[..., Any], Any, str]] = {}


def register(
    id: str,
    entry_point: str | Callable[..., Any],
    *,
    category: str = "misc",
    description: str = "",
    max_turns: int | None = None,
    format_penalty: float = 0.1,
    **kwargs: Any,
) -> EnvSpec:
    """Register an env under `id` (`name-vN`, or `namespace/Name-vN[-variant]`); `kwargs` become its defaults.

    Registering an id again with a different spec replaces the earlier one with a warning, as
    Gymnasium's `register` does.
    """
    check_env_id(id)
    check_entry_point(entry_point)
    spec = EnvSpec(id, entry_point, category, description, dict(kwargs), max_turns, format_penalty)
    # Gymnasium would warn again about its mirror `turngym/<id>`: one warning (or none) says it.
    gymnasium.registry.pop(spec.gym_id, None)
    _REGISTRY.add(id, spec)
    gymnasium.register(
        id=spec.gym_id,
        entry_point=_make_for_gymnasium,
        kwargs={"turngym_id": id},
        disable_env_checker=True,
        order_enforce=False,
    )
    return spec


def check_env_id(id: str) -> None:
    """Raise ValueError unless `id` is `name-vN` or `namespace/Name-vN[-variant]` (see docs/envs.md, Registry)."""
    if not isinstance(id, str):
        raise ValueError(f"env id must be a string, got {type(id).__name__}")
    if _PLAIN_ID.match(id):
        return
    namespaced = _NAMESPACED_ID.match(id)
    if namespaced is None:
        raise ValueError(
            f"env id {id!r} must look like 'name-v0' (lowercase, digits, '-', ending in -vN) or "
            "'namespace/Name-v0[-variant]' (a lowercase namespace, then an id of letters, digits, '-', '_', '.')"
        )
    if namespaced["namespace"] == GYM_NAMESPACE:
        raise ValueError(
            f"env id {id!r}: the namespace {GYM_NAMESPACE!r} is reserved (plain ids are mirrored into "
            f"Gymnasium as {GYM_NAMESPACE}/<id>); register the id without it or under another namespace"
        )


def spec(id: str) -> EnvSpec:
    """The spec registered under `id`; unknown ids raise an error naming the closest ones."""
    return _REGISTRY.spec(id)


def list_envs(category: str | None = None) -> list[EnvSpec]:
    """Registered env specs (id, category, description), sorted by category then id."""
    specs = [s for s in _REGISTRY.list() if category is None or s.category == category]
    return sorted(specs, key=lambda s: (s.category, s.id))


def make(id: str, *, max_turns: int | None = None, format_penalty: float | None = None, **kwargs: Any):
    """Build a registered env wrapped with its turn limit and action-format penalty (`EpisodeLimits`).

    `max_turns` and `format_penalty` override the spec's; other kwargs override its constructor defaults
    (e.g. `difficulty="hard"`, `tools=["python"]` or `tools="my_tools.yaml"`). `max_tool_calls_per_turn`,
    `max_tool_time_s` and `max_action_chars` set the env's per-turn limits (see `TextEnv`);
    `tool_call_format` how it reads tool calls written in reply text (`hermes`, `llama3`, `mistral`).
    `remote="http://host:port"` returns the same env served by `python -m envs serve` there (`RemoteEnv`);
    `make("openenv", base_url="http://host:port")` an OpenEnv server's env (`OpenEnvEnv`).
    """
    if kwargs and kwargs.get("remote") is not None:
        if id == OPENENV_ID:
            raise ValueError(
                "openenv connects to its server itself: pass base_url=, not remote= (which names a "
                "`python -m envs serve` server)"
            )
        from envs.remote import make_remote

        try:
            local_spec = spec(id)
        except UnknownEnvError:
            local_spec = None  # served by the remote registry only
        # The server builds the env (wrappers included) from these same arguments.
        return make_remote(
            id, max_turns=max_turns, format_penalty=format_penalty, turngym_spec=local_spec, **kwargs
        )
    if kwargs:
        kwargs.pop("remote", None)
        kwargs.pop("remote_token", None)
    env_spec = _OPENENV_SPEC if id == OPENENV_ID else _REGISTRY.spec(id)  # `spec(id)`, one call less
    plain = not kwargs and max_turns is None and format_penalty is None
    if plain:
        made = _PLAIN_MAKES.get(id)
        # Still the spec registered, and still Gymnasium's mirror of it: the same env as the full path.
        if made is not None and made[0] is env_spec and gymnasium.registry.get(made[3]) is made[2]:
            env = made[1](**env_spec.kwargs)
            base = env.unwrapped
            base.turngym_spec, base.spec = env_spec, made[2]
            return EpisodeLimits(env, max_turns=env_spec.max_turns, penalty=env_spec.format_penalty)
    merged = {**env_spec.kwargs, **kwargs}
    limits = {k: merged.pop(k) for k in TURN_LIMIT_KWARGS if k in merged}
    call_format = merged.pop("tool_call_format", _UNSET)
    env = env_spec.load()(**merged)
    if limits:
        if not isinstance(env, EnvProtocol):
            raise TypeError(f"{id}: {', '.join(limits)} only apply to TextEnv-based envs")
        env.set_turn_limits(**limits)
    if call_format is not _UNSET:
        if not isinstance(env, EnvProtocol):
            raise TypeError(f"{id}: tool_call_format only applies to TextEnv-based envs")
        env.set_tool_call_format(call_format)
    penalty = env_spec.format_penalty if format_penalty is None else format_penalty
    turns = env_spec.max_turns if max_turns is None else max_turns
    if kwargs or turns != env_spec.max_turns or penalty != env_spec.format_penalty:
        # The spec this env was made from, so a fresh copy can be made the same way (rollout.collect).
        env_spec = dataclasses.replace(
            env_spec, kwargs={**env_spec.kwargs, **kwargs}, max_turns=turns, format_penalty=penalty
        )
    env.unwrapped.turngym_spec = env_spec
    env.unwrapped.spec = gym_spec = gymnasium_spec(env_spec)
    if plain and not limits and call_format is _UNSET and gym_spec is not None:
        _PLAIN_MAKES[id] = (env_spec, env_spec.load(), gym_spec, env_spec.gym_id)
    # MaxTurns(ActionFormat(env, penalty), turns), fused into one layer (see EpisodeLimits).
    return EpisodeLimits(env, max_turns=turns, penalty=penalty)


def gymnasium_spec(made_from: EnvSpec | None) -> Any:
    """Gymnasium's spec (`env.spec`) of an env made from `made_from`: its mirror `turngym/<id>`, with the
    kwargs that make it the same way, so `gymnasium.make(env.spec)` agrees with `env.turngym_spec`.

    One spec per env, turngym's; Gymnasium's is derived from it. The registered spec itself maps to
    Gymnasium's registered one; None, or an id the local registry or Gymnasium does not know, gives None.
    """
    if made_from is None:
        return None
    try:
        registered = gymnasium.spec(made_from.gym_id)
        if made_from == spec(made_from.id):
            return registered
    except (gymnasium.error.Error, UnknownEnvError):
        return None
    return dataclasses.replace(
        registered,
        kwargs={
            **registered.kwargs,
            **made_from.kwargs,
            "max_turns": made_from.max_turns,
            "format_penalty": made_from.format_penalty,
        },
    )


def _make_for_gymnasium(turngym_id: str, **kwargs: Any):
    return make(turngym_id, **kwargs)
