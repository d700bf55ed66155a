"""Small, named corrections to verl 0.9.1 for CPU training, applied when each module loads.

Each patch says which verl line it works around. They only run in processes where the CPU
plugin is loaded (``VERL_PLATFORM=cpu``), so GPU runs see verl unchanged.
"""

from __future__ import annotations

import functools
from types import ModuleType

from trainer.cpu.post_import import when_imported

HF_ROLLOUT_NAME = "hf"


def gloo_only_process_group(distributed: ModuleType) -> None:
    """verl/utils/distributed.py ~89 builds backend ``"cpu:gloo,cpu:gloo"`` on CPU; torch rejects it."""
    original = distributed.initialize_global_process_group_ray

    @functools.wraps(original)
    def initialize_global_process_group_ray(timeout_second=None, backend=None):
        if backend is None or backend.count("gloo") > 1:
            backend = "gloo"
        return original(timeout_second=timeout_second, backend=backend)

    distributed.initialize_global_process_group_ray = initialize_global_process_group_ray


def fsdp_engines_for_cpu(transformer_impl: ModuleType) -> None:
    """verl/workers/engine/fsdp/transformer_impl.py ~1143/~1594 register FSDP engines for cuda/npu only."""
    from verl.workers.engine.base import EngineRegistry

    for backends in EngineRegistry._engines.values():
        for backend in ("fsdp", "fsdp2"):
            registry = backends.get(backend, {})
            if "cuda" in registry and "cpu" not in registry:
                registry["cpu"] = registry["cuda"]

    # transformer_impl.py ~462: the forward-only (reference) model gets
    # CPUOffloadPolicy(pin_memory=True); pinning needs an accelerator.
    real_policy = transformer_impl.CPUOffloadPolicy
    if real_policy is not None:
        transformer_impl.CPUOffloadPolicy = functools.partial(real_policy, pin_memory=False)


def sdpa_attention_for_value_model(model_utils: ModuleType) -> None:
    """verl/utils/model.py ~649/~674 load the critic with ``flash_attention_2``, absent on CPU."""
    import transformers

    for cls_name in ("AutoModelForTokenClassification", "AutoModelForCausalLM"):
        auto_cls = getattr(transformers, cls_name)
        if getattr(auto_cls, "_turngym_sdpa", False):
            continue
        real = auto_cls.from_pretrained

        def from_pretrained(*args, _real=real, **kwargs):
            if kwargs.get("attn_implementation") == "flash_attention_2":
                kwargs["attn_implementation"] = "sdpa"
            return _real(*args, **kwargs)

        auto_cls.from_pretrained = from_pretrained
        auto_cls._turngym_sdpa = True


def hf_rollout_adapter(rollout_base: ModuleType) -> None:
    """verl/workers/rollout/base.py ~89: the adapter registry knows only vllm, sglang, trtllm."""
    rollout_base._ROLLOUT_REGISTRY[(HF_ROLLOUT_NAME, "async")] = "turngym.engines.hf_rollout.HFServerAdapter"


def hf_rollout_replica(replica: ModuleType) -> None:
    """verl/workers/rollout/replica.py ~388: the replica registry knows only vllm, sglang, trtllm."""

    def load_hf_replica():
        from turngym.engines.hf_rollout import HFReplica

        return HFReplica

    replica.RolloutReplicaRegistry.register(HF_ROLLOUT_NAME, load_hf_replica)


def install_rollout() -> None:
    """Register the ``hf`` rollout when verl's rollout registries load (any device)."""
    when_imported("verl.workers.rollout.base", hf_rollout_adapter)
    when_imported("verl.workers.rollout.replica", hf_rollout_replica)


def install_cpu() -> None:
    """Arrange the CPU-only corrections to run when their verl modules are imported."""
    when_imported("verl.utils.distributed", gloo_only_process_group)
    when_imported("verl.workers.engine.fsdp.transformer_impl", fsdp_engines_for_cpu)
    when_imported("verl.utils.model", sdpa_attention_for_value_model)
