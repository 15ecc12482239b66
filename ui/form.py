"""The race's form, generated once from DecodeSettings and Limits, and the race API's inputs in
one ordered list that the page wires and the tests and scripts call with."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import gradio as gr

from logitspec.analysis import lanes
from logitspec.core.limits import MAX_TEMPERATURE, Limits, checked_settings
from logitspec.core.settings import INERT, DecodeSettings
from visual.data import OUTCOMES_LOGITSPEC

RACED_ALWAYS = ("vanilla", "logitspec")  # the race's two fixed lanes; every other race lane is a checkbox


@dataclass(frozen=True)
class Setting:
    """One decoder parameter of the form: its API name, the DecodeSettings field it fills, and
    how it is drawn (`make(setting, limits, defaults)`)."""

    name: str
    field: str  # a DecodeSettings field, or "processors.<option>" for one of generate's processors
    make: Callable[["Setting", Limits, DecodeSettings], gr.components.Component]
    label: str
    shown: dict = field(default_factory=dict)  # info and elem_id, as the component takes them
    later: bool = False  # added to the race API after the lane boxes: its place comes after theirs

    def component(self, lim: Limits, s: DecodeSettings):
        return self.make(self, lim, s)

    @property
    def processor(self) -> str | None:
        return self.field.split(".", 1)[1] if self.field.startswith("processors.") else None

    def default(self, s: DecodeSettings | None = None):
        s = s or DecodeSettings()
        if self.processor:
            return s.processors.get(self.processor, INERT[self.processor])
        value = getattr(s, self.field)
        return list(value) if isinstance(value, tuple) else value


def _count(limit: str):
    """A slider from 1 to the limit of that name."""
    return lambda f, lim, s: gr.Slider(1, getattr(lim, limit), value=f.default(s), step=1, label=f.label, **f.shown)


def _ngram(f: Setting, lim: Limits, s: DecodeSettings):
    return gr.CheckboxGroup(list(range(1, lim.ngram + 1)), value=f.default(s), label=f.label, **f.shown)


def _tree(f: Setting, lim: Limits, s: DecodeSettings):
    info = (f"cost: sized by the measured cost of a tree token on this hardware, at most {s.cpu_capacity} tokens "
            "on a CPU; static: the paper's fixed capacity")
    return gr.Radio(["cost", "static"], value=f.default(s), label=f.label, info=info, **f.shown)


def _temperature(f: Setting, lim: Limits, s: DecodeSettings):
    return gr.Slider(0, MAX_TEMPERATURE, value=f.default(s), step=0.05, label=f.label, **f.shown)


def _top_p(f: Setting, lim: Limits, s: DecodeSettings):
    return gr.Slider(0.01, 1, value=f.default(s), step=0.01, label=f.label, **f.shown)


def _penalty(f: Setting, lim: Limits, s: DecodeSettings):
    return gr.Slider(1.0, 2.0, value=f.default(s), step=0.05, label=f.label, **f.shown)


def _seed(f: Setting, lim: Limits, s: DecodeSettings):
    return gr.Number(value=f.default(s), precision=0, minimum=0, label=f.label, **f.shown)


SETTINGS: tuple[Setting, ...] = (
    Setting("k", "k", _count("k"), "k: next-next candidates from the logits"),
    Setting("capacity", "capacity", _count("capacity"), "Tree capacity (tokens, root included)"),
    Setting("ngram", "ngram_sizes", _ngram, "n-gram sizes"),
    Setting("continuation", "continuation", _count("continuation"), "g1 continuation length"),
    Setting("max_new", "max_new_tokens", _count("max_new_tokens"), "Max new tokens", {"elem_id": "max-new"}),
    Setting("tree", "tree", _tree, "Tree sizing"),
    Setting("temperature", "temperature", _temperature, "Temperature",
            {"info": "0: greedy; above 0 every lane samples, still token for token alike", "elem_id": "temperature"}),
    Setting("top_p", "top_p", _top_p, "Top-p (when sampling)", {"elem_id": "top-p"}),
    Setting("seed", "seed", _seed, "Seed (when sampling)",
            {"info": "the same seed repeats a race exactly", "elem_id": "seed"}),
    Setting("repetition_penalty", "processors.repetition_penalty", _penalty, "Repetition penalty",
            {"info": "above 1: a token already in the text is less likely; every lane applies it at each "
                     "tree node with that node's own text, so the lanes stay token for token alike",
             "elem_id": "repetition-penalty"}, later=True),
)


@dataclass(frozen=True)
class LaneBox:
    """A checkbox that adds a lane of logitspec/analysis/lanes.py to the race."""

    lane: str
    name: str  # the API's argument
    label: str
    elem_id: str


def _box_words(lane: str, s: DecodeSettings) -> tuple[str, str, str]:
    """(API name, label, element id) of a lane's checkbox: its row's words, the form's capacity in them."""
    ln = lanes.lane(lane)
    key = ln.box_key or "".join(c if c.isalnum() else "_" for c in lane)
    return f"with_{key}", ln.box.format(label=lanes.label(lane), capacity=s.capacity), f"with-{key}"


