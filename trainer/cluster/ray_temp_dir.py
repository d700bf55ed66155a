"""Ray's temp folder, checked before anything is written: its Unix socket paths must fit in 107 bytes.

A Ray instance the run starts puts its sockets at ``<temp>/ray/session_<date>_<pid>/sockets/<name>``, with
``<temp>`` Ray's choice (``ray_kwargs.ray_init._temp_dir``, else ``$RAY_TMPDIR/ray``, else
``$TMPDIR/ray`` on Linux, else ``/tmp/ray``), and Linux caps a socket path (AF_UNIX ``sun_path``) at 107
bytes. A long ``TMPDIR`` (a test runner's, a cluster job's scratch folder) made Ray fail after the run
folder was written, with a traceback from deep inside ``ray.init``. Here, before the run folder is
touched: a temp folder chosen only through ``TMPDIR`` is replaced for Ray by a short one (``/tmp``),
with one line saying so; one chosen for Ray on purpose (``RAY_TMPDIR``, ``_temp_dir``) that is too long
is one line saying what to set.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from trainer.checks.config_error import ConfigError

#: Linux's limit on a socket path (sun_path is 108 bytes with its terminating NUL).
SOCKET_PATH_LIMIT = 107
TEMP_DIR_KEY = "ray_kwargs.ray_init._temp_dir"
#: What Ray appends below its temp folder: ``/session_<date>_<microseconds>_<pid>/sockets/<name>``, with
#: a 7-digit pid (Linux's pid_max goes to 4194304) and the longest socket name Ray 2.x makes there
#: (``dash_TaskEventsHead``, 19; ``plasma_store``, ``raylet``), with room for one character more.
SESSION_TAIL = len("/session_2026-01-31_23-59-59_999999_4194304") + len("/sockets/") + 20
#: Where Ray goes instead when TMPDIR alone made its paths too long.
SHORT_TEMP = "/tmp"


def ray_socket_path_length(temp_dir: str) -> int:
    """The longest socket path, in bytes, a Ray instance with this temp folder may make.

    >>> ray_socket_path_length("/tmp/ray")
    80
    """
    return len(os.fsencode(temp_dir)) + SESSION_TAIL


def check_ray_temp_dir(cfg: DictConfig, joins_cluster: bool) -> str | None:
    """Make sure the Ray instance this run starts can create its sockets; before anything is written.

    Args:
        cfg: the training config (``ray_kwargs.ray_init._temp_dir``, if set, is Ray's temp folder).
        joins_cluster: the run joins a running cluster, whose temp folder is its own: nothing to check.

    Returns:
        The line to print when Ray was given a short temp folder (``RAY_TMPDIR`` set for this process
        and the Ray instance it starts), else None.

    Raises:
        ConfigError: a temp folder set for Ray on purpose (``_temp_dir`` or ``RAY_TMPDIR``) is too long;
            the line says what to set.
    """
    if joins_cluster or not sys.platform.startswith("linux"):
        return None
    given = OmegaConf.select(cfg, TEMP_DIR_KEY, default=None)
    if given:
        where, temp = f"{TEMP_DIR_KEY}={given}", str(given)
    elif os.environ.get("RAY_TMPDIR"):
        where, temp = f"RAY_TMPDIR={os.environ['RAY_TMPDIR']}", os.path.join(os.environ["RAY_TMPDIR"], "ray")
    elif os.environ.get("TMPDIR"):
        where, temp = f"TMPDIR={os.environ['TMPDIR']}", os.path.join(os.environ["TMPDIR"], "ray")
    else:
        return None  # /tmp/ray: always short enough
    length = ray_socket_path_length(temp)
    if length <= SOCKET_PATH_LIMIT:
        return None
    room = SOCKET_PATH_LIMIT - SESSION_TAIL
    too_long = (
        f"{where} makes Ray's socket paths up to {length} bytes (Linux allows {SOCKET_PATH_LIMIT}: "
        f"Ray's temp folder may have at most {room} characters)"
    )
    if where.startswith("TMPDIR=") and _usable(SHORT_TEMP):
        os.environ["RAY_TMPDIR"] = SHORT_TEMP  # read by ray.init in this process; TMPDIR stays as it was
        return f"{too_long}; Ray's temp folder is {SHORT_TEMP}/ray instead (set RAY_TMPDIR to choose another)"
    raise ConfigError(
        f"{too_long}; set RAY_TMPDIR to a shorter folder (e.g. RAY_TMPDIR={SHORT_TEMP}) or "
        f"{TEMP_DIR_KEY}=<a folder of at most {room} characters>"
    )


def _usable(folder: str) -> bool:
    path = Path(folder)
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)
