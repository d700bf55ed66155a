"""`python -m trainer.run env=<group> [hydra overrides]`: train an agent with verl's PPO trainer.

Examples:
    python -m trainer.run env=text-game
    python -m trainer.run env.id=guess-number-v0 algorithm=ppo trainer.total_training_steps=5
    python -m trainer.run env=tool-use model=/models/Qwen2.5-1.5B-Instruct trainer.n_gpus_per_node=8
    python -m trainer.run env=guess-number model=smollm2-135m-instruct

model= is a Hugging Face model directory, a model name (smollm2-135m-instruct, embedded), gguf:<file>, or a
Hugging Face Hub id whose snapshot the local cache holds (nothing is downloaded: an id not cached gets the
`hf download` line that fetches it);
a name or GGUF is converted once, here, into a cached directory (turngym/engines/named_models.py) that every
verl worker then loads. Settings tuned for the embedded model (its warm start, budgets and learning
rates) apply only to it; the line ``model ...: ...`` shows the settings the run uses.

Everything before Ray starts is checked first (groups, env ids, override keys). On a machine
without a GPU (or with ``trainer.device=cpu``) the CPU platform plugin (``trainer.cpu``) is loaded
into every verl process through ``VERL_USE_EXTERNAL_MODULES`` and ``VERL_PLATFORM=cpu``.

With ``RAY_ADDRESS`` (or ``ray_kwargs.ray_init.address=auto|HOST:PORT``) the run joins a Ray cluster
started with ``ray start`` instead of starting its own; ``trainer.nnodes`` spreads it over the nodes.
An unreachable address is one line before anything is written (trainer/cluster/ray_cluster.py).

The console shows turngym's lines (one per training step); verl's and Ray's output goes to
``<turngym.output_dir>/train.log``. ``turngym.verbose=true`` shows it on the console as well.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from trainer.checks.run_checks import apply_run_name, check_run, fresh_run_hint
from trainer.cluster.ray_cluster import check_cluster_fits, check_cluster_reachable, join_existing_cluster
from trainer.cluster.ray_temp_dir import check_ray_temp_dir
from trainer.compose import (
    ConfigError,
    check_verl_sizes,
    compose_config,
    compute_dtype_line,
    env_entries,
    turn_limit_notes,
    warm_start_compute_dtype,
)
from trainer.data.run_data import StagedData
from trainer.report.interrupt_line import TRAINING, WARM_START, RunProgress
from trainer.report.progress import ConsoleFilter
from trainer.run_folder.lock import RunLock
from trainer.warm_start.expert_demos import DemoEpisodeError
from turngym.common.cli_errors import UsageError, run_cli

REPO_ROOT = Path(__file__).resolve().parent.parent
CPU_PLUGIN_MODULE = "trainer.cpu"
#: The exit code when an env raised while the warm start played its demonstrations (as for a broken env in RL).
WARM_START_FAILED_EXIT = 1
OPTIONAL_VERL_ENGINES = ("torchtitan", "veomni", "automodel", "mindspeed", "megatron")


def agent_loop_config_path() -> Path:
    """rollout/agent_loop.yaml: registers turngym's agent loop by name in every verl process."""
    import rollout

    path = Path(rollout.__file__).resolve().parent / "agent_loop.yaml"
    if not path.exists():
        raise ConfigError(f"{path} is missing: the rollout package must ship its agent loop registration")
    return path


