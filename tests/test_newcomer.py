"""Every mistake a new user makes with the command lines ends in one line, the right exit code, and no change.

Each case runs a CLI's `main` in-process (as `python -m ...` would) from an empty working directory,
with the temp dir pointed at an empty folder too, and checks: stderr is one line starting with the
command's name (or, for `--help`, the text is on stdout), the exit code, and that neither folder
changed. `pytest tests/test_newcomer.py -s` prints the table of every mistake tried.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from turngym.common.cli_errors import INTERRUPT_EXIT, UsageError, check_output_file, did_you_mean, run_cli

TABLE: list[tuple[str, str, int]] = []


def _mains() -> dict[str, Callable[[list[str]], int]]:
    import envs.__main__
    import rollout.eval
    import rollout.view
    import tools.sandbox.serve
    import trainer.run
    import turngym.engines.named_models
    import turngym.engines.serve

    return {
        "envs": envs.__main__.main,
        "rollout.eval": rollout.eval.cli,
        "rollout.view": rollout.view.main,
        "turngym.engines.serve": turngym.engines.serve.main,
        "tools.sandbox.serve": tools.sandbox.serve.main,
        "turngym.engines.named_models": turngym.engines.named_models.main,
        "trainer.run": trainer.run.main,
    }


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    # torch makes its compile cache folder (torchinductor_<user>) in the temp dir when verl imports it.
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if not p.is_symlink() and not p.relative_to(root).parts[0].startswith("torchinductor_")
    }


@pytest.fixture
def world(tmp_path, monkeypatch):
    """An empty working directory and an empty temp dir, with a few files a user would have."""
    cwd, scratch = tmp_path / "work", tmp_path / "tmp"
    cwd.mkdir()
    scratch.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))
    (cwd / "notes.txt").write_text("a file, not a folder\n")
    (cwd / "traj.jsonl").write_text("this is not JSON\n")
    (cwd / "tools.yaml").write_text("tools:\n  - entry: calculater\n")
    (cwd / "spaced.yaml").write_text("tools:\n  - entry: calculator\n    name: count letters with spaces\n")
    (cwd / "sometimes.yaml").write_text("tools:\n  - entry: calculator\n    concurrent: sometimes\n")
    (cwd / "lots.yaml").write_text("tools:\n  - entry: search\n    config: {max_chars_per_doc: lots}\n")
    # An empty Hugging Face cache: a Hub id is then known not to be cached, whatever this machine holds.
    (tmp_path / "hf").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    yield {"cwd": cwd, "scratch": scratch, "port": str(busy.getsockname()[1])}
    busy.close()


# (command, argv with {port} filled in, exit code, text the one line must hold)
CASES = [
    ("envs", ["play", "guess-numbr-v0"], 2, "did you mean"),
    ("envs", ["play", "guess-number-v0", "-o", "difficulty=impossible"], 2, "difficulty"),
    ("envs", ["play", "guess-number-v0", "--seed", "one"], 2, "invalid int value"),
    ("envs", ["play", "calculator-qa-v0", "-o", "tools=tools.yaml"], 2, "entry: calculater"),
    ("envs", ["play", "calculator-qa-v0", "-o", "tools=spaced.yaml"], 2, "not a valid function name"),
    # Every documented Tool field is a YAML key, its value checked; a config value is checked against
    # the constructor's type hints at load, not by every call failing.
    (
        "envs",
        ["play", "calculator-qa-v0", "-o", "tools=sometimes.yaml"],
        2,
        "`concurrent` must be true or false",
    ),
    (
        "envs",
        ["play", "calculator-qa-v0", "-o", "tools=lots.yaml"],
        2,
        "max_chars_per_doc`: expected integer",
    ),
    ("envs", ["serve", "--port", "{port}"], 2, "is in use"),
    ("envs", ["experts", "--episodes", "0"], 2, "at least 1"),
    ("envs", ["check", "guess-numbr-v0"], 2, "did you mean 'guess-number-v0'"),
    ("envs", ["check", "guess-number-v0", "--seeds", "0"], 2, "at least 1 seed"),
    ("envs", ["check", "guess-number-v0", "-o", "difficulty=impossible"], 2, "difficulty"),
    ("envs", ["list", "--category", "text-gmae"], 2, "did you mean text-game"),
    ("envs", ["list", "--import", "my_envs_typo"], 2, "No module named 'my_envs_typo'"),
    ("rollout.eval", ["env=guess-number-v0", "--save", "notes.txt/run.jsonl"], 2, "is a file"),
    ("rollout.eval", ["env=guess-number-v0", "n=0"], 2, "n=0 must be >= 1"),
    ("rollout.eval", ["env=guess-number-v0", "temperature=-1"], 2, "out of range"),
    ("rollout.eval", ["env=guess-number-v0", "temprature=0.5"], 2, "did you mean temperature"),
    ("rollout.eval", ["env=guess-numbr-v0"], 2, "Did you mean 'guess-number-v0'"),
    ("rollout.eval", ["env=guess-number-v0", "env.difficulty=3"], 2, "difficulty"),
    ("rollout.eval", ["env=calculator-qa-v0", "env.tools=tools.yaml"], 2, "entry: calculater"),
    ("rollout.eval", ["env=guess-number-v0", "model=smollm2-135m-instrct"], 2, "did you mean smollm2"),
    ("rollout.eval", ["env=guess-number-v0", "env.tools=spaced.yaml"], 2, "e.g. 'count_letters_with_spaces'"),
    ("rollout.eval", ["env=guess-number-v0", "model=gguf:missing.gguf"], 2, "no such file"),
    ("rollout.eval", ["env=guess-number-v0", "engine=vllm"], 2, "valid choices"),
    (
        "rollout.eval",
        ["env=guess-number-v0", "engine=openai", "url=http://127.0.0.1:8000/v1"],
        2,
        "needs model=",
    ),
    ("rollout.eval", ["env=guess-number-v0", "engine=openai", "model=gpt-4o-mini"], 2, "needs url=http"),
    # A model that is no path: the named models listed, or for a Hub id the command that fetches it.
    ("rollout.eval", ["env=guess-number-v0", "model=qwen-tiny"], 2, "a named model: smollm2-135m-instruct ("),
    (
        "rollout.eval",
        ["env=guess-number-v0", "model=Qwen/Qwen2.5-0.5B-Instruct"],
        2,
        "`hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir models/Qwen2.5-0.5B-Instruct`",
    ),
    ("rollout.view", ["missing.jsonl"], 2, "is not a file"),
    ("rollout.view", ["traj.jsonl"], 2, "not a trajectories JSONL"),
    ("rollout.view", ["traj.jsonl", "-o", "notes.txt/page.html"], 2, "is a file"),
    ("turngym.engines.serve", ["--port", "{port}"], 2, "is in use"),
    ("turngym.engines.serve", ["--model-path", "no/such/model"], 2, "does not exist"),
    ("turngym.engines.serve", ["--model-path", "smollm"], 2, "embedded (the embedded tiny model)"),
    ("tools.sandbox.serve", ["--port", "{port}"], 2, "is in use"),
    ("tools.sandbox.serve", ["--concurrency", "0"], 2, "--concurrency"),
    ("tools.sandbox.serve", ["--isolation", "docker"], 2, "invalid choice"),
    ("turngym.engines.named_models", ["smollm2"], 2, "unknown model name"),
    ("trainer.run", ["env=guess-number", "turngym.output_dir=notes.txt"], 2, "is a file"),
    ("trainer.run", ["env.id=guess-numbr-v0"], 2, "did you mean guess-number-v0"),
    ("trainer.run", ["env=guess-number", "algorithm=grpoo"], 2, "grpo"),
    ("trainer.run", ["env=guess-number", "actor_rollout_ref.actor.optim.lrr=1e-5"], 2, "did you mean"),
    ("trainer.run", ["env=guess-number", "model=gguf:missing.gguf"], 2, "no such file"),
    (
        "trainer.run",
        ["env=guess-number", "model=Qwen/Qwen2.5-0.5B-Instruct"],
        2,
        "turngym downloads nothing at run time: fetch it once with `hf download Qwen/Qwen2.5-0.5B-Instruct",
    ),
    ("trainer.run", ["env=guess-number", "turngym.keep_optimizer=lates"], 2, "did you mean latest"),
    # env.kwargs.* with a group apply to every env of it, so a bad value is refused like with env.id.
    ("trainer.run", ["env=guess-number", "env.kwargs.tools=tools.yaml"], 2, "entry: calculater"),
    ("trainer.run", ["env=guess-number", "env.kwargs.difficulty=impossible"], 2, "unknown difficulty"),
    ("trainer.run", ["env=guess-number", "env.kwargs.tools=spaced.yaml"], 2, "not a valid function name"),
    ("trainer.run", ["env=text-game", "env.kwargs.secret=7"], 2, "env.id=guess-number-v0 env.kwargs."),
    # Numbers: type and range, the key named, before the warm start, the datasets or Ray.
    (
        "trainer.run",
        ["env=guess-number", "data.train_batch_size=-4"],
        2,
        "data.train_batch_size=-4 is out of",
    ),
    (
        "trainer.run",
        ["env=guess-number", "actor_rollout_ref.actor.optim.lr=fast"],
        2,
        "optim.lr='fast' is not a",
    ),
    (
        "trainer.run",
        ["env=guess-number", "trainer.total_training_steps=abc"],
        2,
        "total_training_steps='abc'",
    ),
    ("trainer.run", ["env=guess-number", "data.train_batch_size=8.5"], 2, "not a whole number"),
    ("trainer.run", ["env=guess-number", "actor_rollout_ref.rollout.top_p=0"], 2, "top_p=0 is out of range"),
    (
        "trainer.run",
        ["env=guess-number", "actor_rollout_ref.actor.entropy_coeff=big"],
        2,
        "entropy_coeff='big'",
    ),
    (
        "trainer.run",
        ["env=guess-number", "turngym.warm_start.episodes=many"],
        2,
        "warm_start.episodes='many'",
    ),
    (
        "trainer.run",
        ["env=guess-number", "data.train_batch_size=3"],
        2,
        "must be >= actor.ppo_mini_batch_size",
    ),
]


@pytest.mark.parametrize(
    ("cli", "argv", "code", "needle"), CASES, ids=[f"{c[0]} {' '.join(c[1])}" for c in CASES]
)
def test_a_mistake_is_one_line_and_changes_nothing(world, capsys, cli, argv, code, needle):
    argv = [a.replace("{port}", world["port"]) for a in argv]
    before = (_tree(world["cwd"]), _tree(world["scratch"]))
    assert _mains()[cli](argv) == code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    # A library's own warning (the torch/verl import) is not the user's error: keep only our lines.
    ours = [line for line in lines if line.startswith(f"{cli}: ")]
    assert len(ours) == 1 and needle.lower() in ours[0].lower(), err
    assert len(lines) == 1, err
    assert (_tree(world["cwd"]), _tree(world["scratch"])) == before
    TABLE.append((f"python -m {cli} {' '.join(argv)}", ours[0], code))


HELPED = ["envs", "rollout.eval", "rollout.view", "turngym.engines.serve", "tools.sandbox.serve"]
HELPED += ["turngym.engines.named_models", "trainer.run"]


@pytest.mark.parametrize("cli", HELPED)
def test_help_goes_to_stdout_with_exit_0(world, capsys, cli):
    assert _mains()[cli](["--help"]) == 0
    out, err = capsys.readouterr()
    assert "python -m" in out and err == ""
    TABLE.append((f"python -m {cli} --help", f"({len(out.splitlines())} lines of help on stdout)", 0))


def test_eval_save_into_a_missing_folder_creates_it_and_keeps_every_episode(world, capsys):
    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    target = world["cwd"] / "runs" / "today" / "traj.jsonl"
    argv = ["env=guess-number-v0", "n=2", "max_turns=1", "max_new_tokens=4", "--save", str(target)]
    assert rollout_eval.cli(argv) == 0
    assert len(load_jsonl(str(target))) == 2
    TABLE.append(("python -m rollout.eval env=guess-number-v0 n=2 --save runs/today/traj.jsonl", "works", 0))


def test_view_without_transformers_is_one_line(world, capsys, monkeypatch):
    """`rollout.view` without the `train` extra died in an ImportError traceback."""
    import sys

    from rollout import view

    good = world["cwd"] / "good.jsonl"
    good.write_text(json.dumps({"prompt_ids": [1, 2], "env_id": "guess-number-v0", "seed": 0}) + "\n")
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if the package were not installed
    before = (_tree(world["cwd"]), _tree(world["scratch"]))
    assert view.main([str(good)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install -e '.[train]'" in err, err
    assert (_tree(world["cwd"]), _tree(world["scratch"])) == before
    TABLE.append(("python -m rollout.view good.jsonl (no transformers)", err, 2))


def test_experts_name_the_envs_they_leave_out(world, capsys):
    """`envs experts` on TextArena's games printed an empty table and nothing else."""
    import envs.__main__

    before = (_tree(world["cwd"]), _tree(world["scratch"]))
    assert envs.__main__.main(["experts", "--category", "textarena-single-player", "--episodes", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("not in the table: ") and "have no scripted expert (textarena/" in last, last
    assert (_tree(world["cwd"]), _tree(world["scratch"])) == before
    TABLE.append(("python -m envs experts --category textarena-single-player", last[:100] + " ...", 0))


def test_serve_says_where_it_listens_with_one_process(world):
    """`envs serve` printed nothing for one process (with --workers N it names its address and pids)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "envs", "serve", "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stderr.readline().strip()
    finally:
        server.kill()
        server.wait()
    assert (
        line
        == f"envs serve: listening on http://127.0.0.1:{port} (one process, pid {server.pid}); Ctrl-C stops it"
    )
    TABLE.append((f"python -m envs serve --port {port}", line, 0))


def test_env_kwargs_with_a_group_apply_to_every_env_of_it(world):
    """`env=guess-number env.kwargs.tools=my_tools.yaml` (docs/tools.md) trained without the tools."""
    from trainer.checks.run_checks import run_identity
    from trainer.compose import compose_config, env_entries

    (world["cwd"] / "my_tools.yaml").write_text("tools:\n  - entry: calculator\n")
    cfg = compose_config(["env=text-game", "env.kwargs.difficulty=hard", "env.kwargs.tools=my_tools.yaml"])
    entries = env_entries(cfg)
    assert [e["id"] for e in entries] == ["guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0"]
    assert all(e["kwargs"] == {"difficulty": "hard", "tools": "my_tools.yaml"} for e in entries)
    cfg = compose_config(["env=guess-number", "env.kwargs.tools=my_tools.yaml", "env.kwargs.difficulty=hard"])
    # The group file's own kwargs stay unless env.kwargs names them (env.difficulty, easy on CPU, yields
    # to env.kwargs.difficulty); run.json records what is used.
    used = {"action_tool": False, "tools": "my_tools.yaml", "difficulty": "hard"}
    assert run_identity(cfg)["env"][0]["kwargs"] == used
    TABLE.append(("python -m trainer.run env=guess-number env.kwargs.tools=my_tools.yaml", "works", 0))


def test_a_second_run_into_the_same_folder_is_refused_and_a_killed_runs_lock_is_taken_over(
    world, capsys, monkeypatch
):
    """The same command started twice, 3 s apart, trained twice into one folder; a killed run's lock is stale."""
    import trainer.run

    out = world["cwd"] / "run"
    holding = "import sys, time; from trainer.run_folder.lock import RunLock; RunLock(sys.argv[1], sys.argv[2]).acquire(); "
    holding += "print('held', flush=True); time.sleep(600)"
    command = f"python -m trainer.run env=guess-number turngym.output_dir={out}"
    holder = subprocess.Popen(
        [sys.executable, "-c", holding, str(out), command], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        before = (_tree(world["cwd"]), _tree(world["scratch"]))
        argv = ["env=guess-number", f"turngym.output_dir={out}", "turngym.warm_start.enable=false"]
        assert trainer.run.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"is in use by another run (process {holder.pid}" in err[0], err
        assert f": {command}); wait for it to end or stop it" in err[0], err
        assert (_tree(world["cwd"]), _tree(world["scratch"])) == before
        TABLE.append(("python -m trainer.run env=guess-number (while the same command runs)", err[0], 2))
    finally:
        holder.kill()  # as SIGKILL leaves it: the lock file stays, with a PID that is gone
        holder.wait()
    assert (out / "run.lock").exists()

    seen = {}

    def launched(cfg):
        seen["holder"] = json.loads((out / "run.lock").read_text())["pid"]

    monkeypatch.setattr(trainer.run, "launch", launched)
    assert trainer.run.main(argv) == 0
    printed = capsys.readouterr().out
    assert f"took over the lock of process {holder.pid}, which is no longer running" in printed, printed
    assert seen["holder"] == os.getpid()
    assert not (out / "run.lock").exists()  # released when the run ended


def _checkpointed(out: Path, step: int) -> None:
    """What verl leaves after saving step ``step``: its folder and the marker naming it the latest."""
    (out / "checkpoints" / f"global_step_{step}" / "actor").mkdir(parents=True)
    (out / "checkpoints" / "latest_checkpointed_iteration.txt").write_text(str(step))


def test_a_resume_with_changed_settings_is_refused_and_never_rewrites_what_earlier_steps_used(
    world, capsys, monkeypatch
):
    """Rerunning a finished run with `optim.lr=0.05 trainer.total_training_steps=4` resumed after step 3
    without a word, and config.yaml then said lr 0.05 although steps 1-3 trained at the old rate."""
    import yaml

    import trainer.run

    launched = []
    monkeypatch.setattr(trainer.run, "launch", lambda cfg: launched.append(cfg))  # verl's Ray run
    out = world["cwd"] / "run"
    base = ["env=guess-number", f"turngym.output_dir={out}", "turngym.warm_start.enable=false"]
    assert trainer.run.main([*base, "trainer.total_training_steps=3"]) == 0
    first = (out / "config.yaml").read_bytes()
    lr = yaml.safe_load(first)["actor_rollout_ref"]["actor"]["optim"]["lr"]
    _checkpointed(out, 3)
    capsys.readouterr()

    changed = [*base, "actor_rollout_ref.actor.optim.lr=0.05", "trainer.total_training_steps=4"]
    before = _tree(world["cwd"])
    assert trainer.run.main(changed) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"trainer.run: {out} was trained up to step 3 with other "), (
        err
    )
    assert f"(actor_rollout_ref.actor.optim.lr {lr} -> 0.05; recorded in config.yaml)" in err[0], err
    assert "turngym.output_dir=DIR" in err[0] and "turngym.resume_changed=true" in err[0], err
    assert _tree(world["cwd"]) == before and len(launched) == 1
    TABLE.append(
        ("python -m trainer.run ... optim.lr=0.05 trainer.total_training_steps=4 (resume)", err[0], 2)
    )

    # Extending the step count is a resume; it records what its steps use beside config.yaml.
    assert trainer.run.main([*base, "trainer.total_training_steps=4", "trainer.logger=[console]"]) == 0
    assert len(launched) == 2 and (out / "config.yaml").read_bytes() == first
    resumed = (out / "config.resumed-3.yaml").read_text()
    assert resumed.startswith("# steps after 3 (resumed); changed settings: none\n"), resumed[:200]
    assert yaml.safe_load(resumed)["trainer"]["total_training_steps"] == 4

    # Opted in: trained with the change, recorded beside the original, which stays as steps 1-3 used it.
    assert trainer.run.main([*changed, "turngym.resume_changed=true"]) == 0
    printed = capsys.readouterr().out
    assert (
        f"resuming after step 3 with changed settings (actor_rollout_ref.actor.optim.lr {lr} -> 0.05)"
        in printed
    )
    assert len(launched) == 3 and (out / "config.yaml").read_bytes() == first
    resumed = (out / "config.resumed-3.yaml").read_text()
    assert f"changed settings: actor_rollout_ref.actor.optim.lr {lr} -> 0.05\n" in resumed.splitlines(True)[0]
    assert yaml.safe_load(resumed)["actor_rollout_ref"]["actor"]["optim"]["lr"] == 0.05
    # Steps 4.. trained at 0.05: a later resume compares with that, not with config.yaml.
    _checkpointed(out, 5)
    assert (
        trainer.run.main([*base, "actor_rollout_ref.actor.optim.lr=0.05", "trainer.total_training_steps=6"])
        == 0
    )
    assert len(launched) == 4 and (out / "config.resumed-5.yaml").exists()


HEAVY = ("verl", "ray", "torch", "hydra", "transformers")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["env.id=guess-numbr-v0"], "env 'guess-numbr-v0' is not registered; did you mean guess-number-v0?"),
        (["env.id=my-game-v0", "turngym.import_modules=[my_game]"], "env 'my-game-v0' is not registered;"),
        (["env=guess-numbr"], "unknown env 'guess-numbr'"),
    ],
)
def test_an_unregistered_env_id_is_refused_before_verl_or_ray_is_imported(world, argv, needle):
    """`env.id=<unregistered>` composed the config first, which imports verl, torch and Ray (10-15 s,
    164-172 s under load), while a misspelled group took 0.4 s: now both are refused before either."""
    (world["cwd"] / "my_game.py").write_text(
        "import envs\nfrom envs.games.guess_number import GuessNumberEnv\n"
        "envs.register('my-game-v1', GuessNumberEnv)\n"
    )
    probe = (
        "import sys, trainer.run\ncode = trainer.run.main(sys.argv[1:])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\nsys.exit(code)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=environment, timeout=300
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"trainer.run: {needle}"), lines
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout  # none of verl, ray, torch, hydra
    if "my_game" in " ".join(argv):  # the user's module was imported: its own id is the suggestion
        assert "did you mean my-game-v1" in lines[0], lines
    TABLE.append((f"python -m trainer.run {' '.join(argv)}", lines[0], 2))


