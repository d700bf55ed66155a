"""`python -m rollout.view traj.jsonl -o traj.html`: episodes as HTML, trained vs env tokens coloured apart.

The page opens with a summary (episodes, mean reward, success rate, turns), a table per env and an
index linking to every episode. Prompt tokens are grey, generated (trained, loss mask 1) tokens green,
env/tool/template tokens (mask 0) blue; each turn's reward is shown as a badge on the token that
carries it. Tokens are decoded with the tokenizer the file records (``rollout.eval --save`` writes
it on every line), else ``--tokenizer``, else the embedded tiny model's.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from rollout.trajectory import Trajectory, load_jsonl
from tools.cli_errors import ArgumentParser, UsageError, check_output_file, make_parent, run_cli

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;background:#fafafa}
.ep{background:#fff;border:1px solid #ddd;border-radius:6px;margin:1em 0;padding:.8em}
.head{font-weight:600;margin-bottom:.4em}.meta{color:#555;font-size:.9em;margin-bottom:.5em}
.toks{font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;word-break:break-all;line-height:1.6}
.p{color:#888}.g{background:#d8f5d0}.e{background:#dde8fb}
.r{background:#333;color:#fff;border-radius:3px;padding:0 3px;margin-left:2px;font-size:10px}
.legend span{padding:0 6px;margin-right:6px}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.index a{margin-right:.6em}.fail{color:#b00}
"""
# A shared trajectories file is someone else's text: every field is escaped, and should one slip
# through, the page's policy still runs no script, loads nothing and allows only this stylesheet.
_CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()}'; "
    "base-uri 'none'; form-action 'none'"
)


def _e(value: Any) -> str:
    """Any field as HTML text, quotes included (it may land in an attribute)."""
    return html.escape(str(value), quote=True)


def _token_pieces(tokenizer: Any, ids: list[int]) -> list[str]:
    if tokenizer is None:
        return [f"[{t}]" for t in ids]
    return [tokenizer.decode([t], skip_special_tokens=False) for t in ids]


