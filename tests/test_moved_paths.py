"""Moved modules (issues 35 and 44): every old path is gone, and nothing in the repo imports one.

docs/design.md's "Moved" tables say where each went. No import hook answers the old names and no
shim file is left at an old path: an old path fails like any missing module, on the line that names it,
and `sys.meta_path` holds no finder of ours (it used to hold 4, asked about every import torch or
verl made).
"""

import ast
import importlib
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_layers import PACKAGES, _imports  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Issue 35: envs/ by concept, the shared layer out of tools, rollout and interactions.
MOVED_IN_35 = {
    "envs.assistant_turn": "envs.core.assistant_turn",
    "envs.baseline_players": "envs.baselines.baseline_players",
    "envs.behaviour": "envs.baselines.behaviour",
    "envs.builtin_envs": "envs.registry.builtin_envs",
    "envs.client_kwargs": "envs.registry.client_kwargs",
    "envs.env_check": "envs.registry.env_check",
    "envs.env_tools": "envs.tool_layer.env_tools",
    "envs.episode_end": "envs.core.episode_end",
    "envs.errors": "envs.core.errors",
    "envs.expert_evaluation": "envs.baselines.expert_evaluation",
    "envs.extra_tools": "envs.tool_layer.extra_tools",
    "envs.lazy_seeding": "envs.core.lazy_seeding",
    "envs.messages": "turngym.chat.message",
    "envs.protocol": "envs.core.protocol",
    "envs.registration": "envs.registry.registration",
    "envs.remote.server": "envs.server.app",
    "envs.reset_options": "envs.core.reset_options",
    "envs.seeding": "envs.core.seeding",
    "envs.spaces": "envs.core.spaces",
    "envs.splitmix": "envs.core.splitmix",
    "envs.step_result": "envs.core.step_result",
    "envs.success_interval": "envs.baselines.success_interval",
    "envs.text_env": "envs.core.text_env",
    "envs.tool_turn": "envs.tool_layer.tool_turn",
    "envs.transcript": "envs.core.transcript",
    "envs.turn_limits": "envs.tool_layer.turn_limits",
    "interactions.engine": "turngym.chat.engine",
    "rollout.chat_format": "turngym.chat.format",
    "rollout.checkpoint_export": "turngym.engines.checkpoint_export",
    "rollout.engine": "turngym.engines.engine",
    "rollout.hf_engine": "turngym.engines.hf_engine",
    "rollout.openai_engine": "turngym.engines.openai_engine",
    "rollout.sglang_engine": "turngym.engines.sglang_engine",
    "tools.calls": "turngym.chat.calls",
    "tools.chat_encoding": "turngym.chat.encoder",
    "tools.cli_errors": "turngym.common.cli_errors",
    "tools.registration": "turngym.common.registration",
    "tools.run_sync": "turngym.common.run_sync",
    "tools.serving": "turngym.serving",
    "rollout.named_models": "turngym.engines.named_models",
    "rollout.embedded_model": "turngym.engines.embedded_model",
    "rollout.serve": "turngym.engines.serve",
}
# Issue 44: trainer/ by concept, and the `hf` rollout adapter to the engines.
MOVED_IN_44 = {
    "trainer.config_error": "trainer.checks.config_error",
    "trainer.config_suggest": "trainer.checks.config_suggest",
    "trainer.early_env_check": "trainer.checks.early_env_check",
    "trainer.env_server_check": "trainer.checks.env_server_check",
    "trainer.number_checks": "trainer.checks.number_checks",
    "trainer.prompt_budget": "trainer.checks.prompt_budget",
    "trainer.registry_checks": "trainer.checks.registry_checks",
    "trainer.resume_settings": "trainer.checks.resume_settings",
    "trainer.run_checks": "trainer.checks.run_checks",
    "trainer.user_modules": "trainer.checks.user_modules",
    "trainer.verl_version": "trainer.checks.verl_version",
    "trainer.warm_start": "trainer.warm_start.runner",
    "trainer.warm_start_worker": "trainer.warm_start.worker",
    "trainer.expert_demos": "trainer.warm_start.expert_demos",
    "trainer.expert_sft_dataset": "trainer.warm_start.expert_sft_dataset",
    "trainer.sft_loop": "trainer.warm_start.sft_loop",
    "trainer.turn_credit": "trainer.estimators.turns",  # and turn_grpo, turn_gigpo, hooks.advantage_inputs
    "trainer.positive_grpo": "trainer.estimators.positive_grpo",
    "trainer.valid_groups": "trainer.estimators.valid_groups",
    "trainer.health": "trainer.hooks.health.metrics",
    "trainer.health_guard": "trainer.hooks.health.guards",
    "trainer.health_halt": "trainer.hooks.health.halt",
    "trainer.health_hook": "trainer.hooks.health.hook",
    "trainer.curriculum": "trainer.hooks.curriculum.schedule",
    "trainer.curriculum_rows": "trainer.hooks.curriculum.rows",
    "trainer.curriculum_hook": "trainer.hooks.curriculum.hook",
    "trainer.pass_rate_curriculum": "trainer.hooks.curriculum.pass_rate",
    "trainer.adaptive_mixture": "trainer.hooks.mixture.adaptive",
    "trainer.mixture_hook": "trainer.hooks.mixture.hook",
    "trainer.step_dump": "trainer.hooks.step_dump",
    "trainer.episode_failures": "trainer.hooks.episode_failures",
    "trainer.phase_progress": "trainer.hooks.phase_progress",
    "trainer.progress": "trainer.report.progress",
    "trainer.interrupt_line": "trainer.report.interrupt_line",
    "trainer.plot": "trainer.report.plot",
    "trainer.learning_table": "trainer.report.learning_table",
    "trainer.behaviour_table": "trainer.report.behaviour_table",
    "trainer.behaviour_metrics": "trainer.report.behaviour_metrics",
    "trainer.validation_reward": "trainer.report.validation_reward",
    "trainer.datasets": "trainer.data.datasets",
    "trainer.run_data": "trainer.data.run_data",
    "trainer.user_rows": "trainer.data.user_rows",
    "trainer.batch_rows": "trainer.data.batch_rows",
    "trainer.batch_field": "trainer.data.batch_field",
    "trainer.sample_objects": "trainer.data.sample_objects",
    "trainer.step_outcomes": "trainer.data.step_outcomes",
    "trainer.run_files": "trainer.run_folder.files",
    "trainer.run_lock": "trainer.run_folder.lock",
    "trainer.checkpoint_pruning": "trainer.run_folder.checkpoint_pruning",
    "trainer.ray_cluster": "trainer.cluster.ray_cluster",
    "trainer.placement": "trainer.cluster.placement",
    "trainer.ray_temp_dir": "trainer.cluster.ray_temp_dir",
    "trainer.cpu.hf_rollout": "turngym.engines.hf_rollout",
}
MOVED = {**MOVED_IN_35, **MOVED_IN_44}
# An old path that names something else now: the warm start's module became its package.
REUSED = {"trainer.warm_start"}