def lane_boxes(s: DecodeSettings | None = None) -> list[LaneBox]:
    """A checkbox for each race lane beyond the fixed two, in the lane table's order."""
    s = s or DecodeSettings()
    return [LaneBox(n, *_box_words(n, s)) for n in lanes.race_order() if n not in RACED_ALWAYS]


def race_inputs() -> list[str]:
    """The race API's arguments in order. Inputs added later come after the older ones, so API
    callers that predate them keep their places: the debugger's outcomes came before the static
    and recycling lanes, and a lane added to the table comes last."""
    boxes = [b.name for b in lane_boxes()]
    first, later = boxes[:1], boxes[1:]
    return ["prompt", "model", *first, *(f.name for f in SETTINGS if not f.later), "outcomes", *later,
            *(f.name for f in SETTINGS if f.later)]


def race_lanes_of(values: dict) -> list[str]:
    """The lanes a race runs: the fixed two, then each lane whose checkbox is ticked."""
    return list(RACED_ALWAYS) + [b.lane for b in lane_boxes() if values.get(b.name)]


def settings_from(values: dict) -> DecodeSettings:
    """Checked DecodeSettings from the form's values by API name (InputError otherwise); a value
    left out keeps DecodeSettings' default, but an empty n-gram choice is refused."""
    given = {f.field: values.get(f.name) for f in SETTINGS if not f.processor}
    given["ngram_sizes"] = values.get("ngram") or []
    given["processors"] = {f.processor: v for f in SETTINGS
                           if f.processor and (v := values.get(f.name)) is not None and v != INERT[f.processor]}
    return checked_settings(given)


def default_values(**given) -> dict:
    """The race API's arguments by name, in order: `given`, else DecodeSettings' defaults, every lane
    box off and every retrieval outcome listed."""
    s = DecodeSettings()
    values = {"prompt": "", "model": "bundled", **{b.name: False for b in lane_boxes(s)},
              **{f.name: f.default(s) for f in SETTINGS}, "outcomes": list(OUTCOMES_LOGITSPEC)}
    unknown = set(given) - set(values)
    if unknown:
        raise TypeError(f"not inputs of the race: {sorted(unknown)}")
    return {name: {**values, **given}[name] for name in race_inputs()}


def sampling_note(settings: dict) -> str:
    """How a sampled run can be repeated (empty for greedy runs and traces made before sampling)."""
    if not settings.get("temperature"):
        return ""
    return (f"Sampled at temperature {settings['temperature']:g}, top-p {settings.get('top_p', 1.0):g}, "
            f"seed {settings.get('seed', 0)}: the same seed repeats this race token for token. ")


def by_name(fn: Callable, names: list[str]) -> Callable:
    """A streamed handler `fn(values, view, request)` as Gradio calls it: one argument per input,
    named in the API as `names`, then the view and the request."""
    n = len(names)

    def handler(*args):
        yield from fn(dict(zip(names, args[:n])), args[n], args[n + 1])

    params = [inspect.Parameter(x, inspect.Parameter.POSITIONAL_OR_KEYWORD) for x in [*names, "view", "request"]]
    handler.__signature__ = inspect.Signature(params)
    handler.__annotations__ = {"request": gr.Request}
    handler.__name__, handler.__doc__ = fn.__name__, fn.__doc__
    return handler
