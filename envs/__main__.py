"""`python -m envs list | play ID | check ID | experts | serve`: list envs, play one, check one, evaluate the experts, serve them over HTTP.

`--import my_pkg.my_envs` (repeatable, any subcommand) imports a module first, e.g. one that calls
`envs.register`, so its envs can be listed and played: `python -m envs play my-env-v0 --import my_pkg.my_envs`.
The working directory is on the import path.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from collections.abc import Callable

import envs
from envs.core.text_env import render_transcript
from turngym.chat.calls.formats import write_calls
from turngym.common.cli_errors import ArgumentParser, UsageError, check_port_free, did_you_mean, run_cli
from turngym.serving.listening import say_when_listening

# Terminal escape sequences (CSI such as colours and cursor moves, OSC such as window titles and
# hyperlinks, and two-byte ESC codes), then every other control character but newline and tab, C1 controls
# and the bidi overrides that reorder what is shown: model and sandbox text must not drive the terminal.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def terminal_safe(text: str) -> str:
    """`text` without terminal escape sequences and control characters (newlines and tabs kept)."""
    return _ESCAPES.sub("", text)


def _show(text: str, **kwargs) -> None:
    print(terminal_safe(text), **kwargs)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the envs command line; a mistake is one line on stderr and exit code 2."""
    return run_cli("envs", _main, argv)


def _main(argv: list[str] | None) -> int:
    import argparse

    parser = ArgumentParser(
        prog="python -m envs", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    imports = ArgumentParser(add_help=False)
    imports.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (e.g. one calling envs.register); repeatable",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="list registered envs", parents=[imports])
    ls.add_argument("--category", help="only this category")
    ls.add_argument(
        "--categories", action="store_true", help="list the categories and how many envs each has"
    )
    play = sub.add_parser("play", help="play an env in the terminal", parents=[imports])
    play.add_argument("id", help="env id, e.g. guess-number-v0")
    play.add_argument("--seed", type=int, default=None)
    play.add_argument("--expert", action="store_true", help="let the scripted expert play")
    play.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="env constructor option, e.g. -o difficulty=hard (values parsed as JSON when possible)",
    )
    check = sub.add_parser(
        "check",
        help="check an env: gymnasium's check_env, determinism by seed, hostile inputs, random and expert players",
        parents=[imports],
    )
    check.add_argument("id", help="env id, e.g. guess-number-v0")
    check.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 for determinism and the players")
    check.add_argument(
        "--option", "-o", action="append", default=[], metavar="KEY=VALUE", help="env constructor option"
    )
    check.add_argument(
        "--call-timeout",
        type=float,
        default=60.0,
        help="seconds one env call (make, reset, step, a player's move) may take before the check fails",
    )
    experts = sub.add_parser(
        "experts", help="evaluate the scripted experts and print a summary table", parents=[imports]
    )
    experts.add_argument("--category", default=None, help="only this category (default: all)")
    experts.add_argument("--episodes", type=int, default=20, help="seeds per env and difficulty")
    serve = sub.add_parser(
        "serve", help="serve every registered env over HTTP (one session per episode)", parents=[imports]
    )
    from envs.server import add_serve_arguments

    add_serve_arguments(serve)
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes behind the one port, each session on one of them (default 1)",
    )
    args = parser.parse_args(argv)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    # `check` imports the modules only in its child, where the deadline and the exit check hold: a
    # module that hangs or exits at import must not decide the parent's exit status.
    for module in args.imports if args.command != "check" else ():
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise UsageError(terminal_safe(f"--import {module}: {e}")) from None
    if args.command == "list":
        return _list_categories() if args.categories else _list(args.category)
    if args.command == "serve":
        if args.workers == 1 and args.max_connections_per_client is not None:
            raise UsageError(
                "--max-connections-per-client applies with --workers N (its front holds connections until "
                "their headers are in); one process leaves connections to uvicorn"
            )
        if args.workers != 1:
            from envs.server.workers import serve_workers

            return serve_workers(args)
        from envs.server.app import TOKEN_ENV
        from envs.server.app import serve as run_server
        from turngym.serving.cli import server_settings

        # The operator's settings first (beyond loopback: a token), then the port: a port another
        # program holds would answer the listening probe below, so it is refused before, as the server would.
        server_settings(args, token_env=TOKEN_ENV)
        check_port_free(args.host, args.port)
        served = say_when_listening("envs serve", args.host, args.port, "one process")
        try:
            return run_server(args)
        finally:
            served.set()
    if args.command == "check":
        return _check(args.id, args.seeds, args.option, args.imports, args.call_timeout)
    if args.command == "experts":
        from envs.baselines.expert_evaluation import evaluate_experts, format_table, left_out_line

        if args.episodes < 1:
            raise UsageError(f"--episodes {args.episodes}: evaluate at least 1 seed per env")
        if args.category is not None and not envs.list_envs(args.category):
            raise UsageError(_unknown_category(args.category))
        left_out: list[str] = []
        print(format_table(evaluate_experts(args.category, args.episodes, left_out)))
        if left_out:
            print(left_out_line(left_out))
        return 0
    try:
        kwargs = dict(_parse_option(o) for o in args.option)
        env = envs.make(args.id, **kwargs)
    except (envs.UnknownEnvError, ValueError, TypeError) as e:
        raise UsageError(terminal_safe(f"play {args.id}: {e}")) from None
    ask = (lambda: _expert_move(env)) if args.expert else _ask_human
    return play_episode(env, args.seed, ask)


