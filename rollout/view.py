"""`python -m rollout.view traj.jsonl -o traj.html`: episodes as HTML, trained vs env tokens coloured apart.

The page opens with a summary (episodes, failed, mean reward, success rate with its 95 % Wilson
interval, turns and the env's behaviour rates, per env), filters on success and env, an index linking
to every episode, then the episodes. Prompt tokens are grey, generated (trained, loss mask 1) tokens
green, shaded towards orange the less likely the model found them (their recorded log-prob, shown on
hover), env/tool/template tokens (mask 0) blue; each turn's reward (and advantage, in a training dump)
is a badge on the token that carries it.

`python -m rollout.view before.jsonl after.jsonl -o page.html` compares two runs on the same seeds:
episodes are paired on (env id and settings, seed, index within the seed's group) and shown side by side,
the summary has both runs and the env's random and expert players on the same seeds, and the filters
pick improved, regressed, both or neither succeeding. Settings are the env's kwargs (its defaults filled
in) and the turn cap each file records: two files that played an env under other settings (another
difficulty, text moves against a tool) do not pair, and one line at the top of the page (and on the
console) says what differs and gives the `rollout.eval` command that plays a matching file.

Tokens are decoded with the tokenizer each file records (``rollout.eval --save`` and training dumps
write it on every line), else ``--tokenizer``, else the embedded tiny model's. The filters are CSS
(radio buttons and ``:checked``): the page's Content-Security-Policy runs no script at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from envs.baselines.success_interval import wilson_interval
from rollout.episode_pairs import pair_change, pair_episodes, verdict
from rollout.episode_settings import played_under, settings_mismatch
from rollout.file_env_kwargs import file_env_kwargs, ignored_line
from rollout.trajectory import Trajectory
from turngym.common.cli_errors import ArgumentParser, UsageError, check_output_file, make_parent, run_cli

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;background:#fafafa}
.ep{background:#fff;border:1px solid #ddd;border-radius:6px;margin:1em 0;padding:.8em;min-width:0}
.head{font-weight:600;margin-bottom:.4em}.meta{color:#555;font-size:.9em;margin-bottom:.5em}
.toks{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all;line-height:1.6}
.p{color:#888}summary{cursor:pointer;font-family:system-ui,sans-serif}.g{background:#d8f5d0}.g1{background:#eef3b8}.g2{background:#fbe2a0}.g3{background:#f8c284}
.g4{background:#f29a80}.e{background:#dde8fb}
.r{background:#333;color:#fff;border-radius:3px;padding:0 3px;margin-left:2px;font-size:10px}
.a{background:#6a3d9a;color:#fff;border-radius:3px;padding:0 3px;margin-left:2px;font-size:10px}
.legend span{padding:0 6px;margin-right:6px}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.index a{margin-right:.6em}.fail{color:#b00}.good{color:#080}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em}.pair>.ep{margin:.3em 0}
.item:target .ep,.item:target>.ep{border-color:#36c;box-shadow:0 0 0 2px #36c}
.filters{margin:.3em 0}input[type=radio]{position:absolute;opacity:0}
.filters label{display:inline-block;border:1px solid #999;border-radius:3px;padding:1px 6px;margin:2px;cursor:pointer}
.note{color:#555;font-size:.9em}.warn{color:#a40;font-weight:bold}.scroll{max-height:45vh;overflow:auto;display:inline-block;border:1px solid #ddd}
.scroll table{margin:0}
"""

# The success filters: (id, label, class an item must carry); compare mode has its own.
_SINGLE_FILTERS = (
    ("ok", "succeeded", "s-ok"),
    ("no", "did not succeed", "s-no"),
    ("failed", "failed", "s-failed"),
)
_PAIR_FILTERS = (
    ("improved", "improved", "s-improved"),
    ("regressed", "regressed", "s-regressed"),
    ("both-ok", "both succeeded", "s-both-ok"),
    ("neither", "neither succeeded", "s-neither"),
    ("failed", "a failed episode", "s-failed"),
    ("unpaired", "unpaired", "s-unpaired"),
)
# The behaviour rates shown as columns when a run or player has them (rollout/baseline_table.py's).
_BEHAVIOUR = ("follow_rate", "in_range_rate", "repeat_rate", "with_text_rate", "readable_turn_rate")