BROKEN_ENV = """\
import envs
from envs.games.guess_number import GuessNumberEnv


class BrokenGuessNumber(GuessNumberEnv):
    def _respond(self, turn):
        if self.broken(self.seed_played):
            scores = {}
            return scores["missing"]  # the bug: line 9
        return super()._respond(turn)

    def _begin_episode(self, seed, options):
        self.seed_played = seed or 0
        return super()._begin_episode(seed, options)

    def broken(self, seed):
        return True


class OddSeedsBroken(BrokenGuessNumber):
    def broken(self, seed):
        return seed % 2 == 1


envs.register("broken-guess-v0", BrokenGuessNumber)
envs.register("odd-seeds-broken-guess-v0", OddSeedsBroken)
"""


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["broken-guess-v0", "odd-seeds-broken-guess-v0"])
def test_an_env_that_raises_in_training_shows_its_traceback_once_and_counts_its_failures(world, env_id):
    """An env whose step raised KeyError gave `reward 0.000` and then verl's response_mask error, its own
    traceback nowhere. Every episode failing stops the run at once (exit 1); some failing are counted."""
    (world["cwd"] / "my_broken_env.py").write_text(BROKEN_ENV)
    out = world["cwd"] / "run"
    argv = [f"env.id={env_id}", "turngym.import_modules=[my_broken_env]", f"turngym.output_dir={out}"]
    argv += ["turngym.warm_start.enable=false", "trainer.total_training_steps=2", "trainer.test_freq=2"]
    argv += [
        "env.train_episodes=16",
        "env.val_episodes=8",
        "data.train_batch_size=4",
        "trainer.logger=[console]",
    ]
    # Ray's socket paths live under the temp dir and may not exceed 107 bytes: the system's, not the fixture's.
    environment = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "trainer.run", *argv],
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    console = proc.stdout.splitlines()
    where = f'{world["cwd"] / "my_broken_env.py"}", line 9, in _respond'
    # The traceback once, on the console and in train.log, with the env's file and line.
    assert sum(where in line for line in console) == 1, proc.stdout + proc.stderr[-3000:]
    assert where in (out / "train.log").read_text()
    assert console.count("[turngym] | KeyError: 'missing'") == 1, proc.stdout
    validations = [line for line in console if "validation at step" in line and " done: " in line]
    steps = [line for line in console if line.startswith("[turngym] step ")]
    counts = [tuple(map(int, re.findall(r"failed (\d+)/(\d+)", line)[-1])) for line in validations + steps]
    if env_id == "broken-guess-v0":
        assert proc.returncode == 1, proc.stderr
        assert steps == [] and len(validations) == 1 and counts[0][0] == counts[0][1] > 0, proc.stdout
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith(
            f"trainer.run: every episode failed (validation at step 0: {counts[0][0]} of "
        ), last
        assert "response_mask" not in proc.stdout + proc.stderr
        assert not (out / "run.lock").exists()
        TABLE.append((f"python -m trainer.run env.id={env_id} (step raises KeyError)", last, 1))
    else:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(validations) == 2 and len(steps) == 2, proc.stdout
        assert all(0 < failed < episodes for failed, episodes in counts), proc.stdout