def _check(env_id: str, seeds: int, options: list[str], imports: list[str], call_timeout: float) -> int:
    # The env's code runs only in a child process, which the deadline can stop and whose exit cannot
    # pass for success (envs/registry/env_check_process.py).
    from envs.registry.env_check_process import check_in_child

    if seeds < 1:
        raise UsageError(f"--seeds {seeds}: check at least 1 seed")
    if not 0 < call_timeout < float("inf"):
        raise UsageError(f"--call-timeout {call_timeout}: give a number of seconds > 0")
    try:
        if not imports:  # an id from an --import module is known only in the child, which says so
            envs.spec(env_id)
        kwargs = dict(_parse_option(o) for o in options)
    except (envs.UnknownEnvError, ValueError, TypeError) as e:
        raise UsageError(terminal_safe(f"check {env_id}: {e}")) from None
    try:
        return check_in_child(env_id, seeds, kwargs, list(imports), call_timeout, show=_show)
    except UsageError as e:
        raise UsageError(terminal_safe(str(e))) from None


def _list(category: str | None) -> int:
    specs = envs.list_envs(category)
    if not specs and category is not None:
        raise UsageError(_unknown_category(category))
    width = max((len(s.id) for s in specs), default=2)
    cat_width = max((len(s.category) for s in specs), default=8)
    print(f"{'id':<{width}}  {'category':<{cat_width}}  description")
    for s in specs:
        print(f"{s.id:<{width}}  {s.category:<{cat_width}}  {s.description}")
    return 0


def _unknown_category(category: str) -> str:
    known = sorted({s.category for s in envs.list_envs()})
    hint = did_you_mean(category, known) or f"categories: {', '.join(known)}"
    return terminal_safe(f"no env in category {category!r}; {hint}")


def _list_categories() -> int:
    counts: dict[str, int] = {}
    for s in envs.list_envs():
        counts[s.category] = counts.get(s.category, 0) + 1
    width = max((len(c) for c in counts), default=8)
    print(f"{'category':<{width}}  envs")
    for name, count in counts.items():
        print(f"{name:<{width}}  {count}")
    return 0


def _parse_option(option: str) -> tuple[str, object]:
    key, sep, value = option.partition("=")
    if not sep or not key:
        raise ValueError(f"option {option!r} must look like KEY=VALUE")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _ask_human() -> str | None:
    try:
        return input("\nyou> ")
    except EOFError:
        return None


def _expert_move(env) -> str:
    move = env.expert_action()
    _show(f"\nexpert> {move}")
    return move


def play_episode(env, seed: int | None, ask: Callable[[], str | None]) -> int:
    """Show the opening, then alternate between asking for a reply and showing the env's answer."""
    messages, info = env.reset(seed=seed)
    _show(render_transcript(messages))
    if env.tool_schemas:
        names = [t["function"]["name"] for t in env.tool_schemas]
        example = write_calls([(names[0], {})], getattr(env.unwrapped, "tool_call_format", None))
        _show(f"\n(tools: {', '.join(names)}; call one as {' '.join(example.split())})")
    total = 0.0
    while True:
        action = ask()
        if action is None:
            print("\n(quit)")
            return 0
        messages, reward, terminated, truncated, info = env.step(action)
        total += reward
        _show(render_transcript(messages))
        _show(
            # round(x, 3) + 0.0 turns -0.0 (and -0.0001) into 0.0, so no "-0.000" is printed
            f"  reward {round(reward, 3) + 0.0:+.3f}  total {round(total, 3) + 0.0:+.3f}"
            + (f"  [{info['format_error']}]" if info.get("format_error") else "")
        )
        if terminated or truncated:
            outcome = "success" if info.get("success") else "ended"
            reason = info.get("truncated_reason", "terminated" if terminated else "truncated")
            _show(f"\nEpisode over ({outcome}, {reason}) after {info.get('turn')} turns; return {total:.3f}.")
            return 0


def run() -> int:
    """`main` for the command line: output cut short by a closed pipe (`| head`) ends quietly."""
    try:
        code = main()
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python's documented way (signal module, "Note on SIGPIPE"): point stdout at devnull so the
        # interpreter's final flush does not raise again, and exit as a cut-short command.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(run())
