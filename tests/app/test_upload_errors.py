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
def test_the_pages_upload_limit_is_a_set_files_and_a_trace_is_refused_by_its_size_unread(app_url, tmp_path):
    import httpx

    from logitspec.analysis.race import read_race
    from logitspec.core.limits import Limits
    from logitspec.core.trace import TraceFileError

    lim = Limits.from_env()
    config = httpx.get(app_url + "config", timeout=30).json()
    # The server stops reading past the page's limit, a set file's; the trace box refuses a trace over
    # the trace limit before sending it (tests/browser/test_debug_browser.py), and a trace that
    # reaches the server all the same is refused by its size before a byte of it is parsed.
    assert config["max_file_size"] == max(lim.trace_bytes, lim.set_bytes) > lim.trace_bytes
    big = tmp_path / "big.json"
    big.write_bytes(b"{" + b" " * lim.trace_bytes)  # not JSON: parsed, it would say so instead
    with pytest.raises(TraceFileError, match="the limit is"):
        read_race(big, lim.trace_bytes)
