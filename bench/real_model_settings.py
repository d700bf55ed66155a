"""What makes a real-model GRPO step cheaper, measured like for like: one-step probes of `make train-real`.

Each probe runs what `make train-real` runs (bench/learning.py's runner) for one training step with no
validation and no checkpoint, changing one setting against the preset; probes run one after another in
one invocation, so they share the machine's conditions as far as a shared machine allows (the load is
printed with each). Per probe: seconds of the step and of its phases as verl times them (generation, old
log-probs, actor update, weight sync), the step's training reward, and the peak RSS of the run's process
tree.

    python bench/real_model_settings.py                      # every probe
    python bench/real_model_settings.py --probes preset,bf16 # some
    python bench/real_model_settings.py --list               # what each probe changes

Probes (each against `preset`, trainer/config/model/smollm2-135m-instruct.yaml):
- preset: the preset as it is (LoRA rank 16, 4 seeds x 8 samples, at most 4 tokens per turn, the compute
  dtype this CPU runs fastest: turngym.compute_dtype=auto);
- lora: LoRA rank 8, alpha 16, all linear layers, merged into the weights the rollout receives;
- bf16: the actor computes in bfloat16 (FSDP mixed precision; fast only on a CPU with bf16 units, e.g.
  AVX-512 bf16 or AMX: see turngym/engines/compute_dtype.py);
- group2: groups of 2 samples over 16 seeds (the same 32 episodes per step);
- fp32: the actor in fp32 whatever the CPU (turngym.compute_dtype=fp32);
- tokens24: at most 24 tokens per turn instead of 4.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning import run  # noqa: E402  (bench/learning.py: the runner `make train-real` goes through)

ONE_STEP = [
    "trainer.total_training_steps=1",
    "trainer.val_before_train=false",
    "trainer.test_freq=-1",
    "trainer.save_freq=-1",
]
PROBES: dict[str, list[str]] = {
    "preset": [],
    "lora": [
        "actor_rollout_ref.model.lora_rank=8",
        "actor_rollout_ref.model.lora_alpha=16",
        "actor_rollout_ref.model.target_modules=all-linear",
        "actor_rollout_ref.model.lora.merge=true",
    ],
    "bf16": [
        "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bf16",
    ],
    # the path every CPU has, and the preset's actor under `auto` (bypass mode: the rollout is fp32)
    "fp32": ["turngym.compute_dtype=fp32"],
    "group2": ["actor_rollout_ref.rollout.n=2", "data.train_batch_size=16"],
    "tokens24": ["turngym.max_tokens_per_turn=24"],
}
PHASES = {
    "step": "timing_s/step",
    "generation": "timing_s/gen",
    "old log-probs": "timing_s/old_log_prob",
    "update": "timing_s/update_actor",
    "weight sync": "timing_s/update_weights",
}


def train_record(out: Path) -> dict:
    """The run's first training record from its metrics.jsonl ({} if there is none)."""
    path = out / "metrics.jsonl"
    if not path.exists():
        return {}
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("kind") == "train":
            return record
    return {}


def main(argv: list[str] | None = None) -> int:
    """Run the probes and print their table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--probes", default=",".join(PROBES), help=f"comma-separated, from {', '.join(PROBES)}")
    p.add_argument("--out", type=Path, default=Path("/tmp/turngym-bench-real-settings"))
    p.add_argument("--list", action="store_true", help="print what each probe overrides and exit")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.probes.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROBES]
    if unknown or not names:
        p.error(f"unknown probe(s) {unknown}; choose from {', '.join(PROBES)}")
    if args.list:
        for name in names:
            print(f"{name}: {' '.join(PROBES[name]) or '(the preset)'}")
        return 0
    rows = []
    for name in names:
        out = args.out / name
        if (out / "metrics.jsonl").exists():
            p.error(f"{out} already holds a run; pick another --out (or delete it)")
        code, wall, _cpu, peak, before, after = run(out, ONE_STEP + PROBES[name], "train-real")
        record = train_record(out)
        rows.append((name, code, wall, peak, before[0], record))
        shown = ", ".join(f"{k} {record.get(v, float('nan')):.1f} s" for k, v in PHASES.items())
        print(f"probe {name}: exit {code}, {shown}, wall {wall:.0f} s, load {before[0]:.1f}", flush=True)
    print(
        "\n| probe | step s | generation | old log-probs | update | weight sync | train reward | peak RSS | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, code, _wall, peak, load, record in rows:
        if not record:
            print(f"| {name} | failed (exit {code}) | | | | | | | {load:.1f} |")
            continue
        cells = " | ".join(f"{record.get(v, float('nan')):.1f}" for v in PHASES.values())
        reward = record.get("critic/score/mean", float("nan"))
        print(f"| {name} | {cells} | {reward:+.3f} | {peak / 2**30:.1f} GB | {load:.1f} |")
    print(f"\n{os.cpu_count()} cores; load average at the end {os.getloadavg()[0]:.1f}")
    return 0 if all(code == 0 for _, code, *_ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