def _style(success: Sequence[tuple[str, str, str]], n_envs: int) -> str:
    """The page's stylesheet: the base rules plus one hiding rule per filter choice."""
    rules = [_CSS]
    for key, _, cls in success:
        rules.append(f"#fs-{key}:checked~.main .item:not(.{cls}){{display:none}}")
    for i in range(n_envs):
        rules.append(f"#fe-{i}:checked~.main .item:not(.e{i}){{display:none}}")
    keys = ["fs-all", *(f"fs-{key}" for key, _, _ in success), "fe-all", *(f"fe-{i}" for i in range(n_envs))]
    rules.append(
        ",".join(f"#{k}:checked~.filters label[for={k}]" for k in keys) + "{background:#333;color:#fff}"
    )
    return "\n".join(rules)


def _csp(css: str) -> str:
    # A shared trajectories file is someone else's text: every field is escaped, and should one slip
    # through, the page's policy still runs no script, loads nothing and allows only this stylesheet.
    digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"


def _e(value: Any) -> str:
    """Any field as HTML text, quotes included (it may land in an attribute)."""
    return html.escape(str(value), quote=True)


def _decoder(tokenizer: Any) -> Callable[[int], str]:
    """One token id as text; each id is decoded once (a page of 1000 episodes repeats them a lot)."""
    cache: dict[int, str] = {}

    def piece(token: int) -> str:
        if token not in cache:
            cache[token] = (
                f"[{token}]" if tokenizer is None else tokenizer.decode([token], skip_special_tokens=False)
            )
        return cache[token]

    return piece


def _token_pieces(tokenizer: Any, ids: list[int]) -> list[str]:
    piece = _decoder(tokenizer)
    return [piece(t) for t in ids]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _numbers(value: Any, length: int) -> list[float] | None:
    """`value` as floats when it is a list of `length` numbers (a file's field may hold anything)."""
    if not isinstance(value, list) or len(value) != length:
        return None
    out = [_number(v) for v in value]
    return None if any(v is None for v in out) else out  # type: ignore[return-value]


def _behaviour_counts(t: Trajectory) -> dict[str, int | float] | None:
    """The episode's behaviour counts (`metrics["behaviour"]`), or None when absent or malformed."""
    counts = t.metrics.get("behaviour") if isinstance(t.metrics, dict) else None
    if not isinstance(counts, dict) or not counts:
        return None
    if not all(isinstance(k, str) and _number(v) is not None and math.isfinite(v) for k, v in counts.items()):
        return None
    return counts


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def run_stats(trajectories: Sequence[Trajectory]) -> dict[str, Any]:
    """Episodes, failures, success rate with its 95 % Wilson interval, reward, turns and behaviour rates.

    Args:
        trajectories: One run's episodes of one env (or all of them).

    Returns:
        ``episodes``, ``failed``, ``judged`` (episodes with a verdict), ``success_rate`` (None when none
        was judged), ``interval`` ((low, high)), ``reward_mean``, ``turns`` and ``behaviour/<rate>``.

    >>> s = run_stats([Trajectory([1], success=True), Trajectory([1], success=False)])
    >>> s["success_rate"], [round(x, 2) for x in s["interval"]]
    (0.5, [0.09, 0.91])
    """
    from envs.baselines.behaviour import behaviour_rates_of, pool_behaviour

    ran = [t for t in trajectories if verdict(t) != "failed"]
    judged = [verdict(t) == "ok" for t in ran if verdict(t) != "none"]
    rate = sum(judged) / len(judged) if judged else None
    rewards = [t.total_reward for t in trajectories]
    out: dict[str, Any] = {
        "episodes": len(trajectories),
        "failed": len(trajectories) - len(ran),
        "judged": len(judged),
        "success_rate": rate,
        "interval": wilson_interval(rate or 0.0, len(judged)),
        "reward_mean": statistics.fmean(rewards) if rewards else None,
        "turns": statistics.fmean(t.num_turns for t in trajectories) if trajectories else None,
    }
    env_ids = {str(t.env_id) for t in trajectories}
    rates = behaviour_rates_of(env_ids.pop()) if len(env_ids) == 1 else {}
    pooled = pool_behaviour([_behaviour_counts(t) for t in ran], rates) if rates else {}
    out.update({f"behaviour/{k}": v for k, v in pooled.items() if k in _BEHAVIOUR})
    return out


