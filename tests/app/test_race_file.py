"""A whole race goes out as one file and comes back as the same page: the download after a race
holds every lane and why it stopped, and uploading it fills the same table rows, the same verdict,
an explorer that offers every lane and the same debugger. A one-lane trace still opens, and a
broken race file is refused in one line. The app's own handlers, no server; the races replay
real lanes recorded on the bundled model (tests/helpers/race.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers.paths import FIXTURES
from helpers.race import replayed_race
from logitspec.analysis.race import RaceFile, load_race, read_race
from logitspec.core.trace import RunTrace
from ui.debugger import OUTCOMES
from ui.files import shipped_traces
from ui.page import Page
from ui.services import Services
from ui.view import View
from visual.verdict import RECORDED_WORDS

FOUR_LANES = FIXTURES / "races" / "summarization-242-four-lanes.json"
LM = SimpleNamespace(name="SmolLM2-135M-Instruct", device="cpu")  # what the race's end names
STOP_AFTER = 30  # steps of all lanes together before Stop, in a stopped race


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


def _race(stop_after: int | None) -> View:
    """A race of the four recorded lanes, stopped after `stop_after` steps when given."""
    return replayed_race(load_race(FOUR_LANES)[0], stop_after)


def _downloaded(ui: Page, view: View) -> tuple[dict, Path]:
    """The race's end on the page, and the file its download button serves."""
    out = ui.race._final_outputs(view, OUTCOMES, LM)
    button = out[ui.files.download]
    return out, Path(button.value if isinstance(button.value, str) else button.value["path"])


def _rows(counters: str) -> list[str]:
    return re.findall(r"<tr data-lane=.*?</tr>", counters)


def _verdict(counters: str) -> str:
    found = re.search(r"<p class='verdict'>(.*?)</p>", counters)
    return found.group(1) if found else ""


@pytest.mark.parametrize("stop_after", [None, STOP_AFTER], ids=["finished", "stopped"])
def test_a_race_downloads_whole_and_uploads_back_to_the_same_page(ui, stop_after):
    view = _race(stop_after)
    lanes = list(view.traces)
    ended, path = _downloaded(ui, view)
    # The name says it is a race, of which lanes, how far it got, and whether it was stopped.
    assert path.name.startswith("logitspec-race-" + "_".join(lanes)), path.name
    # how far: LogitSpec's count, the one the verdict's "Stopped after" says
    assert path.name.endswith(f"-{len(view.traces['logitspec'].tokens)}tok.json"), path.name
    if stop_after is not None:
        assert f"after {len(view.traces['logitspec'].tokens)} tokens" in _verdict(ended[ui.race.counters]), ended[ui.race.counters]
    assert ("-stopped-" in path.name) == (stop_after is not None), path.name
    got = read_race(path)
    assert list(got.lanes) == lanes and got.stop_reason == view.stop_reason and got.machine
    assert all(got.lanes[n].to_dict() == view.traces[n].to_dict() for n in lanes)

    up = ui.files.upload_trace(str(path), OUTCOMES, View())
    shown = up[ui.state]
    assert set(shown.traces) == set(lanes) and shown.stop_reason == view.stop_reason
    assert _rows(up[ui.race.counters]) == _rows(ended[ui.race.counters]) and len(_rows(ended[ui.race.counters])) == 4
    verdict = _verdict(ended[ui.race.counters])
    # the same verdict, judged on the machine the file was recorded on rather than "this CPU"
    recorded = verdict.replace("on this CPU", RECORDED_WORDS).replace(" here)", " there)")
    assert verdict and _verdict(up[ui.race.counters]) == recorded and "this CPU" not in recorded
    assert verdict.startswith("Stopped after") == (stop_after is not None), verdict
    assert "A recorded race on" in up[ui.race.counters]  # where it ran, as the file says
    pick = up[ui.explorer.lane_pick]
    assert [v for _, v in pick.choices] == lanes and pick.visible and pick.value == "logitspec"
    for c in ui.debugger.trace_components:  # the same debugger: its table, note and what-if
        assert repr(up[c]) == repr(ended[c]), c
    assert up[ui.explorer.step_label] == ended[ui.explorer.step_label]


