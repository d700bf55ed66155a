"""turngym.engines.gqa_attention: the same logits as transformers' sdpa on left-padded prefill and cached decode."""

import torch
from transformers import AutoModelForCausalLM

from turngym.engines.gqa_attention import NAME, use_gqa_attention


def _padded_batch(vocab: int):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (4, 40), generator=g)
    attn = torch.ones(4, 40, dtype=torch.long)
    for row, pad in enumerate((0, 5, 17, 33)):
        attn[row, :pad] = 0
    return ids, attn, (attn.cumsum(-1) - 1).clamp(min=0)


def test_gqa_attention_matches_sdpa_with_padding_and_a_kv_cache(model_path):
    reference = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    assert (
        model.config.num_key_value_heads < model.config.num_attention_heads
    )  # the embedded model shares heads
    assert reference.config._attn_implementation == "sdpa"
    assert use_gqa_attention(model) and model.config._attn_implementation == NAME
    assert use_gqa_attention(model)  # twice is fine
    ids, attn, pos = _padded_batch(model.config.vocab_size)
    with torch.inference_mode():
        outs = []
        for m in (reference, model):
            first = m(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True)
            step = torch.tensor([[7], [8], [9], [10]])
            attn2 = torch.cat([attn, torch.ones(4, 1, dtype=torch.long)], dim=1)
            second = m(
                input_ids=step,
                attention_mask=attn2,
                position_ids=pos[:, -1:] + 1,
                past_key_values=first.past_key_values,
                use_cache=True,
            )
            outs.append((first.logits[attn.bool()], second.logits))
    assert torch.allclose(outs[0][0], outs[1][0], atol=1e-5)
    assert torch.allclose(outs[0][1], outs[1][1], atol=1e-5)


def test_models_without_shared_heads_or_on_other_attention_are_left_alone(model_path):
    eager = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="eager")
    assert not use_gqa_attention(eager) and eager.config._attn_implementation == "eager"


def test_a_model_with_as_many_kv_heads_as_heads_keeps_sdpa(model_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_path)
    config.num_key_value_heads = config.num_attention_heads
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    assert not use_gqa_attention(model) and model.config._attn_implementation == "sdpa"
