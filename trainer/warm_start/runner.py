"""Warm start: supervised fine-tuning on the envs' scripted experts before RL.

A tiny model starting from random weights gets zero reward, and GRPO cannot learn from groups
with identical rewards. Imitating expert episodes first teaches the action format and a
reasonable policy, so RL starts from a nonzero reward.

Two engines fine-tune (``turngym.warm_start.engine``; ``auto`` picks torch on a CPU, verl elsewhere):

- ``verl``: verl's own ``SFTTrainer`` (``verl/trainer/sft_trainer.py``) on the same FSDP engine the
  actor uses, with verl's ``MultiTurnSFTDataset`` (loss on assistant tokens only). It runs in a
  child process (:mod:`trainer.warm_start.worker`) so its process group and memory are gone before
  Ray starts. Any key of verl's ``sft_trainer_engine`` config can be overridden through
  ``turngym.warm_start.overrides``.
- ``torch``: :mod:`trainer.warm_start.sft_loop`, a single-process loop over the same dataset class, for small
  models on a CPU where verl's sharding machinery costs more than the model. It too runs in a child
  (:mod:`trainer.warm_start.sft_loop_process`), so the RL run does not carry the loop's memory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from trainer.warm_start.sft_loop import MIN_LR_RATIO, WEIGHT_DECAY, sft_steps
from turngym.serving.loopback_server import free_port

DONE_MARKER = "turngym_warm_start.json"
SFT_CONFIG_NAME = "sft_trainer_engine"
DATASET_CLASS = ("pkg://trainer.warm_start.expert_sft_dataset", "ExpertSFTDataset")
# verl's "file" tracking backend writes one JSON object per logged step here ({"step", "data"}); the
# warm start reads each step's train/loss from it instead of parsing verl's console output.
SFT_METRICS = "sft_metrics.jsonl"
POLL_SECONDS = 0.5


class WarmStartError(RuntimeError):
    """The SFT child process failed; the message carries the end of its output."""


def finished_warm_start(out_dir: str | Path) -> Path | None:
    """The model a finished warm start left in `out_dir`, or None."""
    marker = Path(out_dir) / DONE_MARKER
    if not marker.exists():
        return None
    return Path(json.loads(marker.read_text())["model"])


def sft_config(
    base_model: str | Path,
    demos: Path,
    work_dir: Path,
    device: str,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    max_length: int,
    overrides: list[str] | tuple[str, ...] = (),
    compute_dtype: str = "fp32",
) -> DictConfig:
    """verl's sft_trainer_engine config for this warm start (user overrides applied last).

    On a CPU, `compute_dtype` (fp32 or bf16, from turngym.engines.compute_dtype) is the mixed-precision
    compute dtype; reductions and buffers stay fp32.
    """
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    from trainer.checks.config_error import ConfigError

    cpu = device == "cpu"
    ours = [
        f"model.path={base_model}",
        f"data.train_files={demos}",
        "data.val_files=null",
        f"data.train_batch_size={batch_size}",
        f"data.micro_batch_size_per_gpu={batch_size}",
        f"data.max_length={max_length}",
        f"data.max_token_len_per_gpu={max_length * batch_size}",
        "data.truncation=right",
        "data.num_workers=0",
        f"data.custom_cls.path={DATASET_CLASS[0]}",
        f"data.custom_cls.name={DATASET_CLASS[1]}",
        f"optim.lr={lr}",
        f"optim.weight_decay={WEIGHT_DECAY}",
        "optim.lr_scheduler_type=cosine",
        f"optim.min_lr_ratio={MIN_LR_RATIO}",
        f"engine.seed={seed}",
        f"trainer.device={device}",
        f"trainer.total_epochs={epochs}",
        f"trainer.default_local_dir={work_dir / 'checkpoints'}",
        "trainer.project_name=turngym",
        "trainer.experiment_name=warm_start",
        "trainer.logger=[console,file]",
        "trainer.save_freq=-1",
        "trainer.resume_mode=auto",
        f"trainer.seed={seed}",
        "checkpoint.save_contents=[model,optimizer,extra,hf_model]",
    ]
    if cpu:
        ours += [
            "engine.strategy=fsdp2",
            "engine.dtype=float32",
            "engine.use_torch_compile=false",
            "model.use_remove_padding=false",
            "model.enable_gradient_checkpointing=false",
            "+model.override_config.attn_implementation=sdpa",
            # With no mixed_precision verl autocasts to bf16 (transformer_impl.py ~397), which CPUs
            # without bf16 units emulate ~50x slower than fp32: the dtype is the CPU's choice.
            f"+engine.mixed_precision={{param_dtype:{compute_dtype},reduce_dtype:fp32,buffer_dtype:fp32}}",
        ]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="verl.trainer.config", version_base=None):
            config = compose(config_name=SFT_CONFIG_NAME, overrides=ours + list(overrides))
    except HydraException as exc:
        raise ConfigError(
            f"bad turngym.warm_start.overrides (keys of verl's {SFT_CONFIG_NAME}): {exc}"
        ) from exc
    finally:
        GlobalHydra.instance().clear()
    loggers = config.trainer.logger
    loggers = [str(loggers)] if isinstance(loggers, str) else [str(x) for x in loggers]
    if "file" not in loggers:  # a user's trainer.logger override keeps the backend the losses come from
        config.trainer.logger = [*loggers, "file"]
    return config


def _worker_env(device: str, metrics_file: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "VERL_FILE_LOGGER_PATH": str(metrics_file),
            "RANK": "0",
            "LOCAL_RANK": "0",
            "WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "VERL_USE_EXTERNAL_MODULES": "trainer.cpu",
        }
    )
    if device == "cpu":
        env["VERL_PLATFORM"] = "cpu"
    return env


def _run_child(
    command: list[str], env: dict[str, str], log_file: Path, total_steps: int, what: str
) -> list[float]:
    """Run one SFT engine in a child process, echoing each step's loss as it logs it; returns the losses.

    Args:
        command: The child's command line; it appends ``{"step", "data": {"train/loss"}}`` lines to
            ``SFT_METRICS`` beside `log_file`.
        env: The child's environment.
        log_file: Where the child's output goes.
        total_steps: Optimizer steps, for the progress bar.
        what: The engine, named in an error.

    Returns:
        The loss of every step.

    Raises:
        WarmStartError: the child exited with an error (the message ends with its last lines).
    """
    metrics_file = log_file.parent / SFT_METRICS
    metrics_file.unlink(missing_ok=True)  # losses of an earlier attempt are not this one's
    losses: list[float] = []
    offset = 0
    bar = LossBar(total_steps)
    with log_file.open("w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            while True:
                code = process.poll()  # before the read: after an exit, one more read sees the last lines
                steps, offset = _logged_losses(metrics_file, offset)
                for step, loss in steps:
                    losses.append(loss)
                    bar(step, total_steps, loss)
                if code is not None:
                    break
                time.sleep(POLL_SECONDS)
        finally:
            if process.poll() is None:  # the run was interrupted: the child goes with it
                process.kill()
                process.wait()
    bar.close()
    if code != 0:
        tail = log_file.read_text(errors="replace").splitlines(keepends=True)[-40:]
        raise WarmStartError(
            f"{what} exited with {code} (full log: {log_file}); last lines:\n" + "".join(tail)
        )
    return losses


def _logged_losses(metrics_file: Path, offset: int) -> tuple[list[tuple[int, float]], int]:
    """(step, train/loss) of the whole lines verl's file logger added after byte `offset`, and the new offset."""
    if not metrics_file.exists():
        return [], offset
    with metrics_file.open("rb") as f:
        f.seek(offset)
        chunk = f.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is read next time
    steps = []
    for line in complete.splitlines():
        record = json.loads(line)
        loss = record.get("data", {}).get("train/loss")
        if isinstance(loss, (int, float)):  # validation lines carry val/loss only
            steps.append((int(record["step"]), float(loss)))
    return steps, offset + len(complete)


