"""What an episode was played under: its env id, the env's settings (kwargs) and the turn cap.

Two files compared in ``rollout.view`` pair episodes only when they were played under the same settings:
``rollout.eval env=guess-number-v0`` (medium, the guess tool) against a ``make train`` run (easy, text
moves) paired seed with seed and showed "improved (12)". A file records the kwargs it was given
(``env_kwargs``), which leave the env's defaults out; here they are completed with the registered
spec's kwargs and the constructor's defaults (through its base classes), so ``{}`` and
``{"difficulty": null}`` are the same settings. An env this process cannot look up keeps its recorded
kwargs as they are.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_NO_DEFAULT = inspect.Parameter.empty


@functools.lru_cache(maxsize=256)
def _defaults(env_id: str) -> tuple[tuple[str, str], ...]:
    """The registered spec's kwargs over the constructor's keyword defaults, as (name, JSON) pairs."""
    try:
        import envs

        spec = envs.spec(env_id)
        factory = spec.load()
    except Exception:  # noqa: BLE001 - an env of the user's not imported here: recorded kwargs only
        return ()
    found: dict[str, Any] = {}
    for klass in getattr(factory, "__mro__", (factory,)):
        init = klass.__dict__.get("__init__") if isinstance(klass, type) else klass
        if init is None:
            continue
        try:
            parameters = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            continue
        for p in parameters:
            if p.default is not _NO_DEFAULT and p.name not in found:
                found[p.name] = p.default
    found.update(spec.kwargs)
    return tuple(sorted((k, _json(v)) for k, v in found.items()))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True, order=True)
class PlayedUnder:
    """An episode's env id, its settings (kwargs with the env's defaults filled in, as JSON) and turn cap."""

    env_id: str
    settings: tuple[tuple[str, str], ...] = ()
    max_turns: int | None = None

    def changed(self) -> dict[str, Any]:
        """The settings that differ from the env's defaults (what a command line would have to give)."""
        defaults = dict(_defaults(self.env_id))
        return {k: json.loads(v) for k, v in self.settings if defaults.get(k) != v}

    @property
    def label(self) -> str:
        """``<env id>``, with the settings that differ from its defaults: a summary row's name."""
        changed = self.changed()
        return f"{self.env_id} {_json(changed)}" if changed else self.env_id


def turn_caps_recorded(*runs: Sequence[Any]) -> bool:
    """Whether every episode of ``runs`` records its turn cap; only then is the cap compared (a file
    written before ``max_turns`` was recorded says nothing about it)."""
    return all(isinstance(getattr(t, "max_turns", None), int) for run in runs for t in run)


def played_under(t: Any, with_turns: bool = True) -> PlayedUnder:
    """What trajectory ``t`` was played under (``env_kwargs`` and ``max_turns`` as its file recorded them;
    ``env_kwargs`` not recorded: the env's defaults; ``with_turns=False`` leaves the turn cap out).

    Example:
        >>> from rollout.trajectory import Trajectory
        >>> t = Trajectory([1], env_id="guess-number-v0")
        >>> t.env_kwargs = {"difficulty": "easy"}
        >>> played_under(t).changed()
        {'difficulty': 'easy'}
        >>> t.env_kwargs = {"difficulty": None}  # the constructor's own default, spelled out
        >>> played_under(t) == played_under(Trajectory([1], env_id="guess-number-v0"))
        True
    """
    env_id = str(t.env_id)
    recorded = getattr(t, "env_kwargs", None) or {}
    merged = dict(_defaults(env_id))
    merged.update({str(k): _json(v) for k, v in recorded.items()})
    max_turns = getattr(t, "max_turns", None)
    cap = max_turns if with_turns and isinstance(max_turns, int) else None
    return PlayedUnder(env_id, tuple(sorted(merged.items())), cap)


def _shown(value: str | None) -> str:
    return "(default)" if value is None or value == "null" else value


def _difference(a: PlayedUnder, b: PlayedUnder) -> str:
    left, right = dict(a.settings), dict(b.settings)
    parts = [
        f"{k} {_shown(left.get(k))} -> {_shown(right.get(k))}"
        for k in sorted(set(left) | set(right))
        if left.get(k) != right.get(k)
    ]
    if a.max_turns != b.max_turns:
        parts.append(f"max_turns {a.max_turns or '(env)'} -> {b.max_turns or '(env)'}")
    return ", ".join(parts)


def eval_command(kind: PlayedUnder, save: str = "zero-shot.jsonl") -> str:
    """The ``rollout.eval`` command that plays ``kind``'s env under its settings (for a matching file).

    Example:
        >>> kind = PlayedUnder("guess-number-v0", (("action_tool", "false"), ("difficulty", '"easy"')), 8)
        >>> eval_command(kind)
        'python -m rollout.eval env=guess-number-v0 env.action_tool=false env.difficulty=easy max_turns=8 --save zero-shot.jsonl'
    """
    words = ["python -m rollout.eval", f"env={kind.env_id}"]
    for key, value in sorted(kind.changed().items()):
        text = value if isinstance(value, str) else _json(value)
        words.append(f"env.{key}={text}")
    if kind.max_turns is not None:
        words.append(f"max_turns={kind.max_turns}")
    words.append(f"--save {save}")
    return " ".join(words)


def settings_mismatch(a: Sequence[Any], b: Sequence[Any], labels: tuple[str, str] = ("A", "B")) -> str | None:
    """One line when two runs played an env under other settings (so its episodes are not paired), else None.

    Args:
        a: the first run's trajectories.
        b: the second run's.
        labels: the runs' names in the line.

    Returns:
        What differs per env, how many episodes stay unpaired, and the ``rollout.eval`` command that plays
        the first run's env under the second run's settings; None when every env both runs played was
        played alike (or the runs share no env: then the line says so).
    """
    turns = turn_caps_recorded(a, b)
    kinds_a = {played_under(t, turns) for t in a}
    kinds_b = {played_under(t, turns) for t in b}
    if kinds_a == kinds_b:
        return None
    ids_a, ids_b = {k.env_id for k in kinds_a}, {k.env_id for k in kinds_b}
    notes, commands = [], []
    for env_id in sorted(ids_a & ids_b):
        only_a = sorted(k for k in kinds_a - kinds_b if k.env_id == env_id)
        only_b = sorted(k for k in kinds_b - kinds_a if k.env_id == env_id)
        if only_a and only_b:
            notes.append(f"{env_id}: {_difference(only_a[0], only_b[0])}")
            commands.append(eval_command(only_b[0]))
    if not ids_a & ids_b:
        notes.append(f"{labels[0]} played {', '.join(sorted(ids_a))}, {labels[1]} {', '.join(sorted(ids_b))}")
    if not notes:
        return None
    unpaired_a = sum(played_under(t, turns) not in kinds_b for t in a)
    unpaired_b = sum(played_under(t, turns) not in kinds_a for t in b)
    line = (
        f"not like with like: {labels[0]} and {labels[1]} played under other settings ({'; '.join(notes)}); "
        f"episodes pair only with episodes played alike, so {unpaired_a} of {labels[0]} and {unpaired_b} of "
        f"{labels[1]} are unpaired"
    )
    if commands:
        line += f"; a file played like {labels[1]}: {commands[0]}"
    return line
