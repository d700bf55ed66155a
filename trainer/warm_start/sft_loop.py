"""A single-process PyTorch SFT loop for the warm start of small models on a CPU.

verl's SFT trainer (the warm start's other engine) is built for sharded models: on a 2-core CPU its
per-step overhead (FSDP over gloo, a per-row log-softmax loop, re-tokenizing every conversation each
epoch) made a 48-step warm start of the embedded model take about 5x as long as this loop on the
same machine. The data side is still verl's: conversations are tokenized, and the assistant tokens
masked, by the same ``MultiTurnSFTDataset`` (``trainer.warm_start.expert_sft_dataset``) verl's trainer reads,
once, before the first step. Optimizer and schedule follow the warm start's verl settings (AdamW
without weight decay, cosine decay to 10 % of the peak, gradient norm clipped at 1).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path

# The schedule both warm-start engines use (warm_start.sft_config hands these to verl's SFT trainer).
WEIGHT_DECAY = 0.0
MIN_LR_RATIO = 0.1  # cosine decay ends at this fraction of the peak lr


def sft_steps(episodes: int, batch_size: int, epochs: int) -> int:
    """Optimizer steps of a warm start: full batches per epoch (the last partial one is dropped)."""
    return epochs * (episodes // batch_size)


def run_sft_loop(
    base_model: str | Path,
    demos: Path,
    dest: Path,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    max_length: int,
    on_step: Callable[[int, int, float], None] | None = None,
    compute_dtype: str = "fp32",
) -> list[float]:
    """Fine-tune `base_model` on `demos` (verl's multi-turn SFT parquet); save to `dest`; return losses.

    The weights and the optimizer stay fp32; `compute_dtype` bf16 autocasts the forward pass (for CPUs
    with bf16 units, turngym.engines.compute_dtype).
    """
    import torch
    from omegaconf import OmegaConf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.warm_start.expert_sft_dataset import ExpertSFTDataset

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    model.train()
    dataset = ExpertSFTDataset(
        str(demos),
        tokenizer,
        OmegaConf.create({"max_length": max_length, "truncation": "right", "pad_mode": "no_padding"}),
    )
    rows = [dataset[i] for i in range(len(dataset))]
    total = sft_steps(len(rows), batch_size, epochs)
    if total < 1:
        raise ValueError(f"warm start: {len(rows)} demonstrations make no batch of {batch_size}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    min_ratio = MIN_LR_RATIO
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(step, total) / total)),
    )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    order = random.Random(seed)
    losses: list[float] = []
    for _ in range(epochs):
        indices = list(range(len(rows)))
        order.shuffle(indices)
        for start in range(0, len(indices) - batch_size + 1, batch_size):
            batch = [rows[i] for i in indices[start : start + batch_size]]
            width = max(len(row["input_ids"]) for row in batch)
            input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
            attention = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width))
            for j, row in enumerate(batch):
                n = len(row["input_ids"])
                input_ids[j, :n] = row["input_ids"]
                attention[j, :n] = 1
                mask[j, :n] = row["loss_mask"][:n].float()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=compute_dtype == "bf16"):
                logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].float()
            # loss_mask[t] marks token t as a target, predicted from position t - 1
            targets, weights = input_ids[:, 1:], mask[:, 1:]
            token_loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none"
            ).view_as(weights)
            loss = (token_loss * weights).sum() / weights.sum().clamp(min=1.0)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(float(loss.detach()))
            if on_step is not None:
                on_step(len(losses), total, losses[-1])
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    return losses
