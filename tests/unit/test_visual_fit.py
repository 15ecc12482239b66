"""Figures drawn for the app fill their container and carry a 16:9 slide; the compact tree
draws what was verified; the figure code stays in short functions, one set of lane colours
and one chromium helper."""
from __future__ import annotations

import ast
import copy
import html
import itertools
from pathlib import Path

import pytest
from helpers.figures import FIXTURE_NAMES, interesting_steps, load, node_ids, trace_named
from helpers.paths import ROOT

import visual
from visual import fit
from visual.explain import ACCEPT_BOX, walkthrough
from visual.explain_words import choose_step
from visual.style import MIN_FONT, MONO_CHAR_EM, lane_color, sub_x
from visual.tree_lanes import lane_count, shown_lanes, wanted_ids
from visual.tree_layout import BOX_H, BOX_W, LABEL_FONT, label_chars, tree_layout, TreeLook

FIGURE_FILES = ("visual/tree.py", "visual/tree_layout.py", "visual/tree_lanes.py", "visual/tree_key.py",
                "visual/baselines.py", "visual/candidates.py", "visual/race.py", "visual/observations.py",
                "visual/explain.py", "visual/fit.py", "visual/render.py", "visual/bench.py", "ui/figures.py")
MAX_LINES = 50


def app_figures(tr, step: int = 3) -> dict:
    return {"tree": visual.tree_figure(tr, step, fit=True, compact=True),
            "tree-full": visual.tree_figure(tr, step, fit=True, compact=False),
            "candidates": visual.candidates_figure(tr, step, fit=True),
            "race": visual.race_figure({"logitspec": tr}, fit=True),
            "topk": visual.topk_hit_figure(tr, fit=True),
            "retrieval": visual.retrieval_success_figure(tr, fit=True),
            "accepted": visual.accepted_hist_figure(tr, fit=True),
            "time": visual.time_breakdown_figure(tr, fit=True),
            "budget": visual.budget_figure(tr, fit=True),
            **{f"explain-{p.key}": p.figure for p in walkthrough(tr, step)}}


@pytest.mark.parametrize("path", FIGURE_FILES)
def test_no_figure_function_runs_over_fifty_lines(path):
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_LINES]
    assert not long, f"{path}: {long}"


def test_app_figures_fill_the_container_and_export_a_16_9_slide():
    tr = load("writing-81")
    assert fit.SLIDE_W * 9 == fit.SLIDE_H * 16
    assert (fit.SLIDE_W * fit.SLIDE_SCALE, fit.SLIDE_H * fit.SLIDE_SCALE) == (1920, 1080)
    for name, fig in app_figures(tr).items():
        assert fig.layout.width is None, name  # Plotly takes the container's width
        assert not fig.layout.title.text, name  # the words are in the HTML caption
        cap = fit.caption_html(fig)
        assert fig.layout.meta["caption"]["title"] in cap and "_{" not in cap, name
        slide = fit.slide_figure(fig)
        assert (slide.layout.width, slide.layout.height) == (fit.SLIDE_W, fit.SLIDE_H), name
        assert slide.layout.title.text, name
        assert len(slide.data) == len(fig.data), name
        for line in slide.layout.title.text.split("<br>"):  # wrapped to the slide's width
            assert fit.text_px(line, slide.layout.title.font.size) <= fit.SLIDE_W - 2 * fit.SLIDE_PAD, (name, line)
        if slide.layout.showlegend:  # beside the plot, never over the title
            assert slide.layout.legend.x > 1 and slide.layout.legend.orientation == "v", name


