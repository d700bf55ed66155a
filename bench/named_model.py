"""What a named real model costs: the one-time GGUF conversion, the cache, and loading from it.

`python bench/named_model.py [model]` (default smollm2-135m-instruct) converts the model into a fresh
temporary cache (turngym/engines/named_models.py), then times, in the same run:
- a cache hit (hashing the GGUF, nothing converted);
- loading the cached directory as the engines do (float32 model + tokenizer), against the baseline of
  loading the GGUF itself with transformers (what every process would pay without the cache);
- the bfloat16 alternative to the float32 cache: its size and its load upcast to float32.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6


def _timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def main(model: str = "smollm2-135m-instruct") -> None:
    """Print conversion, cache-hit and load times, sizes, and the load ratios."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from turngym.engines.named_models import gguf_source, resolve_named_model

    _, gguf = gguf_source(model)
    with tempfile.TemporaryDirectory(prefix="turngym-bench-") as tmp:
        os.environ["TURNGYM_CACHE"] = tmp
        folder, convert_s = _timed(lambda: resolve_named_model(model))
        _, hit_s = _timed(lambda: resolve_named_model(model))

        def load_cache(path=folder):
            AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
            AutoTokenizer.from_pretrained(path)

        def load_gguf():
            AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
            AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)

        _, cache_s = _timed(load_cache)
        _, gguf_s = _timed(load_gguf)
        bf16 = Path(tmp) / "bf16"
        m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
        m.save_pretrained(bf16)
        AutoTokenizer.from_pretrained(folder).save_pretrained(bf16)
        del m
        _, bf16_s = _timed(lambda: load_cache(bf16))
        rows = [
            ("GGUF file (MB)", gguf.stat().st_size / 1e6),
            ("conversion, once (s)", convert_s),
            ("cache hit: sha256 only (s)", hit_s),
            ("cache folder, float32 (MB)", _size_mb(folder)),
            ("cache folder if bfloat16 (MB)", _size_mb(bf16)),
            ("load from cache, float32 (s)", cache_s),
            ("load from a bfloat16 cache, upcast (s)", bf16_s),
            ("baseline: load the GGUF itself (s)", gguf_s),
        ]
    width = max(len(k) for k, _ in rows)
    print(f"{model} (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for key, value in rows:
        print(f"{key.ljust(width)}  {value:8.2f}")
    print(f"{'GGUF load / cache load'.ljust(width)}  {gguf_s / cache_s:8.1f}x")
    print(f"{'bfloat16 load / float32 load'.ljust(width)}  {bf16_s / cache_s:8.1f}x")


if __name__ == "__main__":
    main(*sys.argv[1:2])
