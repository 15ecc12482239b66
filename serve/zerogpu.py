"""The race on a ZeroGPU Space: every lane decoded inside one `@spaces.GPU` call.

On ZeroGPU (the `spaces` package importable and SPACES_ZERO_GPU set by the Space) a GPU is
attached only while a function decorated with `@spaces.GPU(duration=...)` runs, and that
function runs in another process: what crosses into it and back must pickle, and CUDA tensors
must not come back. So the race's lanes are decoded there, interleaved one forward pass at a
time as on the CPU, and only picklable events come back: (lane, prefill seconds) and (lane,
StepRecord). The app's process fills each lane's trace from them; the lanes then look to the
race exactly like `model_lanes`'s. Everywhere else (`spaces` missing, or a CPU Space with it
installed) `race_lanes` is `model_lanes`: nothing changes.
"""
from __future__ import annotations

import importlib.util
import os
from collections import deque
from collections.abc import Iterable, Iterator

from logitspec.core.trace import StepRecord
from .race import Lane, lane_run, model_lanes
from logitspec.analysis.race import lane_order

# A lane's token on ZeroGPU's GPUs takes well under this; the duration asks for the whole run.
SECONDS_PER_TOKEN = 0.05
MIN_SECONDS, MAX_SECONDS = 20, 120  # ZeroGPU queues longer requests behind shorter ones
# The app's loaded models by name: the GPU call's process is forked from this one and finds
# them here (a model cannot be passed in: its weights must not be pickled).
_LOADED: dict[str, object] = {}


def on_zerogpu() -> bool:
    """Whether this process serves a ZeroGPU Space."""
    flag = os.environ.get("SPACES_ZERO_GPU", "").strip().lower() in ("1", "true", "yes")
    return flag and importlib.util.find_spec("spaces") is not None


def gpu_seconds(name: str, prompt_text: str, methods: list[str], settings) -> int:
    """The duration asked of ZeroGPU, sized to the run: every lane's tokens, bounded."""
    want = len(methods) * settings.max_new_tokens * SECONDS_PER_TOKEN + 10
    return int(min(MAX_SECONDS, max(MIN_SECONDS, want)))


def decode_lanes(name: str, prompt_text: str, methods: list[str], settings) -> Iterator[tuple]:
    """Every lane of a race, one forward pass each in turn: ("prefill", lane, seconds) and
    ("step", lane, StepRecord) events. Runs where the GPU is (ZeroGPU's process)."""
    from logitspec.runner import Run

    lm = _LOADED[name]
    runs = {m: Run(lm, prompt_text, *lane_run(m, settings)) for m in lane_order(methods)}
    steps = {m: iter(run) for m, run in runs.items()}
    sent = set()
    while steps:
        for m in list(steps):
            try:
                step = next(steps[m])
            except StopIteration:
                del steps[m]
                continue
            if m not in sent:
                sent.add(m)
                yield ("prefill", m, runs[m].trace.prefill_seconds)
            yield ("step", m, step)


def _gpu_decode_lanes():
    """`decode_lanes` under `@spaces.GPU`, with a duration sized to each call."""
    import spaces

    return spaces.GPU(duration=gpu_seconds)(decode_lanes)


def gpu_lanes(lm, name: str, prompt_text: str, methods: Iterable[str], settings, decoder=None) -> list[Lane]:
    """Lanes whose steps come from one `decoder` call (ZeroGPU's, unless given) decoding them all.

    Each lane's trace lives here and is filled as its events arrive; events of other lanes
    wait in their lane's queue (the decoder takes the lanes in the race's own order)."""
    from logitspec.runner import Run

    order = lane_order(methods)
    _LOADED[name] = lm
    runs = {m: Run(lm, prompt_text, *lane_run(m, settings)) for m in order}  # traces and token texts only
    events = (decoder or _gpu_decode_lanes())(name, prompt_text, order, settings)
    queues: dict[str, deque] = {m: deque() for m in order}
    ended = [False]

    def steps_of(m: str) -> Iterator[StepRecord]:
        while True:
            while not queues[m]:
                if ended[0]:
                    runs[m].finish()
                    return
                try:
                    kind, lane, value = next(events)
                except StopIteration:
                    ended[0] = True
                    continue
                queues[lane].append((kind, value))
            kind, value = queues[m].popleft()
            if kind == "prefill":
                runs[m].trace.prefill_seconds = value
                continue
            runs[m].trace.steps.append(value)
            yield value

    return [Lane(m, runs[m].trace, steps_of(m), finish=runs[m].finish) for m in order]


def race_lanes(lm, name: str, prompt_text: str, methods: Iterable[str], settings, thread=None) -> list[Lane]:
    """The race's lanes: decoded inside ZeroGPU's GPU call on a ZeroGPU Space, else on the
    model thread `thread` (`model_lanes`)."""
    if on_zerogpu():
        return gpu_lanes(lm, name, prompt_text, methods, settings)
    return model_lanes(lm, prompt_text, methods, settings, thread)
