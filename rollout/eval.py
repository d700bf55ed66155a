"""`python -m rollout.eval [env=<id>] [model=<path>] [key=value ...] [--import module] [--save traj.jsonl]`

model= is a named model (smollm2-135m-instruct, embedded), gguf:<file> (both converted once into a cached
Hugging Face directory: turngym/engines/named_models.py), a Hugging Face model directory, or what training left: a run folder (outputs/<env>), a
checkpoints folder, a global_step_N folder or its actor folder; checkpoints are exported once with
verl's model merger (into <run>/export/global_step_N). Given a run, env= defaults to the run's envs (with
their kwargs) and the token budgets to the run's; without one, to the training defaults below.

Keys: env=<id> (required unless model= is a run), engine=hf|sglang|openai, model=<path> (hf; default the
embedded tiny model; openai: the name the server serves, required), url=<server> (sglang; default
http://127.0.0.1:30000; openai: an OpenAI-compatible chat-completions server, http://host:port or its /v1
base, key from $OPENAI_API_KEY, never sent over plain http beyond loopback unless allow_http_key=true),
deadline_s (openai, sglang: seconds in all one request may take, retries and waits included; default
the read timeout + busy wait, 720; at most 86400), max_reply_mb (openai, sglang: the largest reply read,
default 16; at most 1024), tokenizer=<dir> (sglang, openai; default model, for openai a named model
or else the embedded one's: it counts tokens and re-encodes replies). engine=openai evaluates but cannot
train: the API returns text, not the sampled ids or their logprobs. n=8 episodes per env, group=1, concurrency=64, seed=0, temperature=1.0, top_p=1.0,
top_k=-1, baselines=true (the env's random player and scripted expert on the same seeds beside the
model, with 95 % Wilson intervals and the env's behaviour rates), max_response_tokens (everything after the prompt: training's data.max_response_length),
max_turns (training's multi_turn.max_assistant_turns), max_new_tokens (one turn: training's
turngym.max_tokens_per_turn, unset = the rest of the budget); the three default to the run's values,
else to training's defaults for that model (rollout/episode_budgets.py; the embedded model's own when
no model is given; for engine=sglang|openai, those of the model the server says it serves), and the values
used are printed. env.<name>=<value> (env kwargs, e.g. env.difficulty=easy).
trust_checkpoint=true lets a checkpoint's shards load with the full unpickler (they may run code: only for
checkpoints you trust); by default they load as tensors only and anything else is refused.
--import my_pkg.my_envs imports a module first (e.g. one registering envs). Prints a progress bar, then a summary. Bad keys, env ids or values exit with code 2 before any model
is loaded. An env whose every episode failed ends the command with one line naming the first failure and
exit code 1, after the episodes were saved.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from rollout.episode_budgets import NAMED_MODEL_BUDGETS, TRAINING_KEYS, default_budgets
from rollout.episode_kind import EpisodeKind
from turngym.common.cli_errors import (
    UsageError,
    check_output_file,
    did_you_mean,
    make_parent,
    one_line,
    run_cli,
)
from turngym.common.number_bounds import Bound
from turngym.engines.engine import EngineError
from turngym.engines.named_models import EMBEDDED, is_embedded, is_model_name, model_name_of

USAGE = __doc__
STRING_KEYS = ("env", "engine", "model", "url", "tokenizer")
INT_KEYS = (
    "n",
    "group",
    "concurrency",
    "seed",
    "top_k",
    "max_new_tokens",
    "max_response_tokens",
    "max_turns",
)
FLOAT_KEYS = ("temperature", "top_p", "deadline_s", "max_reply_mb")
# The engine's own limits against a server that stalls or floods (engine=openai and sglang).
ENGINE_LIMITS = {
    "deadline_s": Bound(whole=False, low=0, high=86_400, open_low=True),
    "max_reply_mb": Bound(whole=False, low=0, high=1024, open_low=True),
}
BOOL_KEYS = ("trust_checkpoint", "baselines", "allow_http_key")
KEYS = STRING_KEYS + INT_KEYS + FLOAT_KEYS + BOOL_KEYS


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _unknown_key(key: str) -> str:
    hint = did_you_mean(key, KEYS, n=2) or f"valid keys: {', '.join(KEYS)}, env.<kwarg>"
    return f"unknown key {key!r}; {hint}"


def _typed(key: str, raw: str) -> Any:
    if key in STRING_KEYS:
        return raw
    if key in BOOL_KEYS:
        if raw.lower() not in ("true", "false"):
            raise UsageError(f"{key}={raw!r} is not true or false")
        return raw.lower() == "true"
    kind = int if key in INT_KEYS else float
    try:
        value = kind(raw)
    except ValueError:
        raise UsageError(f"{key}={raw!r} is not a{'n integer' if kind is int else ' number'}") from None
    if (
        key in ("n", "group", "concurrency", "max_response_tokens", "max_turns", "max_new_tokens")
        and value < 1
    ):
        raise UsageError(f"{key}={raw} must be >= 1")
    if key in ENGINE_LIMITS and (problem := ENGINE_LIMITS[key].problem(key, value)):
        raise UsageError(problem)
    if key == "temperature" and value < 0 or key == "top_p" and not 0 < value <= 1:
        raise UsageError(f"{key}={raw} is out of range (temperature >= 0, 0 < top_p <= 1)")
    return value


def _engine_limits(opts: dict[str, Any]) -> dict[str, Any]:
    """The HTTP engine's deadline and reply cap, where the command line gave them."""
    limits: dict[str, Any] = {}
    if "deadline_s" in opts:
        limits["deadline_s"] = float(opts["deadline_s"])
    if "max_reply_mb" in opts:
        limits["max_reply_bytes"] = int(opts["max_reply_mb"] * 2**20)
    return limits