def test_slide_patch_round_trips_and_removes_what_the_slide_lacks():
    app = {"layout": {"a": 1, "b": 2, "meta": {"x": 1}}, "data": [{"text": ["x"], "uid": "u"}]}
    slide = {"layout": {"a": 1, "c": 3}, "data": [{"text": ["y"]}]}
    patch = fit.slide_patch(app, slide)
    assert patch == {"layout": {"b": None, "c": 3}, "data": [{"text": ["y"], "uid": None}]}
    with pytest.raises(ValueError):
        fit.slide_patch(app, {"layout": {}, "data": []})
    with pytest.raises(ValueError):
        fit.slide_figure(visual.tree_figure(load("writing-81"), 0))  # a page figure has no slide


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_compact_tree_draws_every_verified_node_and_no_pruned_only_lane(name):
    tr = load(name)
    step = max(range(len(tr.steps)), key=lambda i: sum(n.pruned for n in tr.steps[i].tree))
    s = tr.steps[step]
    lanes = shown_lanes(tr, step, compact=True)
    assert shown_lanes(tr, step, compact=False) == list(range(lane_count(tr)))
    fig = visual.tree_figure(tr, step, fit=True, compact=True)
    drawn = set()
    for t in ("accepted path nodes", "verified, rejected nodes", "pruned nodes"):
        drawn |= set(node_ids(trace_named(fig, t)))
    verified = {n.id for n in s.tree if not n.pruned}
    assert verified <= drawn and wanted_ids(s) <= drawn
    full = tree_layout(tr, step)  # every lane: a node's row is its lane
    lane_of = {n.id: full.node(n.id).lane for n in s.tree}
    for lane in lanes[1:]:  # every lane shown but the root's holds something verified or wanted
        assert any(lane_of[i] == lane for i in verified | wanted_ids(s)), lane
    hidden = lane_count(tr) - len(lanes)
    assert fig.layout.meta["hidden"] == hidden and fig.layout.meta["n_lanes"] == len(lanes)
    if hidden:
        assert f"{hidden} empty or pruned-only branch" in fit.caption_html(fig)
    # Rows follow the lanes' order; the accepted path is the trace's path.
    assert node_ids(trace_named(fig, "accepted path nodes")) == list(s.accepted_path)


def test_a_compact_tree_of_many_lanes_fits_about_a_screen():
    tr = load("summarization-241")
    step = max(range(len(tr.steps)), key=lambda i: len(shown_lanes(tr, i, True)))
    assert len(shown_lanes(tr, step, True)) > 40
    compact = visual.tree_figure(tr, step, fit=True, compact=True)
    full = visual.tree_figure(tr, step, fit=True, compact=False)
    assert compact.layout.height <= 900 < full.layout.height


