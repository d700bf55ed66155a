"""Runs inside the sandbox (stdlib only, any Python 3.9+): call functions of the submitted repository.

Standard input holds a Python literal `{"root": dir, "package": name, "limit_s": seconds, "calls":
[(module, function, args), ...]}`. For each call it writes one line `<index>\\t<ok|err>\\t<repr of the
result | failure kind>` to the original stdout. Nothing here is trusted: the repository's code shares
this interpreter and may rewrite any of it. What comes out is only the repository's claimed results; the
grader decodes them in its own process and compares them with expected values that never enter the
sandbox.
"""

import ast
import importlib
import io
import os
import signal
import sys

PLAIN = (int, float, str, bytes, bool, type(None), complex)
CONTAINERS = (list, tuple, set, frozenset, dict)


class NotPlainData(Exception):
    """The result is not built of plain Python values."""


class Timeout(Exception):
    """The call ran past its time limit."""


def check_plain(value, depth=0):
    """Raise NotPlainData unless `value` is built only of plain builtin types (exact types)."""
    if depth > 100:
        raise NotPlainData("nested too deep")
    kind = type(value)
    if kind in PLAIN:
        return
    if kind not in CONTAINERS:
        raise NotPlainData(kind.__name__)
    items = value.items() if kind is dict else ((v, None) for v in value)
    for key, item in items:
        check_plain(key, depth + 1)
        check_plain(item, depth + 1)


def on_alarm(signum, frame):
    raise Timeout()


def timed(limit_s, fn, *args):
    """fn(*args) under a wall-clock alarm."""
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main():
    report = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="backslashreplace")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # the repository's own prints, even through os.write(1, ...), go nowhere
    os.dup2(quiet, 2)
    config = ast.literal_eval(sys.stdin.read())
    sys.stdin = io.StringIO("")
    limit_s = float(config["limit_s"])
    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.abspath(config["root"]))
    signal.signal(signal.SIGALRM, on_alarm)
    broken = {}  # module -> why it failed to import: not retried (a hanging import would cost every call)
    for index, (module_name, function, args) in enumerate(config["calls"]):
        if module_name in broken:
            report.write(f"{index}\terr\t{broken[module_name]}\n")
            continue
        try:
            module = timed(limit_s, importlib.import_module, config["package"] + "." + module_name)
        except BaseException as exc:  # noqa: BLE001
            broken[module_name] = type(exc).__name__
            report.write(f"{index}\terr\t{broken[module_name]}\n")
            continue
        try:
            fn = getattr(module, function, None)
            if not callable(fn):
                raise AttributeError(function)
            value = timed(limit_s, fn, *args)
            check_plain(value)
            line = f"{index}\tok\t{value!r}\n"
        except BaseException as exc:  # noqa: BLE001 - whatever the repository raises is its failure
            line = f"{index}\terr\t{type(exc).__name__}\n"
        report.write(line)
    return report


if __name__ == "__main__":
    out = main()
    out.flush()
    os._exit(0)