def _stats_cells(name: str, stats: dict[str, Any], columns: Sequence[str]) -> str:
    lo, hi = stats["interval"]
    cells = [
        _e(name),
        str(stats["episodes"]),
        str(stats.get("failed", 0)),
        _fmt(stats["success_rate"], ".2f"),
        f"{lo:.2f}-{hi:.2f}" if stats.get("judged") else "-",
        _fmt(stats.get("reward_mean")),
        _fmt(stats.get("turns"), ".2f"),
        *(_fmt(stats.get(f"behaviour/{c}")) for c in columns),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _group_name(t: Trajectory) -> str:
    # By what it was played under, the env's defaults filled in: `{}` and `{"difficulty": null}` are one row.
    return played_under(t).label


def _env_index(runs: Sequence[Sequence[Trajectory]]) -> list[str]:
    return sorted({str(t.env_id) for run in runs for t in run})


def _baselines(trajectories: Sequence[Trajectory]) -> tuple[dict[str, dict[str, Any]], str]:
    """The env's random and expert players on the episodes' seeds, and a note on what they played."""
    from rollout.baseline_table import baseline_rows

    seeds = sorted({t.seed for t in trajectories if isinstance(t.seed, int) and not isinstance(t.seed, bool)})
    if not seeds:
        return {}, ""
    first = trajectories[0]
    recorded = getattr(first, "env_kwargs", None)
    max_turns = getattr(first, "max_turns", None)
    try:
        # The file is someone's data: only what a served env's client may choose builds the players' env.
        kwargs, ignored = file_env_kwargs(str(first.env_id), recorded)
        if ignored:
            print(
                ignored_line("rollout.view", "the trajectories file", str(first.env_id), ignored),
                file=sys.stderr,
            )
        kwargs = kwargs if recorded is not None else None
        rows = baseline_rows(str(first.env_id), seeds, dict(kwargs or {}), max_turns)
    except Exception as exc:  # noqa: BLE001 - an env this process cannot build shows no baselines, says why
        return {}, f"no baselines for {first.env_id}: {type(exc).__name__}: {exc}"
    out = {}
    for player, row in rows.items():
        n = int(row["episodes"])
        stats = {k: v for k, v in row.items() if k.startswith("behaviour/")}
        stats.update(
            episodes=n,
            failed=0,
            judged=n,
            success_rate=row["success_rate"],
            interval=wilson_interval(row["success_rate"], n),
            reward_mean=row["reward_mean"],
        )
        out[player] = stats
    if not out:
        return {}, ""
    played = (
        f"env kwargs {json.dumps(kwargs, sort_keys=True)}" if kwargs is not None else "the env's defaults"
    )
    capped = f"at most {max_turns} turns" if max_turns else "the env's own turn limit"
    unrecorded = "" if kwargs is not None else " (the files record no env kwargs)"
    return (
        out,
        f"{first.env_id}: {' and '.join(out)} on the same {len(seeds)} seeds, {played}{unrecorded}, {capped}",
    )


def summary_html(
    trajectories: list[Trajectory],
    other: list[Trajectory] | None = None,
    labels: Sequence[str] = ("A", "B"),
    baselines: bool = False,
) -> str:
    """The summary table (all episodes, then each env) and, for one run, the index of episode links.

    Args:
        trajectories: The (first) run's episodes.
        other: The second run's episodes, to compare (its rows follow the first run's in each env).
        labels: The runs' names in the table.
        baselines: Add each env's random and expert players on the same seeds.

    Returns:
        HTML: a ``<h2>Summary</h2>`` table; with one run, the episode index follows it.

    >>> "<td>0.50</td>" in summary_html([Trajectory([1], success=True), Trajectory([1], success=False)])
    True
    """
    runs = [trajectories] + ([other] if other is not None else [])
    compare = other is not None
    by_env: dict[str, list[list[Trajectory]]] = defaultdict(lambda: [[] for _ in runs])
    for i, run in enumerate(runs):
        for t in run:
            by_env[_group_name(t)][i].append(t)
    named: list[tuple[str, dict[str, Any]]] = []
    notes = []
    for name, env_runs in [("all", runs), *sorted(by_env.items())]:
        for i, run in enumerate(env_runs):
            named.append((f"{name} · {labels[i]}" if compare else name, run_stats(run)))
        if baselines and name != "all":
            players, note = _baselines([t for run in env_runs for t in run])
            notes += [note] if note else []
            named += [(f"{name} · {player}", stats) for player, stats in players.items()]
    columns = [c for c in _BEHAVIOUR if any(f"behaviour/{c}" in stats for _, stats in named)]
    rows = [_stats_cells(name, stats, columns) for name, stats in named]
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "env · run" if compare else "env",
            "episodes",
            "failed",
            "success",
            "95% interval",
            "reward mean",
            "turns",
            *(c.removesuffix("_rate") for c in columns),
        )
    )
    out = f"<h2>Summary</h2><table><tr>{head}</tr>{''.join(rows)}</table>"
    if notes:
        out += "".join(f"<div class='note'>{_e(n)}</div>" for n in notes)
    if not compare:
        envs_seen = _env_index([trajectories])
        links = []
        for k, t in enumerate(trajectories):
            v = verdict(t)
            mark = " fail" if v in ("failed", "no") else ""
            reward = t.total_reward if math.isfinite(t.total_reward) else float("nan")
            links.append(
                f"<span class='item s-{v} e{envs_seen.index(str(t.env_id))}'>"
                f"<a class='{mark.strip()}' href='#ep{k}' title='{_e(t.env_id)} seed {_e(t.seed)}'>"
                f"#{k}&nbsp;{reward:+.2f}</a></span>"
            )
        out += f"<h2>Episodes</h2><div class='index'>{' '.join(links)}</div>"
    return out


