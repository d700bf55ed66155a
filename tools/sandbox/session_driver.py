# Runs inside the sandbox: a persistent Python namespace fed length-prefixed code over stdin.
# Kept dependency-free and small: it starts with `python -I -S`.
import ast
import json
import os
import struct
import sys
import traceback

proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
cap = int(sys.argv[1])
capture = os.path.abspath(".session_output")
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
sys.stdout.reconfigure(write_through=True)
sys.stderr.reconfigure(write_through=True)


def print_cell_traceback(exc):
    # Show only the user's frames, not this driver's.
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = proto_in.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def run(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), namespace)
        if value is not None:
            print(repr(value))


while True:
    header = read_exact(4)
    if header is None:
        break
    code = read_exact(struct.unpack(">I", header)[0]).decode("utf-8", "replace")
    fd = os.open(capture, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    failed = False
    try:
        run(code)
    except SystemExit as exc:
        failed = exc.code not in (None, 0)
        print(f"SystemExit: {exc.code}", file=sys.stderr)
    except BaseException as exc:
        failed = True
        print_cell_traceback(exc)
    sys.stdout.flush()
    sys.stderr.flush()
    os.lseek(fd, 0, 0)
    out = os.read(fd, cap + 1)
    os.close(fd)
    reply = json.dumps(
        {"output": out[:cap].decode("utf-8", "replace"), "error": failed, "truncated": len(out) > cap}
    ).encode()
    proto_out.write(struct.pack(">I", len(reply)) + reply)
