"""rollout.view with two files: pairing, both summaries with baselines and behaviour, shading, filters."""

import json
import re

import pytest

from envs.baselines.success_interval import wilson_interval
from rollout import view
from rollout.episode_pairs import pair_change, pair_episodes
from rollout.trajectory import Trajectory, TurnRecord


def _episode(seed: int, success: bool, *, env_id="guess-number-v0", logprobs=None, behaviour=None, **extra):
    t = Trajectory(
        prompt_ids=[1, 2],
        response_ids=[3, 4, 5, 6],
        loss_mask=[1, 1, 0, 1],
        logprobs=logprobs if logprobs is not None else [-0.01, -2.0, 0.0, -5.0],
        env_id=env_id,
        seed=seed,
        termination="terminated",
        success=success,
        turns=[
            TurnRecord(start=0, end=2, reward=0.1),
            TurnRecord(start=3, end=4, reward=1.0 if success else 0.0),
        ],
    )
    t.metrics = {"behaviour": behaviour} if behaviour is not None else {}
    t.extra_fields.update(extra)
    return t


def _write(path, trajs, **line_fields):
    with open(path, "w", encoding="utf-8") as f:
        for t in trajs:
            f.write(json.dumps({**t.to_dict(), **line_fields}) + "\n")


def test_episodes_pair_on_env_seed_and_index_in_group_whatever_the_order():
    before = [_episode(s, False) for s in (0, 0, 1, 2)]
    after = [_episode(s, s == 1) for s in (2, 1, 0, 0, 3)]
    pairs = pair_episodes(before, after)
    assert [(a.seed if a else None, b.seed if b else None) for a, b in pairs] == [
        (0, 0),
        (0, 0),
        (1, 1),
        (2, 2),
        (None, 3),
    ]
    assert pairs[0][1] is after[2] and pairs[1][1] is after[3]  # the k-th of a seed with the k-th
    assert [pair_change(a, b) for a, b in pairs] == ["neither", "neither", "improved", "neither", "unpaired"]


def test_summary_has_both_runs_wilson_intervals_behaviour_and_baselines_on_the_same_seeds():
    counts = {"followed": 3, "after_feedback": 4, "in_range": 4, "guesses": 4, "repeats": 0, "with_text": 1}
    before = [_episode(s, s < 2, behaviour=counts) for s in range(8)]
    after = [_episode(s, s < 6, behaviour={**counts, "followed": 4}) for s in range(8)]
    for t in before + after:
        t.env_kwargs = {"difficulty": "easy"}
        t.max_turns = 6
    page = view.summary_html(before, after, ("zero-shot", "trained"), baselines=True)
    lo, hi = wilson_interval(6 / 8, 8)
    assert "<td>guess-number-v0 {&quot;difficulty&quot;: &quot;easy&quot;} · trained</td>" in page
    assert "<td>0.75</td>" in page and f"<td>{lo:.2f}-{hi:.2f}</td>" in page
    assert "<th>follow</th>" in page and "<td>0.750</td>" in page and "<td>1.000</td>" in page
    assert "· random</td>" in page and "· expert</td>" in page
    assert (
        "random and expert on the same 8 seeds, env kwargs {&quot;difficulty&quot;: &quot;easy&quot;}" in page
    )
    assert "at most 6 turns" in page


def test_comparison_page_shades_log_probs_shows_advantages_and_filters_without_script():
    before = [_episode(0, False), _episode(1, True), _episode(2, True, env_id="wordle-v0")]
    after = [
        _episode(0, True, advantages=[0.5, 0.5, 0.0, 0.25]),
        _episode(1, False),
        _episode(2, True, env_id="wordle-v0"),
    ]
    page = view.render_comparison_html(before, after, labels=("before", "after"), baselines=False)
    assert (
        "<script" not in page
        and " on" not in re.sub(r"'[^']*'|\"[^\"]*\"", "", page).lower().split("<style")[0]
    )
    assert "improved (1)" in page and "regressed (1)" in page and "both succeeded (1)" in page
    assert page.count("class='item ") == 6  # three index rows and three side-by-side pairs
    assert "class='item s-improved e0' id='p0'" in page and "href='#p0'" in page
    assert "#fs-improved:checked~.main .item:not(.s-improved){display:none}" in page
    assert "#fe-1:checked~.main .item:not(.e1){display:none}" in page
    assert "class='g' title='logprob -0.010'" in page and "class='g g4' title='logprob -5.000'" in page
    assert "per-turn advantages: [+0.500, +0.250]" in page and "<span class='a'>A +0.25</span>" in page
    # The stylesheet, filter rules included, is exactly what the policy's hash allows.
    css = page.split("<style>", 1)[1].split("</style>", 1)[0]
    assert view._csp(css) in page


def test_cli_compares_two_files_and_refuses_a_malformed_extra_field_in_one_line(tmp_path, capsys, model_path):
    a, b = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    _write(a, [_episode(s, False) for s in range(3)], tokenizer=str(model_path))
    _write(b, [_episode(s, s > 0) for s in range(3)], tokenizer=str(model_path), env_kwargs={}, max_turns=8)
    out = tmp_path / "page.html"
    assert view.main([str(a), str(b), "-o", str(out), "--labels", "zero-shot,trained"]) == 0
    assert "wrote 3 and 3 episodes" in capsys.readouterr().out
    page = out.read_text()
    assert "<h1>zero-shot vs trained</h1>" in page and "improved (2)" in page and "· expert</td>" in page
    _write(b, [_episode(0, True)], env_kwargs="<script>")
    assert view.main([str(a), str(b), "-o", str(tmp_path / "bad.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "env_kwargs must be an object" in err
    assert view.main([str(a), "-o", str(tmp_path / "x.html"), "--labels", "a,b"]) == 2
    assert "give two names" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["x"], [0.1, "x", 0, 0], {"a": 1}, None])
def test_malformed_logprobs_or_advantages_render_without_shading_and_without_failing(bad):
    t = _episode(0, True, advantages=bad)
    t.logprobs = [0.0] * 3  # wrong length: no shading rather than a misaligned one
    page = view.render_html([t])
    assert "title='logprob" not in page and "per-turn advantages" not in page
