"""`Tool`: a typed, validated, never-raising callable the model can invoke; `@tool` for functions."""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import re
import sys
import typing
from collections.abc import Callable
from typing import Any, ClassVar

import pydantic

from tools.loop_watch import watched
from tools.result import ToolResult
from tools.schema import function_schema
from turngym.chat.calls import bounded_json
from turngym.common.run_sync import run_sync
from turngym.common.thread_deadline import DeadlineExceeded, call_with_deadline

# What the OpenAI and Anthropic APIs and chat templates accept as a function name.
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def check_tool_name(name: object) -> str:
    """``name`` when it is a valid function name for the model, else ValueError saying what is allowed.

    Args:
        name: a tool's name.

    Returns:
        The name.

    Example:
        >>> check_tool_name("count_letters")
        'count_letters'
        >>> check_tool_name("count letters")
        Traceback (most recent call last):
        ...
        ValueError: tool name 'count letters' is not a valid function name: use 1 to 64 letters, digits, '_' or '-' (e.g. 'count_letters')
    """
    if isinstance(name, str) and _NAME_RE.match(name):
        return name
    suggestion = re.sub(r"[^a-zA-Z0-9_-]+", "_", str(name)).strip("_")[:64]
    example = f" (e.g. {suggestion!r})" if suggestion else ""
    raise ValueError(
        f"tool name {name!r} is not a valid function name: use 1 to 64 letters, digits, '_' or '-'{example}"
    )


class _NoArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


def forbid_unknown_arguments(model: type[pydantic.BaseModel]) -> type[pydantic.BaseModel]:
    """`model`, or a subclass of it that refuses unknown arguments, as a `@tool` function's model does.

    A model that sets `extra` itself (e.g. `extra="allow"`) is kept as it is, and so is a `RootModel`.

    Args:
        model: A Tool's argument model (its nested `Args` or `args_model`).

    Returns:
        A model whose schema says `"additionalProperties": false` and whose validation names an
        unknown argument ("unexpected argument `speed`").

    >>> class Args(pydantic.BaseModel):
    ...     x: int
    >>> forbid_unknown_arguments(Args).model_json_schema()["additionalProperties"]
    False
    """
    if not isinstance(model, type) or not issubclass(model, pydantic.BaseModel):
        return model
    if "extra" in model.model_config or issubclass(model, pydantic.RootModel):
        return model
    namespace = {
        "model_config": pydantic.ConfigDict(extra="forbid"),
        "__module__": model.__module__,
        "__qualname__": model.__qualname__,
        "__doc__": model.__doc__,  # the schema's description, as the model's own
    }
    return type(model.__name__, (model,), namespace)


