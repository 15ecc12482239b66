"""The lanes: every way of decoding the race, the bench, the figures and the scripts offer, in
one table. A lane is a decoder and a tree; its label and colour are how every view shows it.
Every reader looks the table up when it is called, so a lane added here is found everywhere."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.settings import DecodeSettings
from ..core.trace import RunTrace


@dataclass(frozen=True)
class LaneSpec:
    """One row of the table."""

    name: str  # the key a bench report, a race and a trace file use
    method: str  # the decoder (logitspec.decoders)
    tree: str | None  # a tree the lane always uses ("static"), or None: the run's own setting
    drafts: bool  # whether it drafts a tree at all (vanilla and prompt lookup's chain do not size one)
    label: str  # as the bench's tables and the figures name it
    colour: str
    race: bool  # offered as a lane of the app's race


LANES: tuple[LaneSpec, ...] = (
    LaneSpec("vanilla", "vanilla", None, False, "vanilla", "#8C8C8C", True),
    LaneSpec("pld", "pld", None, False, "prompt lookup", "#E69F00", True),
    LaneSpec("logitspec", "logitspec", None, True, "LogitSpec (cost tree)", "#0072B2", True),
    LaneSpec("logitspec-static", "logitspec", "static", True, "LogitSpec, the paper's static tree", "#56B4E9", True),
    # Paul Tol's purple, apart from Okabe-Ito's eight, which all mean something else here.
    LaneSpec("recycling", "recycling", None, True, "Token Recycling (cost tree)", "#AA4499", True),
    # Its static 80-node template: a pale twin, as LogitSpec's static tree is.
    LaneSpec("recycling-static", "recycling", "static", True, "Token Recycling, static 80-node tree", "#E2B6DA", False),
    # The hybrid: Paul Tol's indigo, apart from both parents.
    LaneSpec("logitspec+recycling", "logitspec+recycling", None, True, "LogitSpec + recycling", "#332288", False),
    # The paper's other baselines, in Paul Tol's olive and wine: apart from every colour above.
    LaneSpec("lookahead", "lookahead", None, False, "Lookahead decoding", "#999933", True),
    LaneSpec("rest", "rest", None, False, "REST", "#882255", True),
    # The rivals published since, in Paul Tol's teal and rose: apart from every colour above.
    LaneSpec("racer", "racer", None, True, "RACER (cost tree)", "#44AA99", True),
    LaneSpec("suffix", "suffix", None, False, "SuffixDecoding", "#CC6677", True),
)


def lane(name: str) -> LaneSpec | None:
    return next((ln for ln in LANES if ln.name == name), None)


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
        return found.label
    base = ln or lane(trace.method)
    said = base.label if base else name
    return f"{said}, {ran[1]} tree" if ran[1] else said  # a decoder and tree no row holds


def ran_tree(trace: RunTrace) -> str | None:
    """The tree a trace's decoder sized ("cost" or "static"); None for one that sizes none."""
    ln = lane(trace.method)
    if ln is None or not ln.drafts:
        return None
    return str(trace.settings.get("tree") or DecodeSettings().tree)


def _runs(ln: LaneSpec) -> tuple[str, str | None]:
    """(decoder, tree) a row stands for: a row that follows the run's setting stands for the default tree."""
    return ln.method, (ln.tree or DecodeSettings().tree) if ln.drafts else None


def names() -> list[str]:
    return [ln.name for ln in LANES]


def race_order() -> list[str]:
    """The race's lanes, vanilla first."""
    return [ln.name for ln in LANES if ln.race]


def run_spec(name: str, tree: str | None = None) -> tuple[str, str | None]:
    """(decoder, tree) a lane runs with, given the run's tree setting (DecodeSettings' by default)."""
    ln = lane(name)
    if ln is None:
        return name, tree
    if not ln.drafts:
        return ln.method, None
    return ln.method, ln.tree or tree or DecodeSettings().tree


def colour(name: str, method: str | None = None) -> str | None:
    """A lane's colour by its name, else by its decoder's own lane; None for neither."""
    ln = lane(name) or (lane(method) if method else None)
    return ln.colour if ln else None
