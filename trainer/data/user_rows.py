"""Training on your own episodes: ``data.train_files`` / ``data.val_files`` pointing at your parquet.

By default trainer.run writes its rows to ``<run>/data/{train,val}.parquet`` from ``env.*``. A user who
sets either key to a file of their own gets those rows instead: the file is read, checked and expanded
into turngym's row layout (the env's opening prompt, ``extra_info``, ...) under the run folder; the
user's file itself is never written. A file holds one row per episode, in either form:

    env_id (str), seed (int), env_kwargs (optional: a dict, a JSON object string, or null)
    extra_info {env_id, seed, env_kwargs}            (rows trainer.run wrote, e.g. copied from a run)

A row's env_kwargs may hold only what the env declares safe for clients (``envs.registry.client_kwargs``: game
options such as difficulty), checked before any env is built. Every problem (missing file or column,
unregistered env id, bad seed or kwargs, a kwarg rows may not set, an env that cannot be built with
them) is one line naming the key, the file and the row, raised before anything is written or started.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import EpisodeRow, decode_kwargs
from trainer.compose import ConfigError
from turngym.common.cli_errors import did_you_mean

# The values trainer/config/turngym.yaml gives the keys: anything else names the user's own rows.
DEFAULT_FILES = {
    "train_files": "${turngym.output_dir}/data/train.parquet",
    "val_files": "${turngym.output_dir}/data/val.parquet",
}
REQUIRED = ("env_id", "seed")
LAYOUT_HINT = (
    "each row needs env_id and seed, optionally env_kwargs (see docs/trainer.md, 'Your own dataset rows')"
)

#: One row's episode: (env id, seed, env kwargs); its kind is `EpisodeKind(env_id, kwargs)`.
SeededKind = tuple[str, int, dict]
#: The largest seed a row may carry: what an int64 column holds (a float column once passed 1e300).
MAX_SEED = 2**63 - 1


def user_files(cfg: DictConfig) -> dict[str, Path]:
    """``{"train_files"|"val_files": path}`` for the data keys set to the user's own files."""
    raw = OmegaConf.to_container(cfg.data, resolve=False)
    out = {}
    for key, default in DEFAULT_FILES.items():
        value = raw.get(key)
        if value is not None and str(value) != default:
            out[key] = Path(str(cfg.data[key])).expanduser().resolve()
    return out


def _kwargs(value: Any, where: str) -> dict:
    try:
        return decode_kwargs(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _seed(value: Any, where: str) -> int:
    if isinstance(value, bool) or value is None:
        raise ConfigError(f"{where}: seed {value!r} is not an integer")
    try:
        seed = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}: seed {value!r} is not an integer") from None
    if seed != value or seed < 0:
        raise ConfigError(f"{where}: seed {value!r} is not a non-negative integer")
    if seed > MAX_SEED:
        raise ConfigError(f"{where}: seed {value!r} is over {MAX_SEED}; use a seed from 0 to 2**63 - 1")
    return seed


def read_episodes(path: Path, key: str) -> list[SeededKind]:
    """The ``(env_id, seed, env_kwargs)`` of every row of a user's parquet file; ConfigError in one line."""
    import pandas as pd

    import envs
    from envs.registry.client_kwargs import ClientKwargError, check_client_kwargs

    name = f"data.{key}={path}"
    if not path.is_file():
        raise ConfigError(f"{name}: no such file; write your rows there first ({LAYOUT_HINT})")
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix, in one line
        raise ConfigError(f"{name}: not a readable parquet file ({' '.join(str(exc).split())})") from None
    if EpisodeRow.EXTRA_INFO in frame.columns and not set(REQUIRED) <= set(frame.columns):
        records = [dict(info) if isinstance(info, dict) else {} for info in frame[EpisodeRow.EXTRA_INFO]]
    else:
        missing = [c for c in REQUIRED if c not in frame.columns]
        if missing:
            raise ConfigError(
                f"{name}: missing column(s) {', '.join(missing)} (it has: {', '.join(map(str, frame.columns))}); "
                + LAYOUT_HINT
            )
        columns = [c for c in ("env_id", "seed", "env_kwargs") if c in frame.columns]
        records = frame[columns].to_dict("records")
    if not records:
        raise ConfigError(f"{name}: the file has no rows")
    known = {s.id for s in envs.list_envs()}
    episodes = []
    for index, record in enumerate(records):
        where = f"{name}: row {index}"
        env_id = record.get("env_id")
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError(f"{where}: env_id {env_id!r} is not an env id; {LAYOUT_HINT}")
        if env_id not in known:
            near = did_you_mean(env_id, known, cutoff=0.5)
            hint = f" ({near})" if near else ""
            raise ConfigError(
                f"{where}: env {env_id!r} is not registered{hint}; `python -m envs list` shows them, and a "
                "module registering your own goes in turngym.import_modules=[my_pkg.my_envs]"
            )
        kwargs = _kwargs(record.get("env_kwargs"), where)
        try:
            # A row file may come from anyone: it picks game-level options only, as a served env's client.
            check_client_kwargs(envs.spec(env_id), kwargs)
        except ClientKwargError as exc:
            raise ConfigError(
                f"{where}: {exc}; isolation, sandboxes, tools and paths are not a row's to set"
            ) from None
        episodes.append((env_id, _seed(record.get("seed"), where), kwargs))
    return episodes


def check_buildable(episodes: list[SeededKind], path: Path, key: str) -> None:
    """Every distinct (env id, kwargs) of the rows can be built; ConfigError naming the first row that cannot."""
    import envs

    seen: set[EpisodeKind] = set()
    for index, (env_id, _, kwargs) in enumerate(episodes):
        kind = EpisodeKind(env_id, kwargs)
        if kind in seen:
            continue
        seen.add(kind)
        try:
            envs.make(env_id, **kwargs).close()
        except Exception as exc:  # noqa: BLE001 - bad kwargs are the user's to fix, in one line
            raise ConfigError(
                f"data.{key}={path}: row {index}: {env_id} cannot be built with env_kwargs {kind.kwargs_json}: "
                f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            ) from None


def check_disjoint(train: list[SeededKind], val: list[SeededKind]) -> None:
    """Validation must not replay training episodes (same env, kwargs and seed)."""
    seen = {(EpisodeKind(e, k), s) for e, s, k in train}
    shared = [(e, s) for e, s, k in val if (EpisodeKind(e, k), s) in seen]
    if shared:
        env_id, seed = shared[0]
        raise ConfigError(
            f"{len(shared)} validation episode(s) are also training episodes (first: {env_id} seed {seed}); "
            "held-out rows need other seeds (or kwargs)"
        )


def file_digest(path: Path) -> str:
    """sha256 of a file, so a resumed run can tell that its rows changed."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
