"""Regenerate `games.json` from the installed TextArena: `python -m envs.textarena.generate_catalog`.

For every TextArena id (its `-train`/`-raw` aliases are the same game under other wrappers and are
skipped) the table records the raw env class, its constructor arguments and the number of players (from
the `# Game [N Player]` headers of TextArena's registration file), and why the id is left out, if it is:
- its module downloads data or calls a hosted model (nltk.download, OpenRouter): nothing may download at
  run time;
- it needs packages turngym does not install, or its source does not compile on this Python;
- it is not a one- or two-player game, or its reset fails;
- it fails a contract test (`exclusions.KNOWN_FAILURES`).
For each adapted id it also records what a refused move means (`invalid_move` and the game's own
`error_allowance`, see `invalid_moves.py`) and where the random opponent finds its moves
(`opponent_moves`: "legal_moves" read from the game's state, "legal_moves_tactics" the same with one-ply
tactics first (`tactics.py`), or "game_text").
`--check` rebuilds the table in memory and exits 1 naming the ids whose row differs from `games.json`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

from envs.textarena.catalog import TABLE, TEXTARENA_VERSION
from envs.textarena.exclusions import KNOWN_FAILURES
from envs.textarena.invalid_moves import invalid_move_rule
from envs.textarena.legal_moves import LEGAL_MOVES
from envs.textarena.tactics import WINS_AT_ONCE

_PLAYERS_HEADER = re.compile(r"^#+\s*(?P<name>.*?)\s*[\[(](?P<n>\d+)\s*Player", re.IGNORECASE)
_REGISTERED_ID = re.compile(r"register(?:_with_versions)?\(\s*id\s*=\s*\"(?P<id>[^\"]+)\"")
_GLOBAL_NUMPY_RANDOM = re.compile(r"\b(?:np|numpy)\.random\.(?!default_rng|RandomState|Generator)\w+\(")
_SOURCE_PROBLEMS = (
    ("nltk.download", "downloads nltk data (nltk.download) when imported"),
    ("word_lists", "needs nltk's word corpus (a run-time download)"),
    ("OpenRouter", "calls a hosted LLM (OpenRouter) as judge or game master"),
    ("openai", "calls a hosted LLM (openai)"),
)


def players_by_id(registration_source: str) -> dict[str, int]:
    """Player counts from the `# Game [N Player]` comment above each group of registrations."""
    players: dict[str, int] = {}
    current: int | None = None
    for line in registration_source.splitlines():
        header = _PLAYERS_HEADER.match(line.strip())
        if header:
            current = int(header["n"])
            continue
        registered = _REGISTERED_ID.search(line)
        if registered and current is not None and not line.lstrip().startswith("#"):
            players[registered["id"]] = current
    return players


def game_files(module: str) -> list[Path] | None:
    """The source files of the game's own modules the env imports (not offline tools such as data
    generators), the env's module first; None when the module is not in the wheel."""
    package, _, main = module.rpartition(".")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    pending, seen, files = [main], set(), []
    while pending:
        name = pending.pop()
        path = folder.joinpath(*name.split(".")).with_suffix(".py")
        if name in seen or not path.exists():
            if name == main:
                return None
            continue
        seen.add(name)
        files.append(path)
        text = path.read_text(errors="replace")
        pending += re.findall(rf"{re.escape(package)}\.([\w.]+)\s+import", text)
        pending += re.findall(r"from\s+\.([\w.]+)\s+import", text)
    return files


def source_problem(module: str) -> str | None:
    """Why the module cannot be used here, found from its source (and its game's modules it imports)."""
    files = game_files(module)
    if files is None:
        return f"module {module} is not in the TextArena wheel"
    for path in files:
        text = path.read_text(errors="replace")
        try:
            compile(text, str(path), "exec")
        except SyntaxError as e:
            where = f"{path.parent.name}/{path.name}"
            return f"{where} does not compile on Python {sys.version_info.major}.{sys.version_info.minor}: {e.msg}"
        for needle, why in _SOURCE_PROBLEMS:
            if needle in text:
                return why
    return None


def uses_global_numpy_random(module: str) -> bool:
    """Whether the game draws from numpy's global generator (`np.random.randint(...)`)."""
    return any(_GLOBAL_NUMPY_RANDOM.search(p.read_text(errors="replace")) for p in game_files(module) or [])


def probe(entry_point: str, kwargs: dict[str, Any], players: int) -> str | None:
    """Why building and resetting the raw env fails, or None."""
    return _reset(entry_point, kwargs, players)[1]