def recorded_tokenizer(path: str) -> str | None:
    """The tokenizer a trajectories file names (``rollout.eval --save`` writes it on every line)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                name = json.loads(line).get("tokenizer")
                return name if isinstance(name, str) else None
    return None


def load_trajectories(path: str, limit: int | None = None) -> list[Trajectory]:
    """A trajectories JSONL, each line checked (``Trajectory.from_dict``), at most `limit` of them.

    A line's ``env_kwargs`` (an object) and ``max_turns`` (an integer), when the writer recorded them,
    become attributes of its trajectory: the baselines play the episodes' seeds under them.

    Raises:
        ValueError: a line is not JSON, or ``env_kwargs``/``max_turns`` has the wrong type (the line named).
        TypeError: a field has the wrong type (the field named).
    """
    out: list[Trajectory] = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            if limit is not None and len(out) >= limit:
                break
            record = json.loads(line)
            t = Trajectory.from_dict(record)
            kwargs, max_turns = record.get("env_kwargs"), record.get("max_turns")
            if kwargs is not None and not isinstance(kwargs, dict):
                raise ValueError(f"line {number}: env_kwargs must be an object, got {type(kwargs).__name__}")
            if max_turns is not None and (not isinstance(max_turns, int) or isinstance(max_turns, bool)):
                raise ValueError(
                    f"line {number}: max_turns must be an integer, got {type(max_turns).__name__}"
                )
            t.env_kwargs = kwargs  # type: ignore[attr-defined]
            t.max_turns = max_turns  # type: ignore[attr-defined]
            out.append(t)
    return out


def _bucket(logprob: float | None) -> str:
    """A generated token's class: green when the model was sure of it, towards orange the less it was."""
    if logprob is None:
        return "g"
    p = math.exp(logprob) if math.isfinite(logprob) and logprob <= 0 else 0.0
    for cls, floor in (("g", 0.9), ("g g1", 0.5), ("g g2", 0.2), ("g g3", 0.05)):
        if p >= floor:
            return cls
    return "g g4"