def test_an_env_that_raises_in_the_warm_start_is_one_line_and_keeps_its_traceback(world, capsys, monkeypatch):
    """An env whose step raised while the warm start played its expert episodes ended `trainer.run` in a
    raw traceback. Now: one line (the env, what it raised and where, what to do), exit 1, the traceback in
    train.log, the lock released, and the same command runs again once the env is fixed."""
    import trainer.run

    (world["cwd"] / "my_broken_env.py").write_text(BROKEN_ENV)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    out = world["cwd"] / "run"
    argv = ["env.id=broken-guess-v0", "turngym.import_modules=[my_broken_env]", f"turngym.output_dir={out}"]
    argv += ["turngym.warm_start.enable=true", "turngym.warm_start.engine=torch"]
    assert trainer.run.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    where = f"{world['cwd'] / 'my_broken_env.py'}:9"
    assert re.fullmatch(
        re.escape("trainer.run: the warm start stopped: broken-guess-v0 raised KeyError: 'missing' in an ")
        + r"episode of its (scripted expert|talker|random player) \(seed \d+\) "
        + re.escape(
            f"(at {where}); nothing was trained and the traceback is in {out.resolve() / 'train.log'}; fix "
            "the env (`python -m envs check broken-guess-v0 --import my_broken_env` runs it alone) and run "
            "the same command again, or train without a warm start (turngym.warm_start.enable=false)"
        ),
        err[0],
    ), err
    log = (out / "train.log").read_text()
    assert "Traceback (most recent call last)" in log and 'my_broken_env.py", line 9, in _respond' in log
    assert not (out / "run.lock").exists() and (out / "run.json").is_file()
    assert not list(world["scratch"].glob("turngym-data-*"))
    TABLE.append(("python -m trainer.run env.id=broken-guess-v0 (raises in the warm start)", err[0], 1))


