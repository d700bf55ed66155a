"""Does the default CPU run learn? Runs what `make train` runs (read from the Makefile) and prints its curve.

    python bench/learning.py                       # the default run (what `make train` runs)
    python bench/learning.py --out /tmp/l -- trainer.total_training_steps=8   # a stated smaller run
    python bench/learning.py --parse /tmp/l        # summarize a finished run's output dir only
    python bench/learning.py --target train-real   # what `make train-real` runs (the real-model run), then
                                                   # zero-shot and trained on 128 held-out seeds of the plain
                                                   # game beside the random player and the expert, and the
                                                   # strategy read from the episodes
    python bench/learning.py --target train-real-games   # the four games on the real model, then the
                                                   # games criterion from the run's last validation

For every validation: held-out success and reward over all validation episodes (sampled with verl's
val_kwargs, and greedy when `turngym.val_greedy` wrote greedy copies), and the share that ended by
overflow (the response budget ran out). For training: reward, success and seconds per step, split into
verl's phases (generation, reference and old log-probs, actor update). Then
the learning criterion (final sampled held-out success >= 2x step 0 and >= step 0 + 15 points, at
most 10 % overflow at the end) with 95 % Wilson intervals of both rates and whether their difference
is beyond the noise of the validation episodes (two-proportion z-test), wall time, CPU seconds of the whole process tree and the load
average, so a time measured on a busy machine can be scaled to a quiet one; then each phase of a step
against this CPU's matmul bound (bench/phase_bound.py), measured after the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # its sibling scripts: phase_bound, guess_number_strategy

from envs.baselines.success_interval import wilson_interval  # noqa: E402

GREEDY_SUFFIX = "@greedy"
# verl's per-step timings: generation, the reference and old-policy log-probs, the actor update.
PHASES = {"gen": "gen", "ref": "ref", "old_lp": "old_log_prob", "update": "update_actor"}


def _records(metrics: Path) -> list[dict]:
    records = []
    for line in metrics.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _val_counts(out: Path) -> dict[str, int]:
    """Validation episodes per data source, from the run's val.parquet (weights for the overall mean)."""
    import pandas as pd

    sources = pd.read_parquet(out / "data" / "val.parquet", columns=["data_source"])["data_source"]
    return {str(k): int(v) for k, v in sources.value_counts().items()}


def _weighted(record: dict, counts: dict[str, int], key: str, greedy: bool) -> float | None:
    """Mean of val metric `key` over the sources of one sampling mode, weighted by episodes."""
    total, weight = 0.0, 0
    for source, n in counts.items():
        if source.endswith(GREEDY_SUFFIX) != greedy:
            continue
        prefix = "val-core" if key == "reward" else "val-aux"
        value = record.get(f"{prefix}/{source}/{key}/mean@1")
        if value is None:
            continue
        total += float(value) * n
        weight += n
    return total / weight if weight else None


def summarize(out: Path) -> dict:
    """The curve of a run's output dir: validations (sampled, greedy) and training steps."""
    records = _records(out / "metrics.jsonl")
    counts = _val_counts(out)
    vals, train = [], []
    for record in records:
        if record.get("kind") == "val":
            row = {"step": record["step"]}
            for mode, greedy in (("sampled", False), ("greedy", True)):
                for key in ("success", "reward", "overflow", "format_errors", "turns_cut", "turns"):
                    row[f"{mode}_{key}"] = _weighted(record, counts, key, greedy)
            row["per_env"] = {
                source: record.get(f"val-aux/{source}/success/mean@1") for source in sorted(counts)
            }
            vals.append(row)
        elif record.get("kind") == "train":
            train.append(
                {
                    "step": record["step"],
                    "reward": record.get("critic/score/mean"),
                    "success": record.get("turngym/success_rate"),
                    "seconds": record.get("timing_s/step"),
                    "turns": record.get("turngym/turns"),
                    **{phase: record.get(f"timing_s/{key}") for phase, key in PHASES.items()},
                }
            )
    return {"val": vals, "train": train, "val_episodes": counts}


def beyond_noise(first: float, last: float, n: int, z: float = 1.96) -> bool:
    """Whether two success rates on `n` episodes each differ by more than sampling noise (two-proportion z-test)."""
    pooled = (first + last) / 2
    spread = math.sqrt(2 * pooled * (1 - pooled) / n) if n > 0 else 0.0
    return spread > 0 and abs(last - first) / spread > z


