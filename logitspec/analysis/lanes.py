"""The lanes: every way of decoding the race, the bench, the figures and the scripts offer, in
one table. A lane is a decoder and a tree; its label and colour are how every view shows it, its
node sources (where its drafter's tree nodes come from) are how the draft tree names and colours
them, and its words are what the race's checkbox, the race figure and the debugger say of it.
Every reader reads the table (most when called; the palette and the tree's hover words and legend
when imported), so a lane added here is found everywhere.
A lane of a method that exists (another tree) is one row and no other line; a new method is its
drafter (logitspec/drafters/, whose class declares the method's name, the registry's key in
logitspec/decoders.py), its settings, and its row here naming that method (docs/how-it-works.md,
"Adding a lane"): `methods()` is the list the CLI, the workbench and the app offer."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..core.settings import DecodeSettings
from ..core.trace import RunTrace


@dataclass(frozen=True)
class NodeSource:
    """Where a draft node came from (TreeNode.origin): the tree's hover words, legend name and colour."""

    key: str  # the TreeNode.origin its drafter writes (LogitSpec's "g2": one key per rank bucket)
    words: str
    legend: str
    colour: str


GPU_PASS = "what a GPU verifies in one pass"
ROOT = NodeSource("root", "root x_{i+1}: the previous pass's argmax, committed", "root x_{i+1}", "#CC79A7")
# LogitSpec's: the g1 lookup in Okabe-Ito's orange, a g2 branch in blues that pale with its rank.
LOGITSPEC_SOURCES = (
    NodeSource("g1", "g1 continuation (lookup after x_{i+1})", "g1 continuation", "#E69F00"),
    NodeSource("g2-top", "g2 branch, candidate rank 1-8", "g2 branch, rank 1-8", "#0072B2"),
    NodeSource("g2-mid", "g2 branch, candidate rank 9-32", "g2 branch, rank 9-32", "#56B4E9"),
    NodeSource("g2-tail", "g2 branch, candidate rank 33+", "g2 branch, rank 33+", "#A8D5F2"),
)
PLD_SOURCES = (NodeSource("pld", "prompt lookup continuation", "prompt lookup chain", "#E69F00"),)
# Token Recycling's matrix, node and lane alike: Paul Tol's purple.
RECYCLING_SOURCES = (NodeSource(
    "recycled", "recycled: a successor an earlier pass predicted after its parent's token (Token Recycling's matrix)",
    "recycled: from the matrix", "#AA4499"),)
# Lookahead's pool in its lane's olive, its Jacobi window pale; REST's continuations in its lane's wine.
LOOKAHEAD_SOURCES = (
    NodeSource("pool", "Lookahead's pool: an n-gram its Jacobi window made, starting with the root",
               "Lookahead: pool n-gram", "#999933"),
    NodeSource("window", "Lookahead's Jacobi window: computed in the same pass to grow the pool, never accepted",
               "Lookahead: Jacobi window", "#DDDDAA"),
)
REST_SOURCES = (NodeSource(
    "retrieved", "REST: a continuation retrieved from the datastore after the context's longest matching suffix",
    "REST: retrieved", "#882255"),)
# RACER's in its lane's teal, SuffixDecoding's in its lane's rose, each full and pale.
RACER_SOURCES = (
    NodeSource("automaton", "RACER's automaton match: a frequent continuation of a suffix of the text, the root "
               "included, in the context's n-grams", "RACER: automaton match", "#A2D5CC"),
    NodeSource("copied", "RACER's copied logits: a token among the top-k the model gave the last time it ran on its "
               "parent's token", "RACER: copied logits", "#44AA99"),
)
SUFFIX_SOURCES = (
    NodeSource("prompt-tree", "SuffixDecoding's prompt tree: what followed the matched suffix in this prompt and "
               "answer so far", "Suffix: prompt tree", "#CC6677"),
    NodeSource("output-tree", "SuffixDecoding's output tree: what followed the matched suffix in earlier outputs of "
               "this model", "Suffix: output tree", "#E8B3BB"),
)


@dataclass(frozen=True)
class Column:
    """A debugger column: its header and what its hover says it holds."""

    header: str
    tip: str


@dataclass(frozen=True)
class MethodWords:
    """How the app speaks of one method's lookups (visual/method_words.py)."""

    name: str  # as a sentence names the method
    intro: str  # the debugger's line over its filter (markdown)
    filters: tuple[tuple[str, str], ...]  # (the filter's words, the StepRecord.outcome it keeps)
    outcomes: dict[str, str] = field(default_factory=dict)  # StepRecord.outcome -> what it means
    lookup: Column | None = None  # what the step's first lookup tried
    matched: Column | None = None  # the length it matched
    second: Column | None = None  # LogitSpec's g2 lookups
    guesses: str = ""  # where its guesses come from, in the lesson's plain words (its comparison of methods)