def test_every_lane_of_an_uploaded_race_opens_in_the_explorer(ui):
    view = _race(None)
    _, path = _downloaded(ui, view)
    shown = ui.files.upload_trace(str(path), OUTCOMES, View())[ui.state]
    for name, trace in view.traces.items():
        out = ui.pick_lane(name, OUTCOMES, shown)
        assert out[ui.explorer.step_label].startswith(f"### Step 0 (steps 0–{len(trace.steps) - 1})"), name
        assert shown.trace.to_dict() == trace.to_dict()


def test_a_one_lane_trace_still_opens_as_one_lane(ui, tmp_path):
    view = _race(None)
    _, path = _downloaded(ui, view)
    alone = tmp_path / "logitspec-alone.json"
    read_race(path).lanes["logitspec"].save(alone)  # as `python -m logitspec generate --save-trace` writes one
    assert read_race(alone) == RaceFile({"logitspec": RunTrace.load(alone)})
    for one in (alone, shipped_traces()[0]):
        out = ui.files.upload_trace(str(one), OUTCOMES, View())
        shown = out[ui.state]
        assert len(shown.traces) == 1 and shown.stop_reason is None, one
        assert out[ui.race.status_md].startswith(f"**Exploring** {one.name}: "), out[ui.race.status_md]
        assert not out[ui.explorer.lane_pick].visible and _verdict(out[ui.race.counters]) == ""


def _broken(path: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    """Broken copies of a downloaded race file: name -> (file, what the refusal says)."""
    text = path.read_text(encoding="utf-8")
    out = {"truncated": (text[: len(text) // 3], "truncated")}
    for name, reason in (("paused", "paused"), ("number", 3), ("list", ["stopped"])):
        data = json.loads(text)
        data["stop_reason"] = reason
        out[name] = (json.dumps(data), "stop_reason")
    data = json.loads(text)
    data["lanes"]["pld"]["steps"] = "none"
    out["lane"] = (json.dumps(data), "pld lane")
    files = {}
    for name, (body, says) in out.items():
        files[name] = (tmp / f"{name}-race.json", says)
        files[name][0].write_text(body, encoding="utf-8")
    return files


def _refused(ui: Page, bad: Path, says: str, shown: View) -> None:
    out = ui.files.upload_trace(str(bad), OUTCOMES, shown)
    note = out[ui.files.upload_note]
    assert note.startswith(f"**Not opened:** {bad.name}: ") and says in note, note
    assert "\n" not in note and "Traceback" not in note, note
    assert ui.state not in out and shown.shown and out[ui.files.upload] is None  # the view stays, the box empties


def test_a_broken_race_file_is_refused_in_one_line_and_the_view_stays(ui, tmp_path, monkeypatch):
    _, path = _downloaded(ui, _race(STOP_AFTER))
    shown = ui.files.upload_trace(str(shipped_traces()[0]), OUTCOMES, View())[ui.state]
    for bad, says in _broken(path, tmp_path).values():
        _refused(ui, bad, says, shown)
    monkeypatch.setenv("LOGITSPEC_TRACE_BYTES", str(path.stat().st_size - 1))  # Limits.trace_bytes, just under it
    _refused(ui, path, "the limit is", shown)


def test_the_download_says_it_is_the_race_its_size_and_when_no_upload_takes_it_back(ui, monkeypatch):
    view = _race(STOP_AFTER)
    out, path = _downloaded(ui, view)
    size = path.stat().st_size
    assert size < 1000 * 2**10  # a short race: its size in kB, never "0.0 MB"
    kb = f"{round(size / 1024)} kB"
    assert out[ui.files.download].label == f"Download this race (JSON, {kb})", out[ui.files.download].label
    limit = size // 2
    monkeypatch.setenv("LOGITSPEC_TRACE_BYTES", str(limit))  # Limits.trace_bytes under the file's size
    over = ui.race._final_outputs(view, OUTCOMES, LM)[ui.files.download].label
    assert over == f"Download this race (JSON, {kb}: over the {round(limit / 1024)} kB an upload takes)", over
