"""Warm start: supervised fine-tuning on the envs' scripted experts before RL.

A tiny model starting from random weights gets zero reward, and GRPO cannot learn from groups
with identical rewards. Imitating a few hundred expert episodes first teaches the action format
and a reasonable policy, so RL starts from a nonzero reward. Only assistant tokens are trained
(loss mask from chat-template prefixes), rendered the way the rollout renders conversations.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any

DONE_MARKER = "turngym_warm_start.json"


def expert_episode(
    env_id: str, env_kwargs: dict, seed: int, max_turns: int = 32
) -> tuple[list[dict], list[dict], float]:
    """Play one episode with the env's scripted expert: (messages, tool schemas, total reward)."""
    import envs

    env = envs.make(env_id, **env_kwargs)
    try:
        messages, _ = env.reset(seed=seed)
        convo = [dict(m) for m in messages]
        tools = list(getattr(env, "tool_schemas", None) or [])
        total = 0.0
        for _ in range(max_turns):
            action = env.unwrapped.expert_action()
            convo.append({"role": "assistant", "content": action})
            observation, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
            convo.extend(dict(m) for m in observation)
        return convo, tools, total
    finally:
        env.close()


def tokenize_with_mask(
    tokenizer, messages: list[dict], tools: list[dict] | None
) -> tuple[list[int], list[int]]:
    """Token ids of the whole conversation and a 0/1 mask that is 1 on assistant-generated tokens."""

    def render(msgs: list[dict], generation_prompt: bool) -> list[int]:
        ids = tokenizer.apply_chat_template(
            msgs, tools=tools or None, add_generation_prompt=generation_prompt, tokenize=True
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return list(ids)

    full = render(messages, False)
    mask = [0] * len(full)
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        start = len(render(messages[:i], True))
        end = len(render(messages[: i + 1], False))
        for j in range(start, min(end, len(full))):
            mask[j] = 1
    return full, mask


def warm_start(
    base_model: str | Path,
    out_dir: str | Path,
    entries: list[dict],
    episodes: int = 256,
    epochs: int = 3,
    lr: float = 3e-3,
    batch_size: int = 16,
    seed: int = 10_000,
    with_tools: bool = True,
    max_length: int = 2048,
) -> dict[str, Any]:
    """Fine-tune `base_model` on expert episodes (seeds disjoint from RL's) and save it to `out_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.datasets import assign_envs

    out_dir = Path(out_dir)
    marker = out_dir / DONE_MARKER
    if marker.exists():
        return json.loads(marker.read_text())
    start_time = time.time()
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.float32)
    model.train()

    examples, returns = [], []
    for index, entry in enumerate(assign_envs(entries, episodes, seed=seed)):
        convo, tools, total = expert_episode(entry["id"], dict(entry.get("kwargs") or {}), seed + index)
        ids, mask = tokenize_with_mask(tokenizer, convo, tools if with_tools else None)
        examples.append((ids[:max_length], mask[:max_length]))
        returns.append(total)

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    steps_total = epochs * math.ceil(len(examples) / batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.1, 1 - s / max(1, steps_total)))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    rng = random.Random(seed)
    losses: list[float] = []
    for _ in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for b in range(0, len(order), batch_size):
            chunk = [examples[i] for i in order[b : b + batch_size]]
            width = max(len(ids) for ids, _ in chunk)
            input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            labels = torch.full((len(chunk), width), -100, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (ids, mask) in enumerate(chunk):
                input_ids[row, : len(ids)] = torch.tensor(ids)
                attention[row, : len(ids)] = 1
                labels[row, : len(ids)] = torch.tensor(
                    [t if m else -100 for t, m in zip(ids, mask, strict=True)]
                )
            loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))

    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    report = {
        "base_model": str(base_model),
        "episodes": len(examples),
        "expert_mean_return": sum(returns) / max(1, len(returns)),
        "loss_first": losses[0] if losses else None,
        "loss_last": sum(losses[-5:]) / max(1, len(losses[-5:])) if losses else None,
        "optimizer_steps": len(losses),
        "seconds": round(time.time() - start_time, 1),
    }
    marker.write_text(json.dumps(report))
    return report
