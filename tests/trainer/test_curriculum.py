"""The difficulty curriculum: state machine, deterministic picks, checkpoint round trip, a real run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from small_run_args import SMALL_RUN

from trainer.hooks.curriculum.rows import curriculum_env_ids, level_opening_rows
from trainer.hooks.curriculum.schedule import LEVELS, STATE_FILE, Curriculum, CurriculumConfig, unit_draw

REPO = Path(__file__).resolve().parents[2]
SMALL = SMALL_RUN  # small enough for CI on CPU


def _curriculum(**overrides) -> Curriculum:
    settings = {"enable": True, "promote_at": 0.6, "demote_at": 0.2, "window": 4, **overrides}
    return Curriculum(CurriculumConfig(**settings), ["maze-v0", "wordle-v0"])


def _feed(cur: Curriculum, env_id: str, difficulty: str, successes: list[bool]) -> list[str]:
    return cur.update((env_id, difficulty, s) for s in successes)


def _level(cur: Curriculum, env_id: str) -> str:
    return LEVELS[cur.envs[env_id].level]


def test_promotion_needs_a_full_window_at_the_frontier():
    cur = _curriculum()
    assert _feed(cur, "maze-v0", "easy", [True, True, True]) == []
    # Episodes below or above the frontier do not judge it.
    assert _feed(cur, "maze-v0", "medium", [True] * 10) == []
    assert _level(cur, "maze-v0") == "easy"
    moves = _feed(cur, "maze-v0", "easy", [True])
    assert moves == ["maze-v0 easy -> medium (frontier success 1.00)"]
    assert _level(cur, "maze-v0") == "medium"
    assert cur.envs["maze-v0"].outcomes == []  # the new level is judged on its own episodes
    assert _level(cur, "wordle-v0") == "easy"  # per env


def test_promotes_to_hard_and_stays_there():
    cur = _curriculum()
    _feed(cur, "maze-v0", "easy", [True] * 4)
    _feed(cur, "maze-v0", "medium", [True, True, True, False])  # 0.75 >= 0.6
    assert _level(cur, "maze-v0") == "hard"
    assert _feed(cur, "maze-v0", "hard", [True] * 8) == []
    assert _level(cur, "maze-v0") == "hard"
    assert cur.envs["maze-v0"].promotions == 2


def test_demotion_when_success_falls_and_not_below_easy():
    cur = _curriculum()
    _feed(cur, "maze-v0", "easy", [True] * 4)
    assert _feed(cur, "maze-v0", "medium", [False, False, False, False]) == [
        "maze-v0 medium -> easy (frontier success 0.00)"
    ]
    assert _level(cur, "maze-v0") == "easy"
    assert cur.envs["maze-v0"].demotions == 1
    assert _feed(cur, "maze-v0", "easy", [False] * 8) == []
    assert _level(cur, "maze-v0") == "easy"


def test_between_thresholds_the_level_holds_on_a_sliding_window():
    cur = _curriculum()
    _feed(cur, "maze-v0", "easy", [True, False, True, False, True, False])  # 0.5: no move
    assert _level(cur, "maze-v0") == "easy"
    assert cur.envs["maze-v0"].outcomes == [1.0, 0.0, 1.0, 0.0]
    _feed(cur, "maze-v0", "easy", [True])  # F T F T: 0.5
    assert _level(cur, "maze-v0") == "easy"
    _feed(cur, "maze-v0", "easy", [True])  # T F T T: 0.75
    assert _level(cur, "maze-v0") == "medium"


def test_weights_move_from_easy_to_hard():
    cur = _curriculum()
    assert cur.weights("maze-v0") == (1.0, 0.0, 0.0)
    _feed(cur, "maze-v0", "easy", [True] * 4)
    assert cur.weights("maze-v0") == pytest.approx((0.2, 0.8, 0.0))
    _feed(cur, "maze-v0", "medium", [True] * 4)
    assert cur.weights("maze-v0") == pytest.approx((0.1, 0.2, 0.7))
    custom = _curriculum(level_weights={"easy": (2, 0, 0), "medium": (1, 1, 0), "hard": (0, 0, 5)})
    assert custom.weights("maze-v0") == (1.0, 0.0, 0.0)
    custom.envs["maze-v0"].level = 1
    assert custom.weights("maze-v0") == (0.5, 0.5, 0.0)


def test_picks_follow_the_weights_and_only_rise_as_levels_rise():
    cur = _curriculum()
    seeds = range(4000)
    assert {cur.difficulty("maze-v0", s) for s in seeds} == {"easy"}
    by_level = []
    for level in range(3):
        cur.envs["maze-v0"].level = level
        picks = [cur.difficulty("maze-v0", s) for s in seeds]
        shares = [picks.count(name) / len(picks) for name in LEVELS]
        assert shares == pytest.approx(cur.weights("maze-v0"), abs=0.03)
        by_level.append([LEVELS.index(p) for p in picks])
    assert all(a <= b <= c for a, b, c in zip(*by_level, strict=True))
    assert cur.difficulty("math-tutor-v0", 3) is None  # not in the curriculum


def test_same_seed_and_state_give_the_same_difficulty():
    a, b = _curriculum(), _curriculum()
    for cur in (a, b):
        _feed(cur, "maze-v0", "easy", [True] * 4)
    picks_a = [a.difficulty("maze-v0", s) for s in range(200)]
    assert picks_a == [b.difficulty("maze-v0", s) for s in range(200)]
    assert picks_a == [a.difficulty("maze-v0", s) for s in range(200)]  # asking again changes nothing
    assert unit_draw(0, "maze-v0", 7) == unit_draw(0, "maze-v0", 7)
    assert unit_draw(0, "maze-v0", 7) != unit_draw(1, "maze-v0", 7)  # the salt is config
    # A fixed value, so picks are the same in every process (no per-process hash seed).
    assert unit_draw(0, "maze-v0", 7) == pytest.approx(_fixed_draw())


def _fixed_draw() -> float:
    import hashlib

    return int.from_bytes(hashlib.blake2b(b"0:maze-v0:7", digest_size=8).digest(), "big") / 2**64


def test_checkpoint_round_trip_continues_identically(tmp_path):
    run = _curriculum()
    _feed(run, "maze-v0", "easy", [True] * 4)
    _feed(run, "maze-v0", "medium", [True, False])
    _feed(run, "wordle-v0", "easy", [False, True, True])
    path = run.save(tmp_path / "global_step_3")
    assert path.name == STATE_FILE and not list(path.parent.glob("*.tmp"))

    resumed = _curriculum()
    assert resumed.load(tmp_path / "global_step_3")
    assert resumed.state_dict() == run.state_dict()
    later = [("maze-v0", "medium", True), ("maze-v0", "medium", True), ("wordle-v0", "easy", True)]
    assert resumed.update(later) == run.update(later)
    assert resumed.state_dict() == run.state_dict()
    assert [resumed.difficulty(e, s) for e in run.envs for s in range(100)] == [
        run.difficulty(e, s) for e in run.envs for s in range(100)
    ]
    assert not _curriculum().load(tmp_path / "missing")


def test_metrics_report_shares_levels_and_windows():
    cur = _curriculum()
    _feed(cur, "maze-v0", "easy", [True, False])
    m = cur.metrics(["easy", "easy", "medium", "", None, "hard"])
    assert m["curriculum/share/easy"] == 0.5
    assert m["curriculum/share/medium"] == 0.25
    assert m["curriculum/share/hard"] == 0.25
    assert m["curriculum/maze-v0/level"] == 0.0
    assert m["curriculum/maze-v0/frontier_success"] == 0.5
    assert m["curriculum/maze-v0/frontier_episodes"] == 2.0
    assert cur.metrics([])["curriculum/share/easy"] == 0.0


def test_config_from_hydra_node_and_bad_values():
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(REPO / "trainer" / "config" / "turngym.yaml")
    settings = CurriculumConfig.from_mapping(cfg.turngym.curriculum)
    assert not settings.enable and settings.window == 32
    assert settings.level_weights["hard"] == (0.1, 0.2, 0.7)
    for bad in (
        {"promote_at": 0.2, "demote_at": 0.5},
        {"window": 0},
        {"start": "extreme"},
        {"level_weights": {"easy": [1, 0, 0]}},
        {"level_weights": {"easy": [0, 0, 0], "medium": [0, 1, 0], "hard": [0, 0, 1]}},
        {"thresholds": 3},
    ):
        with pytest.raises(ValueError, match="turngym.curriculum"):
            CurriculumConfig.from_mapping(bad)


def test_envs_with_three_levels_are_the_curriculum_envs():
    ids = curriculum_env_ids(
        ["guess-number-v0", "maze-v0", "code-sandbox-v0", "search-qa-v0", "no-such-env-v0"]
    )
    assert ids == ["guess-number-v0", "maze-v0"]


def test_level_openings_cover_the_other_levels():
    from trainer.data.datasets import episode_rows

    rows = episode_rows([{"id": "maze-v0", "weight": 1.0, "kwargs": {"difficulty": "easy"}}], 2, 0, "train")
    out = level_opening_rows(rows, ["maze-v0"])
    assert [
        (json.loads(r["extra_info"]["env_kwargs"])["difficulty"], r["extra_info"]["seed"]) for r in out
    ] == [
        ("medium", 0),
        ("hard", 0),
        ("medium", 1),
        ("hard", 1),
    ]
    # A hard maze opens with a bigger board than an easy one.
    assert len(out[1]["prompt"][-1]["content"]) > len(rows[0]["prompt"][-1]["content"])


def _records(metrics: Path) -> list[dict]:
    return [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_short_training_run_logs_shares_and_resumes_the_curriculum(tmp_path):
    out = tmp_path / "cur-run"
    base = [
        sys.executable,
        "-m",
        "trainer.run",
        "env=text-game",
        "turngym.curriculum.enable=true",
        # From medium (20 % easy, 80 % medium) with a short window, so the shares mix and a level
        # can move within a few steps.
        "turngym.curriculum.start=medium",
        "turngym.curriculum.window=4",
        "turngym.curriculum.demote_at=0.5",
        f"turngym.output_dir={out}",
        *SMALL,
    ]
    proc = subprocess.run(
        [*base, "trainer.total_training_steps=2"], cwd=REPO, capture_output=True, text=True, timeout=1400
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[turngym] curriculum over guess-number-v0, maze-v0, tic-tac-toe-v0, wordle-v0" in proc.stdout
    train = [r for r in _records(out / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2]
    for record in train:
        shares = [record[f"curriculum/share/{name}"] for name in LEVELS]
        assert sum(shares) == pytest.approx(1.0)
        assert record["curriculum/maze-v0/level"] in (0.0, 1.0, 2.0)
    assert train[0]["curriculum/share/hard"] == 0.0  # step 1 draws from the medium weights
    saved = json.loads((out / "checkpoints" / "global_step_2" / STATE_FILE).read_text())
    assert set(saved["envs"]) == {"guess-number-v0", "maze-v0", "tic-tac-toe-v0", "wordle-v0"}
    assert (out / "data" / "curriculum_levels.parquet").exists()

    # One more step from the checkpoint: the saved state is loaded and the step follows on.
    proc = subprocess.run(
        [*base, "trainer.total_training_steps=3"], cwd=REPO, capture_output=True, text=True, timeout=1400
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "[turngym] curriculum resumed at step 2" in proc.stdout
    train = [r for r in _records(out / "metrics.jsonl") if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2, 3]
