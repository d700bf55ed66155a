"""Where an episode's exception came from: one line with the file and line, and the first traceback kept.

An env that raises loses its episode, not the batch (rollout.episode). The trajectory's ``error`` then
reads ``KeyError: 'x' (at /path/my_env.py:42 in step)``, so ``rollout.eval`` and the trainer can say
where without a traceback per episode. In training, ``trainer.run`` sets ``TURNGYM_FAILURE_FILE`` for
every worker: the first failing episode of the run (across all agent-loop processes, by an exclusive
create) writes its full traceback there and prints it to its log (train.log); the trainer shows it once
on the console (trainer/hooks/episode_failures.py).
"""

from __future__ import annotations

import contextlib
import os
import traceback

FAILURE_FILE_ENV = "TURNGYM_FAILURE_FILE"


def raised_at(exc: BaseException) -> str:
    """``/path/file.py:LINE in function`` of the frame that raised ``exc`` ("" without a traceback)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def describe_exception(exc: BaseException) -> str:
    """``Type: message (at file:line in function)``: one line for a trajectory's ``error``.

    Example:
        >>> try:
        ...     {}["secret"]
        ... except KeyError as exc:
        ...     text = describe_exception(exc)
        >>> text.startswith("KeyError: 'secret' (at ") and ":2 in <module>)" in text
        True
    """
    where = raised_at(exc)
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{text} (at {where})" if where else text


def record_first_failure(exc: BaseException, env_id: str | None, seed: int | None) -> bool:
    """Keep ``exc``'s traceback in ``$TURNGYM_FAILURE_FILE`` if no episode of the run failed before.

    Args:
        exc: the exception that ended the episode.
        env_id: the episode's env id, for the header line.
        seed: the episode's seed, for the header line.

    Returns:
        True when this was the run's first failure (the file was created and the traceback printed to
        this process's output); False otherwise, or outside training (no ``TURNGYM_FAILURE_FILE``).
    """
    path = os.environ.get(FAILURE_FILE_ENV)
    if not path:
        return False
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:  # FileExistsError: an earlier episode was first; any other: never worth an episode
        return False
    text = f"first failed episode: {env_id} seed {seed}\n" + "".join(traceback.format_exception(exc))
    with contextlib.suppress(OSError), os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    print(text, end="", flush=True)
    return True