def _long_temp(world) -> Path:
    folder = world["scratch"] / ("t" * 40)
    folder.mkdir()
    return folder


def test_a_temp_folder_set_for_ray_that_is_too_long_is_one_line_before_anything_is_written(
    world, capsys, monkeypatch
):
    """A long TMPDIR broke Ray's socket path (AF_UNIX, 107 bytes) after the run folder was written."""
    import trainer.run

    long_temp = _long_temp(world)
    monkeypatch.setenv("RAY_TMPDIR", str(long_temp))
    before = _tree(world["cwd"]), _tree(world["scratch"])
    out = world["cwd"] / "run"
    assert trainer.run.main(["env=guess-number", f"turngym.output_dir={out}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"trainer.run: RAY_TMPDIR={long_temp} makes Ray's socket"), err
    assert "(Linux allows 107: " in err[0] and "set RAY_TMPDIR to a shorter folder" in err[0], err
    assert (_tree(world["cwd"]), _tree(world["scratch"])) == before and not out.exists()
    TABLE.append(("RAY_TMPDIR=<long> python -m trainer.run env=guess-number", err[0], 2))


def test_a_long_tmpdir_gives_ray_a_short_temp_folder_and_says_so(world, capsys, monkeypatch):
    """TMPDIR alone (a test runner's, a job's scratch folder) is no choice made for Ray: Ray gets /tmp."""
    import trainer.run

    long_temp = _long_temp(world)
    monkeypatch.setenv("TMPDIR", str(long_temp))
    monkeypatch.delenv("RAY_TMPDIR", raising=False)  # restored after the test: the run sets it
    seen = {}

    def launch(cfg):
        seen["RAY_TMPDIR"] = os.environ.get("RAY_TMPDIR")
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer.run, "launch", launch)
    out = world["cwd"] / "run"
    argv = ["env=guess-number", f"turngym.output_dir={out}", "turngym.warm_start.enable=false"]
    assert trainer.run.main(argv) == INTERRUPT_EXIT
    said = [line for line in capsys.readouterr().out.splitlines() if "socket paths" in line]
    assert said == [
        f"[turngym] TMPDIR={long_temp} makes Ray's socket paths up to {len(str(long_temp)) + 4 + 72} bytes "
        "(Linux allows 107: Ray's temp folder may have at most 35 characters); Ray's temp folder is "
        "/tmp/ray instead (set RAY_TMPDIR to choose another)"
    ], said
    assert seen == {"RAY_TMPDIR": "/tmp"}
    TABLE.append(("TMPDIR=<long> python -m trainer.run env=guess-number", said[0], 0))


RAY_UNDER = """\
import sys

from omegaconf import OmegaConf

from trainer.cluster.ray_temp_dir import check_ray_temp_dir

if sys.argv[1] == "checked":
    print(check_ray_temp_dir(OmegaConf.create({}), joins_cluster=False), flush=True)
import ray

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
print("ray answered", ray.get(ray.remote(lambda: 1).remote()))
ray.shutdown()
"""


@pytest.mark.slow
def test_ray_starts_under_a_long_tmpdir_once_checked(world):
    """The real thing: Ray itself under the long TMPDIR fails with the AF_UNIX error, and starts once the
    check gave it its short temp folder."""
    long_temp = _long_temp(world)
    environment = {k: v for k, v in os.environ.items() if k != "RAY_TMPDIR"}
    environment.update(TMPDIR=str(long_temp), PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    runs = {}
    for how in ("unchecked", "checked"):
        runs[how] = subprocess.run(
            [sys.executable, "-c", RAY_UNDER, how],
            capture_output=True,
            text=True,
            timeout=600,
            env=environment,
        )
    assert runs["unchecked"].returncode != 0 and "AF_UNIX path length" in runs["unchecked"].stderr
    assert runs["checked"].returncode == 0, runs["checked"].stderr[-3000:]
    assert "Ray's temp folder is /tmp/ray instead" in runs["checked"].stdout
    assert "ray answered 1" in runs["checked"].stdout


def test_ctrl_c_in_training_says_what_the_same_command_will_do_with_the_real_log_path(
    world, capsys, monkeypatch
):
    """Through trainer.run's main with verl's launch (or the warm start) raising KeyboardInterrupt, as Ctrl-C
    then. The line said "resume from the last checkpoint (verl's and Ray's output:
    <turngym.output_dir>/train.log)" with the placeholder printed as is, also when no checkpoint existed
    (during the warm start, or before the first save), when the same command starts over."""
    import trainer.run
    import trainer.warm_start.runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer.run, "launch", interrupted)
    out_dir = world["cwd"] / "run"
    log = out_dir.resolve() / "train.log"
    argv = ["env=guess-number", f"turngym.output_dir={out_dir}", "turngym.warm_start.enable=false"]
    assert trainer.run.main(argv) == INTERRUPT_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "<turngym.output_dir>" not in err[0], err
    assert err[0] == (
        "trainer.run: interrupted before the first checkpoint (trainer.save_freq=8): nothing to resume; the "
        f"same command starts the run over (verl's and Ray's output: {log})"
    ), err
    assert not list(world["scratch"].glob("turngym-data-*"))  # no scratch folder left behind
    TABLE.append(
        ("python -m trainer.run env=guess-number ... (Ctrl-C before a checkpoint)", err[0], INTERRUPT_EXIT)
    )

    _checkpointed(out_dir, 8)
    assert trainer.run.main([*argv, "trainer.total_training_steps=16"]) == INTERRUPT_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "trainer.run: interrupted; run the same command again to resume after step 8, its last checkpoint "
        f"(verl's and Ray's output: {log})"
    ], err
    TABLE.append(
        ("python -m trainer.run env=guess-number ... (Ctrl-C after step 8's checkpoint)", err[0], 130)
    )

    monkeypatch.setattr(trainer.warm_start.runner, "warm_start", interrupted)
    fresh = world["cwd"] / "fresh"
    assert trainer.run.main(["env=guess-number", f"turngym.output_dir={fresh}"]) == INTERRUPT_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "trainer.run: interrupted during the warm start, before any checkpoint: the same command runs the "
        "warm start again, then RL from step 0"
    ), err
    assert "resume" not in err[0] and str(fresh.resolve() / "train.log") in err[0], err
    TABLE.append(
        ("python -m trainer.run env=guess-number (Ctrl-C in the warm start)", err[0], INTERRUPT_EXIT)
    )