def _reset(entry_point: str, kwargs: dict[str, Any], players: int) -> tuple[Any, str | None]:
    """The raw env built and reset with seed 0, or why that fails."""
    module, _, attr = entry_point.partition(":")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            env = getattr(importlib.import_module(module), attr)(**kwargs)
            env.reset(num_players=players, seed=0)
            env.get_observation()
    except Exception as e:
        # Paths inside the installed package, without this machine's site-packages prefix.
        text = str(e).replace(str(Path(importlib.import_module("textarena").__file__).parent), "textarena")
        return None, f"reset fails: {type(e).__name__}: {text[:120]}"
    return env, None


def game_rules(entry_point: str, kwargs: dict[str, Any], players: int) -> dict[str, Any]:
    """The adapted game's invalid-move rule, its own error allowance and where the random opponent plays from."""
    module = entry_point.partition(":")[0]
    name = module.split(".")[2]
    source = "\n".join(p.read_text(errors="replace") for p in game_files(module) or [])
    env, _ = _reset(entry_point, kwargs, players)
    allowance = getattr(getattr(env, "state", None), "error_allowance", None)
    return {
        "invalid_move": invalid_move_rule(name, source),
        "error_allowance": allowance if isinstance(allowance, int) else None,
        "opponent_moves": opponent_moves(name, players),
    }


def opponent_moves(name: str, players: int) -> str | None:
    """Where the random opponent of a two-player game finds its moves: "legal_moves_tactics" (the game's
    legal moves, one-ply tactics first), "legal_moves" (the game's state) or "game_text"; None with one player."""
    if players != 2:
        return None
    if name in WINS_AT_ONCE:
        return "legal_moves_tactics"
    return "legal_moves" if name in LEGAL_MOVES else "game_text"


def build_rows() -> list[dict[str, Any]]:
    """One row per TextArena id."""
    import textarena
    from textarena.envs.registration import ENV_REGISTRY

    if textarena.__version__ != TEXTARENA_VERSION:
        raise SystemExit(
            f"textarena {textarena.__version__} is installed; the table is for {TEXTARENA_VERSION}"
        )
    registration_file = Path(textarena.envs.__file__)
    players = players_by_id(registration_file.read_text())
    rows = []
    for ta_id, spec in ENV_REGISTRY.items():
        if ta_id.endswith(("-train", "-raw")):
            continue
        entry_point = spec.entry_point if isinstance(spec.entry_point, str) else ""
        kwargs = {k: v for k, v in spec.kwargs.items() if not callable(v)}
        row: dict[str, Any] = {
            "ta_id": ta_id,
            "entry_point": entry_point,
            "kwargs": kwargs,
            "players": players.get(ta_id),
            "excluded": None,
            "numpy_global": False,
            "invalid_move": None,
            "error_allowance": None,
            "opponent_moves": None,
        }
        module = entry_point.partition(":")[0]
        if len(kwargs) != len(spec.kwargs):
            row["excluded"] = "takes a Python object (an LLM jury) as a constructor argument"
        elif not module:
            row["excluded"] = "its entry point is not a module path"
        elif row["players"] not in (1, 2):
            row["excluded"] = (
                f"a {row['players']}-player game (only one- and two-player games are adapted)"
                if row["players"]
                else "TextArena gives no player count for it"
            )
        else:
            row["excluded"] = (
                source_problem(module)
                or probe(entry_point, kwargs, row["players"])
                or KNOWN_FAILURES.get(ta_id)
            )
            row["numpy_global"] = uses_global_numpy_random(module)
            if row["excluded"] is None:
                row.update(game_rules(entry_point, kwargs, row["players"]))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Write games.json and print how many ids are adapted (`--check`: compare instead of writing)."""
    argv = sys.argv[1:] if argv is None else argv
    rows = build_rows()
    if "--check" in argv:
        table = {r["ta_id"]: r for r in json.loads(TABLE.read_text())}
        rows = json.loads(json.dumps(rows))  # as written: constructor tuples become JSON lists
        differ = [r["ta_id"] for r in rows if table.get(r["ta_id"]) != r]
        if differ or len(table) != len(rows):
            print(
                f"{TABLE.name} is stale for {differ or 'its id list'}: run python -m envs.textarena.generate_catalog"
            )
            return 1
        print(f"{TABLE.name} matches TextArena {TEXTARENA_VERSION}: {len(rows)} ids")
        return 0
    TABLE.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    adapted = sum(r["excluded"] is None for r in rows)
    print(f"{TABLE}: {len(rows)} TextArena ids, {adapted} adapted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