def episode_html(t: Trajectory, tokenizer: Any, heading: str, anchor: str | None = None) -> str:
    """One episode: its header, per-turn rewards (and advantages), and its tokens coloured and shaded.

    Args:
        t: The episode.
        tokenizer: Decodes its token ids (None: ids shown as ``[id]``).
        heading: The text before the episode's own fields (``#3`` or a run's name).
        anchor: The element id the index links to, if any.

    Returns:
        A ``<div class='ep'>``.
    """
    piece = _decoder(tokenizer)
    n = len(t.response_ids)
    logprobs = _numbers(t.logprobs, n)
    advantages = _numbers(t.extra_fields.get("advantages"), n) if isinstance(t.extra_fields, dict) else None
    positions = t.reward_positions
    rewards = dict(zip(positions, t.rewards, strict=True))
    out = [f"<div class='ep'{f' id={chr(39)}{anchor}{chr(39)}' if anchor else ''}>"]
    out.append(
        f"<div class='head'>{_e(heading)} {_e(t.env_id)} seed={_e(t.seed)} return={t.total_reward:.3f} "
        f"turns={t.num_turns} end={_e(t.termination)}"
        + (f" success={_e(t.success)}" if t.success is not None else "")
        + "</div>"
    )
    if t.error:
        out.append(f"<div class='meta'>error: {_e(t.error)}</div>")
    per_turn = ", ".join(f"{r:+.3f}" for r in t.rewards)
    out.append(f"<div class='meta'>per-turn rewards: [{per_turn}] · group {_e(t.group)}</div>")
    if advantages is not None:
        turn_adv = ", ".join(f"{advantages[p]:+.3f}" for p in positions if p < n)
        out.append(f"<div class='meta'>per-turn advantages: [{turn_adv}]</div>")
    out.append("<div class='toks'>")
    # The prompt is mostly the same system text in every episode: folded, so the replies are what one sees.
    prompt = _e("".join(piece(i) for i in t.prompt_ids))
    out.append(
        f"<details><summary class='p'>prompt ({len(t.prompt_ids)} tokens)</summary><span class='p'>{prompt}</span></details>"
    )
    env_run: list[str] = []
    for i, (token, mask) in enumerate(zip(t.response_ids, t.loss_mask, strict=True)):
        if not mask:
            env_run.append(piece(token))
            if i not in rewards:
                continue
        if env_run:  # an env segment is one span: nothing in it is trained or scored per token
            out.append(f"<span class='e'>{_e(''.join(env_run))}</span>")
            env_run = []
        if mask:
            lp = logprobs[i] if logprobs is not None else None
            hint = [f"logprob {lp:.3f}"] if lp is not None else []
            if advantages is not None:
                hint.append(f"advantage {advantages[i]:+.3f}")
            title = f" title='{_e(' · '.join(hint))}'" if hint else ""
            out.append(f"<span class='{_bucket(lp)}'{title}>{_e(piece(token))}</span>")
        if i in rewards:
            out.append(f"<span class='r'>{rewards[i]:+.2f}</span>")
            if advantages is not None:
                out.append(f"<span class='a'>A {advantages[i]:+.2f}</span>")
    if env_run:
        out.append(f"<span class='e'>{_e(''.join(env_run))}</span>")
    out.append("</div></div>")
    return "".join(out)


