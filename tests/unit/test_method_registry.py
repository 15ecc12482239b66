"""One registry of methods: a drafter module declares its method (its class's `method` and `build`),
the lane table gives it a row with its node sources and words, and the decoders, the tree's colours,
hover words and legend, the race's checkboxes and the debugger all follow from those two; the methods
the CLI and the app offer are the table's decoders, held equal to the registry's."""
from __future__ import annotations

import textwrap

import pytest

from helpers.tiny_models import char_lm
from logitspec.analysis import lanes
from logitspec.analysis.lanes import LANES, ROOT, LaneSpec, MethodWords, NodeSource, lane, node_sources, sources_of
from logitspec.core.drafter import Draft, Drafter
from logitspec.core.settings import DecodeSettings
from logitspec.core.tree import chain_tree
from logitspec.drafters import rest
from logitspec.decoders import REGISTRY, declared_drafters, make_drafter, registry
from logitspec.core.trace import RunTrace
from logitspec.runner import run_trace
from serve.race import lane_run
from visual.method_words import WORDS
from visual.style import PALETTE, node_color_key
from visual.tree_key import LEGEND_NAMES
from visual.tree_layout import ORIGIN_WORDS

PROMPT = "the cat sat on the mat, the cat sat on the mat, the cat sat"


def test_every_method_has_a_drafter_a_lane_words_and_node_sources():
    offered = lanes.methods()  # each row's decoder once, in the rows' order
    assert sorted(REGISTRY.methods) == sorted(offered)  # every lane's method has a drafter, and each drafter a lane
    declared = [c.method for c in declared_drafters()]
    assert len(set(declared)) == len(declared) and set(declared) == set(offered) - {"vanilla", "logitspec"}
    for m in offered:
        row = lane(m)
        assert row is not None and row.method == m, m
        assert m in WORDS, m
        srcs = sources_of(m)
        assert srcs[0] == ROOT and (m == "vanilla") == (len(srcs) == 1), m
        for src in srcs:  # drawn from the row alone: its colour, hover words and legend name
            assert PALETTE[src.key] == src.colour and ORIGIN_WORDS[src.key] == src.words, src
            assert LEGEND_NAMES[src.key] == src.legend, src


@pytest.fixture(scope="module")
def raced(tiny_llama):
    """Every lane of the table over one prompt; REST's datastore holds the prompt (the tiny model has none)."""
    before = vars(tiny_llama).get(rest.ATTRIBUTE)
    lm = char_lm(tiny_llama)
    rest.attach(tiny_llama, store=rest.Datastore(lm.tokenizer.encode(PROMPT)))
    s = DecodeSettings(max_new_tokens=24)
    yield {ln.name: run_trace(lm, PROMPT, *lane_run(ln.name, s)) for ln in LANES}
    vars(tiny_llama)[rest.ATTRIBUTE] = before


def test_each_lane_draws_only_the_sources_its_row_names(raced):
    assert set(raced) == {ln.name for ln in LANES}
    for name, trace in raced.items():
        declared = {src.key for src in sources_of(trace.method)}
        drawn = {node_color_key(n.origin, n.rank) for s in trace.steps for n in s.tree}
        assert drawn <= declared, (name, drawn - declared)
        assert trace.tokens == raced["vanilla"].tokens, name


class ToyDrafter(Drafter):
    """A lane defined here alone: one chain of the root repeated."""

    method = "toy"

    def __init__(self, s: DecodeSettings, model=None) -> None:
        self.n = s.pld_tokens

    def draft(self, root, logits, pool, context_len) -> Draft:
        return Draft(nodes=chain_tree(root, [root] * self.n, "toy-chain"))


def test_a_new_lane_is_its_drafter_and_its_row(tmp_path, monkeypatch):
    pkg = tmp_path / "toylanes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text(textwrap.dedent("""
        from logitspec.core.drafter import Drafter

        class ToyDrafter(Drafter):
            method = "toy"

            def __init__(self, s, model=None):
                self.s = s
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import toylanes

    found = declared_drafters(toylanes)  # a module of its own is found by the method it declares
    assert [c.method for c in found] == ["toy"]
    methods = registry([*declared_drafters(), ToyDrafter])
    assert methods.methods == (*REGISTRY.methods, "toy")
    made = make_drafter("toy", DecodeSettings(pld_tokens=3), None, methods)
    assert isinstance(made, ToyDrafter) and made.n == 3
    with pytest.raises(ValueError, match="toy"):
        make_drafter("nope", DecodeSettings(), None, methods)
    with pytest.raises(ValueError, match="unknown method 'toy'"):
        make_drafter("toy", DecodeSettings())  # the product's registry holds no toy
    chain = NodeSource("toy-chain", "the toy's chain: the root again", "toy chain", "#123456")
    table = (*LANES, LaneSpec(name="toy", method="toy", tree=None, drafts=False, label="a toy", colour="#654321",
                              race=True, sources=(chain,)))
    assert sources_of("toy", table) == (ROOT, chain) and node_sources(table)["toy-chain"] is chain
    assert sources_of("toy") == sources_of("logitspec")  # a method the table lacks: LogitSpec's words


def test_a_toy_method_is_its_drafter_module_and_its_row(tmp_path, monkeypatch):
    """A drafter in a module of its own and one row of the table (its words in it): the registry, the
    race's checkboxes, the colour and legend lookups and the debugger's words all find it."""
    from ui.form import lane_boxes, race_inputs
    from visual.method_words import words_of
    from visual.style import lane_color
    from visual.tree_key import key_items

    pkg = tmp_path / "toymethods"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.py").write_text("from logitspec.core.drafter import Drafter\n\n\nclass ToyDrafter(Drafter):\n"
                                "    method = 'toy'\n\n    def __init__(self, s, model=None):\n        self.s = s\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toymethods

    chain = NodeSource("toy-chain", "the toy's chain: the root again", "toy chain", "#123456")
    words = MethodWords(name="the toy", intro="The toy looks nothing up.", filters=())
    row = LaneSpec(name="toy", method="toy", tree=None, drafts=False, label="a toy", colour="#654321", race=True,
                   sources=(chain,), words=words)
    before = lanes.methods()
    monkeypatch.setattr(lanes, "LANES", (*LANES, row))
    assert lanes.methods() == (*before, "toy")  # what the CLI, the workbench and the app offer
    found = registry([*declared_drafters(), *declared_drafters(toymethods)], order=lanes.methods())
    assert found.methods == lanes.methods() and type(found.make("toy", DecodeSettings())).method == "toy"
    box = next(b for b in lane_boxes() if b.lane == "toy")  # the race's checkbox and API argument
    assert (box.name, box.label, box.elem_id) == ("with_toy", "Also race a toy", "with-toy")
    assert race_inputs().count("with_toy") == 1
    assert lane_color("toy") == "#654321" and words_of("toy") is words  # its colour, the debugger's words
    trace = RunTrace("toy", "", "", [1], DecodeSettings().to_dict())
    legend = [(item.name, item.fill) for item in key_items(trace)]
    assert legend[:2] == [(ROOT.legend, ROOT.colour), ("toy chain", "#123456")]  # the draft tree's legend