def parse_args(argv: list[str]) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """key=value pairs -> (options, env kwargs, save path); ``--import`` modules are in options["import"]."""
    opts: dict[str, Any] = {}
    env_kwargs: dict[str, Any] = {}
    imports: list[str] = []
    save = None
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        if arg in ("--save", "--import"):
            value = next(it, None)
            if value is None:
                raise UsageError(f"{arg} needs a value")
            if arg == "--save":
                save = value
            else:
                imports.append(value)
            continue
        if arg.startswith(("--save=", "--import=")):
            name, value = arg[2:].split("=", 1)
            if name == "save":
                save = value
            else:
                imports.append(value)
            continue
        if "=" not in arg:
            raise UsageError(f"expected key=value, got {arg!r} (python -m rollout.eval --help)")
        key, val = arg.split("=", 1)
        if key.startswith("env."):
            env_kwargs[key[4:]] = _value(val)
        elif key in KEYS:
            opts[key] = _typed(key, val)
        else:
            raise UsageError(_unknown_key(key))
    if opts.get("engine", "hf") not in ("hf", "sglang", "openai"):
        raise UsageError(f"engine={opts['engine']!r}; valid choices: hf, sglang, openai")
    if opts.get("engine") == "openai":
        if not opts.get("model"):
            raise UsageError(
                "engine=openai needs model=<the model name the server serves>, e.g. model=gpt-4o-mini"
            )
        if not str(opts.get("url", "")).startswith(("http://", "https://")):
            raise UsageError(
                f"engine=openai needs url=http(s)://host:port[/v1] of a chat-completions server, got {opts.get('url')!r}"
            )
    if imports:
        opts["import"] = imports
    if "env" not in opts and "model" not in opts:
        raise UsageError("env=<id> is required (or model=<run folder>, whose envs are evaluated)")
    return opts, env_kwargs, save


def _run_kwargs(run: str, entry: dict[str, Any]) -> dict[str, Any]:
    """An env's kwargs as the run's run.json recorded them, less what only the command line may set.

    The run folder may be someone else's: its isolation, tools, paths and URLs are not taken from it
    (`rollout/file_env_kwargs.py`); the command line's own `env.<name>=` still sets any of them.
    """
    from rollout.file_env_kwargs import file_env_kwargs, ignored_line

    try:
        kept, ignored = file_env_kwargs(str(entry["id"]), entry.get("kwargs") or {})
    except Exception:  # noqa: BLE001 - an unknown id is reported by the plan's own check, in one line
        return dict(entry.get("kwargs") or {})
    if ignored:
        hint = "give them as env.<name>=<value> if you trust the run"
        print(
            ignored_line("rollout.eval", f"{run}/run.json", str(entry["id"]), ignored, hint), file=sys.stderr
        )
    return kept