@dataclass(frozen=True, kw_only=True)
class LaneSpec:
    """One row of the table, written with its fields' names."""

    name: str  # the key a bench report, a race and a trace file use
    method: str  # the decoder (logitspec.decoders)
    tree: str | None  # a tree the lane always uses ("static"), or None: the run's own setting
    drafts: bool  # whether it drafts a tree at all (vanilla and prompt lookup's chain do not size one)
    label: str  # as the bench's tables and the figures name it
    colour: str
    race: bool  # offered as a lane of the app's race
    sources: tuple[NodeSource, ...] = ()  # where its tree's nodes come from, beside the root
    # What the views say of it beyond its label, "{label}" and "{capacity}" filled in where they stand.
    box: str = "Also race {label}"  # its race checkbox (ui/form.py), the form's capacity
    box_key: str = ""  # the race API's with_<key> and the box's element id with-<key>; "": its name's
    note: str = ""  # under its label at the race figure's line end (visual/race.py), its trace's capacity
    # The budget replay's ordering its tree follows (analysis/budget.ORDERINGS: "paper" is the paper's
    # own tree, whose size the views give as a GPU's pass), drawn in its colour; "" for none.
    replay: str = ""
    words: MethodWords | None = None  # its method's debugger words; None: visual/method_words.py's WORDS entry


LANES: tuple[LaneSpec, ...] = (
    LaneSpec(name="vanilla", method="vanilla", tree=None, drafts=False, label="vanilla", colour="#8C8C8C",
             race=True),
    LaneSpec(name="pld", method="pld", tree=None, drafts=False, label="prompt lookup", colour="#E69F00", race=True,
             sources=PLD_SOURCES, box="Also race {label} (guesses copied from earlier in the text)", replay="pld"),
    LaneSpec(name="logitspec", method="logitspec", tree=None, drafts=True, label="LogitSpec (cost tree)",
             colour="#0072B2", race=True, sources=LOGITSPEC_SOURCES, replay="cost"),
    LaneSpec(name="logitspec-static", method="logitspec", tree="static", drafts=True,
             label="LogitSpec, the paper's static tree", colour="#56B4E9", race=True, sources=LOGITSPEC_SOURCES,
             box=f"Also race the paper's tree ({{capacity}} tokens, {GPU_PASS})", box_key="static",
             note=f"<br>{{capacity}} tokens:<br>{GPU_PASS}", replay="paper"),
    # Paul Tol's purple, apart from Okabe-Ito's eight, which all mean something else here.
    LaneSpec(name="recycling", method="recycling", tree=None, drafts=True, label="Token Recycling (cost tree)",
             colour="#AA4499", race=True, sources=RECYCLING_SOURCES,
             box="Also race Token Recycling (drafts from the successors past passes predicted)",
             note="<br>drafts the successors<br>past passes predicted"),
    # Its static 80-node template: a pale twin, as LogitSpec's static tree is.
    LaneSpec(name="recycling-static", method="recycling", tree="static", drafts=True,
             label="Token Recycling, static 80-node tree", colour="#E2B6DA", race=False, sources=RECYCLING_SOURCES),
    # The hybrid: Paul Tol's indigo, apart from both parents.
    LaneSpec(name="logitspec+recycling", method="logitspec+recycling", tree=None, drafts=True,
             label="LogitSpec + recycling", colour="#332288", race=False,
             sources=LOGITSPEC_SOURCES + RECYCLING_SOURCES),
    # The paper's other baselines, in Paul Tol's olive and wine: apart from every colour above.
    LaneSpec(name="lookahead", method="lookahead", tree=None, drafts=False, label="Lookahead decoding",
             colour="#999933", race=True, sources=LOOKAHEAD_SOURCES,
             box="Also race Lookahead decoding (n-grams from a Jacobi window, checked in the same pass)"),
    LaneSpec(name="rest", method="rest", tree=None, drafts=False, label="REST", colour="#882255", race=True,
             sources=REST_SOURCES,
             box="Also race REST (drafts retrieved from Python's standard library; built at first use)"),
    # The rivals published since, in Paul Tol's teal and rose: apart from every colour above.
    LaneSpec(name="racer", method="racer", tree=None, drafts=True, label="RACER (cost tree)", colour="#44AA99",
             race=True, sources=RACER_SOURCES),
    # Its draft's shape by DecodeSettings.suffix_tree, a tree by default (vLLM's `suffix` drafts a chain).
    LaneSpec(name="suffix", method="suffix", tree=None, drafts=False, label="SuffixDecoding (tree)",
             colour="#CC6677", race=True, sources=SUFFIX_SOURCES),
)


