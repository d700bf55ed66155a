"""``turngym.dump_every=N``: every N-th training step's episodes as a trajectories JSONL for rollout.view.

The step's batch is read from TransferQueue after verl computed its advantages and updated the actor
(``_compute_metrics``, before the batch is cleared): prompt and response ids, the loss mask, the
rollout's per-token log-probs, per-turn rewards (``extra_fields`` of the agent loop), the advantages
per token and the row's env, seed and kwargs. Each line is a ``Trajectory`` (``rollout/trajectory.py``)
plus ``tokenizer``, ``model``, ``env_kwargs``, ``max_turns`` and ``step``, so
``python -m rollout.view <output_dir>/dumps/step_<N>.jsonl`` shows the step as it was trained on.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from rollout.episode_budgets import run_turn_limit
from trainer.data.sample_objects import sample_objects
from trainer.run_folder.files import replacing_run_file

DUMP_SECONDS = "timing_s/turngym_dump"
# The TransferQueue fields a dump reads; a field the samples lack is simply left out by the queue.
FIELDS = (
    "prompts",
    "responses",
    "response_mask",
    "rollout_log_probs",
    "advantages",
    "extra_fields",
    "extra_info",
    "uid",
)


def dump_path(output_dir: str, step: int) -> str:
    """Where step `step`'s episodes go.

    >>> dump_path("outputs/guess-number", 7)
    'outputs/guess-number/dumps/step_7.jsonl'
    """
    return os.path.join(output_dir, "dumps", f"step_{step}.jsonl")


def _row_info(extra_info: Any) -> dict[str, Any]:
    if isinstance(extra_info, str):
        try:
            extra_info = json.loads(extra_info)
        except ValueError:
            return {}
    return dict(extra_info) if isinstance(extra_info, dict) else {}


def _kwargs(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return None
    return dict(value) if isinstance(value, dict) else None


def episode_record(
    sample: dict[str, Any], step: int, tokenizer: str | None, max_turns: int | None
) -> dict[str, Any]:
    """One sample of a step's batch as a trajectories JSONL line (``Trajectory.to_dict`` plus run fields).

    Args:
        sample: The sample's fields: ``prompts``, ``responses``, ``response_mask`` (lists of ints),
            ``rollout_log_probs``, ``advantages`` (lists of floats, optional), ``extra_fields`` (the
            agent loop's), ``extra_info`` (the dataset row's) and ``uid``.
        step: The training step.
        tokenizer: The tokenizer directory rollout.view decodes with.
        max_turns: The run's assistant-turn cap (the baselines play under it).

    Returns:
        A JSON-ready dict.

    >>> from rollout.episode_result import EpisodeResult, TurnSpan
    >>> extra = EpisodeResult(env_id="g", turns=(TurnSpan(0, 2, 1.0),)).to_extra_fields()
    >>> line = episode_record({"prompts": [1], "responses": [5, 6, 7], "response_mask": [1, 1, 0],
    ...     "extra_fields": extra, "extra_info": {"seed": 3, "env_kwargs": "{}"}, "uid": "u"}, 2, None, 4)
    >>> [(t["start"], t["end"], t["reward"]) for t in line["turns"]], line["seed"], line["env_kwargs"]
    ([(0, 2, 1.0)], 3, {})
    """
    from rollout.episode_result import EpisodeResult
    from rollout.trajectory import Trajectory, TurnRecord

    row = _row_info(sample.get("extra_info"))
    response = [int(x) for x in sample.get("responses") or []]
    mask = [int(x) for x in sample.get("response_mask") or []]
    result = EpisodeResult.from_extra_fields(sample.get("extra_fields"), response_mask=mask)
    failed = result.failed
    logprobs = [float(x) for x in sample.get("rollout_log_probs") or []]
    seed = row.get("seed")
    t = Trajectory(
        prompt_ids=[int(x) for x in sample.get("prompts") or []],
        response_ids=response,
        loss_mask=mask,
        logprobs=logprobs if len(logprobs) == len(response) else [],
        turns=[]
        if failed
        else [
            TurnRecord(start=turn.start, end=turn.end, reward=turn.reward)
            for turn in result.turns
            if 0 <= turn.reward_position < len(mask)
        ],
        env_id=result.env_id or (str(row.get("env_id") or "") or None),
        seed=int(seed) if isinstance(seed, int | float) and not isinstance(seed, bool) else None,
        group=str(sample["uid"]) if sample.get("uid") is not None else None,
        termination=result.termination or "terminated",
        success=result.success if not failed else None,
        failed=failed,
        error=result.error,
    )
    if result.behaviour is not None:
        t.metrics["behaviour"] = dict(result.behaviour)
    advantages = [float(x) for x in sample.get("advantages") or []]
    if advantages and len(advantages) == len(response):
        t.extra_fields["advantages"] = advantages
    return {
        **t.to_dict(),
        "step": step,
        "tokenizer": tokenizer,
        "model": tokenizer,
        "env_kwargs": _kwargs(row.get("env_kwargs")),
        "max_turns": max_turns,
    }


def _values(data: Any, name: str, n: int) -> list:
    """A field of the queue's result as one Python value per sample (None for each when absent)."""
    try:
        value = data.pop(name)
    except KeyError:
        return [None] * n
    if hasattr(value, "unbind"):
        return [row.tolist() for row in value.unbind(0)]
    return sample_objects(value)


class StepDumpTrainerMixin:
    """Writes every ``turngym.dump_every``-th step's episodes for rollout.view (mix in before verl's trainer)."""

    def _compute_metrics(
        self, batch: Any, metrics: Any, timing_raw: Any, global_steps: Any, epoch: Any
    ) -> None:
        super()._compute_metrics(batch, metrics, timing_raw, global_steps=global_steps, epoch=epoch)
        every = int(self.config.turngym.get("dump_every") or 0)
        if every > 0 and int(global_steps) % every == 0:
            started = time.perf_counter()
            try:
                path = self._dump_step(batch, int(global_steps))
            except Exception as exc:  # noqa: BLE001 - a dump is a report: training goes on, the line says why
                print(
                    f"[turngym] dump of step {global_steps} failed ({type(exc).__name__}: {exc}); training goes on",
                    flush=True,
                )
                return
            metrics[DUMP_SECONDS] = time.perf_counter() - started
            print(
                f"[turngym] step {global_steps}'s episodes: {path} (python -m rollout.view {path})",
                flush=True,
            )

    def _dump_step(self, batch: Any, step: int) -> str:
        """Read the step's fields from TransferQueue and write them as one JSONL; returns its path."""
        import transfer_queue as tq

        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=list(FIELDS))
        n = len(batch.keys)
        columns = {name: _values(data, name, n) for name in FIELDS}
        model = self.config.actor_rollout_ref.model
        tokenizer = str(model.get("tokenizer_path") or model.path)
        max_turns = run_turn_limit(self.config)
        # Samples in group order ({uid}_{session}_{output}), as verl's own rollout dump sorts them.
        order = sorted(range(n), key=lambda i: _sort_key(str(batch.keys[i])))
        path = dump_path(str(self.config.turngym.output_dir), step)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with replacing_run_file(path) as f:  # a reader never sees half a step; no link is written through
            for i in order:
                if batch.tags[i].get("is_padding", False):
                    continue
                sample = {name: columns[name][i] for name in FIELDS}
                f.write(
                    json.dumps(episode_record(sample, step, tokenizer, max_turns), ensure_ascii=False) + "\n"
                )
        return path


def _sort_key(key: str) -> tuple[str, int, int]:
    parts = key.rsplit("_", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return key, 0, 0