class Tool:
    """A tool: `name`, `description`, a pydantic `args_model`, and `run` which subclasses implement.

    Subclasses either set `args_model` or define a nested `class Args(BaseModel)` (unknown arguments are
    refused, as a `@tool` function's are, unless the model sets `extra` itself). Stateful tools set
    `stateful = True`; `fork()` gives each episode its own instance and `aclose()` releases it.
    Calling a tool (`call`, `call_sync`) never raises: bad arguments, exceptions, `sys.exit` and
    timeouts all come back as a `ToolResult` with `is_error=True` whose text the model can act on.

    Class attributes a subclass sets:

    Args:
        name: What the model calls the tool (letters, digits, `_` and `-`, at most 64 characters).
        description: One line the model reads in the tool schema.
        args_model: The pydantic model the JSON arguments are validated against (or a nested `Args`).
        stateful: True when one episode's calls share state; each episode then gets its own `fork()`.
        concurrent: True when calls of one reply may run at the same time (a pure function).
        timeout_s: Seconds one call may take before it becomes an error result (None: no limit).
        max_output_chars: Longer result text is cut, with a note saying how much (None: no cut).

    Example:
        >>> import pydantic
        >>> from tools import Tool
        >>> class Add(Tool):
        ...     name = "add"
        ...     description = "Add two integers."
        ...
        ...     class Args(pydantic.BaseModel):
        ...         a: int
        ...         b: int
        ...
        ...     async def run(self, args, context):
        ...         return str(args.a + args.b)
        >>> add = Add()
        >>> add.schema["function"]["parameters"]["required"]
        ['a', 'b']
        >>> add.call_sync({"a": 2, "b": 3}).content
        '5'
        >>> result = add.call_sync('{"a": 2}')
        >>> result.is_error, result.content.startswith("tool `add`: ")
        (True, True)
    """

    name: str = ""
    description: str = ""
    args_model: type[pydantic.BaseModel] = _NoArgs
    stateful: bool = False
    #: True when a call neither reads nor changes anything another call of the same turn may change (a
    #: pure function, a fresh sandbox per call): such calls of one reply run at the same time.
    concurrent: bool = False
    timeout_s: float | None = 30.0
    max_output_chars: int | None = 20_000  # longer content is cut, with a note saying so

    Args: ClassVar[type[pydantic.BaseModel]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        nested = cls.__dict__.get("Args")
        if (
            "args_model" not in cls.__dict__
            and isinstance(nested, type)
            and issubclass(nested, pydantic.BaseModel)
        ):
            # Unknown arguments are refused, as a `@tool` function's are; `Args` stays `args_model`.
            cls.Args = cls.args_model = forbid_unknown_arguments(nested)
        elif "args_model" in cls.__dict__:
            cls.args_model = forbid_unknown_arguments(cls.args_model)

    @property
    def schema(self) -> dict[str, Any]:
        """OpenAI function schema with nested objects, array items, enums and defaults kept."""
        return function_schema(self.name, self.description, self.args_model)

    async def run(self, args: pydantic.BaseModel, context: dict | None) -> ToolResult | str:
        """Do the work; raise freely (the caller turns exceptions into error results).

        Subclasses may define it as `async def` or as a plain `def` (which then runs in a worker thread).
        """
        raise NotImplementedError(f"{type(self).__name__}.run is not implemented")

    def parse_arguments(self, arguments: dict | str | None) -> pydantic.BaseModel | str:
        """Validated arguments, or an error message saying exactly what is wrong."""
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = {}
        if isinstance(arguments, (str, bytes)):
            try:
                arguments = bounded_json.loads(
                    arguments if isinstance(arguments, str) else arguments.decode()
                )
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                if isinstance(exc, UnicodeDecodeError):
                    return f"arguments are not UTF-8 text: {_short(arguments)}"
                return f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): {_short(arguments)}"
        if isinstance(arguments, dict) and bounded_json.depth_exceeds(arguments):
            return f"arguments nest deeper than {bounded_json.MAX_JSON_DEPTH} levels"
        if not isinstance(arguments, dict):
            return f"arguments must be a JSON object, got {_json_type(arguments)}: {_short(arguments)}"
        try:
            return self.args_model.model_validate(arguments)
        except pydantic.ValidationError as exc:
            return format_validation_error(exc)

    async def call(self, arguments: dict | str | None, context: dict | None = None) -> ToolResult:
        """Validate and run; never raises: every failure becomes `ToolResult(is_error=True)`.

        Args:
            arguments: The model's arguments: a dict, a JSON object as text, or None/empty for none.
            context: Per-episode values the env passes through to `run` (e.g. the episode's sandbox).

        Returns:
            The result; its text is cut to `max_output_chars`, and `is_error` is set on any failure.
        """
        try:
            parsed = self.parse_arguments(arguments)
        except Exception as exc:  # a custom validator may raise anything
            return ToolResult.error(f"tool `{self.name}`: invalid arguments: {_exc_text(exc)}")
        if isinstance(parsed, str):
            return ToolResult.error(f"tool `{self.name}`: {parsed}")
        parsed_args: Any = parsed
        watch: dict[str, float] = {}
        try:
            if self.timeout_s is None:
                out = await self._guarded_run(parsed_args, context, watch)
            else:
                out = await asyncio.wait_for(self._guarded_run(parsed_args, context, watch), self.timeout_s)
        except TimeoutError:
            result = ToolResult.error(f"tool `{self.name}` timed out after {self.timeout_s:g}s")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            result = ToolResult.error(f"tool `{self.name}` failed: {_exc_text(exc)}")
        else:
            result = self._finish(out)
        if watch.get("loop_blocked_s"):  # measured by tools.loop_watch: the run held the event loop
            result.metrics["loop_blocked_s"] = round(watch["loop_blocked_s"], 3)
        return result

    async def _guarded_run(
        self, args: pydantic.BaseModel, context: dict | None, watch: dict[str, float] | None = None
    ) -> Any:
        # A subclass may write a plain `def run`: it runs in a worker thread so it cannot stall the event
        # loop, and the thread is stopped at the timeout rather than left computing.
        if not inspect.iscoroutinefunction(self.run):
            kwargs = {"args": args, "context": context}
            out = await asyncio.to_thread(_no_exit, self.run, kwargs, self.timeout_s)
            if inspect.isawaitable(out):  # a plain `def` that returns a coroutine
                out = await out
            return out
        # An async run is stepped on the loop: each stretch is timed, and one still running at the
        # timeout is stopped (tools.loop_watch), since wait_for cannot fire while it holds the loop.
        runner = watched(self.name, self.run(args, context), self.timeout_s)
        # asyncio re-raises SystemExit out of the event loop; a tool calling sys.exit must not end the rollout.
        try:
            return await runner
        except SystemExit as exc:
            raise ToolExit(exc.code) from None
        finally:
            if watch is not None and runner.longest_s:
                watch["loop_blocked_s"] = runner.longest_s

    def call_sync(self, arguments: dict | str | None, context: dict | None = None) -> ToolResult:
        """Blocking `call`; safe inside a running event loop (runs in a worker thread then).

        Args:
            arguments: As for `call`.
            context: As for `call`.

        Returns:
            The same `ToolResult` that `call` returns.
        """
        return run_sync(self.call(arguments, context))

    def fork(self) -> Tool:
        """Per-episode instance: `self` when stateless, a fresh copy with empty state when stateful."""
        if not self.stateful:
            return self
        clone = copy.copy(self)
        clone.init_state()
        return clone

    def init_state(self) -> None:
        """Reset per-episode state on a fresh fork (stateful subclasses override)."""

    async def aclose(self) -> None:
        """Release per-episode state; idempotent, also called when an episode ends in error."""

    def _finish(self, out: Any) -> ToolResult:
        if isinstance(out, ToolResult):
            result = out
        elif out is None:
            result = ToolResult(content="")
        elif isinstance(out, str):
            result = ToolResult(content=out)
        elif isinstance(out, (dict, list, tuple, int, float, bool)):
            result = ToolResult(content=json.dumps(out, ensure_ascii=False, default=str))
        else:
            result = ToolResult(content=str(out))
        if not isinstance(result.content, str):
            result.content = str(result.content)
        limit = self.max_output_chars
        if limit is not None and len(result.content) > limit:
            cut = len(result.content) - limit
            result.content = result.content[:limit] + f"\n[... {cut} more characters cut]"
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(Tool):
    """A Tool around a typed Python function (sync functions run in a worker thread)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float | None = 30.0,
        localns: dict[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        self.description = description if description is not None else summary
        self.args_model, self._takes_context = _model_from_signature(fn, arg_docs, self.name, localns)
        self._is_async = inspect.iscoroutinefunction(fn)
        self.timeout_s = timeout_s
        check_tool_name(self.name)

    async def run(self, args: pydantic.BaseModel, context: dict | None) -> Any:
        kwargs = {field: getattr(args, field) for field in type(args).model_fields}
        if self._takes_context:
            kwargs["context"] = context
        if self._is_async:
            return await self.fn(**kwargs)
        return await asyncio.to_thread(_no_exit, self.fn, kwargs, self.timeout_s)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The decorated function stays callable directly."""
        return self.fn(*args, **kwargs)