def test_after_a_warm_start_the_health_warning_does_not_advise_one(world):
    """Step 1's warning, right after the warm start ran, advised "warm start on expert demos"."""
    from trainer.compose import compose_config
    from trainer.hooks.health.guards import HealthGuard
    from trainer.hooks.health.metrics import FORMAT_ERROR_RATE, metric_key

    unreadable = {metric_key(FORMAT_ERROR_RATE): 0.9}
    warm = compose_config(["env=guess-number"])  # the embedded model's CPU run warm starts by default
    assert warm.turngym.warm_start.enable
    (line,), _ = HealthGuard.for_run(warm).check(1, unreadable)
    assert "warm start on expert demos (turngym.warm_start.enable=true)" not in line, line
    assert "the warm start on expert demos ran and its format did not carry over" in line, line
    cold = compose_config(["env=guess-number", "turngym.warm_start.enable=false"])
    (line,), _ = HealthGuard.for_run(cold).check(1, unreadable)
    assert "or warm start on expert demos (turngym.warm_start.enable=true)" in line, line


def test_validation_reward_keeps_sampled_and_greedy_play_apart():
    """The plot's "validation reward" (and the step line's `val reward`) averaged sampled and greedy play."""
    from trainer.report.plot import validation_series
    from trainer.report.progress import progress_line

    record = {
        "step": 4,
        "val-core/guess-number-v0/reward/mean@1": 0.25,
        "val-core/guess-number-v0@greedy/reward/mean@1": 0.75,
    }
    assert validation_series([record]) == {
        "validation reward, sampled": [(4, 0.25)],
        "validation reward, greedy": [(4, 0.75)],
    }
    line = progress_line(4, 16, record)
    assert line.endswith("val reward sampled 0.250, greedy 0.750"), line
    assert "0.500" not in line


def _sigint_ends_with_130(
    argv: list[str], ready: str, env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    """Start a server, wait for its listening line, press Ctrl-C (SIGINT); its exit code and stderr lines."""
    import signal

    server = subprocess.Popen(
        [sys.executable, *argv],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), **(env or {})},
    )
    try:
        first = ""
        while not first.startswith(ready):  # transformers' "Loading weights" bar may come first
            line = server.stderr.readline()
            assert line, f"the server ended before saying it listens (exit {server.wait()})"
            first = line.strip()
        server.send_signal(signal.SIGINT)
        rest = server.communicate(timeout=120)[1]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return server.returncode, [first, *rest.strip().splitlines()]


def test_servers_say_where_they_listen_and_end_ctrl_c_with_130_and_one_line(world):
    """`envs serve` and `turngym.engines.serve` exited 0 on Ctrl-C (the docs promise 130 and a line), and
    `turngym.engines.serve` never said it was listening."""
    port = _free_port()
    code, lines = _sigint_ends_with_130(
        ["-m", "envs", "serve", "--port", str(port)], f"envs serve: listening on http://127.0.0.1:{port} "
    )
    assert code == INTERRUPT_EXIT and lines[1:] == ["envs: interrupted"], (code, lines)
    TABLE.append((f"python -m envs serve --port {port} (Ctrl-C)", lines[-1], code))

    port = _free_port()
    code, lines = _sigint_ends_with_130(
        ["-m", "turngym.engines.serve", "--port", str(port)],
        f"turngym.engines.serve: listening on http://127.0.0.1:{port} (model embedded, pid ",
    )
    assert lines[0].endswith("); Ctrl-C stops it"), lines
    assert code == INTERRUPT_EXIT and lines[-1] == "turngym.engines.serve: interrupted", (code, lines)
    TABLE.append((f"python -m turngym.engines.serve --port {port}", lines[0], 0))
    TABLE.append((f"python -m turngym.engines.serve --port {port} (Ctrl-C)", lines[-1], code))


def test_the_guard_itself(capsys):
    assert run_cli("x", lambda argv: (_ for _ in ()).throw(UsageError("bad\n  thing"))) == 2
    # What Ctrl-C kept depends on how far the command got: the line may be computed then.
    stop = lambda argv: (_ for _ in ()).throw(KeyboardInterrupt)  # noqa: E731
    assert run_cli("x", stop, interrupted=lambda: "2 episodes are in x.jsonl") == INTERRUPT_EXIT
    assert capsys.readouterr().err.strip().splitlines()[-1] == "x: 2 episodes are in x.jsonl"
    assert run_cli("x", lambda argv: 0) == 0
    assert did_you_mean("guess-numbr", ["guess-number", "wordle"]) == "did you mean guess-number?"
    assert did_you_mean("zzz", ["guess-number"]) == ""
    with pytest.raises(UsageError, match="is a folder"):
        check_output_file(os.getcwd(), "--save")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def served_envs():
    """A real `python -m envs serve` on loopback; yields its URL."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "envs", "serve", "--port", str(port)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stderr.readline()
        assert "listening on" in line, line
        yield f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()
        server.stderr.close()


def test_eval_of_a_served_env_saves_what_it_played_and_skips_a_missing_baseline_in_one_line(
    world, capsys, served_envs
):
    """Evaluating a served env played its episodes, then died in the random player ('RemoteEnv' object
    has no attribute 'random_action'), exit 1, and the --save file was never written."""
    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    target = world["cwd"] / "x.jsonl"
    argv = ["env=guess-number-v0", f"env.remote={served_envs}", "n=4", "max_turns=1", "max_new_tokens=4"]
    assert rollout_eval.cli([*argv, "--save", str(target)]) == 0
    out, err = capsys.readouterr()
    assert len(load_jsonl(str(target))) == 4
    skipped = [line for line in out.splitlines() if line.startswith("baselines skipped: ")]
    assert len(skipped) == 1 and "random" in skipped[0] and served_envs in skipped[0], out
    assert "Traceback" not in err and "random_action" not in err, err
    # The expert is played by the server, on the model's seeds.
    assert re.search(r"^expert\s+4\s", out, re.MULTILINE), out
    TABLE.append(
        (
            f"python -m rollout.eval env=guess-number-v0 env.remote={served_envs} n=4 --save x.jsonl",
            skipped[0],
            0,
        )
    )


BROKEN_EXPERT = """\
import envs
from envs.games.guess_number import GuessNumberEnv