def criterion(vals: list[dict], mode: str = "sampled", n: int = 0) -> tuple[bool, str]:
    """Final held-out success >= 2x and >= +0.15 over step 0, overflow <= 10 % at the end."""
    if len(vals) < 2 or vals[0][f"{mode}_success"] is None or vals[-1][f"{mode}_success"] is None:
        return False, f"{mode}: fewer than two validations"
    if vals[0]["step"] != 0:
        return False, (
            f"{mode}: no step-0 validation (trainer.val_before_train=false); the held-out evaluation "
            "compares the zero-shot and trained model instead"
        )
    first, last = vals[0][f"{mode}_success"], vals[-1][f"{mode}_success"]
    overflow = vals[-1][f"{mode}_overflow"] or 0.0
    ok = last >= 2 * first and last >= first + 0.15 and overflow <= 0.10
    return ok, (
        f"{mode}: success {first:.1%} -> {last:.1%} (x{last / first:.2f}, {100 * (last - first):+.1f} points)"
        if first > 0
        else f"{mode}: success {first:.1%} -> {last:.1%} ({100 * (last - first):+.1f} points)"
    ) + f", final overflow {overflow:.1%}: {'PASS' if ok else 'FAIL'}" + _noise(first, last, n)


def _noise(first: float, last: float, n: int) -> str:
    """The 95 % intervals of both rates and whether their difference is beyond sampling noise."""
    if n <= 0:
        return ""
    lo0, hi0 = wilson_interval(first, n)
    lo1, hi1 = wilson_interval(last, n)
    verdict = "beyond" if beyond_noise(first, last, n) else "within"
    return (
        f"; 95 % intervals {lo0:.0%}-{hi0:.0%} and {lo1:.0%}-{hi1:.0%}: the change is {verdict} the noise "
        f"of {n} episodes"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.1%}" if pct else f"{value:.3f}"


def print_summary(summary: dict) -> None:
    """Tables of the validations and the training steps, then the criterion."""
    counts = summary["val_episodes"]
    sampled = sum(n for s, n in counts.items() if not s.endswith(GREEDY_SUFFIX))
    greedy = sum(counts.values()) - sampled
    print(
        f"validation episodes: {sampled} sampled, {greedy} greedy ({', '.join(f'{s} {n}' for s, n in counts.items())})"
    )
    print("step | sampled: success reward overflow | greedy: success reward overflow")
    for v in summary["val"]:
        print(
            f"{v['step']:>4} | {_fmt(v['sampled_success'], True):>16} {_fmt(v['sampled_reward']):>6} "
            f"{_fmt(v['sampled_overflow'], True):>8} | {_fmt(v['greedy_success'], True):>15} "
            f"{_fmt(v['greedy_reward']):>6} {_fmt(v['greedy_overflow'], True):>8}"
        )
    if summary["val"]:
        last = summary["val"][-1]["per_env"]
        print("final success per source: " + ", ".join(f"{s} {_fmt(v, True)}" for s, v in last.items()))
    print("step | per episode (sampled / greedy): turns, format errors, turns cut at the per-turn cap")
    for v in summary["val"]:
        print(
            f"{v['step']:>4} | {_fmt(v['sampled_turns'])} / {_fmt(v['greedy_turns'])}, "
            f"{_fmt(v['sampled_format_errors'])} / {_fmt(v['greedy_format_errors'])}, "
            f"{_fmt(v['sampled_turns_cut'])} / {_fmt(v['greedy_turns_cut'])}"
        )
    print("train step | reward success turns s/step | gen ref old_lp update (s)")
    for t in summary["train"]:
        print(
            f"{t['step']:>10} | {_fmt(t['reward']):>6} {_fmt(t['success'], True):>7} "
            f"{_fmt(t['turns']):>5} {_fmt(t['seconds']):>6} | "
            + " ".join(_seconds(t.get(phase)) for phase in PHASES)
        )
    seconds = [t["seconds"] for t in summary["train"] if t["seconds"] is not None]
    if seconds:
        print(
            f"seconds per step: mean {sum(seconds) / len(seconds):.1f}, min {min(seconds):.1f}, max {max(seconds):.1f}"
        )
    for mode in ("sampled", "greedy"):
        print(criterion(summary["val"], mode, greedy if mode == "greedy" else sampled)[1])


