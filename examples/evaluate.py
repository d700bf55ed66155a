"""Evaluate a trained model: export the latest checkpoint to a Hugging Face directory, then play episodes.

    python examples/evaluate.py outputs/guess-number-v0 guess-number-v0 [n=64] [env.difficulty=easy]

Step 1 uses verl's own model merger (FSDP shards -> HF safetensors); step 2 is turngym's eval CLI
(`python -m rollout.eval`), which prints mean reward, success rate, turns and format errors. The
same CLI evaluates any HF model directory (`model=/path`) or an SGLang server (`engine=sglang url=...`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def latest_actor_checkpoint(output_dir: Path) -> Path:
    """`<output_dir>/checkpoints/global_step_<N>/actor` for the newest N."""
    ckpt = output_dir / "checkpoints"
    step = (ckpt / "latest_checkpointed_iteration.txt").read_text().strip()
    return ckpt / f"global_step_{step}" / "actor"


def export_hf(actor_dir: Path, target: Path) -> Path:
    """Merge FSDP shards into a Hugging Face model directory with verl's model merger."""
    env = dict(os.environ, VERL_USE_EXTERNAL_MODULES="trainer.cpu", VERL_PLATFORM="cpu", PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    subprocess.run(cmd + ["--local_dir", str(actor_dir), "--target_dir", str(target)], check=True, env=env)
    return target


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    output_dir, env_id, extra = Path(argv[0]), argv[1], argv[2:]
    actor = latest_actor_checkpoint(output_dir)
    model = export_hf(actor, output_dir / "export" / actor.parent.name)
    print(f"exported {actor} -> {model}")
    eval_cmd = [sys.executable, "-m", "rollout.eval", f"env={env_id}", "engine=hf", f"model={model}", "n=32"]
    return subprocess.run(eval_cmd + extra, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
