"""rollout.view's comparison page in a real headless Chromium (Debian's package): it renders, its links
lead somewhere, its CSS-only filters hide what they should, and nothing from a crafted file runs as script.

`make install` and `.ci/run` install chromium when they run as root; elsewhere these tests skip, saying so.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rollout import view
from rollout.trajectory import Trajectory, TurnRecord

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium; make install does it as root)",
)

# Each payload, were it ever parsed as markup or run, sets the title or adds an element the DOM dump shows.
PAYLOADS = [
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "'><svg onload=\"document.title='pwned'\">",
    '"><iframe srcdoc="<script>parent.document.title=\'pwned\'</script>">',
    "</style><script>document.title='pwned'</script>",
    "<a id=pwned href=\"javascript:document.title='pwned'\">x</a>",
    "<meta http-equiv=refresh content=\"0;url=javascript:document.title='pwned'\">",
]


def _chromium(tmp_path: Path, url: str, *extra: str) -> str:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *extra,
        url,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.attrs: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        values = dict(attrs)
        self.attrs.extend(name for name, _ in attrs)
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "a" and values.get("href"):
            self.hrefs.append(values["href"])
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def _dom(text: str) -> _Dom:
    parsed = _Dom()
    parsed.feed(text)
    return parsed


def _crafted(tokenizer, success: bool, seed: int) -> dict:
    """A line a stranger could share: every free-text field carries markup, the tokens decode to it too."""
    payload = " ".join(PAYLOADS)
    ids = tokenizer(payload, add_special_tokens=False)["input_ids"]
    t = Trajectory(
        prompt_ids=ids[:20],
        response_ids=ids,
        loss_mask=[1] * len(ids),
        logprobs=[-0.5] * len(ids),
        env_id=f"guess-number-v0{PAYLOADS[0]}",
        seed=seed,
        group=PAYLOADS[1],
        termination=PAYLOADS[2],
        success=success,
        error=None,
        turns=[TurnRecord(start=0, end=len(ids), reward=1.0 if success else 0.0, format_error=PAYLOADS[3])],
        messages=[{"role": "assistant", "content": payload}],
        metrics={"behaviour": {PAYLOADS[4]: 1}},
        extra_fields={"advantages": [0.5] * len(ids), PAYLOADS[5]: PAYLOADS[6]},
    )
    return {**t.to_dict(), "model": PAYLOADS[6], "env_kwargs": {PAYLOADS[0]: PAYLOADS[1]}}


@pytest.fixture
def page(tmp_path, model_path, tokenizer) -> Path:
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    for path, wins in ((before, {1}), (after, {0, 1})):
        lines = [_crafted(tokenizer, s in wins, s) for s in range(3)]
        path.write_text("".join(json.dumps({**line, "tokenizer": str(model_path)}) + "\n" for line in lines))
    out = tmp_path / "compare.html"
    assert view.main([str(before), str(after), "-o", str(out), "--labels", f"{PAYLOADS[0]},after"]) == 0
    return out


def test_the_harness_sees_a_script_that_runs(tmp_path):
    # Without this control, a browser that ran no script at all would pass the tests below.
    control = tmp_path / "control.html"
    control.write_text("<!doctype html><title>safe</title><script>document.title='pwned'</script><p>x</p>")
    assert _dom(_chromium(tmp_path, control.as_uri(), "--dump-dom")).title == "pwned"


def test_crafted_files_render_and_nothing_in_them_runs(tmp_path, page):
    text = page.read_text()
    dumped = _chromium(tmp_path, page.as_uri(), "--dump-dom")
    dom = _dom(dumped)
    assert dom.title.startswith("<script>") and "pwned" not in dom.title.replace(PAYLOADS[0], "")
    assert dom.title == _dom(text).title  # the title is the escaped text, unchanged by any script
    for tag in ("script", "img", "svg", "iframe", "style"):
        assert dom.tags.count(tag) == _dom(text).tags.count(tag) == (1 if tag == "style" else 0), tag
    assert "pwned" not in dom.ids and not [a for a in dom.attrs if a.startswith("on")]
    assert "javascript:" not in " ".join(dom.hrefs)
    assert dom.tags.count("meta") == 2  # charset and the policy: none came from the file
    assert "<h2>Summary</h2>" in dumped and dumped.count('class="pair"') == 3


def test_every_link_leads_to_an_element_of_the_rendered_page(tmp_path, page):
    dom = _dom(page.read_text())
    internal = [h for h in dom.hrefs if h.startswith("#")]
    assert len(internal) == 3 and internal == dom.hrefs  # the index's, and no link leaves the page
    # Loaded at each link, the browser's DOM has the element the link names.
    for href in internal:
        rendered = _dom(_chromium(tmp_path, page.as_uri() + href, "--dump-dom"))
        assert href[1:] in rendered.ids and rendered.title == dom.title


def _green_pixels(png: Path) -> int:
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png.read_bytes())).convert("RGB")).reshape(-1, 3)
    return int(
        sum((pixels == colour).all(axis=1).sum() for colour in ((0xD8, 0xF5, 0xD0), (0xEE, 0xF3, 0xB8)))
    )


def test_the_css_filters_hide_episodes_in_the_browser(tmp_path, page):
    # A filter is a checked radio button; a page with "regressed" checked (there are none) shows no tokens.
    text = page.read_text()
    assert re.search(r"id='fs-all' checked", text)
    filtered = tmp_path / "filtered.html"
    filtered.write_text(
        text.replace("id='fs-all' checked", "id='fs-all'").replace(
            "id='fs-regressed'", "id='fs-regressed' checked"
        )
    )
    size = "--window-size=1200,2400"
    _chromium(tmp_path, page.as_uri(), "--screenshot=" + str(tmp_path / "all.png"), size)
    _chromium(tmp_path, filtered.as_uri(), "--screenshot=" + str(tmp_path / "none.png"), size)
    # Generated tokens are green (the policy let the stylesheet in); filtered out, only the legend's
    # swatches are left.
    shown, hidden = _green_pixels(tmp_path / "all.png"), _green_pixels(tmp_path / "none.png")
    assert shown > 50_000 and hidden < shown / 20, (shown, hidden)