class BrokenExpert(GuessNumberEnv):
    def expert_action(self):
        return {}["missing"]


envs.register("broken-expert-guess-v0", BrokenExpert)
"""


def test_eval_keeps_what_it_played_when_a_baseline_player_fails(world, capsys, monkeypatch):
    """A baseline player's exception ended the evaluation before the --save file was written."""
    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    (world["cwd"] / "my_expert_env.py").write_text(BROKEN_EXPERT)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    target = world["cwd"] / "x.jsonl"
    argv = [
        "env=broken-expert-guess-v0",
        "n=2",
        "max_turns=1",
        "max_new_tokens=4",
        "--import",
        "my_expert_env",
    ]
    assert rollout_eval.cli([*argv, "--save", str(target)]) == 0
    out, err = capsys.readouterr()
    assert len(load_jsonl(str(target))) == 2
    lines = [line for line in err.splitlines() if line.startswith("baselines skipped: ")]
    assert lines == ["baselines skipped: broken-expert-guess-v0: KeyError: 'missing'"], err
    assert "Traceback" not in err, err
    TABLE.append(("python -m rollout.eval env=broken-expert-guess-v0 ... --save x.jsonl", lines[0], 0))


def test_eval_exits_1_in_one_line_when_every_episode_failed_and_keeps_them(world, capsys, monkeypatch):
    """`rollout.eval` exited 0 when every episode failed (2 of 2 with HTTP 404 against a server that did
    not speak the API); the failures were three stderr lines among the progress bars."""
    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    (world["cwd"] / "my_broken_env.py").write_text(BROKEN_ENV)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    target = world["cwd"] / "x.jsonl"
    common = ["n=2", "max_turns=1", "max_new_tokens=4", "--import", "my_broken_env", "--save", str(target)]
    assert rollout_eval.cli(["env=broken-guess-v0", *common]) == 1
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("rollout.eval: ")]
    assert len(ours) == 1, err
    assert ours[0].startswith(
        "rollout.eval: every episode failed: broken-guess-v0 (2 of 2; the first, seed 0: KeyError: 'missing'"
    ), ours
    assert f"the failed episodes are in {target}; fix what the error names" in ours[0], ours
    assert "failed episode (seed" not in err and "Traceback" not in err, err
    assert [t.failed for t in load_jsonl(str(target))] == [True, True]  # kept, as played
    TABLE.append(
        ("python -m rollout.eval env=broken-guess-v0 --import my_broken_env (every step raises)", ours[0], 1)
    )
    # Some failing is a result, not a broken setup: exit 0, the failures listed.
    assert rollout_eval.cli(["env=odd-seeds-broken-guess-v0", *common]) == 0
    assert "failed episode (seed 1)" in capsys.readouterr().err


def test_engines_serve_speaks_the_openai_api_so_engine_openai_plays_on_it(world, capsys, served_url):
    """`rollout.eval engine=openai url=<python -m turngym.engines.serve>` failed 2 of 2 episodes with HTTP
    404 (and exited 0): the model server spoke only SGLang's native API."""
    import httpx

    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    models = httpx.get(f"{served_url}/v1/models", timeout=30).json()
    assert models["object"] == "list" and len(models["data"]) == 1, models
    done = httpx.post(
        f"{served_url}/v1/completions",
        json={"model": "embedded", "prompt": "Guess a number", "max_tokens": 3, "temperature": 0},
        timeout=120,
    )
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["object"] == "text_completion" and isinstance(body["choices"][0]["text"], str), body
    assert body["model"] == "embedded" and 1 <= body["usage"]["completion_tokens"] <= 3, body
    assert body["choices"][0]["finish_reason"] in ("stop", "length"), body
    chat = {"model": "embedded", "messages": [{"role": "user", "content": "Pick 1-100"}], "max_tokens": 3}
    answer = httpx.post(f"{served_url}/v1/chat/completions", json=chat, timeout=120)
    assert answer.status_code == 200, answer.text
    reply = answer.json()["choices"][0]
    assert reply["message"]["role"] == "assistant" and isinstance(reply["message"]["content"], str), reply
    # Non-streaming only, and said so; a field OpenAI's API lacks is named.
    streamed = httpx.post(f"{served_url}/v1/chat/completions", json={**chat, "stream": True}, timeout=30)
    assert streamed.status_code == 400 and "non-streaming" in streamed.json()["error"]["message"]
    odd = httpx.post(f"{served_url}/v1/chat/completions", json={**chat, "max_new_tokens": 3}, timeout=30)
    assert odd.status_code == 400 and "max_new_tokens" in odd.json()["error"]["message"], odd.text

    target = world["cwd"] / "openai.jsonl"
    argv = ["env=guess-number-v0", "engine=openai", f"url={served_url}", "model=embedded", "n=2"]
    argv += ["max_turns=2", "max_new_tokens=8", "baselines=false", "--save", str(target)]
    assert rollout_eval.cli(argv) == 0
    played = load_jsonl(str(target))
    assert len(played) == 2 and not any(t.failed for t in played), [t.error for t in played]
    assert all(t.num_turns >= 1 for t in played)
    TABLE.append(
        (
            f"python -m rollout.eval env=guess-number-v0 engine=openai url={served_url} model=embedded",
            "works",
            0,
        )
    )


def _budget_line(out: str) -> str:
    return next(line for line in out.splitlines() if "max_response_tokens=" in line)


def test_budgets_follow_the_model_the_server_serves_not_the_engine(world, capsys, served_url):
    """`engine=sglang` against `engines.serve` serving the embedded model used the "any model" budgets
    (512 tokens, 16 turns, no per-turn cap), so every episode overflowed in one turn; `engine=hf` on the
    same model used 1152 / 8 / 8. Each engine now plays with the budgets of the model the server serves."""
    import httpx

    from rollout import eval as rollout_eval
    from rollout.episode_budgets import EMBEDDED_MODEL_BUDGETS as EMB

    # The server names the model it serves, by its directory's build marker (it was given a path).
    info = httpx.get(f"{served_url}/get_model_info", timeout=30).json()
    assert info["turngym_model"] == "embedded", info
    assert httpx.get(f"{served_url}/v1/models", timeout=30).json()["data"][0]["turngym_model"] == "embedded"

    expected = (
        f"max_response_tokens={EMB.max_response_tokens}, max_turns={EMB.max_turns}, "
        f"max_new_tokens={EMB.max_new_tokens} (training defaults for embedded"
    )
    common = ["env=guess-number-v0", "n=2", "baselines=false"]
    lines = {}
    # model=served-tiny is no name turngym knows: the budgets come from the server's answer alone.
    for engine in (["engine=hf"], ["engine=sglang", f"url={served_url}"]) + (
        ["engine=openai", f"url={served_url}", "model=served-tiny"],
    ):
        assert rollout_eval.cli(common + engine) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        lines[engine[0]] = _budget_line(out)
        assert expected in lines[engine[0]], lines
    assert "the model the server serves" in lines["engine=sglang"], lines
    TABLE.append(
        (
            f"python -m rollout.eval env=guess-number-v0 engine=sglang url={served_url}",
            lines["engine=sglang"],
            0,
        )
    )