def _tree_cpu_seconds(root: int, seen: dict[int, float]) -> int:
    """Add the CPU seconds (user + system) of `root` and its descendants to `seen` (max per pid).

    Returns:
        The resident memory of the tree now, in bytes (the sum over its processes).
    """
    tick = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        stats[pid] = (int(fields[11]) + int(fields[12])) / tick
        rss[pid] = int(fields[21]) * page
    stack, resident = [root], 0
    while stack:
        pid = stack.pop()
        if pid in stats:
            seen[pid] = max(seen.get(pid, 0.0), stats[pid])
            resident += rss[pid]
        stack.extend(children.get(pid, []))
    return resident


def make_train_arguments(target: str = "train") -> list[str]:
    """The trainer arguments of a Makefile target (`train` by default), so this bench runs exactly `make <target>`."""
    inside = False
    # A recipe line continued with a trailing backslash is one command.
    for line in (REPO / "Makefile").read_text().replace("\\\n", " ").splitlines():
        if not line.startswith("\t"):
            inside = (
                line.split(":", 1)[0].strip() == target and ":" in line and "=" not in line.split(":", 1)[0]
            )
        elif inside and "-m trainer.run" in line:
            return line.split("-m trainer.run", 1)[1].split()
    raise SystemExit(f"bench/learning.py: no `python -m trainer.run` line in the Makefile's {target} target")


def run(
    out: Path, overrides: list[str], target: str = "train"
) -> tuple[int, float, float, int, tuple, tuple]:
    """Run the trainer; return (exit code, wall s, CPU s and peak RSS bytes of the process tree, load before, after)."""
    command = [
        sys.executable,
        "-m",
        "trainer.run",
        *make_train_arguments(target),
        f"turngym.output_dir={out}",
        *overrides,
    ]
    print("running:", " ".join(command), flush=True)
    load_before = os.getloadavg()
    start = time.time()
    seen: dict[int, float] = {}
    peak = 0
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True)
    while process.poll() is None:
        peak = max(peak, _tree_cpu_seconds(process.pid, seen))
        time.sleep(2.0)
    return process.returncode, time.time() - start, sum(seen.values()), peak, load_before, os.getloadavg()


# The task `--target train-real` is judged on: guess-number easy as a user plays it, with none of
# training's shaping (no ruled-out penalty, no revealed range), text moves, sampled at temperature 1.
PLAIN_ENV = ["env=guess-number-v0", "env.difficulty=easy", "env.action_tool=false"]
HELD_OUT_SEED = 2_000_000  # far from training's seeds (0..) and validation's (1000000..)
# Every model and baseline gets six guesses, whatever cap the run trained with: a run that trains
# under a tighter cap is still judged on the same game as the others.
HELD_OUT_TURNS = 6
REAL_MODEL = "smollm2-135m-instruct"


def held_out_eval(model: str, out: Path, episodes: int, label: str) -> Path:
    """Play `model` on the plain env's held-out seeds (rollout.eval, its own process); the saved episodes."""
    saved = out / f"held_out_{label}.jsonl"
    command = [
        sys.executable,
        "-m",
        "rollout.eval",
        *PLAIN_ENV,
        f"model={model}",
        f"n={episodes}",
        f"seed={HELD_OUT_SEED}",
        f"max_turns={HELD_OUT_TURNS}",
        "temperature=1.0",
        "--save",
        str(saved),
    ]
    print("running:", " ".join(command), flush=True)
    subprocess.run(command, cwd=REPO, check=True)
    return saved


def held_out_rows(saved: dict[str, Path], max_turns: int) -> dict[str, dict[str, float]]:
    """{label: row} for each saved evaluation, then the random player and the expert on the same seeds."""
    from envs.baselines.behaviour import behaviour_rates_of, pool_behaviour
    from rollout.baseline_table import baseline_rows

    rows: dict[str, dict[str, float]] = {}
    seeds: list[int] = []
    for label, path in saved.items():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        seeds = sorted({int(r["seed"]) for r in records})
        turns = sum(len(r["turns"]) for r in records)
        unreadable = sum(1 for r in records for t in r["turns"] if t.get("format_error"))
        rows[label] = {
            "episodes": len(records),
            "success_rate": sum(bool(r["success"]) for r in records) / max(1, len(records)),
            "reward_mean": sum(r["total_reward"] for r in records) / max(1, len(records)),
            "behaviour/readable_turn_rate": 1 - unreadable / turns if turns else 0.0,
            **{
                f"behaviour/{k}": v
                for k, v in pool_behaviour(
                    [r["metrics"].get("behaviour") for r in records], behaviour_rates_of("guess-number-v0")
                ).items()
            },
        }
    rows.update(
        baseline_rows("guess-number-v0", seeds, {"difficulty": "easy", "action_tool": False}, max_turns)
    )
    return rows


