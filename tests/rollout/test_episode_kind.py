"""EpisodeKind: one identity for "this env with these kwargs", equal and keyed the same everywhere."""

import subprocess
import sys

from rollout.episode_kind import EpisodeKind
from rollout.episode_row import EpisodeRow


def test_equal_kwargs_in_any_order_are_one_kind():
    a = EpisodeKind("maze-v0", {"size": 5, "difficulty": "easy"})
    b = EpisodeKind("maze-v0", {"difficulty": "easy", "size": 5})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1 and a.key == b.key
    assert a != EpisodeKind("maze-v0", {"difficulty": "hard", "size": 5})
    assert a != EpisodeKind("sokoban-v0", {"difficulty": "easy", "size": 5})


def test_the_key_is_the_same_in_another_process():
    code = (
        "from rollout.episode_kind import EpisodeKind;"
        "print(EpisodeKind('maze-v0', {'z': [1, 2], 'a': {'y': 1, 'b': 2}}).key)"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PYTHONPATH": "."},
        ).stdout.strip()
        for seed in (1, 2)
    }
    assert keys == {EpisodeKind("maze-v0", {"a": {"b": 2, "y": 1}, "z": [1, 2]}).key}


def test_a_rows_kind_is_its_env_and_kwargs_not_its_seed_or_curriculum_level():
    row = EpisodeRow("guess-number-v0", 3, {"difficulty": "easy"}, difficulty="hard")
    again = EpisodeRow.from_row({**row.to_row(), "extra_info": {**row.to_row()["extra_info"], "seed": 4}})
    assert row.kind == again.kind == EpisodeKind("guess-number-v0", {"difficulty": "easy"})


def test_a_mixture_entry_round_trips_with_its_weight():
    entry = {"id": "wordle-v0", "weight": 0.5, "kwargs": {"b": 1, "a": None}}
    kind = EpisodeKind.from_entry(entry)
    assert kind.entry(0.5) == {"id": "wordle-v0", "weight": 0.5, "kwargs": {"a": None, "b": 1}}
    assert EpisodeKind.from_entry({"id": "wordle-v0", "kwargs": None}) == EpisodeKind("wordle-v0")
    kinds = [EpisodeKind("b"), EpisodeKind("a", {"x": 1}), EpisodeKind("a")]
    assert [k.env_id for k in sorted(kinds)] == ["a", "a", "b"]
    assert sorted(kinds) == sorted(reversed(kinds))
