"""A checkpoint folder from elsewhere never runs code: its shards load as tensors only.

The attack: a folder with `model_world_size_1_rank_0.pt` whose pickle calls `exec` at load time, handed
to `rollout.eval model=<folder>` or `turngym.engines.serve --model-path <folder>`. verl's merger loads shards
with `torch.load(weights_only=False)`, so the pickle ran and wrote a marker file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from turngym.engines.checkpoint_export import CheckpointError, is_hf_model_dir, resolve_model
from turngym.serving.loopback_server import free_port

EVIL = r"""
import sys, torch

class Evil:
    def __reduce__(self):
        return (exec, (f"open({sys.argv[2]!r}, 'w').write('ran')",))

torch.save({"model.embed_tokens.weight": Evil()}, sys.argv[1])
"""

# A real FSDP2 shard: the embedded model's weights as DTensors on a one-rank mesh (what verl saves).
REAL = r"""
import sys, torch, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
from transformers import AutoModelForCausalLM

dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[3]}", rank=0, world_size=1)
mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("fsdp",))
model = AutoModelForCausalLM.from_pretrained(sys.argv[2])
state = {k: distribute_tensor(v.detach().clone(), mesh, [Shard(0)]) for k, v in model.state_dict().items()}
torch.save(state, sys.argv[1])
dist.destroy_process_group()
"""


def _actor(tmp_path, model_path, script: str, *extra: str):
    actor = tmp_path / "global_step_1" / "actor"
    shutil.copytree(
        model_path, actor / "huggingface", ignore=shutil.ignore_patterns("*.safetensors", "*.bin")
    )
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": 1}))
    shard = actor / "model_world_size_1_rank_0.pt"
    done = subprocess.run(
        [sys.executable, "-c", script, str(shard), *extra], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return actor


def test_a_crafted_shard_is_refused_in_one_line_and_runs_nothing(tmp_path, model_path):
    marker = tmp_path / "marker"
    actor = _actor(tmp_path, model_path, EVIL, str(marker))
    assert not marker.exists()
    with pytest.raises(CheckpointError) as refused:
        resolve_model(tmp_path / "global_step_1")
    message = str(refused.value)
    assert "\n" not in message and "trust_checkpoint=true" in message and "--trust-checkpoint" in message
    assert not marker.exists(), "the shard's pickle ran"
    assert not is_hf_model_dir(actor.parent / "actor_hf")


def test_a_trusted_folder_is_loaded_as_the_user_asked(tmp_path, model_path):
    marker = tmp_path / "marker"
    _actor(tmp_path, model_path, EVIL, str(marker))
    with pytest.raises(CheckpointError):  # the merge itself fails: the "weights" are no tensors
        resolve_model(tmp_path / "global_step_1", trust_checkpoint=True)
    assert marker.read_text() == "ran"  # the user's explicit choice: the full unpickler ran


def test_a_real_fsdp_shard_still_exports_with_tensors_only(tmp_path, model_path):
    actor = _actor(tmp_path, model_path, REAL, str(model_path), str(free_port()))
    exported = resolve_model(actor)
    assert is_hf_model_dir(exported) and exported == actor.parent / "actor_hf"


def test_both_clis_refuse_the_crafted_folder_in_one_line(tmp_path, model_path, capsys):
    from rollout import eval as rollout_eval
    from turngym.engines import serve

    marker = tmp_path / "marker"
    _actor(tmp_path, model_path, EVIL, str(marker))
    folder = str(tmp_path / "global_step_1")
    assert rollout_eval.cli([f"model={folder}", "env=guess-number-v0", "n=1"]) == 2
    assert serve.main(["--model-path", folder, "--port", str(free_port())]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    refusals = [line for line in errors if "holds more than tensors" in line]
    assert len(refusals) == 2 and all("--trust-checkpoint" in line for line in refusals)
    assert not marker.exists()
    assert rollout_eval.parse_args(["env=x", "trust_checkpoint=true"])[0]["trust_checkpoint"] is True