def lane(name: str, table: tuple[LaneSpec, ...] | None = None) -> LaneSpec | None:
    return next((ln for ln in (LANES if table is None else table) if ln.name == name), None)


def sources_of(method: str, table: tuple[LaneSpec, ...] | None = None) -> tuple[NodeSource, ...]:
    """The node sources of a method's trees, the root first: its own lane's row's; LogitSpec's for a
    method the table lacks (a trace from a newer version)."""
    ln = lane(method, table) or lane("logitspec", table)
    return (ROOT, *(ln.sources if ln else ()))


def node_sources(table: tuple[LaneSpec, ...] | None = None) -> dict[str, NodeSource]:
    """Every node source of the table by its key, the root first."""
    out = {ROOT.key: ROOT}
    for ln in LANES if table is None else table:
        out.update((src.key, src) for src in ln.sources)
    return out


def label(name: str, trace: RunTrace | None = None) -> str:
    """How every view names a lane: with the trace it ran, the row of the decoder and tree that
    trace records (a file's lane "logitspec" that ran the static tree is the static tree's row);
    without one, its own row's label, else the name itself (a lane the table lacks)."""
    ln = lane(name)
    if trace is None:
        return ln.label if ln else name
    ran = trace.method, ran_tree(trace)
    found = next((x for x in ([ln] if ln else []) + list(LANES) if _runs(x) == ran), None)
    if found is not None:
        return suffix_shape(found.label, trace)
    base = ln or lane(trace.method)
    said = base.label if base else name
    return f"{said}, {ran[1]} tree" if ran[1] else said  # a decoder and tree no row holds


def suffix_shape(said: str, trace: RunTrace) -> str:
    """A SuffixDecoding run named by the draft it drew: a trace that drafted chains says so."""
    if trace.method == "suffix" and trace.settings.get("suffix_tree") is False:
        return said.replace("(tree)", "(chain)")
    return said


def ran_tree(trace: RunTrace) -> str | None:
    """The tree a trace's decoder sized ("cost" or "static"); None for one that sizes none."""
    ln = lane(trace.method)
    if ln is None or not ln.drafts:
        return None
    return str(trace.settings.get("tree") or DecodeSettings().tree)


def _runs(ln: LaneSpec) -> tuple[str, str | None]:
    """(decoder, tree) a row stands for: a row that follows the run's setting stands for the default tree."""
    return ln.method, (ln.tree or DecodeSettings().tree) if ln.drafts else None


def replaying(ordering: str) -> LaneSpec | None:
    """The row whose tree the budget replay's `ordering` follows ("paper", "cost", "pld")."""
    return next((ln for ln in LANES if ln.replay == ordering), None)


def papers_tree(name: str) -> bool:
    """Whether a lane runs the paper's own tree, whose size the views give as a GPU's pass."""
    ln = lane(name)
    return ln is not None and ln.replay == "paper"


def methods(table: tuple[LaneSpec, ...] | None = None) -> tuple[str, ...]:
    """Each decoder of the table once, in its rows' order: the methods the CLI, the workbench and the app
    offer and check. Each is a name a drafter declares (tests/unit/test_method_registry.py holds them
    equal to the registry's, which sits beside this table and cannot read it)."""
    return tuple(dict.fromkeys(ln.method for ln in (LANES if table is None else table)))


def names() -> list[str]:
    return [ln.name for ln in LANES]


def race_order() -> list[str]:
    """The race's lanes, vanilla first."""
    return [ln.name for ln in LANES if ln.race]


def lane_run(name: str, settings: DecodeSettings | None = None) -> tuple[str, DecodeSettings]:
    """The decoder and settings a lane runs with, in the race, the bench and the scripts alike: a row
    with a tree of its own runs it at DecodeSettings' own capacity (the paper's 64, what its label and
    the race's checkbox promise), whatever the run's other lanes use; any other row runs its decoder at
    the run's settings, and a name the table lacks is a decoder of that name at the run's settings."""
    s = settings or DecodeSettings()
    ln = lane(name)
    if ln is None or ln.tree is None:
        return (ln.method if ln else name), s
    return ln.method, replace(s, tree=ln.tree, capacity=DecodeSettings().capacity)


def run_spec(name: str, tree: str | None = None) -> tuple[str, str | None]:
    """(decoder, tree) of lane_run given the run's tree setting (DecodeSettings' by default); None
    for a decoder that sizes no tree."""
    ln = lane(name)
    if ln is None:
        return name, tree
    method, s = lane_run(name, DecodeSettings(tree=tree) if tree else None)
    return method, s.tree if ln.drafts else None


def colour(name: str, method: str | None = None) -> str | None:
    """A lane's colour by its name, else by its decoder's own lane; None for neither."""
    ln = lane(name) or (lane(method) if method else None)
    return ln.colour if ln else None