def import_modules(modules: list[str]) -> None:
    """Import user modules (e.g. ones registering envs), the working directory first on the path."""
    if modules and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(f"--import {module}: {exc}") from None


def _budgets(cfg: Any) -> dict[str, int]:
    from omegaconf import OmegaConf

    out = {}
    for name, key in TRAINING_KEYS.items():
        value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def training_defaults(embedded: bool, model: str | None = None) -> dict[str, int | None]:
    """The budgets training uses by default (rollout/episode_budgets.py: the embedded model's if `embedded`,
    a named model's own, else the general ones)."""
    return dataclasses.asdict(default_budgets(embedded, model))


def run_settings(model: str | None) -> dict[str, Any]:
    """The env mixture and budgets of the training run a model path belongs to ({} when none)."""
    if not model:
        return {}
    from omegaconf import OmegaConf

    from turngym.engines.checkpoint_export import RUN_CONFIG, RUN_RECORD, run_dir

    run = run_dir(Path(model).expanduser().resolve())
    if run is None:
        return {}
    settings: dict[str, Any] = {"run": str(run)}
    if (run / RUN_RECORD).is_file():
        settings["envs"] = json.loads((run / RUN_RECORD).read_text()).get("env", [])
    if (run / RUN_CONFIG).is_file():
        settings.update(_budgets(OmegaConf.load(run / RUN_CONFIG)))
    return settings


def eval_plan(
    opts: dict[str, Any], env_kwargs: dict[str, Any], settings: dict[str, Any]
) -> list[EpisodeKind]:
    """The kinds of episode to evaluate, every id checked and every env built once (before any model loads).

    Args:
        opts: the command line's options (``env``, ``model``).
        env_kwargs: ``env.<name>=<value>`` from the command line, over every kind's own kwargs.
        settings: a run folder's settings (`run_settings`): its ``envs`` when no ``env`` is given.

    Returns:
        One `EpisodeKind` per env to evaluate, in order.

    Raises:
        UsageError: no env given and no run to read them from, an unknown id, or kwargs the env refuses.
    """
    import envs

    if "env" in opts:
        plan = [EpisodeKind(opts["env"], env_kwargs)]
    elif settings.get("envs"):
        source = settings.get("run") or opts["model"]
        plan = [EpisodeKind(e["id"], {**_run_kwargs(source, e), **env_kwargs}) for e in settings["envs"]]
    else:
        raise UsageError(f"env=<id> is required: {opts['model']} is not a run folder with a run.json")
    for kind in plan:
        try:
            envs.spec(kind.env_id)
        except envs.UnknownEnvError as exc:
            raise UsageError(f"env={kind.env_id}: {exc.args[0] if exc.args else exc}") from None
        try:
            kind.make().close()
        except (TypeError, ValueError) as exc:
            raise UsageError(f"env={kind.env_id} with {dict(kind.kwargs)}: {exc}") from None
    return plan


def announce_tool_placement(tokenizer: Any, plan: list[EpisodeKind]) -> None:
    """Before any progress bar: the one-line warning (rollout/tool_prompt.py) when the chat template
    renders no tools and an env of the plan has some, so it is not run into a bar's line later."""
    from rollout.tool_prompt import place_tools

    for kind in plan:
        env = kind.make()
        try:
            tools = list(env.tool_schemas)
        finally:
            env.close()
        if tools:
            place_tools(tokenizer, [], tools)  # warns once per template; episodes then stay quiet
            sys.stderr.flush()
            return


