"""A shared trajectories JSONL is untrusted: the viewer must never turn its fields into markup or script."""

import json
from html.parser import HTMLParser

import pytest

from rollout import view
from rollout.trajectory import Trajectory, TurnRecord

PAYLOAD = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>'\"<b>"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.csp: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend(attrs)
        values = dict(attrs)
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp.append(values.get("content") or "")


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    return parser


def _assert_inert(page: str) -> None:
    parsed = _parse(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "b" not in parsed.tags
    assert not [name for name, _ in parsed.attrs if name.startswith("on")]
    assert parsed.csp, "the page sets no Content-Security-Policy"
    policy = {d.split()[0]: d.split()[1:] for d in (p.strip() for p in parsed.csp[0].split(";")) if d}
    assert policy.get("default-src") == ["'none'"] and "script-src" not in policy
    assert "'unsafe-inline'" not in policy.get("style-src", [])
    # The policy comes before any content the file supplies, so nothing can precede it.
    assert page.index("Content-Security-Policy") < page.index("<h1>")


def _hostile_line() -> dict:
    good = Trajectory(prompt_ids=[1, 2], response_ids=[3], loss_mask=[1], logprobs=[0.0], env_id="g", seed=0)
    good.turns = [TurnRecord(start=0, end=1, reward=1.0)]
    return good.to_dict()


@pytest.mark.parametrize(
    "field, value",
    [
        ("seed", PAYLOAD),
        ("success", PAYLOAD),
        ("env_id", ["<script>"]),
        ("termination", {"x": "<script>"}),
        ("prompt_ids", ["<script>"]),
        ("loss_mask", [7]),
        ("turns", [{"start": 0, "end": 1, "reward": PAYLOAD}]),
        ("turns", [{"start": "0", "end": 1}]),
        ("metrics", PAYLOAD),
        ("failed", "yes"),
        ("seed", True),
    ],
)
def test_from_dict_refuses_wrong_types(field, value):
    line = _hostile_line()
    line[field] = value
    with pytest.raises(TypeError, match=field):
        Trajectory.from_dict(line)


def test_from_dict_round_trips_a_real_line():
    line = _hostile_line()
    back = Trajectory.from_dict(json.loads(json.dumps(line)))
    assert back.to_dict() == line


def test_view_refuses_a_crafted_file_in_one_line(tmp_path, capsys):
    line = _hostile_line()
    line["seed"] = PAYLOAD
    path = tmp_path / "shared.jsonl"
    path.write_text(json.dumps(line) + "\n")
    out = tmp_path / "shared.html"
    assert view.main([str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "seed" in err
    assert not out.exists()


def test_every_field_is_escaped_even_on_objects_built_in_memory():
    # Objects that never went through from_dict (a library user's own) are escaped all the same.
    t = Trajectory(
        prompt_ids=[1],
        response_ids=[2],
        loss_mask=[1],
        logprobs=[0.0],
        turns=[TurnRecord(start=0, end=1, reward=0.5)],
        env_id=PAYLOAD,
        seed=PAYLOAD,  # type: ignore[arg-type]
        group=PAYLOAD,
        termination=PAYLOAD,
        success=PAYLOAD,  # type: ignore[arg-type]
        error=PAYLOAD,
    )

    class Tok:
        def decode(self, ids, skip_special_tokens=False):
            return PAYLOAD

    page = view.render_html([t], Tok(), title=PAYLOAD)
    _assert_inert(page)
    assert page.count("&lt;script&gt;") >= 8