def real_model_criterion(rows: dict[str, dict[str, float]]) -> tuple[bool, str]:
    """Issue-level bar for a real model: >= 2x the random player and >= 50 % held-out success, guesses that
    follow the feedback >= 80 % of the time and repeat an earlier guess <= 5 % of the time."""
    trained, random_row = rows["trained"], rows["random"]
    success, floor = trained["success_rate"], max(0.5, 2 * random_row["success_rate"])
    follow = trained.get("behaviour/follow_rate", 0.0)
    repeats = trained.get("behaviour/repeat_rate", 1.0)
    ok = success >= floor and follow >= 0.8 and repeats <= 0.05
    lo, hi = wilson_interval(success, int(trained["episodes"]))
    return ok, (
        f"held-out success {success:.1%} (95 % {lo:.0%}-{hi:.0%}) against a bar of {floor:.1%} "
        f"(2x random {random_row['success_rate']:.1%}, at least 50 %); follow {follow:.0%} (>= 80 %), "
        f"repeats {repeats:.1%} (<= 5 %): {'PASS' if ok else 'FAIL'}"
    )


# What `--target train-real-games` is judged on (the four games, as validation plays them: easy, text
# moves, no shaping, temperature 1): the trained model's 95 % interval starts above the random player's
# success on at least 3 of the 4 games, and guess-number reaches at least 2x random.
GAMES_BEATEN_NEEDED = 3
GAMES = ("guess-number-v0", "wordle-v0", "maze-v0", "tic-tac-toe-v0")


def games_verdict(
    final: dict[str, float], episodes: dict[str, int], random_rate: dict[str, float]
) -> tuple[bool, list[str]]:
    """Whether a games run meets the criterion, with one line per game and the verdict.

    Args:
        final: {env id: success} at the last validation.
        episodes: {env id: validation episodes}.
        random_rate: {env id: the random player's success on the same episodes}.

    Returns:
        (met, lines).

    >>> ok, lines = games_verdict({"guess-number-v0": 0.7, "maze-v0": 0.05, "wordle-v0": 0.0,
    ...     "tic-tac-toe-v0": 0.5}, {g: 64 for g in GAMES}, {"guess-number-v0": 0.3, "maze-v0": 0.0,
    ...     "wordle-v0": 0.04, "tic-tac-toe-v0": 0.3})
    >>> ok, lines[-1]
    (True, 'games beaten with confidence: 3 of 4 (>= 3); guess-number 70.0% against 2x random 60.0%: PASS')
    """
    lines, beaten = [], 0
    for game in GAMES:
        rate, n, base = final.get(game), episodes.get(game, 0), random_rate.get(game)
        if rate is None or base is None or not n:
            lines.append(f"{game}: not validated")
            continue
        lo, hi = wilson_interval(rate, n)
        above = lo > base
        beaten += above
        lines.append(
            f"{game}: {rate:.1%} (95 % {lo:.1%}-{hi:.1%}) of {n}, random {base:.1%}: "
            + ("beaten with confidence" if above else "not beaten with confidence")
        )
    guess, guess_random = final.get("guess-number-v0", 0.0), random_rate.get("guess-number-v0", 1.0)
    ok = beaten >= GAMES_BEATEN_NEEDED and guess >= 2 * guess_random
    lines.append(
        f"games beaten with confidence: {beaten} of {len(GAMES)} (>= {GAMES_BEATEN_NEEDED}); guess-number "
        f"{guess:.1%} against 2x random {2 * guess_random:.1%}: {'PASS' if ok else 'FAIL'}"
    )
    return ok, lines