def build_engine(opts: dict[str, Any]):
    """(engine, tokenizer, tokenizer path) for engine=hf|sglang|openai."""
    from transformers import AutoTokenizer

    kind = opts.get("engine", "hf")
    if kind == "hf":
        from turngym.engines.hf_engine import HFEngine

        engine = HFEngine(opts.get("model"), seed=int(opts.get("seed", 0)))
        return engine, engine.tokenizer, engine.name
    from turngym.engines.sglang_engine import SGLangEngine

    if kind == "openai":
        from turngym.engines.embedded_model import build_embedded_model
        from turngym.engines.openai_engine import TEXT_ONLY_NOTE, OpenAIEngine

        tok_path = opts.get("tokenizer") or build_embedded_model()
        tokenizer = AutoTokenizer.from_pretrained(tok_path)
        print(f"{TEXT_ONLY_NOTE} (tokenizer: {tok_path})")
        engine = OpenAIEngine(
            opts["url"],
            opts["model"],
            tokenizer,
            allow_http_key=opts.get("allow_http_key", False),
            **_engine_limits(opts),
        )
        return engine, tokenizer, str(tok_path)
    tok_path = opts.get("tokenizer") or opts.get("model")
    if tok_path is None:
        from turngym.engines.embedded_model import build_embedded_model  # as HFEngine's default model

        tok_path = build_embedded_model()
    return (
        SGLangEngine(opts.get("url", "http://127.0.0.1:30000"), **_engine_limits(opts)),
        AutoTokenizer.from_pretrained(tok_path),
        str(tok_path),
    )


def served_model(engine: Any, opts: dict[str, Any]) -> str | None:
    """The name of the model an engine=sglang|openai server serves, for its budgets (None: any model).

    The server is asked (`SGLangEngine.served_model`: turngym's model server names the embedded or a named
    model; a model directory on this machine is recognised). When it cannot say, the name the command
    gave counts (``model=`` for engine=openai, ``tokenizer=``/``model=`` for engine=sglang), and a server
    that does not answer is one line on stderr; the evaluation goes on.

    Args:
        engine: the `SGLangEngine` or `OpenAIEngine` `build_engine` made.
        opts: the command line's options.

    Returns:
        ``embedded``, a named model's name, or None.
    """

    async def ask() -> str | None:
        try:
            return await engine.served_model()
        finally:
            await engine.aclose()  # its connections belong to this event loop

    given = (
        opts.get("model") if opts.get("engine") == "openai" else opts.get("tokenizer") or opts.get("model")
    )
    fallback = model_name_of(given) if given else None  # a name, or a directory of a named model
    try:
        return asyncio.run(ask()) or fallback
    except EngineError as exc:
        budgets = f"those of {fallback}" if fallback else "those for any model"
        print(
            f"rollout.eval: could not ask the server which model it serves ({one_line(str(exc))}); "
            f"the budgets are {budgets}",
            file=sys.stderr,
        )
        return fallback


def _resolved(model: str) -> Path:
    from turngym.engines.checkpoint_export import CheckpointError, resolve_model

    try:
        return resolve_model(model)  # only model names come here: no checkpoint is exported
    except CheckpointError as exc:
        raise UsageError(str(exc)) from None  # names the named models, or how to fetch a Hub id


def format_summary(summary: dict[str, float], wall: float) -> str:
    """A two-column table."""
    rows = [(k, v) for k, v in summary.items()]
    rows.append(("wall_s", wall))
    rows.append(("generated_tokens_per_s", summary.get("generated_tokens", 0.0) / wall if wall > 0 else 0.0))
    width = max(len(k) for k, _ in rows)
    lines = [f"{'metric'.ljust(width)}  value", f"{'-' * width}  -----"]
    for k, v in rows:
        shown = f"{v:.4g}" if isinstance(v, float) else str(v)
        lines.append(f"{k.ljust(width)}  {shown}")
    return "\n".join(lines)


