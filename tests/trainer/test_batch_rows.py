"""Training rows rewritten between verl's dataloader and the rollout (the mixture's env, the curriculum's
level), on a real verl TensorDict batch: the agent loop reads back what was written."""

from __future__ import annotations

from rollout.episode_row import EpisodeRow
from trainer.data.batch_rows import batch_extra_infos, with_episode, write_extra_infos


def test_rewritten_rows_read_back_as_the_new_episodes():
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu

    rows = [EpisodeRow("maze-v0", s, {"difficulty": "easy"}).to_row() for s in (3, 4)]
    batch = TensorDict({"input_ids": torch.zeros(2, 3)}, batch_size=[2])
    tu.assign_non_tensor_stack(batch, "extra_info", [r["extra_info"] for r in rows])
    tu.assign_non_tensor_stack(batch, "data_source", [r["data_source"] for r in rows])
    infos = batch_extra_infos(batch)
    infos[1] = with_episode(infos[1], "wordle-v0", {"difficulty": "easy", "pool": 2})
    write_extra_infos(batch, infos)
    back = [
        EpisodeRow.from_row({"extra_info": e, "data_source": d})
        for e, d in zip(tu.get(batch, "extra_info"), tu.get(batch, "data_source"), strict=True)
    ]
    assert [(r.env_id, r.seed, dict(r.env_kwargs)) for r in back] == [
        ("maze-v0", 3, {"difficulty": "easy"}),
        ("wordle-v0", 4, {"difficulty": "easy", "pool": 2}),
    ]
    assert back[1].data_source == "wordle-v0"