def print_games_verdict(out: Path) -> bool:
    """The games criterion of a finished `train-real-games` run, from its last validation."""
    from omegaconf import OmegaConf

    from rollout.episode_budgets import run_turn_limit
    from trainer.report.behaviour_metrics import validation_success
    from trainer.report.learning_table import baseline_success, validation_episodes

    records = [r for r in _records(out / "metrics.jsonl") if validation_success(r)]
    if not records:
        print("no validation to judge")
        return False
    max_turns = run_turn_limit(OmegaConf.load(out / "config.yaml"))
    by_source = validation_episodes(out / "data" / "val.parquet")
    random_rate = {}
    for source, eps in by_source.items():
        wins, played = baseline_success(eps, max_turns).get("random", (0, 0))
        random_rate[source] = wins / played if played else 0.0
    ok, lines = games_verdict(
        validation_success(records[-1]), {s: len(e) for s, e in by_source.items()}, random_rate
    )
    print(f"games criterion at step {records[-1]['step']}:")
    print("\n".join(lines))
    return ok


def print_held_out(out: Path, episodes: int, evaluate: bool) -> bool:
    """Zero-shot and trained model on the plain env's held-out seeds beside the trivial players."""
    from rollout.baseline_table import format_comparison

    saved = {"zero-shot": out / "held_out_zero-shot.jsonl", "trained": out / "held_out_trained.jsonl"}
    if evaluate:  # only what is missing: a zero-shot file is the same for every run of the model
        models = {"zero-shot": REAL_MODEL, "trained": str(out)}
        for label, path in saved.items():
            if not path.is_file():
                held_out_eval(models[label], out, episodes, label)
    missing = [str(p) for p in saved.values() if not p.is_file()]
    if missing:
        print(f"no held-out evaluation to summarize ({', '.join(missing)} missing)")
        return False
    rows = held_out_rows(saved, HELD_OUT_TURNS)
    seeds = int(rows["trained"]["episodes"])
    print(
        f"held-out: the plain game ({' '.join(PLAIN_ENV)}), {seeds} seeds from {HELD_OUT_SEED}, temperature 1"
    )
    print(format_comparison(rows))
    from guess_number_strategy import read_strategy, strategy_line

    for label, path in saved.items():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        print(f"strategy, {label}: {strategy_line(read_strategy(records))}")
    ok, line = real_model_criterion(rows)
    print(line)
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run (or only parse) a training run and print its learning curve."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/turngym-bench-learning"))
    parser.add_argument("--parse", type=Path, help="only summarize this finished run's output dir")
    parser.add_argument("--target", default="train", help="the Makefile target whose trainer.run line to run")
    parser.add_argument(
        "--held-out",
        type=int,
        default=None,
        help="episodes of the held-out evaluation of the zero-shot and trained model on the plain game "
        "(default 128 for --target train-real, else 0 = none)",
    )
    parser.add_argument("overrides", nargs="*", help="trainer overrides (after --)")
    args = parser.parse_args(argv)
    held_out = args.held_out if args.held_out is not None else (128 if args.target == "train-real" else 0)
    if args.parse:
        print_summary(summarize(args.parse))
        if args.target == "train-real-games":
            print_games_verdict(args.parse)
        if held_out:
            print_held_out(args.parse, held_out, evaluate=True)
        return 0
    if (args.out / "metrics.jsonl").exists():
        print(f"{args.out} already holds a run; pick another --out (or delete it)", file=sys.stderr)
        return 2
    make_train_arguments(args.target)  # an unknown target fails here, before anything runs
    code, wall, cpu, peak, before, after = run(args.out, args.overrides, args.target)
    if not (args.out / "metrics.jsonl").exists():
        print(f"the run ended (exit code {code}) before its first step: see the error above", file=sys.stderr)
        return code or 1
    print_summary(summarize(args.out))
    print(
        f"wall {wall / 60:.1f} min, CPU {cpu / 60:.1f} min, peak RSS {peak / 2**30:.1f} GB (whole process tree), load average "
        f"{before[0]:.1f} before -> {after[0]:.1f} after (1-min), {after[2]:.1f} (15-min), {os.cpu_count()} cores"
    )
    print(f"reward curve: {args.out / 'reward_curve.png'}")
    from phase_bound import phase_bounds

    print("\n".join(phase_bounds(args.out)))
    if args.target == "train-real-games" and code == 0:
        print_games_verdict(args.out)
    if held_out and code == 0:
        print_held_out(args.out, held_out, evaluate=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
