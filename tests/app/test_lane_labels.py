"""A lane's label comes from what ran: a shipped trace that recorded the paper's static tree is
named so in the explorer's heading, the method picker, the counters' table, the race figure's
legend and the status line, wherever it is opened (a link, the menu, an upload); a lane that ran
the cost tree keeps that name. The app's own handlers, no server."""
from __future__ import annotations

import html
import re

import pytest

from logitspec.analysis.lanes import label
from logitspec.analysis.race import load_race
from logitspec.core.trace import RunTrace
from ui.debugger import OUTCOMES
from ui.files import RECORDED_RACE, TRACES_DIR
from ui.page import Page
from ui.services import Services
from ui.view import View

STATIC = "LogitSpec, the paper's static tree"
COST = "LogitSpec (cost tree)"


@pytest.fixture(scope="module")
def ui() -> Page:
    page = Page(Services.create())
    page.build()
    return page


def _words(out: dict, ui: Page) -> dict[str, str]:
    """What the page shows a lane's name in, as plain text."""
    legend = [t.name for t in out[ui.race.race_fig.plot].data if t.name]
    return {"heading": out[ui.explorer.step_label],
            "table": html.unescape(re.sub(r"<[^>]+>", "", out[ui.race.counters])),
            "legend": html.unescape(" | ".join(legend)),
            "picker": " | ".join(c[0] for c in out[ui.explorer.lane_pick].choices),
            "status": out[ui.race.status_md]}


@pytest.mark.parametrize("name", ["coding-122.json", "summarization-242.json", "translation-161.json"])
def test_a_shipped_static_tree_trace_is_named_for_the_static_tree_everywhere(ui, name):
    trace = RunTrace.load(TRACES_DIR / name)
    assert trace.method == "logitspec" and trace.settings["tree"] == "static"  # what the file records
    out = ui.files.open_shipped(name, OUTCOMES, View())
    for where, said in _words(out, ui).items():
        if where == "status":
            continue  # a one-lane file's status names no lane
        assert STATIC in said and "cost tree" not in said, (where, said)


def test_a_link_to_a_static_tree_trace_heads_its_step_with_the_static_tree(ui):
    class Request:  # the parts of gr.Request a link is read from
        query_params = {"trace": "coding-122", "step": "5", "tab": "explorer"}
        headers: dict = {}

    out = ui.files.initial_view(OUTCOMES, Request())
    assert out[ui.explorer.step_label].startswith("### Step 5 ") and STATIC in out[ui.explorer.step_label]
    assert COST not in html.unescape(re.sub(r"<[^>]+>", "", out[ui.race.counters]))


def test_a_race_names_each_lane_for_the_tree_it_ran(ui, tmp_path):
    lanes, _ = load_race(RECORDED_RACE)
    assert lanes["logitspec"].settings["tree"] == "cost"
    out = ui.files.open_trace(str(RECORDED_RACE), OUTCOMES, View())
    for where, said in _words(out, ui).items():
        assert COST in said and STATIC not in said, (where, said)
    # The same race with its LogitSpec lane run on the static tree: named so, under its own key.
    lanes["logitspec"].settings = {**lanes["logitspec"].settings, "tree": "static"}
    from logitspec.analysis.race import save_race

    path = tmp_path / "static-race.json"
    save_race(lanes, path)
    out = ui.files.open_trace(str(path), OUTCOMES, View())
    for where, said in _words(out, ui).items():
        assert STATIC in said and COST not in said, (where, said)


@pytest.mark.parametrize("method, tree, said", [
    ("logitspec", "static", STATIC), ("logitspec", "cost", COST),
    ("recycling", "static", "Token Recycling, static 80-node tree"), ("recycling", "cost", "Token Recycling (cost tree)"),
    ("logitspec+recycling", "static", "LogitSpec + recycling, static tree"),
    ("pld", "static", "prompt lookup"), ("rest", "cost", "REST"), ("lookahead", "static", "Lookahead decoding"),
])
def test_the_label_is_the_decoder_and_tree_the_trace_records(method, tree, said):
    trace = RunTrace(method, "tiny", "", [1], {"tree": tree})
    assert label(method, trace) == said
    assert label("some-file-key", trace) == said  # whatever key a file gave the lane