def _legend(advantages: bool) -> str:
    shades = "".join(
        f"<span class='{c}'>p&ge;{p}</span>"
        for c, p in (("g", 0.9), ("g g1", 0.5), ("g g2", 0.2), ("g g3", 0.05))
    )
    return (
        "<div class='legend'><span class='p'>prompt</span> generated (trained), by the model's probability: "
        f"{shades}<span class='g g4'>p&lt;0.05</span> <span class='e'>env / tool / template (not trained)</span>"
        "<span class='r'>reward</span>"
        + ("<span class='a'>advantage</span>" if advantages else "")
        + "</div>"
    )


def _filters(
    success: Sequence[tuple[str, str, str]],
    counts: dict[str, int],
    envs_seen: list[str],
    env_counts: dict[str, int],
) -> str:
    """Radio buttons, siblings of ``.main`` (the stylesheet hides what a checked one leaves out), then their labels."""
    choices = [("fs", "all", f"all ({sum(env_counts.values())})")]
    choices += [("fs", key, f"{label} ({counts.get(cls, 0)})") for key, label, cls in success]
    if len(envs_seen) > 1:
        choices += [("fe", "all", "all")]
        choices += [("fe", str(i), f"{_e(name)} ({env_counts[name]})") for i, name in enumerate(envs_seen)]
    inputs = "".join(
        f"<input type='radio' name='{group}' id='{group}-{key}'{' checked' if key == 'all' else ''}>"
        for group, key, _ in choices
    )
    rows = {"fs": "show: ", "fe": "env: "}
    for group, key, text in choices:
        rows[group] += f"<label for='{group}-{key}'>{text}</label>"
    return inputs + "".join(
        f"<div class='filters'>{row}</div>"
        for group, row in rows.items()
        if group in {g for g, _, _ in choices}
    )


def _page(title: str, css: str, body: list[str]) -> str:
    head = (
        f"<!doctype html><meta charset='utf-8'><meta http-equiv='Content-Security-Policy' content=\"{_csp(css)}\">"
        f"<title>{_e(title)}</title><style>{css}</style><h1>{_e(title)}</h1>"
    )
    return head + "".join(body)


def render_html(
    trajectories: list[Trajectory], tokenizer: Any = None, title: str = "turngym trajectories"
) -> str:
    """One HTML page for the given trajectories.

    Args:
        trajectories: The episodes, in the order shown.
        tokenizer: Decodes their token ids (None: ids shown as ``[id]``).
        title: The page's title and heading.

    Returns:
        The page: summary, filters, index and episodes; no script, a Content-Security-Policy that runs none.

    >>> page = render_html([Trajectory([1], response_ids=[2], loss_mask=[1], logprobs=[-2.0])])
    >>> "class='g g3' title='logprob -2.000'" in page
    True
    """
    envs_seen = _env_index([trajectories])
    verdicts = [verdict(t) for t in trajectories]
    counts = {f"s-{v}": verdicts.count(v) for v in set(verdicts)}
    env_counts = {name: sum(str(t.env_id) == name for t in trajectories) for name in envs_seen}
    body = [
        summary_html(trajectories),
        _filters(_SINGLE_FILTERS, counts, envs_seen, env_counts),
        "<div class='main'>",
    ]
    body.append(
        _legend(
            any(isinstance(t.extra_fields, dict) and "advantages" in t.extra_fields for t in trajectories)
        )
    )
    for k, t in enumerate(trajectories):
        body.append(f"<div class='item s-{verdicts[k]} e{envs_seen.index(str(t.env_id))}'>")
        body.append(episode_html(t, tokenizer, f"#{k}", anchor=f"ep{k}"))
        body.append("</div>")
    body.append("</div>")
    return _page(title, _style(_SINGLE_FILTERS, len(envs_seen)), body)