def test_the_browser_can_cut_every_label_the_way_python_does():
    tr = load("summarization-241")
    fig = visual.tree_figure(tr, 31, fit=True, compact=True)
    spec = fig.layout.meta["fit"]["labels"]
    labels = fig.data[spec["trace"]]
    assert labels.name == "token labels" and len(spec["full"]) == len(labels.text)
    lay = tree_layout(tr, 31, look=TreeLook("app", True))
    chars = label_chars(lay.col_px)
    assert chars == int((lay.col_px * spec["box"] - spec["pad"]) // spec["char_px"])
    assert lay.lane_px >= spec["min_lane_px"] and spec["min_lane_px"] * BOX_H == pytest.approx(LABEL_FONT)
    for full, shown in zip(spec["full"], labels.text):
        want = "" if chars < 2 else (full if len(full) <= chars else full[:chars - 1] + "…")
        assert shown == want.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_slide_labels_fit_their_boxes(name):
    tr = load(name)
    shown_any = False
    for step in interesting_steps(tr):
        slide = fit.slide_figure(visual.tree_figure(tr, step, fit=True))
        lay = slide.layout
        plot_w = lay.width - lay.margin.l - lay.margin.r
        plot_h = lay.height - lay.margin.t - lay.margin.b
        col_px = plot_w / (lay.xaxis.range[1] - lay.xaxis.range[0])
        lane_px = plot_h / abs(lay.yaxis.range[0] - lay.yaxis.range[1])
        shown = [t for t in trace_named(slide, "token labels").text if t]
        shown_any |= bool(shown)
        for text in shown:
            n = len(text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
            assert n * LABEL_FONT * 0.602 <= BOX_W * col_px and LABEL_FONT <= BOX_H * lane_px, (step, text)
        assert trace_named(slide, "accepted path nodes").hovertext is None  # a picture has nothing to hover
    assert shown_any, "no slide of these steps shows a token label"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_an_explain_slide_says_its_panels_sentences_under_its_title(name):
    tr = load(name)
    for p in walkthrough(tr, choose_step(tr).step):
        slide = fit.slide_figure(p.figure)
        assert fit.plain(slide.layout.title.text.replace("<br>", " ")) == fit.plain(sub_x(p.title)), p.key
        said = fit.plain(slide.layout.title.subtitle.text.replace("<br>", " "))
        assert said == fit.plain(sub_x(html.escape(" ".join(p.sentences), quote=False))), p.key
        assert p.figure.layout.meta["panel"] == p.key and not p.figure.layout.meta["caption"]["subtitle"], p.key


def test_the_browser_can_cut_the_accepted_tokens_the_way_python_does():
    tr = load("writing-81")
    step = choose_step(tr).step
    fig = next(p.figure for p in walkthrough(tr, step) if p.key == "accept")
    spec = fig.layout.meta["fit"]["labels"]
    s = tr.steps[step]
    assert len(spec["full"]) == len(fig.data[spec["trace"]].text) == len(s.tokens) + (s.bonus is not None)
    cols = fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]
    chars = int((fit.APP_PLOT_W / cols * spec["box"] - spec["pad"]) // spec["char_px"])
    assert spec["box"] == ACCEPT_BOX and spec["char_px"] == MIN_FONT * MONO_CHAR_EM
    for full, shown in zip(spec["full"], fig.data[spec["trace"]].text):
        want = "" if chars < 2 else (full if len(full) <= chars else full[:chars - 1] + "…")
        assert shown == want.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    ticks = fig.layout.meta["fit"]["ticks"]
    assert set(fig.layout.xaxis.tickvals) <= set(ticks["vals"]) and ticks["vals"][0] in fig.layout.xaxis.tickvals


def test_thinned_ticks_keep_their_distance_and_the_marked_ones():
    vals = list(range(0, 65))
    for unit_px in (3.0, 7.5, 14.0, 40.0):
        shown = fit.thin_ticks(vals, unit_px, 19.6, keep=[0, 37])
        assert 0 in shown and 37 in shown
        assert all((b - a) * unit_px >= 19.6 - 1e-9 for a, b in itertools.pairwise(shown))
    assert fit.thin_ticks(vals, 40.0, 19.6) == vals  # room for every tick


def test_candidate_ticks_on_a_slide_are_readable():
    tr = load("summarization-241")
    fig = visual.candidates_figure(tr, 31, fit=True)
    spec = fig.layout.meta["fit"]["ticks"]
    slide = fit.slide_figure(fig)
    truth_rank = fig.layout.meta["truth_rank"]
    ticks = list(slide.layout.xaxis.tickvals)
    assert 0 in ticks and truth_rank in ticks and len(ticks) < len(spec["vals"])
    plot_w = slide.layout.width - slide.layout.margin.l - slide.layout.margin.r
    unit = plot_w / (slide.layout.xaxis.range[1] - slide.layout.xaxis.range[0])
    assert all((b - a) * unit >= spec["min_px"] - 1e-9 for a, b in itertools.pairwise(ticks))


def test_captions_keep_token_text_as_text():
    tr = copy.deepcopy(load("writing-81"))
    root = tr.steps[3].root
    tr.token_texts[str(root)] = "<script>x</script>"
    cap = fit.caption_html(visual.tree_figure(tr, 3, fit=True))
    assert "<script>" not in cap and "&lt;script&gt;" in cap


def test_wrapped_text_fits_and_keeps_every_word():
    text = "a few words " * 30 + "<br>and a second part"
    wrapped, lines = fit.wrap_html(text, 300, 16)
    assert lines == wrapped.count("<br>") + 1 > 2
    assert all(fit.text_px(line, 16) <= 300 for line in wrapped.split("<br>"))
    assert wrapped.replace("<br>", " ").split() == text.replace("<br>", " ").split()


def test_bench_figures_use_the_race_lane_colours():
    from visual import bench

    methods = ("vanilla", "pld", "logitspec-static", "logitspec")
    row = {"speedup_vs_vanilla": 1.0, "mean_accepted_tokens": 1.5, "drafted_tokens_per_step": 2.0}
    report = {"settings": {"categories": ["qa"], "model": "m", "device": "cpu", "dtype": "float32",
                           "max_new_tokens": 8, "repeats": 1, "threads": 2},
              "methods": {m: {"overall": dict(row), "per_category": {"qa": dict(row)}} for m in methods}}
    fig = bench._bars(report, "speedup_vs_vanilla", "t", "y")
    assert {t.name: t.marker.color for t in fig.data} == {m: lane_color(m, m) for m in methods}
    drafted = bench.drafted_figure(report)
    assert drafted.data[0].marker.color == lane_color("logitspec", "logitspec")


def test_the_speed_up_bars_show_their_range_over_the_repetitions():
    from visual import bench

    row = {"speedup_vs_vanilla": 1.3, "mean_accepted_tokens": 1.5, "speedup_min": 1.2, "speedup_max": 1.35}
    report = {"settings": {"categories": ["qa"], "model": "m", "device": "cpu", "dtype": "float32",
                           "max_new_tokens": 8, "repeats": 3, "threads": 2},
              "methods": {"pld": {"overall": dict(row), "per_category": {"qa": dict(row)}}}}
    fig = bench._bars(report, "speedup_vs_vanilla", "t", "y")
    bars = fig.data[0].error_y
    assert list(bars.array) == pytest.approx([0.05, 0.05]) and list(bars.arrayminus) == pytest.approx([0.1, 0.1])
    assert "the range over them" in fig.layout.title.text
    del report["methods"]["pld"]["per_category"]["qa"]["speedup_min"]  # one repetition: no range to draw
    fig = bench._bars(report, "speedup_vs_vanilla", "t", "y")
    assert fig.data[0].error_y.array is None and "range" not in fig.layout.title.text


def test_one_chromium_helper_draws_every_screenshot():
    from visual import bench, render
    from helpers.browser import ARGS

    assert bench.screenshot is render.screenshot
    assert ARGS == render.BROWSER_ARGS
    cmd = render.chromium_command("/usr/bin/chromium", "/tmp/p", "file:///x.html", Path("/tmp/x.png"), 800, 600)
    assert cmd[0] == "/usr/bin/chromium" and set(render.BROWSER_ARGS) <= set(cmd)
    assert "--window-size=800,600" in cmd and not hasattr(render, "have_browser")


def test_bench_figures_name_the_cpu_and_a_held_instruction_set():
    from visual.bench import machine

    s = {"device": "cpu", "hardware": "AMD EPYC, 2 cores (x86_64)", "instruction_sets": ["avx512f", "avx2", "fma"],
         "isa_caps": {"torch_cpu_capability": "AVX512"}}
    assert machine(s) == "AMD EPYC, 2 cores (x86_64) · AVX-512"
    s["isa_caps"] = {"ATEN_CPU_CAPABILITY": "avx2", "torch_cpu_capability": "AVX2"}
    assert machine(s) == "AMD EPYC, 2 cores (x86_64) · AVX-512 CPU held to AVX2"
    assert machine({"device": "cpu", "hardware": "x", "instruction_sets": ["avx2", "fma"]}) == "x · AVX2"
    assert machine({"device": "cpu", "hardware": "y (aarch64)", "instruction_sets": ["asimd"]}) == "y (aarch64) · NEON"
    assert machine({"device": "cuda"}) == "cuda"
