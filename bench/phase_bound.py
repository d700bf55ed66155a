"""Each phase of a training step against the matmul bound of this machine, measured in the same run.

    python bench/phase_bound.py <run folder>

A step's forward pass costs about 2 x parameters FLOPs per token and its update (forward and backward)
about 6 x; generation decodes one token per row at a time, at the rate of a decode-like matmul. The
bound of a phase is those FLOPs at this CPU's measured matmul rate in the run's dtype (fp32, and bf16
where the CPU has bf16 units): no implementation on this CPU can beat it. The ratio says how far each
phase is from it (1.0 = at the bound). The LoRA update still pays the base's forward and its
activation gradients, so 6 x parameters stays the right count to the first order.

Figures depend on the CPU (printed) and on what else runs: the load average is printed beside them.
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (m, k, n): a training batch's projection, and one decode step of a batch of 32 rows.
TRAIN_SHAPE = (4096, 576, 1536)
DECODE_SHAPE = (32, 576, 1536)


def parameter_count(model_dir: str | Path) -> int:
    """Parameters of a safetensors model folder, from the files' headers (no weights are read)."""
    total = 0
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        with path.open("rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        for name, entry in header.items():
            if name != "__metadata__":
                count = 1
                for dim in entry["shape"]:
                    count *= dim
                total += count
    return total


def phase_bounds(run: Path) -> list[str]:
    """Lines: per phase the median measured seconds, the bound at this CPU's rates, and their ratio."""
    from omegaconf import OmegaConf

    from trainer.report.progress import MetricsLog
    from turngym.engines.compute_dtype import cpu_name, measure_matmul_rates

    config = OmegaConf.load(run / "config.yaml")
    dtype = str(config.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype)
    params = parameter_count(config.actor_rollout_ref.model.path)
    train = MetricsLog(run / "metrics.jsonl").records("train")
    if not train:
        return [f"{run}: no training step in metrics.jsonl"]
    episodes = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
    tokens = statistics.median(r["perf/total_num_tokens"] for r in train)
    generated = statistics.median(r.get("health/response_tokens", 0.0) for r in train) * episodes
    prompt = statistics.median(r.get("prompt_length/mean", 0.0) for r in train)
    # What generation must read in besides its own tokens: each group's prompt once (the engine's
    # grouped prefill shares it across the group's samples) and every episode's env answers.
    prefill = int(config.data.train_batch_size) * prompt + max(0.0, tokens - generated - episodes * prompt)
    fast = measure_matmul_rates(TRAIN_SHAPE, 0.5)
    decode = measure_matmul_rates(DECODE_SHAPE, 0.5)
    pick = (lambda r: r.bf16) if dtype == "bf16" else (lambda r: r.fp32)
    rate = pick(fast)
    # Generation runs in fp32 (the rollout engine's weights): prefill at a train-like shape's rate,
    # then one token per row per step at a decode shape's.
    gen_bound = 2 * params * (prefill / fast.fp32 + generated / decode.fp32) / 1e9
    phases = [
        (
            "update_actor",
            6 * params * tokens / (rate * 1e9),
            f"6 x {params / 1e6:.1f}M x {tokens:.0f} tokens at {rate:.0f} GFLOP/s",
        ),
        (
            "gen",
            gen_bound,
            f"2 x {params / 1e6:.1f}M x ({prefill:.0f} prefill tokens at {fast.fp32:.0f} GFLOP/s + "
            f"{generated:.0f} generated at {decode.fp32:.0f})",
        ),
    ]
    lines = [
        f"CPU {cpu_name()}, actor dtype {dtype}, load {os.getloadavg()[0]:.1f}; matmul {TRAIN_SHAPE}: {fast.line()}; "
        f"{DECODE_SHAPE}: {decode.line()}"
    ]
    for key, bound, what in phases:
        seconds = statistics.median(r.get(f"timing_s/{key}", 0.0) for r in train)
        lines.append(
            f"{key}: {seconds:.1f} s per step (median of {len(train)}), bound {bound:.1f} s ({what}): "
            f"{seconds / bound:.1f}x the bound"
        )
    vocab = int(
        json.loads((Path(config.actor_rollout_ref.model.path) / "config.json").read_text())["vocab_size"]
    )
    update = statistics.median(r.get("timing_s/update_actor", 0.0) for r in train)
    cost = entropy_seconds(int(tokens), vocab)
    lines.append(
        f"entropy for the guard (actor.calculate_entropy): ~{cost:.2f} s per step over {tokens:.0f} tokens x "
        f"{vocab} vocabulary, {cost / update:.1%} of the update"
    )
    return lines


def entropy_seconds(tokens: int, vocab: int, sample: int = 1024) -> float:
    """Seconds verl's own entropy (``entropy_from_logits``) takes over `tokens` positions of `vocab`.

    This is what ``actor.calculate_entropy=true`` (turngym's default, for the entropy guard) adds to
    an update: timed on `sample` positions of random logits and scaled to `tokens`.
    """
    import time

    import torch
    from verl.utils.torch_functional import entropy_from_logits

    logits = torch.randn(sample, vocab)
    entropy_from_logits(logits)  # untimed: allocation
    started = time.perf_counter()
    for _ in range(3):
        entropy_from_logits(logits)
    return (time.perf_counter() - started) / 3 * tokens / sample


def main(argv: list[str] | None = None) -> int:
    """Print the phases of each run folder given."""
    runs = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    if not runs:
        print(__doc__)
        return 2
    for run in runs:
        print("\n".join(phase_bounds(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