def render_comparison_html(
    before: list[Trajectory],
    after: list[Trajectory],
    tokenizers: tuple[Any, Any] = (None, None),
    labels: tuple[str, str] = ("before", "after"),
    title: str = "turngym: two runs compared",
    baselines: bool = True,
) -> str:
    """Two runs on the same seeds as one page: both summaries, the baselines, and each pair side by side.

    Args:
        before: The first run's episodes.
        after: The second run's episodes.
        tokenizers: Each run's tokenizer (None: ids shown as ``[id]``).
        labels: The runs' names on the page.
        title: The page's title and heading.
        baselines: Add each env's random and expert players on the episodes' seeds.

    Returns:
        The page; no script, a Content-Security-Policy that runs none.

    >>> a = [Trajectory([1], env_id="g", seed=0, success=False)]
    >>> b = [Trajectory([1], env_id="g", seed=0, success=True)]
    >>> "improved (1)" in render_comparison_html(a, b, baselines=False)
    True
    """
    pairs = pair_episodes(before, after)
    envs_seen = _env_index([before, after])
    changes = [pair_change(a, b) for a, b in pairs]
    classes = []
    for (a, b), change in zip(pairs, changes, strict=True):
        env = str((a or b).env_id)  # type: ignore[union-attr]
        failed = any(t is not None and verdict(t) == "failed" for t in (a, b))
        classes.append(f"item s-{change}{' s-failed' if failed else ''} e{envs_seen.index(env)}")
    counts: dict[str, int] = defaultdict(int)
    for cls in classes:
        for c in cls.split():
            counts[c] += 1
    env_counts = {name: counts[f"e{i}"] for i, name in enumerate(envs_seen)}
    mismatch = settings_mismatch(before, after, labels)
    body = [
        f"<div class='note warn'>{_e(mismatch)}</div>" if mismatch else "",
        f"<div class='note'>{_e(labels[0])}: {len(before)} episodes · {_e(labels[1])}: {len(after)} episodes · "
        f"{sum(a is not None and b is not None for a, b in pairs)} pairs on (env and its settings, seed, index in "
        "its group)</div>",
        summary_html(before, after, labels, baselines=baselines),
        _filters(_PAIR_FILTERS, counts, envs_seen, env_counts),
        "<div class='main'><h2>Episodes</h2><div class='scroll'><table class='index'><tr><th>pair</th><th>env</th><th>seed</th>"
        f"<th>{_e(labels[0])}</th><th>{_e(labels[1])}</th><th>reward change</th></tr>",
    ]

    def cell(t: Trajectory | None) -> str:
        if t is None:
            return "<td>-</td>"
        v = verdict(t)
        mark = {"ok": "good", "no": "fail", "failed": "fail"}.get(v, "")
        return f"<td class='{mark}'>{_e(v)} {t.total_reward:+.2f}</td>"

    for k, ((a, b), cls) in enumerate(zip(pairs, classes, strict=True)):
        t = a or b
        delta = f"{b.total_reward - a.total_reward:+.2f}" if a is not None and b is not None else "-"
        body.append(
            f"<tr class='{cls}'><td><a href='#p{k}'>#{k}</a></td><td>{_e(t.env_id)}</td><td>{_e(t.seed)}</td>"  # type: ignore[union-attr]
            f"{cell(a)}{cell(b)}<td>{delta}</td></tr>"
        )
    body.append("</table></div>")
    body.append(
        _legend(
            any(
                isinstance(t.extra_fields, dict) and "advantages" in t.extra_fields for t in [*before, *after]
            )
        )
    )
    for k, ((a, b), cls) in enumerate(zip(pairs, classes, strict=True)):
        body.append(f"<div class='{cls}' id='p{k}'><div class='pair'>")
        for t, label, tok in ((a, labels[0], tokenizers[0]), (b, labels[1], tokenizers[1])):
            if t is None:
                body.append(f"<div class='ep'><div class='meta'>no episode in {_e(label)}</div></div>")
            else:
                body.append(episode_html(t, tok, f"#{k} {label}:"))
        body.append("</div></div>")
    body.append("</div>")
    return _page(title, _style(_PAIR_FILTERS, len(envs_seen)), body)