def export_worker_env(cpu: bool, import_modules: list[str]) -> dict[str, str]:
    """Set (and return) what every verl process needs: PYTHONPATH, verl's external-module hook
    (the CPU plugin and ``turngym.import_modules``) and, on CPU, ``VERL_PLATFORM=cpu``."""
    modules = [m for m in os.environ.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m]
    for module in ([CPU_PLUGIN_MODULE] if cpu else []) + list(import_modules):
        if module not in modules:
            modules.append(module)
    python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for extra in (str(Path.cwd()), str(REPO_ROOT)):
        if extra not in python_path:
            python_path.insert(0, extra)
    values = {"PYTHONPATH": os.pathsep.join(python_path)}
    if modules:
        values["VERL_USE_EXTERNAL_MODULES"] = ",".join(modules)
    if cpu:
        values.update(
            {
                "VERL_PLATFORM": "cpu",
                # Ray gives an actor without num_cpus OMP_NUM_THREADS=1; verl's actor and the rollout
                # server take turns (synchronous trainer), so each may use every core while it runs.
                "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(os.cpu_count() or 1)),
                "TOKENIZERS_PARALLELISM": "false",
                "RAY_DEDUP_LOGS": os.environ.get("RAY_DEDUP_LOGS", "1"),
                # Ray starts workers at nice 15 so they never starve its own daemons; here the workers
                # are the training, and at 15 any other job on the machine took ~90 % of their CPU
                # (a real-model step went from ~100 s to 818 s beside a test suite).
                "RAY_worker_niceness": os.environ.get("RAY_worker_niceness", "0"),  # noqa: SIM112 - Ray reads this exact case
                # verl warns in every process about optional engines (megatron, veomni, ...) it cannot import.
                "PYTHONWARNINGS": ",".join(
                    f"ignore:{name} engine is not available:UserWarning" for name in OPTIONAL_VERL_ENGINES
                ),
            }
        )
    os.environ.update(values)
    # Hydra's pkg:// search path already imported verl in this process, before these variables
    # existed, so import the modules here by hand; Ray workers get them through verl's hook.
    for module in modules:
        importlib.import_module(module)
    return values


def resolve_model_option(cfg: DictConfig) -> str:
    """Replace a model name or ``gguf:<file>`` in ``turngym.model`` by its cached Hugging Face directory.

    Runs in the driver before Ray starts, so the conversion happens once and every worker gets a
    directory. Raises ConfigError in one line (a missing package, a bad GGUF, an unknown name).

    Args:
        cfg: the composed training config; ``turngym.model`` is rewritten in place.

    Returns:
        The model as the command named it (``embedded`` when none was given), for messages.
    """
    from turngym.engines.named_models import EMBEDDED, ModelSourceError, is_model_name, resolve_named_model

    given = cfg.turngym.model
    if not given:
        return EMBEDDED
    if is_model_name(given):
        try:
            cfg.turngym.model = str(resolve_named_model(str(given)))
        except ModelSourceError as exc:
            raise ConfigError(str(exc)) from None
    else:
        from turngym.engines.model_lookup import cached_hub_snapshot

        snapshot = cached_hub_snapshot(str(given))  # a Hub id the local cache holds: its folder, no download
        if snapshot is not None:
            cfg.turngym.model = str(snapshot)
    return str(given)


def model_settings_line(cfg: DictConfig, label: str) -> str:
    """One line with the settings this run uses for its model: budgets, warm start, learning rate."""
    rollout = cfg.actor_rollout_ref.rollout
    per_turn = cfg.turngym.max_tokens_per_turn
    ws = cfg.turngym.warm_start
    where = label if str(cfg.turngym.model) == label else f"{label} (HF dir {cfg.turngym.model})"
    return (
        f"[turngym] model {where}: max_tokens_per_turn={per_turn if per_turn is not None else 'rest of the budget'}, "
        f"max_response_length={cfg.data.max_response_length}, "
        f"max_assistant_turns={rollout.multi_turn.max_assistant_turns}, "
        f"warm_start={'on (lr ' + format(float(ws.lr), 'g') + ')' if ws.enable else 'off'}, "
        f"lr={float(cfg.actor_rollout_ref.actor.optim.lr):g}, train_batch_size={cfg.data.train_batch_size}"
    )


