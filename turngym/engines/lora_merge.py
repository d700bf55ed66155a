"""Fold a LoRA adapter that verl's model merger wrote beside a checkpoint's base weights into them.

verl's merger saves a LoRA-trained actor as the untouched base model plus ``lora_adapter/`` (peft's
format). Loaded as a Hugging Face directory that is the model *before* training, so an evaluation of
the checkpoint would silently measure the zero-shot model. Merging the adapter into the weights makes
the exported directory the trained policy, loadable by any engine.
"""

from __future__ import annotations

from pathlib import Path

ADAPTER_DIR = "lora_adapter"
MERGED_ADAPTER_DIR = "lora_adapter.merged"


def merge_lora_adapter(model_dir: Path) -> bool:
    """Merge ``<model_dir>/lora_adapter`` into the weights of ``model_dir`` (in place); False if none.

    The adapter folder is kept, renamed to ``lora_adapter.merged``, so it cannot be applied twice.

    Args:
        model_dir: A Hugging Face model directory as verl's model merger wrote it.

    Returns:
        Whether an adapter was found and merged.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     merge_lora_adapter(Path(folder))
    False
    """
    adapter = model_dir / ADAPTER_DIR
    if not (adapter / "adapter_config.json").is_file():
        return False
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, adapter).merge_and_unload()
    merged.save_pretrained(model_dir)
    done = model_dir / MERGED_ADAPTER_DIR
    if done.exists():
        import shutil

        shutil.rmtree(done)
    adapter.rename(done)
    return True