def main(argv: list[str] | None = None) -> int:
    """Read one or two trajectories JSONL files and write the HTML page; a mistake is one line on stderr, exit 2."""
    return run_cli("rollout.view", _main, argv)


def _load(path: str, limit: int, tokenizer: str | None) -> tuple[list[Trajectory], str | None]:
    if not Path(path).is_file():
        raise UsageError(
            f"{path} is not a file; give a JSONL written by rollout.eval --save or a training dump"
        )
    try:
        trajs = load_trajectories(path, limit)
        tok_path = tokenizer or recorded_tokenizer(path)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"{path} is not a trajectories JSONL from rollout.eval --save ({type(exc).__name__}: {exc})"
        ) from None
    if tok_path is not None and not Path(tok_path).is_dir():
        where = "" if tokenizer else f" (recorded in {path})"
        raise UsageError(f"tokenizer {tok_path}{where} is not a directory; pass --tokenizer DIR")
    return trajs, tok_path


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m rollout.view", description=__doc__.split("\n")[0])
    parser.add_argument("path", help="trajectories JSONL (from rollout.eval --save, or a training dump)")
    parser.add_argument(
        "other", nargs="?", default=None, help="a second JSONL on the same seeds: compare the two"
    )
    parser.add_argument("-o", "--output", default=None, help="HTML file (default: <path>.html)")
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="tokenizer dir (default: the one each file records, else the embedded model)",
    )
    parser.add_argument("--limit", type=int, default=1000, help="at most this many episodes per file")
    parser.add_argument(
        "--labels", default=None, help="the two runs' names, comma-separated (default: file names)"
    )
    parser.add_argument(
        "--no-baselines", action="store_true", help="compare without the env's random and expert players"
    )
    args = parser.parse_args(argv)
    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: show at least 1 episode")
    labels = (args.path, args.other or "")
    if args.labels is not None:
        if args.other is None or len(args.labels.split(",")) != 2:
            raise UsageError(f"--labels {args.labels!r}: give two names, comma-separated, with two files")
        labels = tuple(args.labels.split(","))  # type: ignore[assignment]
    out = args.output or args.path.rsplit(".", 1)[0] + ".html"
    check_output_file(out, "-o")
    runs = [_load(p, args.limit, args.tokenizer) for p in (args.path, args.other) if p is not None]
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError(
            "rollout.view decodes token ids with a Hugging Face tokenizer, and transformers is not "
            "installed: pip install -e '.[train]' (or pip install transformers)"
        ) from None

    loaded: dict[str, Any] = {}
    tokenizers = []
    for _, tok_path in runs:
        if tok_path is None:
            from turngym.engines.embedded_model import build_embedded_model

            tok_path = str(build_embedded_model())
        if tok_path not in loaded:
            loaded[tok_path] = AutoTokenizer.from_pretrained(tok_path)
        tokenizers.append(loaded[tok_path])
    if len(runs) == 1:
        page = render_html(runs[0][0], tokenizers[0], title=args.path)
    else:
        page = render_comparison_html(
            runs[0][0],
            runs[1][0],
            (tokenizers[0], tokenizers[1]),
            labels,  # type: ignore[arg-type]
            title=f"{labels[0]} vs {labels[1]}",
            baselines=not args.no_baselines,
        )
    with open(make_parent(out), "w", encoding="utf-8") as f:
        f.write(page)
    if len(runs) == 2:
        mismatch = settings_mismatch(runs[0][0], runs[1][0], labels)  # type: ignore[arg-type]
        if mismatch:  # at the top of the page too
            print(f"rollout.view: {mismatch}")
    shown = " and ".join(str(len(trajs)) for trajs, _ in runs)
    print(f"wrote {shown} episodes to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
