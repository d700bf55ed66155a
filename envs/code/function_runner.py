"""Runs inside the sandbox (stdlib only, any Python 3.9+): call a submitted function on given inputs.

Standard input holds a Python literal `{"entry": name, "limit_s": seconds, "inputs": [(args, kwargs), ...]}`.
For each input it writes one line `<index>\\t<ok|err>\\t<repr of the result | exception kind>` to the
original stdout. Nothing here is trusted: the submission shares this interpreter and may rewrite any of
it. What it writes is only the submission's claimed results; the grader decodes them in its own
process and compares them with expected values that never enter the sandbox.
"""

import ast
import builtins
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


def timed(limit_s, fn, *args, **kwargs):
    """fn(*args, **kwargs) under a wall-clock alarm."""
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main():
    report = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="backslashreplace")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # the submission's own prints, even through os.write(1, ...), go nowhere
    os.dup2(quiet, 2)
    config = ast.literal_eval(sys.stdin.read())
    sys.stdin = io.StringIO("")
    entry, limit_s, inputs = config["entry"], float(config["limit_s"]), config["inputs"]
    signal.signal(signal.SIGALRM, on_alarm)

    def fail_all(kind):
        for index in range(len(inputs)):
            report.write(f"{index}\terr\t{kind}\n")

    try:
        with open("solution.py", encoding="utf-8", errors="replace") as fh:
            code = compile(fh.read(), "solution.py", "exec")
        namespace = {"__name__": "solution", "__builtins__": builtins}
        timed(limit_s, exec, code, namespace)
        fn = namespace.get(entry)
        if not callable(fn):
            fail_all("NoFunction")
            return report
    except BaseException as exc:  # noqa: BLE001 - whatever the submission raises is its failure
        fail_all("CompileError" if isinstance(exc, SyntaxError) else type(exc).__name__)
        return report
    for index, (args, kwargs) in enumerate(inputs):
        try:
            value = timed(limit_s, fn, *args, **kwargs)
            check_plain(value)
            line = f"{index}\tok\t{value!r}\n"
        except BaseException as exc:  # noqa: BLE001
            line = f"{index}\terr\t{type(exc).__name__}\n"
        report.write(line)
    return report


if __name__ == "__main__":
    out = main()
    out.flush()
    os._exit(0)
