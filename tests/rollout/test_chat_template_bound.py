"""A hostile chat template cannot hang ChatFormat: every render runs under a time bound.

The attack: a tokenizer whose chat template loops 10^10 times (nested `range` loops, loops over the
messages' own text, exponential macro recursion). The Jinja sandbox bounds `range` to 100000 items but
not time, so `ChatFormat(tokenizer)` or the first render of a long message never returned.

Each case runs in a child process so that, without the bound, the test fails at its deadline instead
of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

NESTED = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
# Harmless on the short probe conversations, a hang on one long message: 3000^3 iterations.
ON_LONG_INPUT = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if m.content|length > 100 %}{% for a in m.content %}{% for b in m.content %}{% for c in m.content %}"
    "{% endfor %}{% endfor %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MACRO = "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"

CHILD = r"""
import json, sys, time
from transformers import AutoTokenizer
from turngym.chat.format import ChatFormat, TemplateError

tok = AutoTokenizer.from_pretrained(sys.argv[1])
tok.chat_template = sys.argv[2]
started = time.monotonic()
try:
    fmt = ChatFormat(tok, render_timeout_s=2.0)
    fmt.prompt_ids([{"role": "user", "content": "x" * 3000}])
    out = {"outcome": "rendered"}
except TemplateError as exc:
    out = {"outcome": "refused", "message": str(exc)}
out["seconds"] = time.monotonic() - started
print(json.dumps(out))
"""


@pytest.mark.parametrize("template", [NESTED, ON_LONG_INPUT, MACRO], ids=["nested", "on-long-input", "macro"])
def test_a_hostile_template_is_refused_in_one_line_within_its_bound(template, model_path):
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(model_path), template],
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("ChatFormat still rendering the hostile template after 90 s")
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["outcome"] == "refused", out
    assert "\n" not in out["message"] and "2 s" in out["message"]


def test_the_real_template_renders_as_before_under_the_bound(tokenizer):
    from turngym.chat.format import ChatFormat

    fmt = ChatFormat(tokenizer, render_timeout_s=2.0)
    messages = [{"role": "user", "content": "hello " * 500}]
    assert fmt.render(messages, add_generation_prompt=True) == tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