class ToolExit(Exception):
    """A tool called `sys.exit`; reported as an error instead of ending the process."""

    def __init__(self, code: Any) -> None:
        super().__init__(str(code) if code is not None else "")

    def __str__(self) -> str:
        return f"SystemExit: {self.args[0]}" if self.args and self.args[0] else "SystemExit"


def _no_exit(fn: Callable[..., Any], kwargs: dict[str, Any], timeout_s: float | None = None) -> Any:
    # In a worker thread: past the timeout the call has already been answered as timed out, and the
    # thread is stopped too, so a CPU-bound tool does not go on computing for nobody.
    try:
        return call_with_deadline(timeout_s, fn, **kwargs)
    except SystemExit as exc:
        raise ToolExit(exc.code) from None
    except DeadlineExceeded:
        raise TimeoutError(f"still running after {timeout_s:g} s") from None


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = 30.0,
) -> Any:
    """Decorator: a typed function (sync or async) becomes a `Tool`; schema from hints and docstring.

    Args:
        fn: The function (when used as `@tool` without parentheses).
        name: The tool's name; default: the function's name.
        description: The schema's description; default: the docstring's first paragraph.
        timeout_s: Seconds one call may take (None: no limit).

    Returns:
        A `FunctionTool` (still callable as the plain function), or a decorator when `fn` is None.

    Example:
        >>> from tools import tool
        >>> @tool
        ... def shout(text: str, times: int = 1) -> str:
        ...     '''Repeat text in capitals.
        ...
        ...     Args:
        ...         text: What to say.
        ...         times: How often.
        ...     '''
        ...     return " ".join([text.upper()] * times)
        >>> shout.schema["function"]["parameters"]["properties"]["times"]["default"]
        1
        >>> shout.call_sync({"text": "hi", "times": 2}).content
        'HI HI'
    """

    # Hints naming classes local to the defining function resolve through the caller's locals.
    caller = sys._getframe(1)
    localns = dict(caller.f_locals) if caller.f_code.co_name != "<module>" else None

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, timeout_s=timeout_s, localns=localns)

    return wrap(fn) if fn is not None else wrap


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Examples|Example|Notes|Note):\s*$"
)
_ARG_RE = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: description})."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        header = _SECTION_RE.match(stripped)
        if header and (len(line) - len(line.lstrip())) == 0:
            section = header.group(1)
            current, arg_indent = None, None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters") and stripped:
            indent = len(line) - len(line.lstrip())
            if arg_indent is None:
                arg_indent = indent
            m = _ARG_RE.match(stripped)
            if indent <= arg_indent and m:
                current = m.group(1).lstrip("*")
                args[current] = m.group(3).strip()
            elif current is not None:
                args[current] = (args[current] + " " + stripped).strip()
    return "\n".join(summary).strip(), args


