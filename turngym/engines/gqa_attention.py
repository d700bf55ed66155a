"""Grouped-query attention without copying the KV cache, for models that share key/value heads.

transformers' `sdpa` attention passes `enable_gqa` to torch only when there is no attention mask (the
CUDA kernels it has in mind fall back to the math kernel with one). Otherwise it first repeats every
key/value head for each query head it serves. HFEngine always has a mask (left padding), so each decode
step copied the whole KV cache of every layer: SmolLM2-135M (9 query heads on 3 key/value heads) at 64
rows x 1000 tokens spent about 1.2 s per layer call in that copy and the attention, against 0.12 s with
`enable_gqa` on this CPU. torch's CPU kernels take a mask and `enable_gqa` together, with the same result.

`use_gqa_attention(model)` registers this attention under transformers' own extension points
(`AttentionInterface`, `AttentionMaskInterface`, with the `sdpa` mask) and switches the model to it.
"""

from __future__ import annotations

from typing import Any

NAME = "turngym_gqa_sdpa"


def gqa_sdpa_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **_: Any,
) -> tuple[Any, None]:
    """Scaled dot-product attention with key/value heads shared by groups of query heads (no copy).

    Args:
        module: the attention module (its `is_causal` is the default for `is_causal`).
        query: `[batch, heads, q_len, head_dim]`.
        key: `[batch, kv_heads, kv_len, head_dim]`, `heads` a multiple of `kv_heads`.
        value: as `key`.
        attention_mask: boolean or additive mask broadcastable to `[batch, heads, q_len, kv_len]`, or None.
        dropout: attention dropout probability.
        scaling: softmax scale (None: 1/sqrt(head_dim)).
        is_causal: causal masking when there is no mask (None: the module's).

    Returns:
        `([batch, q_len, heads, head_dim], None)`, as transformers' attention functions return.
    """
    import torch

    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=bool(query.shape[2] > 1 and attention_mask is None and causal),
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


def use_gqa_attention(model: Any) -> bool:
    """Switch `model` from `sdpa` to this attention when it shares key/value heads; return whether it did.

    Args:
        model: a transformers model.

    Returns:
        True when the model now uses it; False for models without grouped key/value heads or on
        another attention implementation (eager, flash, ...), which are left as they are.
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    config = getattr(model, "config", None)
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    if getattr(config, "_attn_implementation", None) == NAME:
        return True
    if not heads or kv_heads == heads or getattr(config, "_attn_implementation", None) != "sdpa":
        return False
    AttentionInterface.register(NAME, gqa_sdpa_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
    return True
