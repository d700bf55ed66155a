"""One override, both doors: a TextEnv subclass that overrides `reset` or `step` on one side only is
played through its override on the other side too.

`TextEnv` has a sync door (`reset`, `step`: scripts, `envs play`, the baselines) and an async one
(`areset`, `astep`: the rollout, training, a served env). Both run the same hooks (`_reset`, `_respond`),
which is where envs are meant to differ. A subclass that overrides only `step` (reward shaping the
Gymnasium way) would otherwise be played as written by a script and silently without its change in
training; one that overrides only `astep` the other way round. `pair_doors` (run by
`TextEnv.__init_subclass__`) gives such a class the missing door, calling the override:

- `areset`/`astep` run an overridden sync `reset`/`step` in a worker thread (`asyncio.to_thread`), so
  it never holds the event loop other episodes and a served env's `/health` share; one env is only
  ever used by one episode at a time, so it is never run in two threads at once;
- `reset`/`step` run an overridden async `areset`/`astep` to completion (`turngym.common.run_sync`).

A class that overrides both doors of a pair is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turngym.common.run_sync import run_sync

#: (sync door, async door) pairs of the env contract.
DOORS = (("reset", "areset"), ("step", "astep"))
_MADE = "__turngym_paired_door__"  # marks a door made here, so it never counts as an override


def _owner(cls: type, name: str) -> type | None:
    """The class in `cls`'s MRO whose own (not made here) definition of `name` is the one used."""
    for klass in cls.__mro__:
        member = klass.__dict__.get(name)
        if member is not None and not getattr(member, _MADE, False):
            return klass
    return None


def pair_doors(cls: type, base: type) -> list[str]:
    """Give `cls` the door missing beside a one-sided override of `reset`/`step` or `areset`/`astep`.

    Args:
        cls: A new subclass of `base`.
        base: The class that defines both doors (`TextEnv`).

    Returns:
        The doors made for `cls`, e.g. `["astep"]` for a class that overrides only `step`.

    >>> class Base:
    ...     def step(self, action): return "base"
    ...     async def astep(self, action): return "base"
    >>> class Shaped(Base):
    ...     def step(self, action): return "shaped"
    >>> pair_doors(Shaped, Base)
    ['astep']
    >>> import asyncio
    >>> asyncio.run(Shaped().astep("hi"))
    'shaped'
    """
    made = []
    for sync_name, async_name in DOORS:
        sync_owner, async_owner = _owner(cls, sync_name), _owner(cls, async_name)
        if sync_owner is None or async_owner is None or sync_owner is async_owner:
            continue
        if sync_owner is not base and issubclass(sync_owner, async_owner):
            door: Callable[..., Any] = _async_door(sync_owner.__dict__[sync_name], async_name)
            made.append(async_name)
        elif async_owner is not base and issubclass(async_owner, sync_owner):
            door = _sync_door(async_owner.__dict__[async_name], sync_name)
            made.append(sync_name)
        else:
            continue
        door.__qualname__ = f"{cls.__qualname__}.{door.__name__}"
        door.__module__ = cls.__module__
        setattr(door, _MADE, True)
        setattr(cls, door.__name__, door)
    return made


def _async_door(sync: Callable[..., Any], name: str) -> Callable[..., Any]:
    # The override itself, not `self.step`: a subclass further down that overrides the other door and
    # calls `super()` must reach this override, not come back through its own door.
    if name == "areset":

        async def areset(self: Any, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            """The overridden sync `reset`, in a worker thread (see `envs.core.paired_doors`)."""
            import asyncio

            return await asyncio.to_thread(sync, self, seed=seed, options=options)

        return areset

    async def astep(self: Any, action: Any) -> Any:
        """The overridden sync `step`, in a worker thread (see `envs.core.paired_doors`)."""
        import asyncio

        return await asyncio.to_thread(sync, self, action)

    return astep


def _sync_door(coroutine: Callable[..., Any], name: str) -> Callable[..., Any]:
    if name == "reset":

        def reset(self: Any, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            """The overridden `areset`, run to completion (see `envs.core.paired_doors`)."""
            return run_sync(coroutine(self, seed=seed, options=options))

        return reset

    def step(self: Any, action: Any) -> Any:
        """The overridden `astep`, run to completion (see `envs.core.paired_doors`)."""
        # As TextEnv's `step`: a call the time budget cut keeps its thread; the step does not wait for it.
        return run_sync(coroutine(self, action), wait_for_threads=False)

    return step