def _here(name: str) -> Path | None:
    """The file of module `name` if it is in this checkout (None: no such module here)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return None
    origin = Path(spec.origin).resolve()
    return origin if ROOT in origin.parents else None


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_gone_and_its_new_path_is_there(old: str, new: str):
    # Only this checkout counts: an editable install of another checkout may still answer an old name.
    if old not in REUSED:
        assert _here(old) is None, f"{old} still imports"
    assert _here(new) is not None, f"{new} is missing"


def test_no_import_hook_of_ours_is_installed():
    code = (
        "import sys, envs, tools, interactions, rollout, trainer, turngym.chat, turngym.engines\n"
        "print(' '.join(type(f).__module__ for f in sys.meta_path))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    ours = [m for m in done.stdout.split() if m.split(".")[0] in {p.split(".")[0] for p in PACKAGES}]
    assert not ours, ours


def test_the_old_attribute_of_envs_remote_is_gone():
    import envs.remote
    import envs.server

    assert not hasattr(envs.remote, "add_serve_arguments") and envs.server.add_serve_arguments


def _old_path(target: str) -> str | None:
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        if name in MOVED and name not in REUSED:
            return name
    return None


def test_nothing_in_the_repo_imports_an_old_path():
    folders = [*(p.split(".")[0] for p in PACKAGES), "tests", "examples", "bench"]
    users = []
    for path in sorted({f for folder in set(folders) for f in (ROOT / folder).rglob("*.py")}):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, _ in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                old = _old_path(target)
                if old is not None:
                    users.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} imports {target} (use {MOVED[old]})"
                    )
                    break
    assert not users, "\n".join(users)


def test_the_names_tools_exported_still_resolve_without_a_warning():
    import tools
    import turngym.chat.calls
    import turngym.common.registration

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert tools.Registry is turngym.common.registration.Registry
        assert tools.load_entry_point is turngym.common.registration.load_entry_point
        assert tools.parse_tool_calls is turngym.chat.calls.parse_tool_calls
