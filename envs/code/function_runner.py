"""Runs inside the sandbox (stdlib only, any Python 3.9+): call submitted functions on given inputs.

Standard input holds a Python literal `{"limit_s": seconds, "calls": [(module, function, args, kwargs),
...]}` plus where the functions live: `"file": path` (a submitted file, run once as module `solution`;
`module` is None) or `"root": dir, "package": name` (a submitted package, `module` imported from it).
For each call it writes one line `<index>\\t<ok|err>\\t<repr of the result | failure kind>` to the
original stdout. Nothing here is trusted: the submission shares this interpreter and may rewrite any of
it. What it writes is only the submission's claimed results; the grader decodes them in its own process
and compares them with expected values that never enter the sandbox.
"""

import ast
import builtins
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


class NoFunction(Exception):
    """The submitted file defines no such function."""


class CompileError(Exception):
    """The submitted file is not valid Python."""


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


def load_file(path, function):
    """Run the submitted file at `path` as module `solution`; how its functions are looked up."""
    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            exec(compile(fh.read(), path, "exec"), namespace)
    except SyntaxError:
        raise CompileError() from None
    if not callable(namespace.get(function)):
        raise NoFunction()
    return namespace.get


def load_module(package, module_name):
    """Import `package.module_name`; how its functions are looked up."""
    module = importlib.import_module(package + "." + module_name)
    return lambda name: getattr(module, name, None)


def main():
    report = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="backslashreplace")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # the submission's own prints, even through os.write(1, ...), go nowhere
    os.dup2(quiet, 2)
    config = ast.literal_eval(sys.stdin.read())
    sys.stdin = io.StringIO("")
    limit_s, package = float(config["limit_s"]), config.get("package")
    if package is not None:
        sys.dont_write_bytecode = True
        sys.path.insert(0, os.path.abspath(config["root"]))
    signal.signal(signal.SIGALRM, on_alarm)
    loaded = {}  # module -> where its functions are looked up
    broken = {}  # module -> why it failed to load: not retried (a hanging load would cost every call)
    for index, (module_name, function, args, kwargs) in enumerate(config["calls"]):
        if module_name not in loaded and module_name not in broken:
            try:
                if package is None:
                    loaded[module_name] = timed(limit_s, load_file, config["file"], function)
                else:
                    loaded[module_name] = timed(limit_s, load_module, package, module_name)
            except BaseException as exc:  # noqa: BLE001 - whatever the submission raises is its failure
                broken[module_name] = type(exc).__name__
        if module_name in broken:
            report.write(f"{index}\terr\t{broken[module_name]}\n")
            continue
        try:
            fn = loaded[module_name](function)
            if not callable(fn):
                raise AttributeError(function)
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
