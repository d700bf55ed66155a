"""Imports point one way (trainer → rollout → envs → tools / interactions → the ground floor), no cycles.

Every import statement of every module in the packages is read with `ast`, including imports
inside functions (they run later, but they are still arrows). Run this file as a script to print the
package-level import graph: `.venv/bin/python tests/test_layers.py` (`--modules` for every module edge).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "trainer",
    "rollout",
    "turngym.engines",
    "envs",
    "tools",
    "interactions",
    "turngym.chat",
    "turngym.common",
    "turngym.serving",
)
# What each package may import (besides itself): the layers of docs/design.md. The ground floor is
# `turngym.chat` (messages, the engine contract, call formats, ChatEncoder), `turngym.common` (Registry,
# run_sync, CLI errors, the thread deadline) and `turngym.serving` (the HTTP layer every server shares):
# every package may import them, `turngym.common` imports none and `turngym.chat` and `turngym.serving`
# none but `turngym.common`. The shared packages live under `turngym`, a name no user file takes (a
# user's `common.py` in the working folder must not shadow them); `turngym/__init__.py` imports nothing.
CHAT, COMMON, SERVING, ENGINES = "turngym.chat", "turngym.common", "turngym.serving", "turngym.engines"
ALLOWED = {
    "trainer": {"rollout", ENGINES, "envs", "tools", "interactions", CHAT, COMMON, SERVING},
    "rollout": {ENGINES, "envs", "tools", "interactions", CHAT, COMMON, SERVING},
    # The engines and the models they load: beside rollout's episodes, on tools and the ground floor.
    ENGINES: {"tools", CHAT, COMMON, SERVING},
    "envs": {"tools", "interactions", CHAT, COMMON, SERVING},
    "interactions": {"tools", CHAT, COMMON, SERVING},
    "tools": {CHAT, COMMON, SERVING},
    CHAT: {COMMON},
    COMMON: set(),
    SERVING: {COMMON},
}


def module_files() -> dict[str, Path]:
    """{dotted module name: file} for every module of the packages."""
    found = {}
    for package in PACKAGES:
        for path in sorted(ROOT.joinpath(*package.split(".")).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool = False):
    """(node, under `if TYPE_CHECKING:`) for every import in the tree, at any depth."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_checking
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), type_checking)
        else:
            yield from _imports(node, type_checking)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The deepest repo module that `name` (a dotted import path) names, or None outside the repo."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_edges(modules: dict[str, Path] | None = None) -> list[tuple[str, str, int, bool]]:
    """(importer, imported repo module, line, type-checking only) for every import in the repo."""
    modules = module_files() if modules is None else modules
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, type_only in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from pkg import sub` imports the submodule when there is one, else an attribute of pkg.
                targets = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    edges.append((name, resolved, node.lineno, type_only))
    return edges


def package_of(module: str) -> str:
    """The layer a module belongs to: its top-level package, or `turngym.<name>` for a shared one."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "turngym" and len(parts) > 1 else parts[0]


def upward_arrows(edges) -> list[str]:
    """Every import from one package into a package it must not know about."""
    return [
        f"{src}:{line} imports {dst}"
        for src, dst, line, _ in edges
        if package_of(src) != package_of(dst) and package_of(dst) not in ALLOWED[package_of(src)]
    ]


def cycles(edges) -> list[list[str]]:
    """Strongly connected components (size > 1, or a self-loop) of the runtime module graph."""
    graph = defaultdict(set)
    for src, dst, _, type_only in edges:
        if not type_only:
            graph[src].add(dst)
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(node):  # Tarjan's algorithm; the graph is a few hundred nodes, recursion is fine
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_scan_sees_imports_inside_functions():
    modules = module_files()
    edges = import_edges(modules)
    assert len(modules) > 50
    inside = [
        e for e in edges if e[0] == "turngym.engines.hf_engine" and e[1] == "turngym.engines.embedded_model"
    ]
    assert inside, "the import of the embedded model inside HFEngine.__init__ was not seen"


def test_no_upward_arrow():
    arrows = upward_arrows(import_edges())
    assert not arrows, "imports against the layers of docs/design.md:\n" + "\n".join(arrows)


GROUND_FLOOR = (CHAT, COMMON, SERVING)


def test_chat_common_and_serving_are_the_ground_floor():
    # Every package may stand on all three; common stands on none, chat and serving at most on common
    # (test_no_upward_arrow checks the edges).
    assert ALLOWED[COMMON] == set() and ALLOWED[CHAT] <= {COMMON} and ALLOWED[SERVING] <= {COMMON}
    assert all(
        set(GROUND_FLOOR) <= allowed for package, allowed in ALLOWED.items() if package not in GROUND_FLOOR
    )
    edges = import_edges()
    users = {package_of(src) for src, dst, _, _ in edges if package_of(dst) == CHAT}
    assert {"envs", "interactions", "rollout"} <= users
    users = {package_of(src) for src, dst, _, _ in edges if package_of(dst) == COMMON}
    assert {"envs", "interactions", "tools", "rollout", "trainer"} <= users
    users = {package_of(src) for src, dst, _, _ in edges if package_of(dst) == SERVING}
    assert {"envs", "tools"} <= users


USER_FACING = ("envs", "tools", "interactions", "rollout", "trainer")


def test_the_shared_layer_lives_under_turngym_and_nothing_takes_a_generic_name():
    # What setuptools installs at the top level: the five user-facing packages and `turngym`, so a
    # user's `common.py` (or `chat.py`, ...) in the working folder shadows none of ours.
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(pattern.rstrip("*") for pattern in include) == sorted([*USER_FACING, "turngym"])
    assert all(package in USER_FACING or package.startswith("turngym.") for package in PACKAGES)
    generic = ("common", "chat", "serving", "engines")
    assert not [
        name for name in generic if (ROOT / f"{name}.py").exists() or any((ROOT / name).rglob("*.py"))
    ]
    # `import turngym` loads nothing: each shared package is imported on its own.
    tree = ast.parse((ROOT / "turngym" / "__init__.py").read_text(encoding="utf-8"))
    assert not list(_imports(tree))


def test_no_import_cycle():
    found = cycles(import_edges())
    assert not found, "import cycles between modules:\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_import_rollout_engines_and_the_embedded_model_stay_light():
    code = (
        "import sys, rollout, turngym.engines, turngym.engines.embedded_model; print(' '.join(sys.modules))"
    )
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    assert not [m for m in ("torch", "transformers", "verl", "ray", "pandas") if m in loaded]


def package_graph(edges) -> dict[str, dict[str, int]]:
    """{package: {imported package: number of import statements}}."""
    graph: dict[str, dict[str, int]] = {p: {} for p in PACKAGES}
    for src, dst, _, _ in edges:
        a, b = package_of(src), package_of(dst)
        if a != b:
            graph[a][b] = graph[a].get(b, 0) + 1
    return graph


def main(argv: list[str]) -> int:
    """Print the package-level import graph, any upward arrow and any cycle; exit 1 if there is one."""
    edges = import_edges()
    if "--modules" in argv:
        for src, dst, line, type_only in sorted(set(edges)):
            print(f"{src}:{line} -> {dst}{'  (TYPE_CHECKING)' if type_only else ''}")
        print()
    for package, targets in package_graph(edges).items():
        shown = ", ".join(f"{t} ({n})" for t, n in sorted(targets.items())) or "(nothing)"
        print(f"{package:15} -> {shown}")
    arrows, found = upward_arrows(edges), cycles(edges)
    print(f"\nupward arrows: {len(arrows)}")
    for arrow in arrows:
        print(f"  {arrow}")
    print(f"module cycles: {len(found)}")
    for component in found:
        print("  " + " <-> ".join(component))
    return 1 if arrows or found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