def _hf_model_dir(checkpoints: Path) -> Path:
    """The Hugging Face model verl saved with the latest SFT checkpoint."""
    steps = sorted(checkpoints.glob("global_step_*"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    for step in reversed(steps):
        for candidate in (step / "huggingface", *step.glob("*/huggingface")):
            if (candidate / "config.json").exists() and any(candidate.glob("*.safetensors")):
                return candidate
    raise WarmStartError(f"verl's SFT trainer left no Hugging Face model under {checkpoints}")


def _is_weight_file(path: Path) -> bool:
    return path.suffix in (".safetensors", ".bin") or path.name.endswith(
        (".safetensors.index.json", ".bin.index.json")
    )


def assemble_model(base_model: Path, trained: Path, dest: Path) -> Path:
    """`dest`: the trained weights with the base model's tokenizer, chat template and config files.

    verl re-saves tokenizer and config from what it loaded (tokenizer class, dtype and the eos
    list can change); only the weights changed in training, so everything else is the base's.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    # a hub id instead of a directory: keep what verl saved
    from_base = base_model.is_dir()
    if from_base:
        for path in base_model.iterdir():
            if path.is_file() and not _is_weight_file(path):
                shutil.copy2(path, dest / path.name)
    for path in trained.iterdir():
        if path.is_file() and (_is_weight_file(path) or not from_base):
            shutil.copy2(path, dest / path.name)
    return dest


def warm_start(
    base_model: str | Path,
    out_dir: str | Path,
    entries: list[dict],
    *,
    episodes: int,
    epochs: int,
    lr: float,
    batch_size: int,
    seed: int,
    device: str,
    max_length: int,
    engine: str,
    overrides: list[str] | tuple[str, ...] = (),
    expert_noise: float = 0.0,
    expert_share: float = 1.0,
    other_player: str = "random",
    compute_dtype: str = "fp32",
) -> dict[str, Any]:
    """Fine-tune `base_model` on expert episodes (`engine`: "verl" or "torch"); the report names the model.

    `compute_dtype` (fp32 or bf16) is the CPU's, the trainer's ``turngym.compute_dtype`` choice.
    """
    # No defaults here: turngym.warm_start in trainer/config/turngym.yaml is the one place they live.
    from trainer.warm_start.expert_demos import demonstrator_problem, write_demonstrations

    problem = demonstrator_problem(expert_noise, expert_share, other_player)
    if problem:  # before anything is written
        raise ValueError(problem)
    out_dir = Path(out_dir)
    marker = out_dir / DONE_MARKER
    if marker.exists():
        return json.loads(marker.read_text())
    start_time = time.time()
    out_dir.mkdir(parents=True, exist_ok=True)
    if episodes < batch_size:
        raise ValueError(f"warm start: episodes ({episodes}) must be at least batch_size ({batch_size})")
    demos = write_demonstrations(
        entries,
        out_dir / "demos.parquet",
        episodes,
        seed,
        noise=expert_noise,
        expert_share=expert_share,
        other_player=other_player,
    )
    if engine == "torch":
        args_file = out_dir / "sft_loop_args.json"
        args_file.write_text(
            json.dumps(
                {
                    "base_model": str(base_model),
                    "demos": str(out_dir / "demos.parquet"),
                    "dest": str(out_dir / "trained"),
                    "metrics": str(out_dir / SFT_METRICS),
                    "epochs": epochs,
                    "lr": lr,
                    "batch_size": batch_size,
                    "seed": seed,
                    "max_length": max_length,
                    "compute_dtype": compute_dtype,
                }
            )
        )
        losses = _run_child(
            [sys.executable, "-m", "trainer.warm_start.sft_loop_process", str(args_file)],
            dict(os.environ),
            out_dir / "sft.log",
            sft_steps(episodes, batch_size, epochs),
            "the warm start's SFT loop",
        )
        model_dir = assemble_model(Path(base_model), out_dir / "trained", out_dir / "model")
        return _finish(marker, base_model, model_dir, demos, losses, start_time, engine)
    config = sft_config(
        base_model,
        out_dir / "demos.parquet",
        out_dir,
        device,
        epochs,
        lr,
        batch_size,
        seed,
        max_length,
        overrides,
        compute_dtype=compute_dtype,
    )
    config_file = out_dir / "sft_config.yaml"
    OmegaConf.save(config, config_file)
    log_file = out_dir / "sft.log"
    # verl's sampler drops the last partial batch, as the torch loop does
    total_steps = config.trainer.total_training_steps or sft_steps(episodes, batch_size, epochs)
    command = [sys.executable, "-m", "trainer.warm_start.worker", str(config_file)]
    losses = _run_child(
        command,
        _worker_env(device, log_file.parent / SFT_METRICS),
        log_file,
        total_steps,
        "verl's SFT trainer",
    )

    model_dir = assemble_model(Path(base_model), _hf_model_dir(out_dir / "checkpoints"), out_dir / "model")
    return _finish(marker, base_model, model_dir, demos, losses, start_time, engine)


class LossBar:
    """The warm start's progress as a tqdm bar with the latest loss, shown as live lines
    (``[warm start] ~ training: 40%|####      | 77/192 [00:46<01:09, loss 0.912]``) that a terminal
    rewrites in place (trainer.report.progress.ConsoleFilter) and train.log keeps every few seconds (the run
    prints the first and last loss when the warm start is done).

    >>> shown = []
    >>> bar = LossBar(2, show=shown.append)
    >>> bar(1, 2, 1.5); bar(2, 2, 0.5); bar.close()
    >>> shown[-1].split("|")[0], shown[-1].split("|")[-1][-11:]
    ('[warm start] ~ training: 100%', 'loss 0.500]')
    """

    def __init__(self, total: int, show: Any = None, mininterval: float = 3.0) -> None:
        from tqdm import tqdm

        self.show = show or (lambda line: print(line, flush=True))
        self._lines = _Lines(self.show)
        self.bar = tqdm(
            total=total,
            desc="[warm start] ~ training",
            unit="step",
            file=self._lines,
            mininterval=mininterval,
            ascii=True,
            ncols=100,
            dynamic_ncols=False,
        )

    def __call__(self, step: int, total: int, loss: float) -> None:
        """Advance the bar to optimizer step `step` of `total`, showing its loss."""
        self.bar.total = total
        self.bar.set_postfix_str(f"loss {loss:.3f}", refresh=False)
        self.bar.update(step - self.bar.n)

    def close(self) -> None:
        """Show the bar's last state."""
        self.bar.close()


class _Lines:
    """A file for tqdm: each state of the bar (written after a carriage return) becomes one whole line."""

    def __init__(self, show: Any) -> None:
        self.show = show
        self._last = ""

    def write(self, text: str) -> int:
        for part in text.replace("\n", "\r").split("\r"):
            part = part.strip()
            # tqdm redraws the finished bar on close with another rate: a state is its bar and count.
            state = part.split(" [")[0]
            if part and state != self._last:
                self.show(part)
                self._last = state
        return len(text)

    def flush(self) -> None:
        """Nothing is buffered."""


def _finish(
    marker: Path,
    base_model: str | Path,
    model_dir: Path,
    demos: dict[str, Any],
    losses: list[float],
    start_time: float,
    engine: str,
) -> dict[str, Any]:
    """Write the done marker (what resumed runs read) and return the report."""
    report = {
        "base_model": str(base_model),
        "model": str(model_dir),
        "engine": engine,
        **demos,
        "optimizer_steps": len(losses),
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "seconds": round(time.time() - start_time, 1),
    }
    marker.write_text(json.dumps(report))
    return report