def stage_run(cfg: DictConfig) -> StagedData:
    """Every check that needs the model or the rows, with nothing written under the run folder.

    Builds the embedded model when no model is given, writes the datasets (env.* rows or the user's own,
    trainer.data.user_rows) into a scratch folder and checks the prompt budget on them; ConfigError on any
    problem. ``prepare`` moves the files into the run folder.
    """
    import tempfile

    from trainer.checks.prompt_budget import AUTO, check_prompt_budget, fitted_prompt_length
    from trainer.checks.run_checks import run_identity
    from trainer.data.run_data import discard, stage_datasets

    out = Path(cfg.turngym.output_dir).expanduser().resolve()
    cfg.turngym.output_dir = str(out)
    identity = run_identity(cfg)  # as the command gave it: the embedded model is "embedded"
    if not cfg.turngym.model:
        from turngym.engines.embedded_model import build_embedded_model

        cfg.turngym.model = str(build_embedded_model())
    staged = stage_datasets(cfg, env_entries(cfg), Path(tempfile.mkdtemp(prefix="turngym-data-")))
    staged.identity = identity
    try:
        budget = cfg.data.max_prompt_length
        longest = check_prompt_budget(
            staged.files(),
            cfg.turngym.model,
            None if budget == AUTO else int(budget),
            dict(cfg.data.get("apply_chat_template_kwargs") or {}),
        )
    except BaseException:  # a bad budget, Ctrl-C: no scratch folder is left in the temp dir
        discard(staged)
        raise
    if budget == AUTO:
        cfg.data.max_prompt_length = fitted_prompt_length(longest)
    for key, source in staged.sources.items():
        print(f"[turngym] data.{key}: your rows from {source}", flush=True)
    print(
        "[turngym] longest opening prompts (tokens): "
        + ", ".join(f"{env_id} {n}" for env_id, (n, _) in sorted(longest.items()))
        + f"; data.max_prompt_length={cfg.data.max_prompt_length}"
        + (" (auto)" if budget == AUTO else ""),
        flush=True,
    )
    return staged