def _rate(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def _judged(t: Trajectory) -> bool:
    # An episode cut off by its budget or turn limit has no verdict of its own (success=None): it did not
    # succeed. Only an env that ends without naming success (terminated, success=None) is not judged.
    return t.success is not None or t.termination != "terminated"


def _row(name: str, trajs: list[Trajectory]) -> str:
    rewards = [t.total_reward for t in trajs]
    ok = [t for t in trajs if not t.error]
    judged = [bool(t.success) for t in ok if _judged(t)]
    cells = [
        _e(name),
        str(len(trajs)),
        str(len(trajs) - len(ok)),
        f"{statistics.fmean(rewards):.3f}" if rewards else "-",
        _rate(judged),
        f"{statistics.fmean(t.num_turns for t in trajs):.2f}" if trajs else "-",
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def summary_html(trajectories: list[Trajectory]) -> str:
    """Summary table (all episodes, then one row per env and kwargs) and an index of episode links."""
    by_env: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        kwargs = getattr(t, "env_kwargs", None)
        by_env[f"{t.env_id} {json.dumps(kwargs, sort_keys=True)}" if kwargs else str(t.env_id)].append(t)
    head = "".join(f"<th>{h}</th>" for h in ("env", "episodes", "failed", "reward mean", "success", "turns"))
    rows = [_row("all", trajectories)] + [_row(name, ts) for name, ts in sorted(by_env.items())]
    links = []
    for k, t in enumerate(trajectories):
        mark = " fail" if t.error or (_judged(t) and not t.success) else ""
        reward = t.total_reward if math.isfinite(t.total_reward) else float("nan")
        links.append(
            f"<a class='{mark.strip()}' href='#ep{k}' title='{_e(t.env_id)} seed {_e(t.seed)}'>"
            f"#{k}&nbsp;{reward:+.2f}</a>"
        )
    return (
        f"<h2>Summary</h2><table><tr>{head}</tr>{''.join(rows)}</table>"
        f"<h2>Episodes</h2><div class='index'>{' '.join(links)}</div>"
    )


def recorded_tokenizer(path: str) -> str | None:
    """The tokenizer a trajectories file names (``rollout.eval --save`` writes it on every line)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                return json.loads(line).get("tokenizer")
    return None


def render_html(
    trajectories: list[Trajectory], tokenizer: Any = None, title: str = "turngym trajectories"
) -> str:
    """One HTML page for the given trajectories."""
    out = [
        f"<!doctype html><meta charset='utf-8'><meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
        f"<title>{_e(title)}</title><style>{_CSS}</style>"
    ]
    out.append(f"<h1>{_e(title)}</h1>")
    out.append(summary_html(trajectories))
    out.append("<div class='legend'><span class='p'>prompt</span><span class='g'>generated (trained)</span>")
    out.append(
        "<span class='e'>env / tool / template (not trained)</span><span class='r'>reward</span></div>"
    )
    for k, t in enumerate(trajectories):
        rewards = dict(zip(t.reward_positions, t.rewards, strict=True))
        out.append(f"<div class='ep' id='ep{k}'>")
        out.append(
            f"<div class='head'>#{k} {_e(t.env_id)} seed={_e(t.seed)} return={t.total_reward:.3f} "
            f"turns={t.num_turns} end={_e(t.termination)}"
            + (f" success={_e(t.success)}" if t.success is not None else "")
            + "</div>"
        )
        if t.error:
            out.append(f"<div class='meta'>error: {_e(t.error)}</div>")
        per_turn = ", ".join(f"{r:+.3f}" for r in t.rewards)
        out.append(f"<div class='meta'>per-turn rewards: [{per_turn}] · group {_e(t.group)}</div>")
        out.append("<div class='toks'>")
        out.extend(f"<span class='p'>{_e(p)}</span>" for p in _token_pieces(tokenizer, t.prompt_ids))
        for i, (p, m) in enumerate(zip(_token_pieces(tokenizer, t.response_ids), t.loss_mask, strict=True)):
            badge = f"<span class='r'>{rewards[i]:+.2f}</span>" if i in rewards else ""
            out.append(f"<span class='{'g' if m else 'e'}'>{_e(p)}</span>{badge}")
        out.append("</div></div>")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    """Read a trajectories JSONL and write the HTML page; a mistake is one line on stderr, exit code 2."""
    return run_cli("rollout.view", _main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m rollout.view", description=__doc__.split("\n")[0])
    parser.add_argument("path", help="trajectories JSONL (from rollout.eval --save)")
    parser.add_argument("-o", "--output", default=None, help="HTML file (default: <path>.html)")
    parser.add_argument(
        "--tokenizer",
        default=None,
        help="tokenizer dir (default: the one the file records, else the embedded model)",
    )
    parser.add_argument("--limit", type=int, default=200, help="at most this many episodes")
    args = parser.parse_args(argv)
    if not Path(args.path).is_file():
        raise UsageError(f"{args.path} is not a file; give a JSONL written by rollout.eval --save")
    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: show at least 1 episode")
    out = args.output or args.path.rsplit(".", 1)[0] + ".html"
    check_output_file(out, "-o")
    try:
        trajs = load_jsonl(args.path)[: args.limit]
        tok_path = args.tokenizer or recorded_tokenizer(args.path)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"{args.path} is not a trajectories JSONL from rollout.eval --save ({type(exc).__name__}: {exc})"
        ) from None
    if tok_path is not None and not Path(tok_path).is_dir():
        where = "" if args.tokenizer else f" (recorded in {args.path})"
        raise UsageError(f"tokenizer {tok_path}{where} is not a directory; pass --tokenizer DIR")
    from transformers import AutoTokenizer

    if tok_path is None:
        from rollout.embedded_model import build_embedded_model

        tok_path = build_embedded_model()
    with open(make_parent(out), "w", encoding="utf-8") as f:
        f.write(render_html(trajs, AutoTokenizer.from_pretrained(tok_path), title=args.path))
    print(f"wrote {len(trajs)} episodes to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
