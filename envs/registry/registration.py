"""The env registry: `register`, `make`, `list_envs`; every id is mirrored into Gymnasium as `turngym/<id>`."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium
from gymnasium.envs.registration import WrapperSpec

from envs.core.errors import UnknownEnvError
from envs.core.number_bounds import env_number_problem
from envs.core.protocol import conforms
from envs.wrappers import EpisodeLimits
from turngym.common.registration import Registry, check_entry_point, load_entry_point

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
    #: Wrappers `make` applies over its `EpisodeLimits` layer, innermost first (as Gymnasium's
    #: `EnvSpec.additional_wrappers`: each names its class `module:Class` and the keywords that build it).
    additional_wrappers: tuple[WrapperSpec, ...] = ()

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

# The one shortcut of `make`: what the full path resolved for a call (id, limits and kwargs of plain
# values), so the next such call (verl's agent loop makes an env per episode, with the row's kwargs) only
# builds. Bounded: an id made with ever new values does not grow it without end.
_MADE: dict[tuple, _Resolved] = {}
_MADE_LIMIT = 1024
# Kwarg values a call may be remembered by; their type is part of the key (1, 1.0 and True are equal keys).
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


@dataclass(frozen=True)
class _Resolved:
    """One `make` call, resolved: the spec it builds from and everything it does to build the env."""

    registered: EnvSpec  # the spec the id was registered under when resolved (still it: still valid)
    gym_id: str
    gym_registered: Any  # Gymnasium's mirror then (likewise)
    factory: Callable[..., Any]
    constructor_kwargs: dict[str, Any]
    limits: dict[str, Any]
    call_format: Any
    made_from: EnvSpec  # what the env records as `turngym_spec`
    gym_spec: Any  # what it records as `spec`


def register(
    id: str,
    entry_point: str | Callable[..., Any],
    *,
    category: str = "misc",
    description: str = "",
    max_turns: int | None = None,
    format_penalty: float = 0.1,
    additional_wrappers: Sequence[WrapperSpec] = (),
    **kwargs: Any,
) -> EnvSpec:
    """Register an env under `id` (`name-vN`, or `namespace/Name-vN[-variant]`); `kwargs` become its defaults.

    Registering an id again with a different spec replaces the earlier one with a warning, as
    Gymnasium's `register` does.

    Args:
        id: the env id.
        entry_point: the env class or factory, or its `"module:name"`.
        category: the group `python -m envs list` shows it in.
        description: one line for listings.
        max_turns: the turn limit `make` applies (None: none).
        format_penalty: what `make` charges for an unreadable reply.
        additional_wrappers: wrappers `make` applies over that layer, innermost first, e.g.
            `RewardShaping.wrapper_spec(scale=2.0)`; each must be rebuildable from its keywords.
        **kwargs: the env constructor's defaults.

    Returns:
        The spec `make(id)` builds from.
    """
    check_env_id(id)
    check_entry_point(entry_point)
    _check_numbers(id, max_turns, format_penalty, {})
    for wrapper in additional_wrappers:
        if not isinstance(wrapper, WrapperSpec) or wrapper.kwargs is None:
            raise ValueError(
                f"{id}: additional_wrappers takes gymnasium WrapperSpecs with their keywords, e.g. "
                f"RewardShaping.wrapper_spec(scale=2.0); got {wrapper!r}"
            )
    spec = EnvSpec(
        id,
        entry_point,
        category,
        description,
        dict(kwargs),
        max_turns,
        format_penalty,
        tuple(additional_wrappers),
    )
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


def make(
    id: str | EnvSpec | gymnasium.envs.registration.EnvSpec,
    *,
    max_turns: int | None = None,
    format_penalty: float | None = None,
    **kwargs: Any,
) -> Any:
    """Build a registered env, wrapped in its turn limit and format penalty (`EpisodeLimits`) and its spec's wrappers.

    `max_turns` and `format_penalty` override the spec's; other kwargs override its constructor defaults
    (e.g. `difficulty="hard"`, `tools=["python"]` or `tools="my_tools.yaml"`). `max_tool_calls_per_turn`,
    `max_tool_time_s` and `max_action_chars` set the env's per-turn limits (see `TextEnv`);
    `tool_call_format` how it reads tool calls written in reply text (`hermes`, `llama3`, `mistral`).
    `remote="http://host:port"` returns the same env served by `python -m envs serve` there (`RemoteEnv`);
    `make("openenv", base_url="http://host:port")` an OpenEnv server's env (`OpenEnvEnv`).

    Args:
        id: a registered id; a turngym `EnvSpec` (built as it says, registered or not); or an env's
            `env.spec`, which lists every wrapper layer, so `make(env.spec)` rebuilds the whole stack.
        max_turns: the turn limit (None: the spec's).
        format_penalty: the charge for an unreadable reply (None: the spec's).
        **kwargs: the env constructor's keywords, over the spec's defaults.

    Returns:
        The env: `EpisodeLimits` over the env (`env.unwrapped`), under the spec's `additional_wrappers`.

    >>> import envs
    >>> env = envs.make("guess-number-v0", difficulty="easy", max_turns=5)
    >>> messages, info = env.reset(seed=0)
    >>> info["max_guesses"], env.max_turns
    (7, 5)
    >>> again = envs.make(env.spec)
    >>> again.unwrapped.turngym_spec == env.unwrapped.turngym_spec
    True
    """
    if not isinstance(id, str):
        return _make_from_spec(id, max_turns, format_penalty, kwargs)
    if kwargs:
        if kwargs.get("remote") is not None:
            return _make_remote(id, max_turns, format_penalty, kwargs)
        kwargs.pop("remote", None)
        kwargs.pop("remote_token", None)
    env_spec = _OPENENV_SPEC if id == OPENENV_ID else _REGISTRY.spec(id)  # `spec(id)`, one call less
    if kwargs or max_turns is not None or format_penalty is not None:
        key = _call_key(id, max_turns, format_penalty, kwargs)
    else:
        key = id  # `make(id)`
    made = _MADE.get(key)  # (None: a call not remembered)
    # Still the spec registered, and still Gymnasium's mirror of it: the same env as the full path.
    if (
        made is None
        or made.registered is not env_spec
        or gymnasium.registry.get(made.gym_id) is not made.gym_registered
    ):
        made = _resolve(env_spec, max_turns, format_penalty, kwargs)
        env = _build(made)  # a bad argument fails here, before the call is remembered
        if key is not None:
            if len(_MADE) >= _MADE_LIMIT:
                _MADE.clear()
            _MADE[key] = made
        return env
    return _build(made)


def _call_key(id: str, max_turns: Any, format_penalty: Any, kwargs: dict[str, Any]) -> tuple | None:
    # None: a value the shortcut does not remember calls by (a list of tools, a Tool object...).
    plain = _PLAIN_TYPES
    if type(max_turns) not in plain or type(format_penalty) not in plain:
        return None
    key: list[Any] = [id, max_turns, type(max_turns), format_penalty, type(format_penalty)]
    for name, value in kwargs.items():
        if type(value) not in plain:
            return None
        key += (name, type(value), value)
    return tuple(key)


def _resolve(env_spec: EnvSpec, max_turns: Any, format_penalty: Any, kwargs: dict[str, Any]) -> _Resolved:
    # The full path: what to call and set, and the spec the env records.
    merged = {**env_spec.kwargs, **kwargs}
    limits = {k: merged.pop(k) for k in TURN_LIMIT_KWARGS if k in merged}
    call_format = merged.pop("tool_call_format", _UNSET)
    penalty = env_spec.format_penalty if format_penalty is None else format_penalty
    turns = env_spec.max_turns if max_turns is None else max_turns
    # Once per distinct call (the shortcut remembers only calls that built): a number from a row, a
    # client or a command line is bounded before the env sees it.
    _check_numbers(env_spec.id, turns, penalty, {**merged, **limits})
    made_from = env_spec
    if kwargs or turns != env_spec.max_turns or penalty != env_spec.format_penalty:
        # The spec this env was made from, so a fresh copy can be made the same way (rollout.collect).
        made_from = dataclasses.replace(
            env_spec, kwargs={**env_spec.kwargs, **kwargs}, max_turns=turns, format_penalty=penalty
        )
    return _Resolved(
        registered=env_spec,
        gym_id=env_spec.gym_id,
        gym_registered=gymnasium.registry.get(env_spec.gym_id),
        factory=env_spec.load(),
        constructor_kwargs=merged,
        limits=limits,
        call_format=call_format,
        made_from=made_from,
        gym_spec=gymnasium_spec(made_from),
    )


def _check_numbers(id: str, max_turns: Any, format_penalty: Any, kwargs: dict[str, Any]) -> None:
    # ValueError in one line: make's own numbers against the table (envs/core/number_bounds.py); the env's
    # constructor bounds its own keywords, and here none may be a NaN or an infinity.
    problem = (None if max_turns is None else env_number_problem("max_turns", max_turns)) or (
        env_number_problem("format_penalty", format_penalty)
    )
    for name, value in kwargs.items():
        if problem is not None:
            break
        if name in TURN_LIMIT_KWARGS:
            problem = env_number_problem(name, value)
        elif isinstance(value, float) and not math.isfinite(value):
            problem = f"{name}={value} is not a finite number"
    if problem is not None:
        raise ValueError(f"{id}: {problem}")


def _build(made: _Resolved) -> Any:
    env = made.factory(**made.constructor_kwargs)
    if made.limits:
        if not conforms(env):
            raise TypeError(
                f"{made.registered.id}: {', '.join(made.limits)} only apply to TextEnv-based envs"
            )
        env.set_turn_limits(**made.limits)
    if made.call_format is not _UNSET:
        if not conforms(env):
            raise TypeError(f"{made.registered.id}: tool_call_format only applies to TextEnv-based envs")
        env.set_tool_call_format(made.call_format)
    base = env.unwrapped
    base.turngym_spec, base.spec = made.made_from, made.gym_spec
    spec = made.made_from
    env = EpisodeLimits(env, max_turns=spec.max_turns, penalty=spec.format_penalty)
    for wrapper in spec.additional_wrappers:
        env = load_entry_point(wrapper.entry_point)(env, **wrapper.kwargs)
    return env


def _make_remote(id: str, max_turns: Any, format_penalty: Any, kwargs: dict[str, Any]) -> Any:
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


def _make_from_spec(made_from: Any, max_turns: Any, format_penalty: Any, kwargs: dict[str, Any]) -> Any:
    # `make(spec)`: a turngym EnvSpec is built as it says; Gymnasium's `env.spec` names the turngym id and
    # make's arguments in its kwargs, and lists every wrapper layer, make's own first.
    if isinstance(made_from, EnvSpec):
        if kwargs.get("remote") is not None:
            return _make_remote(made_from.id, max_turns, format_penalty, kwargs)
        kwargs.pop("remote", None)
        kwargs.pop("remote_token", None)
        return _build(_resolve(made_from, max_turns, format_penalty, kwargs))
    if not isinstance(made_from, gymnasium.envs.registration.EnvSpec):
        raise TypeError(
            f"envs.make takes an env id, a turngym EnvSpec or an env's `env.spec`; got {type(made_from).__name__}"
        )
    saved = dict(made_from.kwargs)
    turngym_id = saved.pop("turngym_id", None)
    if turngym_id is None:
        raise ValueError(
            f"envs.make: {made_from.id!r} is not a turngym env's spec (its kwargs name no turngym_id); "
            "use gymnasium.make for it"
        )
    saved_turns, saved_penalty = saved.pop("max_turns", None), saved.pop("format_penalty", None)
    env = make(
        turngym_id,
        max_turns=saved_turns if max_turns is None else max_turns,
        format_penalty=saved_penalty if format_penalty is None else format_penalty,
        **{**saved, **kwargs},
    )
    layers, built = made_from.additional_wrappers, env.spec.additional_wrappers
    if layers[: len(built)] != built:
        raise ValueError(
            f"envs.make: the spec's wrappers {[w.name for w in layers]} do not start with the ones "
            f"{turngym_id} is built with now ({[w.name for w in built]}); was it registered again since?"
        )
    for wrapper in layers[len(built) :]:
        if wrapper.kwargs is None:
            raise ValueError(
                f"envs.make: the wrapper {wrapper.name} cannot be rebuilt from a spec: it records no keywords "
                "(give it a constructor_kwargs method returning them)"
            )
        env = load_entry_point(wrapper.entry_point)(env, **wrapper.kwargs)
    return env


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
