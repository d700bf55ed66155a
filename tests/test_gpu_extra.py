"""The `gpu` extra is a version set pip can install: its pins agree with each other and with verl 0.9.1.

The fast tests read pyproject.toml and verl's installed metadata; the slow one asks pip's resolver
(`pip install --dry-run --report`, nothing downloaded beyond metadata) in a scratch venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
# Resolved by pip on 2026-11-23 for verl[verl-core]==0.9.1 + sglang==0.5.14 (see the GPU notes).
RESOLVED = {"verl": "0.9.1", "sglang": "0.5.14", "torch": "2.11.0", "transformers": "5.8.1"}


def extras() -> dict[str, list[Requirement]]:
    """pyproject's optional dependencies, parsed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {name: [Requirement(r) for r in reqs] for name, reqs in project["optional-dependencies"].items()}


def gpu_requirements() -> list[str]:
    """The gpu extra as pip requirement lines, turngym's own extras and core dependencies expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for req in extras()["gpu"]:
        if req.name == "turngym":
            for extra in req.extras:
                lines += project["optional-dependencies"][extra]
        else:
            lines.append(str(req))
    return lines


def pins(reqs: list[Requirement]) -> dict[str, str]:
    return {r.name: str(r.specifier).removeprefix("==") for r in reqs if str(r.specifier).startswith("==")}


def test_gpu_extra_pins_the_resolved_set():
    assert pins(extras()["gpu"]) == RESOLVED
    # verl's own sglang extra pins sglang 0.5.12, whose transformers pin verl excludes.
    assert not any(r.name == "verl" and "sglang" in r.extras for r in extras()["gpu"])
    # The CPU set's torch pin must not reach the GPU set.
    assert not any(r.name == "turngym" and "train" in r.extras for r in extras()["gpu"])


def test_gpu_pins_fit_verls_own_ranges():
    verl_reqs = [Requirement(r) for r in metadata.requires("verl") or [] if "extra ==" not in r]
    ranges = {r.name: r.specifier for r in verl_reqs}
    gpu = pins(extras()["gpu"])
    assert "transformers" in ranges
    for name, version in gpu.items():
        if name in ranges:
            assert ranges[name].contains(version), (
                f"verl 0.9.1 needs {name}{ranges[name]}, gpu pins {version}"
            )


def test_gpu_extra_keeps_every_training_dependency_but_cpu_torch():
    train = {r.name for r in extras()["train"]}
    gpu = {r.name for r in extras()["gpu"]}
    assert train - gpu == set()  # same packages; only the versions of torch/transformers differ


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("TURNGYM_RESOLVE_GPU_EXTRA"),
    reason="pip's resolver over the GPU stack takes 5-20 min of index traffic; set TURNGYM_RESOLVE_GPU_EXTRA=1",
)
def test_pip_resolves_the_gpu_extra(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    requirements = tmp_path / "gpu.txt"
    requirements.write_text("\n".join(gpu_requirements()) + "\n")
    report = tmp_path / "report.json"
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
        + ["--report", str(report), "-r", str(requirements)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    resolved = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    for name, version in RESOLVED.items():
        assert resolved[name] == version


def train_gpu_overrides(model: str) -> list[str]:
    """The overrides examples/train_gpu.sh passes to trainer.run, with this model and the text games."""
    import shlex

    script = (ROOT / "examples" / "train_gpu.sh").read_text()
    command = script[script.index("-m trainer.run") :].split('"$@"')[0].replace("\\\n", " ")
    args = shlex.split(command.replace('"$GROUP"', "text-game").replace('"$MODEL"', model))[2:]
    return [f"model={model}" if a.startswith("model=") else a for a in args]


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_gpu_configuration_passes_verls_validation_without_a_gpu(algorithm):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    from trainer.compose import compose_config
    from turngym.engines.embedded_model import build_embedded_model

    overrides = train_gpu_overrides(str(build_embedded_model()))
    assert "trainer.device=cuda" in overrides
    cfg = compose_config(overrides + [f"algorithm={algorithm}"])
    assert cfg.trainer.device == "cuda" and cfg.actor_rollout_ref.rollout.name == "sglang"
    assert cfg.trainer.n_gpus_per_node == 8 and cfg.actor_rollout_ref.actor.strategy == "fsdp2"
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
