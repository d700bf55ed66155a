"""A LoRA-trained checkpoint exports as the trained policy, not as the base model verl's merger leaves."""

import shutil

import torch

from turngym.engines.embedded_model import build_embedded_model
from turngym.engines.lora_merge import ADAPTER_DIR, MERGED_ADAPTER_DIR, merge_lora_adapter


def test_the_adapter_is_folded_into_the_weights(tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model_dir = tmp_path / "export"
    shutil.copytree(build_embedded_model(), model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = torch.tensor([[1, 5, 9, 13, 2]])
    with torch.no_grad():
        before = base(ids).logits
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():  # a trained adapter: B is zero at initialisation, which would change nothing
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
        trained = peft_model(ids).logits
    peft_model.save_pretrained(model_dir / ADAPTER_DIR)  # beside the untouched base, as verl's merger

    assert merge_lora_adapter(model_dir)
    merged = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    with torch.no_grad():
        after = merged(ids).logits
    assert not torch.allclose(before, trained, atol=1e-4)
    assert torch.allclose(after, trained, atol=1e-4)  # the trained policy, not the base
    assert (model_dir / MERGED_ADAPTER_DIR).is_dir() and not (model_dir / ADAPTER_DIR).exists()
    assert not merge_lora_adapter(model_dir)  # never applied twice