def test_a_server_that_cannot_say_its_model_is_one_line_and_the_named_budgets(world, capsys, unused_port):
    """No server on the port: one line says the budgets used; the episodes then fail as they must (exit 1)."""
    from rollout import eval as rollout_eval

    argv = ["env=guess-number-v0", "engine=sglang", f"url=http://127.0.0.1:{unused_port}", "model=embedded"]
    assert rollout_eval.cli([*argv, "n=1", "baselines=false"]) == 1
    out, err = capsys.readouterr()
    said = [line for line in err.splitlines() if "which model it serves" in line]
    assert len(said) == 1 and said[0].endswith("the budgets are those of embedded"), err
    assert "max_turns=8" in _budget_line(out), out


def test_a_hub_id_in_the_local_cache_is_used_from_there_without_a_download(world, capsys, model_path):
    """`model=<org>/<name>` answered "the path does not exist" even when the Hugging Face cache held it."""
    import shutil

    from rollout import eval as rollout_eval
    from rollout.trajectory import load_jsonl

    repo = Path(os.environ["HF_HUB_CACHE"]) / "models--tiny-org--tiny-chat"
    commit = "0" * 40
    shutil.copytree(model_path, repo / "snapshots" / commit)  # as `hf download tiny-org/tiny-chat` leaves it
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    target = world["cwd"] / "hub.jsonl"
    argv = ["env=guess-number-v0", "model=tiny-org/tiny-chat", "n=1", "max_turns=1", "max_new_tokens=4"]
    assert rollout_eval.cli([*argv, "baselines=false", "--save", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"model tiny-org/tiny-chat (HF dir {repo / 'snapshots' / commit})" in out, out
    assert len(load_jsonl(str(target))) == 1


def test_view_pairs_only_episodes_played_alike_and_says_what_differs_at_the_top(world, capsys):
    """`rollout.eval env=guess-number-v0` (medium, the guess tool) against a run on easy with text moves
    paired seed with seed ("improved (12)", +1.80) without a word, beside summary rows of 0 episodes."""
    import shlex

    from rollout import eval as rollout_eval
    from rollout import view

    fast = ["n=3", "max_turns=1", "max_new_tokens=4", "baselines=false"]
    default, trained = world["cwd"] / "default.jsonl", world["cwd"] / "easy.jsonl"
    assert rollout_eval.cli(["env=guess-number-v0", *fast, "--save", str(default)]) == 0
    easy = ["env=guess-number-v0", "env.difficulty=easy", "env.action_tool=false", *fast]
    assert rollout_eval.cli([*easy, "--save", str(trained)]) == 0
    capsys.readouterr()

    page = world["cwd"] / "page.html"
    assert view.main([str(default), str(trained), "-o", str(page), "--no-baselines"]) == 0
    out = capsys.readouterr().out.splitlines()
    said = [line for line in out if line.startswith("rollout.view: not like with like: ")]
    assert len(said) == 1, out
    assert 'guess-number-v0: action_tool true -> false, difficulty (default) -> "easy"' in said[0], said
    assert "3 of " in said[0] and "are unpaired" in said[0], said
    text = page.read_text()
    assert "not like with like" in text and "0 pairs on (env and its settings" in text
    assert "improved (" not in text or "improved (0)" in text
    TABLE.append(
        ("python -m rollout.view default.jsonl easy.jsonl (other settings)", said[0][:160] + " ...", 0)
    )

    # The command the line gives plays a file that pairs with the trained one, episode for episode.
    command = said[0].split("a file played like ")[1].split(": ", 1)[1]
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "rollout.eval"] and words[-2:] == ["--save", "zero-shot.jsonl"], (
        words
    )
    matching = world["cwd"] / "zero-shot.jsonl"
    argv = [*words[3:-2], "n=3", "max_new_tokens=4", "baselines=false", "--save", str(matching)]
    assert rollout_eval.cli(argv) == 0
    capsys.readouterr()
    assert view.main([str(matching), str(trained), "-o", str(page), "--no-baselines"]) == 0
    assert "not like with like" not in capsys.readouterr().out
    assert "3 pairs on (env and its settings" in page.read_text()


MY_TOOLS = """\
import pydantic

from tools import Tool, tool


@tool
def add(a: int, b: int) -> str:
    \"\"\"Add two integers.\"\"\"
    return str(a + b)


class Scale(Tool):
    name = "scale"
    description = "Multiply by the configured factor."

    class Args(pydantic.BaseModel):
        x: float

    def __init__(self, factor: int = 2) -> None:
        self.factor = factor

    def run(self, args, context):
        return str(args.x * self.factor)
"""


def test_a_tools_yaml_declares_every_documented_tool_field(world, monkeypatch):
    """`concurrent: true` was refused: unknown key(s) concurrent (allowed: config, description, entry, ...)."""
    import tools

    (world["cwd"] / "newcomer_tools.py").write_text(MY_TOOLS)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    declared = {
        "name": "plus",
        "description": "Sum.",
        "stateful": True,
        "concurrent": True,
        "timeout_s": 2,
        "max_output_chars": 50,
    }
    lines = [f"    {key}: {json.dumps(value)}" for key, value in declared.items()]
    (world["cwd"] / "fields.yaml").write_text(
        "tools:\n  - entry: newcomer_tools:add\n" + "\n".join(lines) + "\n"
    )
    (plus,) = tools.load_tools("fields.yaml")
    assert {key: getattr(plus, key) for key in declared} == {**declared, "timeout_s": 2.0}
    assert plus.call_sync({"a": 2, "b": 3}).content == "5"
    # The module's own `@tool` is not changed by what one file declares.
    fast = "tools:\n  - entry: newcomer_tools:add\n    concurrent: true\n"
    assert tools.load_tools(_yaml(world["cwd"], "fast.yaml", fast))[0].concurrent
    (again,) = tools.load_tools(_yaml(world["cwd"], "again.yaml", "tools:\n  - entry: newcomer_tools:add\n"))
    assert (again.name, again.concurrent, again.max_output_chars) == ("add", False, 20_000)
    TABLE.append(
        ("tools.load_tools(fields.yaml) with concurrent: true, max_output_chars: 50, ...", "works", 0)
    )


def _yaml(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return str(folder / name)


def test_a_tool_config_of_the_wrong_type_is_one_line_at_load(world, capsys, monkeypatch):
    """`config: {factor: "three"}` for `factor: int` loaded (exit 0) and then every call failed with a
    TypeError the model saw."""
    import envs.__main__

    (world["cwd"] / "newcomer_tools.py").write_text(MY_TOOLS)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    _yaml(
        world["cwd"], "three.yaml", 'tools:\n  - entry: newcomer_tools:Scale\n    config: {factor: "three"}\n'
    )
    before = (_tree(world["cwd"]), _tree(world["scratch"]))
    assert envs.__main__.main(["play", "calculator-qa-v0", "-o", "tools=three.yaml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Scale config key `factor`: expected integer, got 'three'" in err[0], err
    assert (_tree(world["cwd"]), _tree(world["scratch"])) == before
    TABLE.append(("python -m envs play calculator-qa-v0 -o tools=three.yaml", err[0], 2))


def test_a_tool_class_refuses_unknown_arguments_as_a_tool_function_does(world, monkeypatch):
    """A Tool subclass's nested Args took any argument, and its schema allowed them."""
    import tools

    (world["cwd"] / "newcomer_tools.py").write_text(MY_TOOLS)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    (scale,) = tools.load_tools(
        _yaml(world["cwd"], "scale.yaml", "tools:\n  - entry: newcomer_tools:Scale\n")
    )

    @tools.tool
    def twice(x: float) -> str:
        """Multiply by two."""
        return str(x * 2)

    assert scale.schema["function"]["parameters"] == twice.schema["function"]["parameters"]
    assert scale.schema["function"]["parameters"]["additionalProperties"] is False
    for one in (scale, twice):
        result = one.call_sync({"x": 1, "speed": 3})
        assert result.is_error and result.content == f"tool `{one.name}`: unexpected argument `speed`"
    assert scale.call_sync({"x": 1.5}).content == "3.0"


ONE_DOOR_ENVS = """\
import envs
from turngym.chat.message import user
from envs.games.guess_number import GuessNumberEnv


class Hinted(GuessNumberEnv):
    \"\"\"Overrides the sync doors only, as a Gymnasium user would.\"\"\"

    def reset(self, *, seed=None, options=None):
        messages, info = super().reset(seed=seed, options=options)
        return [*messages, user("Hint: start in the middle.")], {**info, "hinted": True}

    def step(self, action):
        messages, reward, terminated, truncated, info = super().step(action)
        return messages, reward + 10.0, terminated, truncated, {**info, "bonus": 10.0}


class AsyncHinted(GuessNumberEnv):
    \"\"\"Overrides the async doors only.\"\"\"

    async def areset(self, *, seed=None, options=None):
        messages, info = await super().areset(seed=seed, options=options)
        return [*messages, user("Hint: start in the middle.")], {**info, "hinted": True}

    async def astep(self, action):
        messages, reward, terminated, truncated, info = await super().astep(action)
        return messages, reward + 10.0, terminated, truncated, {**info, "bonus": 10.0}


envs.register("hinted-guess-v0", Hinted)
envs.register("async-hinted-guess-v0", AsyncHinted)
"""


@pytest.mark.parametrize("env_id", ["hinted-guess-v0", "async-hinted-guess-v0"])
def test_an_env_that_overrides_one_door_is_played_through_it_by_both(world, monkeypatch, tokenizer, env_id):
    """A TextEnv subclass overriding the sync `reset`/`step` was played as written by `envs play` and
    silently without its change by training, which calls `areset`/`astep` (and the other way round)."""
    import asyncio

    import envs
    from rollout.collection import collect
    from rollout.episode import EpisodeConfig
    from rollout.scripted_engine import ScriptedEngine

    (world["cwd"] / "one_door_envs.py").write_text(ONE_DOOR_ENVS)
    monkeypatch.syspath_prepend(str(world["cwd"]))
    import one_door_envs  # noqa: F401 - registers the two envs

    def by_sync():
        env = envs.make(env_id)
        return env.reset(seed=3), env.step("50")

    async def by_async():
        env = envs.make(env_id)
        return await env.areset(seed=3), await env.astep("50")

    (opening, step) = by_sync()
    assert opening[0][-1]["content"] == "Hint: start in the middle." and opening[1]["hinted"]
    assert step[1] >= 9.0 and step[4]["bonus"] == 10.0
    assert asyncio.run(by_async()) == (opening, step)
    # The rollout, as training runs it: the opening holds the hint, the reward the bonus.
    engine = ScriptedEngine(tokenizer, lambda turn, rng: "50")
    batch = collect(env_id, engine, tokenizer, 2, config=EpisodeConfig(max_turns=1))
    assert len(batch) == 2 and all(t.total_reward >= 9.0 for t in batch), [t.total_reward for t in batch]
    assert all("Hint: start in the middle." in tokenizer.decode(t.prompt_ids) for t in batch)


NUMPY_STYLE = """\
import envs
from envs.games.guess_number import GuessNumberEnv


class NumpyStyleRandom(GuessNumberEnv):
    def random_action(self, rng):
        return str(rng.integers(1, 21))  # numpy's Generator, as the env's own np_random


envs.register("numpy-style-guess-v0", NumpyStyleRandom)
"""


def _envs_check(world, *argv: str, tmpdir: bool = True) -> subprocess.CompletedProcess:
    """A real `python -m envs check ...` from the world's working folder (tmpdir=False: the system's temp dir)."""
    environment = {k: v for k, v in os.environ.items() if tmpdir or k != "TMPDIR"}
    environment["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    return subprocess.run(
        [sys.executable, "-m", "envs", "check", *argv],
        cwd=world["cwd"],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def test_random_action_written_for_numpys_generator_is_told_which_rng_it_gets(world):
    """`random_action(rng)` gets a stdlib `random.Random` while the env's own generator is numpy's, and
    the docs did not say which: `rng.integers` failed in `envs check` with a bare AttributeError."""
    (world["cwd"] / "numpy_style.py").write_text(NUMPY_STYLE)
    proc = _envs_check(world, "numpy-style-guess-v0", "--import", "numpy_style", "--seeds", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("FAIL  random"))
    assert line.endswith(
        "'Random' object has no attribute 'integers': random_action(rng) gets a stdlib random.Random "
        "(randint, choice), not numpy's Generator; numpy: default_rng(rng.getrandbits(64))"
    ), line
    assert "PASS  expert" in proc.stdout, proc.stdout
    TABLE.append(("python -m envs check numpy-style-guess-v0 (rng.integers)", line, 1))


DOCS = Path(__file__).resolve().parent.parent / "docs"


def _block_after(page: str, heading: str, language: str) -> str:
    """The first fenced ``language`` block after ``heading`` in docs/<page>."""
    text = (DOCS / page).read_text()
    found = re.search(re.escape(heading) + r".*?```" + language + r"\n(.*?)```", text, re.S)
    assert found, f"docs/{page}: no {language} block after {heading!r}"
    return found.group(1)


def test_the_documented_way_to_save_collects_episodes_for_the_viewer_runs(world, capsys):
    """docs/rollout.md did not say how to save `rollout.collect`'s results for the viewer from Python."""
    import json as json_module

    from rollout import view

    code = _block_after("rollout.md", "**Saving `collect`'s episodes for the viewer", "python")
    exec(compile(code, "docs/rollout.md", "exec"), {})
    lines = [json_module.loads(line) for line in (world["cwd"] / "mine.jsonl").read_text().splitlines()]
    assert len(lines) == 4, lines
    assert all(line["env_kwargs"] == {"difficulty": "easy"} and line["max_turns"] == 6 for line in lines)
    assert all(Path(line["tokenizer"]).is_dir() for line in lines), lines[0]["tokenizer"]
    assert view.main(["mine.jsonl", "-o", "mine.html"]) == 0
    # Compared (here with itself), the trivial players play the recorded settings.
    assert view.main(["mine.jsonl", "mine.jsonl", "-o", "same.html"]) == 0
    page = (world["cwd"] / "same.html").read_text()
    assert "at most 6 turns" in page and "difficulty" in page and "the files record no env kwargs" not in page
    capsys.readouterr()


def test_the_documented_problems_file_for_code_sandbox_passes_envs_check(world):
    """docs/envs.md did not say how to bring your own problems (code-sandbox's `problems=` and its format)."""
    (world["cwd"] / "my_problems.jsonl").write_text(_block_after("envs.md", "## Your own problems", "jsonl"))
    # The sandbox's user cannot enter pytest's private (0700) temp folders: the system's temp dir, as a user's.
    proc = _envs_check(
        world, "code-sandbox-v0", "-o", "problems=my_problems.jsonl", "--seeds", "2", tmpdir=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS  expert          2/2 succeeded (100%)" in proc.stdout, proc.stdout


def test_print_the_table(capsys):
    """Last in the file: the table of every mistake tried (shown with -s)."""
    with capsys.disabled():
        print(f"\n{'command':<90} | exit | message")
        for command, message, code in TABLE:
            print(f"{command[:90]:<90} | {code:>4} | {message}")
