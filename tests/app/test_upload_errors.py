"""Opening a trace file through the launched app: a bad file is named in the status line and
beside the upload box, which is emptied, and changes nothing else; a file over the limit is
refused before it is read whole."""
from __future__ import annotations

import pytest

from helpers.paths import ROOT

OUTCOMES = ["g1 matched", "g2 rescued", "both failed"]
BAD = {  # file text -> what the status line must say
    '{"format": "logitspec-trace/2", "steps": [{"index": 0, "meth': "truncated",
    '{"hello": "world"}': "not a LogitSpec trace",
    '{"format": "logitspec-trace/2", "steps": [{"index": 0, "colour": 1}]}': "wrong shape",
}


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def _is_left_alone(value) -> bool:
    """An output the handler did not send (gr.skip: an update carrying no value and no props, the
    form the client gets for it): the page keeps what it showed."""
    if not isinstance(value, dict) or value.get("__type__") != "update":
        return False
    return set(value) <= {"__type__", "props"} and ("props" not in value or _is_left_alone(value["props"]))


@pytest.mark.slow
def test_a_bad_upload_says_why_and_leaves_the_view(client, tmp_path):
    from gradio_client import handle_file

    shipped = sorted((ROOT / "traces").glob("*.json"))[0]
    good = client.predict(handle_file(str(shipped)), OUTCOMES, api_name="/open_trace")
    assert any(isinstance(r, str) and r.startswith("**Exploring**") and shipped.name in r for r in good)
    for i, (text, says) in enumerate(BAD.items()):
        bad = tmp_path / f"bad{i}.json"
        bad.write_text(text, encoding="utf-8")
        out = client.predict(handle_file(str(bad)), OUTCOMES, api_name="/open_trace")
        # The upload's own outputs come last: its note, box, the shipped menu and the download.
        *shown, note, box, menu, download = out
        status = [r for r in shown if isinstance(r, str) and r.startswith("**Not opened:**")]
        assert len(status) == 1 and says in status[0] and "\n" not in status[0], out
        assert note == status[0] and box is None and menu is None  # said beside the box, which is emptied
        others = [r for r in shown if r is not status[0]] + [download]
        assert len(others) == len(good) - 4 and all(_is_left_alone(r) for r in others), others


@pytest.mark.slow
def test_a_trace_over_the_limit_is_refused_before_it_is_read(app_url):
    import httpx

    from logitspec.core.limits import Limits

    limit = Limits.from_env().trace_bytes
    config = httpx.get(app_url + "config", timeout=30).json()
    assert config["max_file_size"] == limit  # the page's upload box refuses larger files itself
    r = httpx.post(app_url + "gradio_api/upload", files={"files": ("big.json", b" " * (limit + 1))}, timeout=60)
    assert r.status_code == 413, r.text
