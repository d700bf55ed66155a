#!/usr/bin/env bash
# Train a real model on GPUs: verl's FSDP2 actors + SGLang rollout (the `gpu` platform, chosen
# automatically when CUDA is visible). Needs the GPU stack in its own environment (not with the CPU
# `train` extra, whose torch 2.13.0 pin conflicts):
#
#   make install-gpu            # = python3 -m venv .venv-gpu && .venv-gpu/bin/pip install -e '.[gpu,dev]'
#
# The `gpu` extra pins verl[verl-core]==0.9.1 with sglang==0.5.14 (torch 2.11.0, transformers 5.8.1);
# verl's own verl[sglang]==0.9.1 does not resolve. Then (or `make train-gpu MODEL=<dir>`):
#
#   bash examples/train_gpu.sh /models/Qwen2.5-1.5B-Instruct tool-use
#
# Checked without a GPU (tests/test_gpu_extra.py, in CI): pip resolves the gpu extra (--dry-run), and
# this script's configuration composes with trainer.device=cuda and passes verl's validate_config for
# GRPO and PPO. Not exercised here: installing the CUDA wheels, SGLang serving, training on GPUs.
#
# Any verl key can be appended, e.g. trainer.logger=[console,wandb] algorithm=ppo.
set -euo pipefail
MODEL=${1:?usage: train_gpu.sh <hf model dir> [env group] [overrides...]}
GROUP=${2:-text-game}
shift $(( $# >= 2 ? 2 : 1 ))
PYTHON=${PYTHON:-python}
"$PYTHON" -m trainer.run env="$GROUP" model="$MODEL" \
  trainer.device=cuda trainer.n_gpus_per_node=8 trainer.nnodes=1 \
  turngym.warm_start.enable=false \
  data.train_batch_size=64 actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
  data.max_prompt_length=4096 data.max_response_length=8192 \
  trainer.total_training_steps=200 trainer.save_freq=20 trainer.test_freq=10 \
  "trainer.logger=[console,tensorboard]" "$@"
