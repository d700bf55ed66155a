"""keep_old_paths: an old module path imports the moved module itself, warns once, and leaves no file."""

import subprocess
import sys
import textwrap


def _run(tmp_path, code: str) -> subprocess.CompletedProcess:
    pkg = tmp_path / "demo_pkg"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from turngym.common.moved_modules import keep_old_paths\n"
        "keep_old_paths({'demo_pkg.thing': 'demo_pkg.core.thing'})\n"
    )
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "thing.py").write_text("class Thing:\n    pass\n")
    from turngym import common

    root = str(__import__("pathlib").Path(common.__file__).resolve().parents[2])
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_an_old_path_gives_the_same_module_and_warns_once(tmp_path):
    done = _run(
        tmp_path,
        """
        import demo_pkg.thing as old
        from demo_pkg.thing import Thing
        from demo_pkg import thing
        import demo_pkg.core.thing as new
        assert old is new is thing and Thing is new.Thing
        print("ok")
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    warned = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert len(warned) == 1, done.stderr
    assert "demo_pkg.thing moved to demo_pkg.core.thing" in warned[0]
    assert warned[0].startswith("<string>:2"), warned[0]  # the importer's line, not the import system's


def test_an_unknown_path_is_still_an_import_error(tmp_path):
    done = _run(tmp_path, "import demo_pkg.nothing_here")
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'demo_pkg.nothing_here'" in done.stderr


def test_the_hook_is_installed_once_per_table():
    from turngym.common.moved_modules import MovedModules, all_moves, keep_old_paths

    before = sum(isinstance(f, MovedModules) for f in sys.meta_path)
    hook = keep_old_paths({"x_demo_old": "x_demo_new"})
    try:
        assert keep_old_paths({"x_demo_old": "x_demo_new"}) is hook
        assert sum(isinstance(f, MovedModules) for f in sys.meta_path) == before + 1
        assert all_moves()["x_demo_old"] == "x_demo_new"
    finally:
        sys.meta_path.remove(hook)


def test_a_submodule_of_an_old_package_path_is_the_new_submodule(tmp_path):
    pkg = tmp_path / "demo_pkg"
    (pkg / "core" / "inner").mkdir(parents=True)
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "inner" / "__init__.py").write_text("")
    (pkg / "core" / "inner" / "leaf.py").write_text("X = object()\n")
    (pkg / "__init__.py").write_text(
        "from turngym.common.moved_modules import keep_old_paths\n"
        "keep_old_paths({'demo_pkg.inner': 'demo_pkg.core.inner'})\n"
    )
    from turngym import common

    root = str(__import__("pathlib").Path(common.__file__).resolve().parents[2])
    code = (
        "import demo_pkg.inner.leaf as old, demo_pkg.core.inner.leaf as new\n"
        "assert old is new, (old, new)\n"
        "import sys; assert sys.modules['demo_pkg.inner.leaf'] is new\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
