"""Disk-reading submissions against a normal (non-editable) install: how many score.

Installs this checkout's wheel into a fresh venv under /usr/local (a directory the sandbox mounts
read-only with /usr), then, through that install's turngym:
- code-sandbox-v0: every bundled problem is graded with a submission that searches the visible file
  system for problems.jsonl and answers from its hidden tests;
- repo-fix-v0: episodes whose fix is the template source the submission finds on disk (a sandboxed run
  prints every `repo_fix/templates/<module>.py` it can read; those replace the buggy modules).
Prints attempts and how many scored full marks. Before the hidden-data masks both counts were the whole
set; with them both are 0.

Usage: .venv/bin/python bench/hidden_data.py [--episodes 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CODE_FORGERY = """
import ast, json, os
PATHS = []
for root in ('/usr', '/opt', '/etc', '/'):
    for dirpath, dirs, files in os.walk(root):
        if 'problems.jsonl' in files: PATHS.append(os.path.join(dirpath, 'problems.jsonl'))
        if root == '/' and dirpath.count('/') > 3: dirs[:] = []
ROWS = []
for p in PATHS:
    try: ROWS += [json.loads(line) for line in open(p)]
    except Exception: pass
def {entry}(*a, **k):
    for row in ROWS:
        for t in row['tests']:
            if isinstance(t, dict) and 'args' in t and list(t['args']) == list(a): return t['expected']
            if isinstance(t, str):
                try:
                    test = ast.parse(t.strip()).body[0].test
                    if [ast.literal_eval(x) for x in test.left.args] == list(a):
                        return ast.literal_eval(test.comparators[0])
                except Exception: pass
    return 'forged'
"""

PROGRAM_FORGERY = (
    CODE_FORGERY.format(entry="_unused")
    + """
import sys
data = sys.stdin.read()
for row in ROWS:
    for t in row['tests']:
        if isinstance(t, dict) and 'output' in t and t.get('input', '') == data:
            print(t['output']); sys.exit(0)
"""
)

TEMPLATE_FINDER = """
import json, os
found = {}
for root in ('/usr', '/opt', '/'):
    for dirpath, dirs, files in os.walk(root):
        if dirpath.endswith('repo_fix/templates'):
            for f in files:
                if f.endswith('.py'):
                    try: found[f[:-3]] = open(os.path.join(dirpath, f)).read()
                    except OSError: pass
        if root == '/' and dirpath.count('/') > 3: dirs[:] = []
print(json.dumps(found))
"""


async def attack(episodes: int) -> dict:
    """Runs inside the installed venv: both attacks, counted."""
    import numpy as np

    import envs
    from envs.code.grader import grade
    from envs.code.problems import bundled_problems
    from envs.repo_fix.generator import DIFFICULTIES, generate
    from envs.repo_fix.repo_grader import grade_repository
    from tools.sandbox import LocalSandbox

    sandbox = LocalSandbox(timeout_s=20)
    out = {"envs_from": os.path.dirname(envs.__file__), "hidden": sandbox.limits_report().get("hidden data")}
    problems = bundled_problems()
    code_paid = 0
    for problem in problems:
        source = (
            PROGRAM_FORGERY if problem.is_program else CODE_FORGERY.format(entry=problem.entry_point or "f")
        )
        report = await grade(sandbox, problem, source)
        code_paid += report.passed == report.total and report.total > 0
    out["code"] = {"attempts": len(problems), "full_marks": code_paid}
    finder = await sandbox.arun(TEMPLATE_FINDER, timeout_s=60)
    if finder.status != "ok":
        raise RuntimeError(f"the sandbox failed: {finder.status} {finder.message} {finder.stderr[-300:]}")
    found = json.loads(finder.stdout)
    repo_paid = 0
    levels = list(DIFFICULTIES)
    for seed in range(episodes):
        task = generate(np.random.default_rng(seed), levels[seed % len(levels)])
        files = dict(task.files)
        for path in files:
            module = path.rsplit("/", 1)[-1].removesuffix(".py")
            if path.startswith(f"{task.package}/") and module in found:
                files[path] = found[module]
        report = await grade_repository(sandbox, task.package, files, task.hidden)
        repo_paid += report.passed == report.total and report.total > 0
    out["repo_fix"] = {"attempts": episodes, "full_marks": repo_paid, "template_files_read": len(found)}
    return out


def main() -> None:
    """Install the wheel, run the attacks through it, print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--attack", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack:
        print(json.dumps(asyncio.run(attack(args.episodes))))
        return
    sys.path.insert(0, os.path.join(REPO, "tests", "tools"))
    from installed_wheel import deps_env, installed_wheel

    with installed_wheel() as venv:
        done = subprocess.run(
            [
                str(venv / "bin" / "python"),
                os.path.abspath(__file__),
                "--attack",
                "--episodes",
                str(args.episodes),
            ],
            env=deps_env(venv),
            cwd="/",
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        sys.exit(f"the attack run failed: {done.stderr.strip().splitlines()[-1:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"turngym imported from {result['envs_from']}")
    print(f"hidden data: {result['hidden']}")
    for name in ("code", "repo_fix"):
        r = result[name]
        print(f"{name:9s} disk-reading submissions: {r['full_marks']}/{r['attempts']} scored full marks")
    print(f"repo_fix template files read inside the sandbox: {result['repo_fix']['template_files_read']}")


if __name__ == "__main__":
    main()