def prepare(cfg: DictConfig, staged: StagedData, progress: RunProgress | None = None) -> DictConfig:
    """Side effects before Ray, once ``stage_run`` passed: datasets and run record into the run folder,
    env vars, warm start (``progress``, if given, follows it for the Ctrl-C line). Returns cfg."""
    from trainer.checks.run_checks import write_run_record
    from trainer.compose import warm_start_engine
    from trainer.data.run_data import install, run_data_path
    from trainer.warm_start.runner import finished_warm_start, warm_start

    out = Path(cfg.turngym.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    install(staged)
    for key in staged.sources:  # verl reads the expanded rows in the run folder, not the user's file
        cfg.data[key] = str(run_data_path(cfg, key))
    write_run_record(cfg, staged.identity)

    worker_env = export_worker_env(cfg.trainer.device == "cpu", list(cfg.turngym.import_modules))
    # The run's first failed episode keeps its traceback here (rollout/failure_trace.py), once per command.
    from rollout.failure_trace import FAILURE_FILE_ENV
    from trainer.hooks.episode_failures import failure_path, forget_failures

    forget_failures(out)
    worker_env[FAILURE_FILE_ENV] = str(failure_path(out))
    os.environ.setdefault("TENSORBOARD_DIR", str(out / "tensorboard"))
    worker_env["TENSORBOARD_DIR"] = os.environ["TENSORBOARD_DIR"]
    put_worker_env(cfg, worker_env)

    entries = env_entries(cfg)
    if not cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path:
        cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(agent_loop_config_path())

    ws = cfg.turngym.warm_start
    if ws.enable and cfg.trainer.resume_mode != "disable" and _has_checkpoint(cfg):
        print("[turngym] checkpoint found: skipping warm start, resuming RL")
        cfg.turngym.model = str(finished_warm_start(out / "warm_start") or cfg.turngym.model)
    elif ws.enable:
        if progress is not None:
            progress.phase = WARM_START
        players = (
            "expert"
            if float(ws.expert_share) >= 1
            else f"{float(ws.expert_share):.0%} expert, rest {ws.other_player}"
        )
        print(
            f"[turngym] warm start ({warm_start_engine(cfg)}): {ws.episodes} episodes ({players}), {ws.epochs} epochs",
            flush=True,
        )
        report = warm_start(
            cfg.turngym.model,
            out / "warm_start",
            entries,
            episodes=int(ws.episodes),
            epochs=int(ws.epochs),
            lr=float(ws.lr),
            batch_size=int(ws.batch_size),
            seed=int(ws.seed),
            device=str(cfg.trainer.device),
            max_length=int(ws.max_length),
            overrides=list(ws.overrides),
            expert_noise=float(ws.expert_noise),
            expert_share=float(ws.expert_share),
            other_player=str(ws.other_player),
            engine=warm_start_engine(cfg),
            compute_dtype=warm_start_compute_dtype(cfg),
        )
        print(
            f"[turngym] warm start done in {report['seconds']:.0f} s: loss {report['loss_first']:.3f} -> "
            f"{report['loss_last']:.3f} over {report['optimizer_steps']} steps; model {report['model']}",
            flush=True,
        )
        cfg.turngym.model = report["model"]
        if progress is not None:
            progress.phase = TRAINING
    return cfg


def put_worker_env(cfg: DictConfig, values: dict[str, str]) -> None:
    """Add ``values`` to ``ray_kwargs.ray_init.runtime_env.env_vars``: the environment of every Ray worker
    of the run, on every node (verl's ``run_ppo`` passes it to ``ray.init``)."""
    with open_struct(cfg):
        # Assigned through the config nodes: DictConfig.setdefault returns the plain default, not the
        # node it stores, so values written into it never reached ray.init. A local Ray instance hid
        # that (its workers inherit this process's environment); the nodes of a cluster do not.
        ray_init = cfg.ray_kwargs.ray_init
        if ray_init.get("runtime_env") is None:
            ray_init.runtime_env = {}
        if ray_init.runtime_env.get("env_vars") is None:
            ray_init.runtime_env.env_vars = {}
        for key, value in values.items():
            ray_init.runtime_env.env_vars[key] = value


class open_struct:  # noqa: N801 - used as a context manager like omegaconf.open_dict
    """Temporarily allow new keys in a struct config."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg

    def __enter__(self) -> DictConfig:
        OmegaConf.set_struct(self.cfg, False)
        return self.cfg

    def __exit__(self, *exc) -> None:
        OmegaConf.set_struct(self.cfg, True)


def _has_checkpoint(cfg: DictConfig) -> bool:
    return _checkpoint_step(cfg) is not None


def _checkpoint_step(cfg: DictConfig) -> int | None:
    marker = Path(cfg.trainer.default_local_dir) / "latest_checkpointed_iteration.txt"
    try:
        return int(marker.read_text().strip())
    except (OSError, ValueError):
        return None


def already_done(cfg: DictConfig) -> bool:
    """True when resuming would start at or after the last step: the run finished earlier."""
    step = _checkpoint_step(cfg)
    return (
        cfg.trainer.resume_mode == "auto"
        and step is not None
        and step >= int(cfg.trainer.total_training_steps)
    )


def launch(cfg: DictConfig) -> None:
    """Start Ray and run verl's trainer (through TurngymTaskRunner)."""
    from verl.trainer.main_ppo import run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    from trainer.task_runner import TurngymTaskRunner

    if cfg.trainer.device == "cpu":
        _use_cpu_platform()
    auto_set_device(cfg)
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    address = join_existing_cluster(cfg)
    if address is not None:
        print(
            f"[turngym] joining the Ray cluster at {address} (trainer.nnodes={cfg.trainer.nnodes})",
            flush=True,
        )
    print(
        "[turngym] starting Ray and verl's workers (trainer, actor, rollout server, agent loop); "
        + ("about a minute on CPU" if cfg.trainer.device == "cpu" else "this takes a while")
        + " before the first step",
        flush=True,
    )
    try:
        run_ppo(cfg, task_runner_class=TurngymTaskRunner)
    finally:
        import ray

        # Ray's log thread forwards workers' last lines until shutdown: stop it while the console
        # filter still routes them to train.log (at interpreter exit they would reach the console).
        if ray.is_initialized():
            ray.shutdown()


def _use_cpu_platform() -> None:
    """Make this process's verl platform the CPU one before verl reads it for trainer.device.

    compose_config's checks import verl modules that resolve the platform once per process, before
    ``VERL_PLATFORM=cpu`` is set; it falls back to nvidia there, and ``auto_set_device`` would then
    set trainer.device=cuda for every worker.
    """
    from verl.plugin.platform import get_platform, set_platform

    from trainer.cpu import CPU_PLATFORM_NAME, CPUPlatform

    if get_platform().device_name != CPU_PLATFORM_NAME:
        set_platform(CPUPlatform())


def summarize(cfg: DictConfig) -> None:
    """Write the reward curve and print first-vs-last rewards."""
    from trainer.report.plot import plot_reward_curve
    from trainer.report.progress import REWARD_KEY, MetricsLog

    png = plot_reward_curve(cfg.turngym.metrics_file, cfg.turngym.plot_file, title=f"turngym {cfg.env.name}")
    records = [r for r in MetricsLog(cfg.turngym.metrics_file).records("train") if REWARD_KEY in r]
    if records:
        k = max(1, min(3, len(records) // 2))
        first = sum(r[REWARD_KEY] for r in records[:k]) / k
        last = sum(r[REWARD_KEY] for r in records[-k:]) / k
        print(
            f"[turngym] reward: first {k} steps {first:.3f} -> last {k} steps {last:.3f} over {len(records)} steps"
        )
    print_learning_table(cfg)
    print(f"[turngym] metrics: {cfg.turngym.metrics_file}")
    if png:
        print(f"[turngym] reward curve: {png}")
    print(f"[turngym] checkpoints: {cfg.trainer.default_local_dir}")


def print_learning_table(cfg: DictConfig) -> None:
    """Per env, the first and last validation beside the random player and the expert on the same episodes."""
    from rollout.episode_budgets import run_turn_limit
    from trainer.data.run_data import run_data_path
    from trainer.report.learning_table import learning_table, validation_episodes
    from trainer.report.progress import MetricsLog

    val_file = run_data_path(cfg, "val_files")
    records = MetricsLog(cfg.turngym.metrics_file).records("val")
    if not records or not val_file.exists():
        return
    try:
        max_turns = run_turn_limit(cfg)
        warm_started = bool(OmegaConf.select(cfg, "turngym.warm_start.enable", default=False))
        table = learning_table(records, validation_episodes(val_file), max_turns, warm_started)
    except Exception as exc:  # a report at the end of a finished run, never a reason to fail it
        print(f"[turngym] learning table not printed: {type(exc).__name__}: {exc}", flush=True)
        return
    if table:
        print(
            "[turngym] validation success per env (95% interval) beside the trivial players, same episodes:"
        )
        for line in table.splitlines():
            print(f"[turngym]   {line}", flush=True)
    print_behaviour_table(records, val_file, max_turns)


def print_behaviour_table(records: list[dict], val_file: Path, max_turns: int | None) -> None:
    """Per env, its behaviour rates at the first and last validation beside the trivial players'."""
    from trainer.report.behaviour_table import behaviour_table
    from trainer.report.learning_table import validation_episodes

    try:
        table = behaviour_table(records, validation_episodes(val_file), max_turns)
    except Exception as exc:  # a report at the end of a finished run, never a reason to fail it
        print(f"[turngym] behaviour table not printed: {type(exc).__name__}: {exc}", flush=True)
        return
    if table:
        print("[turngym] validation behaviour per env beside the trivial players, same episodes:")
        for line in table.splitlines():
            print(f"[turngym]   {line}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code.

    A mistake is one line on stderr and exit code 2, before anything is written or Ray starts; Ctrl-C
    is one line saying what the same command will do (resume after the last checkpoint's step, or start
    over when there is none) and where the run's log is, exit code 130.

    Args:
        argv: The command line after `python -m trainer.run`: a config group (`env=guess-number`) and
            Hydra overrides; `--help` prints the usage. None: `sys.argv[1:]`.

    Returns:
        The exit code: 0 when training finished (or was already done), 2 for a mistake, 130 for Ctrl-C,
        1 when every episode of a validation pass or a step failed (the env's first traceback is on
        the console and in train.log, the reason one line on stderr) or an env raised while the warm
        start played its demonstrations (one line naming the env, its traceback in train.log), 3 when a health guard in
        `turngym.health.halt_on` stopped training (a checkpoint of that step is kept; the reason is one
        line on stderr).

    Example:
        >>> import contextlib, sys
        >>> from trainer.run import main
        >>> main(["--help"])  # doctest: +ELLIPSIS
        `python -m trainer.run env=<group> [hydra overrides]`: train an agent with verl's PPO trainer.
        ...
        0
        >>> with contextlib.redirect_stderr(sys.stdout):
        ...     code = main(["env=guess-numbr"])
        trainer.run: unknown env 'guess-numbr'; valid choices: calculator-qa, code-sandbox, ...
        >>> code
        2
        >>> main(["env=guess-number", "trainer.total_training_steps=1"])  # a real run  # doctest: +SKIP
        0
    """
    progress = RunProgress()  # what the Ctrl-C line says depends on how far the command got
    return run_cli("trainer.run", lambda args: _main(args, progress), argv, interrupted=progress.line)


def _main(argv: list[str] | None, progress: RunProgress | None = None) -> int:
    from trainer.data.run_data import discard

    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    from trainer.checks.verl_version import verl_version_problem

    problem = verl_version_problem()  # first: before any config is composed, anything written, Ray started
    if problem is not None:
        raise UsageError(problem)
    for name in OPTIONAL_VERL_ENGINES:
        # compose_config's checks import verl's engines here, before the console filter can start.
        warnings.filterwarnings("ignore", message=f"{name} engine is not available", category=UserWarning)
    staged: StagedData | None = None
    lock: RunLock | None = None
    try:
        cfg = compose_config(argv)
        apply_run_name(cfg)  # turngym.run_name=NAME: the run's folder is <turngym.output_dir>/runs/NAME
        progress = progress or RunProgress()
        model_label = resolve_model_option(cfg)  # a name or GGUF: converted once, before Ray starts
        check_run(cfg)  # before anything is written: output folders, model path, the run folder's settings
        # An existing Ray cluster to join (RAY_ADDRESS or ray_kwargs.ray_init.address): up, and big enough.
        address = check_cluster_reachable(cfg)
        if address is not None:
            check_cluster_fits(cfg, address)  # else verl's placement groups would wait forever
        # A Ray instance of our own: its socket paths under the temp folder must fit Linux's 107 bytes.
        temp_line = check_ray_temp_dir(cfg, joins_cluster=address is not None)
        if temp_line is not None:
            print(f"[turngym] {temp_line}", flush=True)
        # One run at a time per folder (trainer/run_folder/lock.py); released below however the run ends.
        lock = RunLock(cfg.turngym.output_dir, command=" ".join(["python -m trainer.run", *argv]))
        lock.acquire()
        if lock.stale:
            print(
                f"[turngym] {lock.path}: took over the lock of process {lock.stale.get('pid')}, which is "
                "no longer running (a run that was killed)",
                flush=True,
            )
        staged = stage_run(cfg)  # datasets and prompt budget, checked outside the run folder
        check_verl_sizes(cfg, with_critic=True)  # the critic's sizes need the model directory stage_run made
        print(model_settings_line(cfg, model_label), flush=True)
        dtype_line = compute_dtype_line(cfg)
        if dtype_line:
            print(f"[turngym] {dtype_line}", flush=True)
        for note in turn_limit_notes(cfg):
            print(f"[turngym] {note}", flush=True)
        log_file = train_log_path(cfg)
        error: UsageError | None = None
        broken: DemoEpisodeError | None = None
        try:
            with ConsoleFilter(log_file, verbose=bool(cfg.turngym.get("verbose", False))):
                print(f"[turngym] verl's and Ray's output: {log_file} (turngym.verbose=true shows it here)")
                progress.cfg = cfg  # from here on the run folder holds this run's files
                progress.phase = TRAINING
                try:
                    cfg = prepare(cfg, staged, progress)
                except UsageError as exc:
                    error = exc
                except DemoEpisodeError as exc:  # the env's bug, not ours: one line once the console is back
                    broken = exc
                else:
                    train(cfg)
        except KeyboardInterrupt:
            raise  # run_cli prints one line: the same command resumes
        except BaseException:
            print(f"[turngym] training stopped; verl's and Ray's output: {log_file}", file=sys.stderr)
            raise
    finally:
        if staged is not None:  # the scratch folder never outlives the command, however it ends
            discard(staged)
        if lock is not None:
            lock.release()
    if error is not None:  # raised once the console is restored, so it is never filtered away
        raise error
    if broken is not None:
        print(f"trainer.run: {warm_start_failure(broken, cfg, log_file)}", file=sys.stderr, flush=True)
        return WARM_START_FAILED_EXIT
    from trainer.hooks.episode_failures import stop_exit
    from trainer.hooks.health.halt import halt_exit_code

    code, reason = stop_exit(cfg.turngym.output_dir)  # every episode failed: the env is broken
    if reason is None:
        code, reason = halt_exit_code(cfg.turngym.output_dir)
    if reason is not None:
        print(f"trainer.run: {reason}", file=sys.stderr)
    return code


def warm_start_failure(broken: DemoEpisodeError, cfg: DictConfig, log_file: Path) -> str:
    """The one line for an env that raised while the warm start played its demonstrations; its traceback
    is appended to ``log_file`` first, so nothing is lost.

    Args:
        broken: what `trainer.warm_start.expert_demos.write_demonstrations` raised.
        cfg: the run's config (its ``turngym.import_modules`` go into the suggested check).
        log_file: the run's train.log.

    Returns:
        What raised where, that nothing was trained, where the traceback is and what to do.
    """
    import traceback

    with open(log_file, "a", encoding="utf-8") as log:
        log.write(f"[warm start] {broken}\n")
        log.write("".join(traceback.format_exception(broken.error)))
    imports = "".join(f" --import {m}" for m in cfg.turngym.import_modules or [])
    return (
        f"the warm start stopped: {broken}; nothing was trained and the traceback is in {log_file}; "
        f"fix the env (`python -m envs check {broken.env_id}{imports}` runs it alone) and run the same "
        "command again, or train without a warm start (turngym.warm_start.enable=false)"
    )


def train_log_path(cfg: DictConfig) -> Path:
    """Where verl's and Ray's output of a run goes: ``<turngym.output_dir>/train.log``."""
    return Path(str(cfg.turngym.output_dir)).expanduser().resolve() / "train.log"


def train(cfg: DictConfig) -> None:
    """Launch verl's trainer unless the run already finished; then summarize."""
    if already_done(cfg):
        # Running the same command again (e.g. `make train`) must not start Ray just to stop at once.
        print(
            f"[turngym] {cfg.turngym.output_dir} already holds a finished run "
            f"({_checkpoint_step(cfg)} steps). Raise trainer.total_training_steps to train on, "
            f"or start afresh with {fresh_run_hint(cfg)}, a new turngym.output_dir, or after deleting that directory."
        )
    else:
        launch(cfg)
    summarize(cfg)


if __name__ == "__main__":
    sys.exit(main())