def save_trajectories(
    trajectories: list,
    path: str,
    model: str | None,
    tokenizer: str,
    kinds: list[EpisodeKind] | None = None,
    max_turns: int | None = None,
) -> None:
    """JSONL with the model and tokenizer on every line, so `rollout.view` decodes with the right one, and
    each episode's env kwargs (`kinds`, one per trajectory) and the turn cap, so its random and expert rows
    play what the model played."""
    from rollout.trajectory import save_jsonl

    save_jsonl(
        trajectories,
        make_parent(path),
        model=model,
        tokenizer=tokenizer,
        env_kwargs=None if kinds is None else [kind.kwargs for kind in kinds],
        max_turns=max_turns,
    )


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the evaluation and print the summary; returns the summary dict (of the last env evaluated)."""
    from tqdm import tqdm

    from rollout.collection import acollect, summarize
    from rollout.episode import EpisodeConfig

    opts, env_kwargs, save = parse_args(sys.argv[1:] if argv is None else argv)
    if save:
        check_output_file(save, "--save")  # before any episode: a bad path must not lose the evaluation
    import_modules(opts.get("import", []))
    model_label = opts.get("model") or EMBEDDED
    embedded = is_embedded(opts.get("model")) and opts.get("engine", "hf") == "hf"
    if opts.get("model") and opts.get("engine", "hf") == "hf":
        from turngym.engines.checkpoint_export import CheckpointError, resolve_model

        settings = {} if is_model_name(opts["model"]) else run_settings(opts["model"])
        plan = eval_plan(opts, env_kwargs, settings)
        try:
            opts["model"] = str(
                resolve_model(opts["model"], trust_checkpoint=opts.get("trust_checkpoint", False))
            )
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None  # names the named models, or how to fetch a Hub id
    else:
        settings = {}
        plan = eval_plan(opts, env_kwargs, settings)
        if opts.get("engine") == "sglang" and is_model_name(opts.get("tokenizer") or opts.get("model")):
            opts["tokenizer"] = str(_resolved(opts.get("tokenizer") or opts["model"]))
        if opts.get("engine") == "openai" and is_model_name(opts.get("tokenizer") or opts["model"]):
            opts["tokenizer"] = str(_resolved(opts.get("tokenizer") or opts["model"]))
    engine, tokenizer, tokenizer_path = build_engine(opts)
    served = None
    if opts.get("engine", "hf") != "hf":
        # The budgets follow the model the server serves, not the engine that reaches it.
        served = served_model(engine, opts)
        model_label = served or model_label
        embedded = served == EMBEDDED
    budgets = training_defaults(embedded=embedded, model=model_label)
    if settings.get("run"):
        budgets.update({k: v for k, v in settings.items() if k in TRAINING_KEYS})
    budgets.update({k: opts[k] for k in TRAINING_KEYS if k in opts})
    announce_tool_placement(tokenizer, plan)
    n = int(opts.get("n", 8))
    cfg = EpisodeConfig(
        max_turns=budgets["max_turns"],
        max_new_tokens=budgets.get("max_new_tokens"),
        max_response_tokens=budgets["max_response_tokens"],
    )
    if settings.get("run"):
        source = "the run"
    elif embedded or model_label in NAMED_MODEL_BUDGETS:
        source = f"training defaults for {model_label}" + (", the model the server serves" if served else "")
    else:
        source = "training defaults for any model"
    print(
        f"model {model_label} ({'HF dir ' + str(tokenizer_path) if opts.get('engine', 'hf') == 'hf' else opts.get('url', 'http://127.0.0.1:30000')}): "
        f"max_response_tokens={cfg.max_response_tokens}, max_turns={cfg.max_turns}, "
        f"max_new_tokens={cfg.max_new_tokens or 'rest of the budget'} ({source}"
        f"{', command line' if any(k in opts for k in TRAINING_KEYS) else ''})"
    )
    sampling = {k: opts[k] for k in ("temperature", "top_p", "top_k") if k in opts}
    sampling.setdefault("temperature", 1.0)
    everything: list = []
    kinds: list[EpisodeKind] = []  # each saved trajectory's kind (one env id may be played with two kwargs)
    summary: dict[str, float] = {}
    for kind in plan:
        bar = tqdm(total=n, desc=f"{kind.env_id} ({opts.get('engine', 'hf')})", unit="ep")

        def tick(traj, bar=bar):
            bar.update(1)
            bar.set_postfix(reward=f"{traj.total_reward:.2f}", turns=traj.num_turns)

        t0 = time.perf_counter()
        batch = asyncio.run(
            acollect(
                kind.env_id,
                engine,
                tokenizer,
                n,
                group_size=int(opts.get("group", 1)),
                concurrency=int(opts.get("concurrency", 64)),
                seed=int(opts.get("seed", 0)),
                env_kwargs=dict(kind.kwargs),
                sampling_params=sampling,
                config=cfg,
                on_episode=tick,
            )
        )
        wall = time.perf_counter() - t0
        bar.close()
        summary = summarize(batch)
        played = list(batch) + list(batch.failed)
        everything += played
        kinds += [kind] * len(played)
        if save:  # what was played is on disk before anything optional runs
            save_trajectories(everything, save, opts.get("model"), str(tokenizer_path), kinds, cfg.max_turns)
            _SAVED[:] = [save, len(everything)]
        if len(plan) > 1:
            print(kind.key)
        print(format_summary(summary, wall))
        if played and not list(batch):  # nothing to set beside the trivial players: say why, once, at the end
            first = batch.failed[0]
            _ALL_FAILED.append(
                f"{kind.key} ({len(played)} of {len(played)}; the first, seed {first.seed}: {one_line(first.error)[:400]})"
            )
            continue
        if opts.get("baselines", True):
            seeds = sorted({t.seed for t in played if t.seed is not None})
            summary.update(print_baselines(kind, seeds, summary, cfg.max_turns))
        for t in batch.failed[:3]:
            print(f"failed episode (seed {t.seed}): {t.error}", file=sys.stderr)
    if save:
        print(f"saved {len(everything)} trajectories to {save} (view: python -m rollout.view {save})")
    return summary


def print_baselines(
    kind: EpisodeKind, seeds: list[int], summary: dict[str, float], max_turns: int | None
) -> dict[str, float]:
    """Print the model beside the env's random and expert players on its seeds; returns their numbers.

    Optional, so it never ends the evaluation: a player the env lacks (a served env has no
    `random_action`) or one that fails is one line, "baselines skipped: ...".

    Args:
        kind: The env id and kwargs the model played.
        seeds: The seeds of its episodes.
        summary: The model's summary (its row of the table).
        max_turns: The model's turn cap, applied to the players too.

    Returns:
        {"<player>/<metric>": value} for the summary, empty when no player ran.
    """
    from rollout.baseline_table import baseline_rows, format_comparison, skipped_players

    try:
        players = baseline_rows(kind.env_id, seeds, dict(kind.kwargs), max_turns)
    except Exception as exc:  # noqa: BLE001 - an optional table: what went wrong in one line, the run goes on
        print(
            f"baselines skipped: {kind.env_id}: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr
        )
        return {}
    if players:
        print(f"\nthe model beside the env's trivial players, on the same {len(seeds)} seeds:")
        print(format_comparison({"model": summary, **players}))
    skipped = skipped_players(kind.env_id, dict(kind.kwargs), players)
    if skipped:
        print(skipped)
    return {f"{p}/{k}": v for p, row in players.items() for k, v in row.items()}


#: [path, count] of the --save file once written, for the Ctrl-C line.
_SAVED: list[Any] = []
#: Per env whose every episode failed: its key, the count and the first failure, for the exit line.
_ALL_FAILED: list[str] = []
ALL_FAILED_EXIT = 1


def _interrupted() -> str:
    if not _SAVED:
        return "interrupted; nothing was saved"
    path, count = _SAVED
    return f"interrupted; the {count} episodes of the envs played to the end are in {path}"


def all_failed_line() -> str | None:
    """The exit line when every episode of an env failed (none otherwise): which envs, the first failure,
    where the episodes were saved, and what to do."""
    if not _ALL_FAILED:
        return None
    kept = f"; the failed episodes are in {_SAVED[0]}" if _SAVED else ""
    return (
        f"every episode failed: {'; '.join(_ALL_FAILED)}{kept}; fix what the error names (the env, or the "
        "engine and its url) and run again"
    )


def cli(argv: list[str] | None = None) -> int:
    """Command-line entry: usage errors print one line and exit with code 2, Ctrl-C exits 130, and an env
    whose every episode failed ends in one line and exit code 1 (what was played is saved first)."""
    _SAVED.clear()
    _ALL_FAILED.clear()
    code = run_cli("rollout.eval", main, argv, interrupted=_interrupted)
    line = all_failed_line()
    if code == 0 and line is not None:
        print(f"rollout.eval: {line}", file=sys.stderr, flush=True)
        return ALL_FAILED_EXIT
    return code


if __name__ == "__main__":
    sys.exit(cli())
