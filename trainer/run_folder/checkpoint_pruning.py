"""Only the latest checkpoint keeps the optimizer state: the older ones keep the weights, the LR schedule,
the RNG and the dataloader.

Adam's two moments are twice the fp32 weights: SmolLM2-135M's checkpoint was 1.6 GB, of which the
optimizer was 1.08 GB and the weights 0.54 GB. Resuming (`trainer.resume_mode=auto`) reads only the
latest checkpoint, so the moments of the older ones serve nothing but a resume from an older folder.

verl's own extension point does it: `trainer.checkpoint_callback_class` names `KeepOptimizerInLatest`,
whose `on_save` runs on the driver after verl has written a checkpoint and marked it latest, and deletes
`optim_world_size_*_rank_*.pt` from every other `global_step_*` folder, leaving `optimizer_dropped.txt`
there saying how to start from it. `turngym.keep_optimizer=all` keeps every checkpoint's optimizer.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

KEEP_CHOICES = ("latest", "all")
MARKER = "optimizer_dropped.txt"
_OPTIMIZER_SHARD = re.compile(r"optim_world_size_\d+_rank_\d+\.pt")
_STEP_FOLDER = re.compile(r"global_step_(\d+)")


def drop_older_optimizer_states(checkpoints: str | Path, latest: str | Path) -> int:
    """Delete the optimizer shards of every `global_step_*` folder under `checkpoints` but `latest`.

    Each folder that lost shards gets `optimizer_dropped.txt` naming the folder that keeps them and the
    setting that starts from this one with a fresh optimizer.

    Args:
        checkpoints: verl's `trainer.default_local_dir`.
        latest: The checkpoint folder just saved (`global_step_N`), left whole.

    Returns:
        The bytes freed.

    >>> import pathlib, shutil, tempfile
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for step in (4, 8):
    ...     (root / f"global_step_{step}" / "actor").mkdir(parents=True)
    ...     _ = (root / f"global_step_{step}" / "actor" / "optim_world_size_1_rank_0.pt").write_bytes(b"x" * 10)
    >>> drop_older_optimizer_states(root, root / "global_step_8")
    10
    >>> sorted(p.name for p in (root / "global_step_4").rglob("*"))
    ['actor', 'optimizer_dropped.txt']
    >>> shutil.rmtree(root)
    """
    root, keep = Path(checkpoints), Path(latest).resolve()
    freed = 0
    if not root.is_dir():
        return 0
    for folder in root.iterdir():
        if not folder.is_dir() or not _STEP_FOLDER.fullmatch(folder.name) or folder.resolve() == keep:
            continue
        files = [p for role in folder.iterdir() if role.is_dir() for p in role.iterdir()]
        shards = [p for p in files if _OPTIMIZER_SHARD.fullmatch(p.name) and p.is_file()]
        if not any(p.name.startswith("model_world_size_") for p in files):
            # verl's rotation (max_actor_ckpt_to_keep) deleted the weights and left data.pt: a note that
            # says the weights are here would mislead.
            (folder / MARKER).unlink(missing_ok=True)
        if not shards:
            continue
        for shard in shards:
            freed += shard.stat().st_size
            shard.unlink()
        (folder / MARKER).write_text(
            f"The optimizer state of this checkpoint was dropped when {keep.name} was saved (only the latest "
            "checkpoint keeps it; turngym.keep_optimizer=all keeps every one). The weights, LR schedule, RNG "
            "and dataloader are here: rollout.eval model=<this folder> evaluates it, and training resumes from "
            "it with a fresh optimizer with trainer.resume_mode=resume_path trainer.resume_from_path=<this "
            "folder> actor_rollout_ref.actor.checkpoint.load_contents=[model,extra] (and critic.checkpoint."
            "load_contents=[model,extra] with a critic).\n"
        )
    return freed


class KeepOptimizerInLatest:
    """verl checkpoint callback (`trainer.checkpoint_callback_class`): drop older checkpoints' optimizer.

    The shape of verl's `CheckpointCallback` (built with `config=`, called as `on_save(...)`), without
    subclassing it: verl loads it by name only, and this module then imports without verl or Ray.
    """

    def __init__(self, config: Any = None) -> None:
        self.config = config

    def on_save(
        self, trainer: Any, global_step: int, checkpoint_dir: str, async_save: bool = False, **kwargs: Any
    ) -> None:
        """After verl saved `checkpoint_dir` and marked it latest, drop the other folders' optimizer state.

        Args:
            trainer: verl's trainer (unused).
            global_step: The step saved.
            checkpoint_dir: The `global_step_N` folder verl wrote.
            async_save: True when the shards may still be in flight: then nothing is dropped, since the
                latest is not known to be durable yet.
            **kwargs: verl's future context.
        """
        turngym = (self.config or {}).get("turngym", {}) or {}
        if async_save or turngym.get("keep_optimizer", "latest") != "latest":
            return
        freed = drop_older_optimizer_states(Path(checkpoint_dir).parent, checkpoint_dir)
        if freed:
            print(
                f"[turngym] checkpoint {Path(checkpoint_dir).name}: dropped {freed / 1e6:.0f} MB of older "
                "checkpoints' optimizer state (only the latest keeps it; turngym.keep_optimizer=all keeps all)",
                flush=True,
            )
