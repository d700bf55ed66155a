"""`Registry` (register / make / spec / list by name) and `load_entry_point("module:attr")`.

Every registry in turngym is one of these: envs, interactions, built-in tools, tool-call formats.
It lives in `turngym.common`, on the ground floor, so that every package can use it; importing it pulls
nothing but the standard library.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

EntryPoint = str | Callable[..., Any]

# Entry points already imported: a registry's `make` per episode need not go through importlib each time.
_LOADED: dict[str, Any] = {}


class EntryPointError(ImportError):
    """`module:attr` names nothing importable; the message says which part is wrong."""


def check_entry_point(entry_point: object) -> None:
    """Raise ValueError unless `entry_point` is a callable or a `module:attr` string."""
    if callable(entry_point):
        return
    if not isinstance(entry_point, str):
        raise ValueError(f"entry point must be 'module:attr' or a callable, got {type(entry_point).__name__}")
    module, sep, attr = entry_point.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"entry point {entry_point!r} must be 'module:attr' or a callable")


def load_entry_point(entry_point: EntryPoint) -> Any:
    """The object `module:attr` names (`attr` may be dotted: `pkg.mod:Class.factory`); a callable is returned as is.

    A missing module raises ModuleNotFoundError (as `import` would); a missing attribute raises
    EntryPointError naming the module and the attribute.
    """
    if not isinstance(entry_point, str):
        if callable(entry_point):
            return entry_point
        raise TypeError(f"entry point must be 'module:attr' or a callable, got {type(entry_point).__name__}")
    loaded = _LOADED.get(entry_point)
    if loaded is not None:
        return loaded
    check_entry_point(entry_point)
    module_name, _, attr = entry_point.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise EntryPointError(f"module {module_name!r} has no attribute {attr!r}") from None
    _LOADED[entry_point] = target
    return target


@dataclass(frozen=True)
class EntrySpec:
    """One registered thing: what builds it (`entry_point`) and its default keyword arguments."""

    name: str
    entry_point: EntryPoint
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""

    def load(self) -> Any:
        """The class or factory behind `entry_point`."""
        return load_entry_point(self.entry_point)


SpecT = TypeVar("SpecT")


class Registry(Generic[SpecT]):
    """Specs by name: `register`, `spec`, `list`, `make`; re-registering a name warns, as Gymnasium does.

    A spec is any object with `entry_point` (and optionally `kwargs`, its constructor defaults); the
    default is `EntrySpec`. `kind` names what is registered in messages ("env", "interaction").
    """

    def __init__(
        self,
        kind: str,
        *,
        unknown_error: type[Exception] = KeyError,
        listing: Callable[[Registry[Any]], str] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self._specs: dict[str, SpecT] = {}
        self._unknown_error = unknown_error
        self._listing = listing or (lambda r: f"Registered: {', '.join(r.names) or '(none)'}.")
        self.aliases = dict(aliases or {})

    def add(self, name: str, spec: SpecT, *, stacklevel: int = 2) -> SpecT:
        """Register a ready-made `spec` under `name`; a different spec already there is replaced with a warning."""
        earlier = self._specs.get(name)
        if earlier is not None and earlier != spec:  # the same spec again (a module reloaded): no warning
            old = getattr(earlier, "entry_point", earlier)
            new = getattr(spec, "entry_point", spec)
            warnings.warn(
                f"Overriding {self.kind} {name!r} already in the registry (entry point {old!r} replaced by {new!r}).",
                stacklevel=stacklevel + 1,
            )
        self._specs[name] = spec
        return spec

    def register(
        self, name: str, entry_point: EntryPoint, *, description: str = "", **kwargs: Any
    ) -> EntrySpec:
        """Register `entry_point` (`module:attr` or a callable) under `name`; `kwargs` become its defaults."""
        check_entry_point(entry_point)
        return self.add(name, EntrySpec(name, entry_point, dict(kwargs), description))  # type: ignore[arg-type]

    def spec(self, name: str) -> SpecT:
        """The spec registered as `name` (or an alias of it); unknown names raise, naming the closest ones."""
        found = self._specs.get(self.aliases.get(name, name))
        if found is not None:
            return found
        close = difflib.get_close_matches(name, list(self._specs), n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise self._unknown_error(f"no {self.kind} registered as {name!r}.{hint} {self._listing(self)}")

    def list(self) -> list[SpecT]:
        """All specs, sorted by name."""
        return [self._specs[n] for n in sorted(self._specs)]

    def make(self, name: str, **kwargs: Any) -> Any:
        """Build the thing registered as `name`: its entry point called with its defaults updated by `kwargs`."""
        found = self.spec(name)
        defaults = getattr(found, "kwargs", None) or {}
        return load_entry_point(found.entry_point)(**{**defaults, **kwargs})  # type: ignore[attr-defined]

    @property
    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self.aliases

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._specs))

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names})"