def _type_hints(fn: Callable[..., Any], localns: dict[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception:
        pass
    # One bad hint should not erase the others: resolve them one by one.
    hints: dict[str, Any] = {}
    globalns = getattr(fn, "__globals__", {})
    for pname, ann in getattr(fn, "__annotations__", {}).items():
        try:
            hints[pname] = eval(ann, globalns, localns or {}) if isinstance(ann, str) else ann  # noqa: S307
        except Exception:
            hints[pname] = Any
    return hints


def _model_from_signature(
    fn: Callable[..., Any], arg_docs: dict[str, str], name: str, localns: dict[str, Any] | None = None
) -> tuple[type[pydantic.BaseModel], bool]:
    sig = inspect.signature(fn)
    hints = _type_hints(fn, localns)
    fields: dict[str, Any] = {}
    takes_context = False
    for pname, param in sig.parameters.items():
        if pname == "context":
            takes_context = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is param.empty else param.default
        fields[pname] = (annotation, pydantic.Field(default, description=arg_docs.get(pname)))
    model_name = "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]", name) if part) + "Args"
    model = pydantic.create_model(  # type: ignore[call-overload]
        model_name or "Args", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return model, takes_context


def config_model(fn: Callable[..., Any], names: list[str]) -> type[pydantic.BaseModel]:
    """A pydantic model of `fn`'s parameters `names` (a Tool's constructor: its YAML `config`).

    Each field has the parameter's type hint and default; a hint pydantic cannot check (an unresolvable
    name, a protocol) is left unchecked, and a class it does not know is checked with isinstance.

    Args:
        fn: The function, e.g. a Tool subclass's `__init__`.
        names: The parameters to model (keyword-passable ones).

    Returns:
        The model; validating a config with it checks the types and converts as the hints say.

    >>> def init(self, factor: int = 2, unit: str = "km"): ...
    >>> config_model(init, ["factor", "unit"]).model_validate({"factor": "3"}).factor
    3
    """
    sig = inspect.signature(fn)
    hints = _type_hints(fn, None)
    settings = pydantic.ConfigDict(arbitrary_types_allowed=True)
    fields: dict[str, Any] = {}
    for pname in names:
        param = sig.parameters[pname]
        default = ... if param.default is param.empty else param.default
        annotation = hints.get(pname, Any)
        try:  # one field at a time: a hint pydantic cannot build a check for stays unchecked
            pydantic.create_model("Probe", __config__=settings, probe=(annotation, default))
        except Exception:
            annotation = Any
        fields[pname] = (annotation, default)
    return pydantic.create_model("Config", __config__=settings, **fields)  # type: ignore[call-overload]


_TYPE_WORDS = {
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "string": "string",
    "str": "string",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "dict": "object",
    "model": "object",
    "bytes": "string",
}


def format_validation_error(exc: pydantic.ValidationError, what: str = "argument") -> str:
    """One line per problem, e.g. "argument `n`: expected integer, got 'abc'".

    Args:
        exc: pydantic's error.
        what: What the fields are called in the message ("argument", or e.g. "Scale config key").

    Returns:
        The problems joined by "; ".
    """
    lines = []
    for err in exc.errors(include_url=False):
        loc = _loc_text(err.get("loc", ()))
        etype = err.get("type", "")
        got = err.get("input")
        if etype == "missing":
            lines.append(f"missing required {what} `{loc}`")
            continue
        if etype == "extra_forbidden":
            lines.append(f"unexpected {what} `{loc}`")
            continue
        prefix = f"{what} `{loc}`" if loc else f"{what}s"
        kind = etype.split("_")[0]
        if etype.endswith(("_type", "_parsing")) and kind in _TYPE_WORDS:
            expected = f"expected {_TYPE_WORDS[kind]}"
            if etype == "int_from_float":
                expected = "expected integer"
            lines.append(f"{prefix}: {expected}, got {_short(got)}")
        elif etype == "int_from_float":
            lines.append(f"{prefix}: expected integer, got {_short(got)}")
        elif etype in ("literal_error", "enum"):
            expected = (err.get("ctx") or {}).get("expected", "")
            lines.append(f"{prefix}: expected one of {expected}, got {_short(got)}")
        else:
            msg = err.get("msg", etype)
            lines.append(f"{prefix}: {msg[:1].lower() + msg[1:]}, got {_short(got)}")
    return "; ".join(lines)


def _loc_text(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return type(value).__name__


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _exc_text(exc: BaseException) -> str:
    msg = str(exc)
    if isinstance(exc, ToolExit):
        return msg
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
