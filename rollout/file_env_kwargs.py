"""Env kwargs that come from a file (a trajectories JSONL, a run folder's run.json) are data: only what a
client of a served env may choose passes, and the rest is named and ignored.

The files people share most are other people's: `rollout.view` played the baselines, and `rollout.eval
model=<run folder>` the model, with the env kwargs a file recorded, and a crafted file made them run code
on the host (`isolation: none` with the file's own problems, `tools: tools.yaml` importing a module from
the working folder) or reach a URL of its choosing. The split is the served env's
(`envs.registry.client_kwargs`): game-level choices (`difficulty`, an env's declared `client_kwargs`, a
stricter `max_turns` or `format_penalty`) pass; isolation, sandboxes, tools, paths, URLs and imports are
the person's who runs the command, set on its command line (`env.<name>=<value>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def file_env_kwargs(env_id: str, kwargs: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """The kwargs of `env_id` a file may set, and the names of those it may not (ignored), in order.

    Args:
        env_id: A registered env id.
        kwargs: What the file recorded (None: nothing).

    Returns:
        (kwargs kept, names ignored).

    Raises:
        envs.UnknownEnvError: the id is not registered.

    >>> file_env_kwargs("guess-number-v0", {"difficulty": "easy", "tools": "tools.yaml", "isolation": "none"})
    ({'difficulty': 'easy'}, ['tools', 'isolation'])
    """
    import envs
    from envs.registry.client_kwargs import ClientKwargError, check_client_kwargs

    spec = envs.spec(env_id)
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in (kwargs or {}).items():
        try:
            kept.update(check_client_kwargs(spec, {key: value}))
        except ClientKwargError:
            ignored.append(str(key)[:80])
    return kept, ignored


def ignored_line(command: str, source: str, env_id: str, ignored: list[str], hint: str = "") -> str:
    """The one line a command prints about the kwargs it ignored from a file.

    >>> ignored_line("rollout.view", "run.jsonl", "maze-v0", ["tools"])
    'rollout.view: ignored env kwargs for maze-v0 from run.jsonl that only the person running it may set: tools'
    """
    return (
        f"{command}: ignored env kwargs for {env_id} from {source} that only the person running it may set: "
        f"{', '.join(ignored)}" + (f" ({hint})" if hint else "")
    )
