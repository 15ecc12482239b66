"""Serving state for many users: the model allow-list and cache, run cancellation, trace uploads.

No UI code lives here; the app wires these into events. A public deployment must only load
the models its deployer allowed, keep serving when one fails to load, stop a user's run
when they press Stop or leave, and refuse uploaded traces it cannot trust.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .limits import InputError, Limits
from .trace import RunTrace

BUNDLED = "bundled"
BUNDLED_LABEL = "SmolLM2-135M-Instruct (bundled, CPU-friendly)"
# Vocabulary sizes of models whose traces ship or are common, to check uploads offline.
KNOWN_VOCAB = {"SmolLM2-135M-Instruct": 49152}


# ---------------------------------------------------------------- model allow-list and cache

def allowed_models(env: dict[str, str] | None = None) -> list[str]:
    """The models a user may pick: the bundled one, then LOGITSPEC_MODELS (comma-separated hub ids).

    LOGITSPEC_DEFAULT_MODEL is allowed too, and comes first when set, so a GPU deployment
    can make a larger model the default.
    """
    env = os.environ if env is None else env
    ids = [m.strip() for m in env.get("LOGITSPEC_MODELS", "").split(",") if m.strip()]
    default = env.get("LOGITSPEC_DEFAULT_MODEL", "").strip() or BUNDLED
    out: list[str] = []
    for m in [default, BUNDLED, *ids]:
        if m not in out:
            out.append(m)
    return out


def model_label(name: str) -> str:
    return BUNDLED_LABEL if name == BUNDLED else name


def check_model_choice(name: object, env: dict[str, str] | None = None) -> str:
    """The model name if it is on the allow-list; anything else (a path, an unknown id) is refused."""
    allowed = allowed_models(env)
    if not isinstance(name, str) or name not in allowed:
        raise InputError(f"model {name!r} is not offered here; choose one of: {', '.join(allowed)}")
    return name


@dataclass
class ModelStatus:
    state: str  # "idle" | "loading" | "ready" | "failed"
    message: str
    seconds: float | None = None  # load time once ready


class ModelCache:
    """Loads allowed models once each and keeps the most recent few; thread-safe.

    A failed load is remembered with its reason (shown to users) and retried on the next
    request, so a passing network or disk fault does not stick.
    """

    def __init__(self, loader=None, keep: int = 2, warm=None) -> None:
        self._loader = loader
        self._warm = warm  # run once on each freshly loaded model, before it is served
        self._keep = keep
        self._models: dict[str, object] = {}
        self._status: dict[str, ModelStatus] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(name, threading.Lock())

    def status(self, name: str) -> ModelStatus:
        with self._guard:
            return self._status.get(name, ModelStatus("idle", "not loaded yet"))

    def get(self, name: str):
        """The loaded model, loading it first if needed; raises ModelLoadError with the reason."""
        from .models import ModelLoadError, load_model
        from .threads import configure_threads, model_thread, refreeze_heap

        with self._lock(name):
            with self._guard:
                if name in self._models:
                    return self._models[name]
                self._status[name] = ModelStatus("loading", f"loading {model_label(name)}…")
            t0 = time.perf_counter()
            try:
                # On the model thread, like every decoding step (see ModelThread): the thread
                # count is a per-thread setting of OpenMP, and c(n) must be measured where
                # the steps will run.
                run = model_thread().call
                run(configure_threads)
                lm = run(self._loader or load_model, name)
                if self._warm is not None:
                    with self._guard:
                        self._status[name] = ModelStatus(
                            "loading", f"reading what a draft-tree token costs on this hardware "
                                       f"for {model_label(name)}…")
                    run(self._warm, lm)
            except ModelLoadError as e:
                with self._guard:
                    self._status[name] = ModelStatus("failed", str(e))
                raise
            except Exception as e:  # any other fault must leave the app serving, with the reason
                msg = f"could not load model {name!r}: {type(e).__name__}: {e}"
                with self._guard:
                    self._status[name] = ModelStatus("failed", msg)
                raise ModelLoadError(msg) from e
            secs = time.perf_counter() - t0
            with self._guard:
                self._models[name] = lm
                self._status[name] = ModelStatus("ready", f"{model_label(name)} ready on {lm.device} "
                                                 f"(loaded in {secs:.0f} s)", secs)
                dropped = False
                while len(self._models) > self._keep:  # drop the oldest to bound memory
                    old = next(iter(self._models))
                    del self._models[old]
                    self._status[old] = ModelStatus("idle", "unloaded to make room")
                    dropped = True
            if dropped:
                refreeze_heap()  # the dropped model's cycles were frozen with it at load
            return lm

    def loaded(self, name: str):
        """The model if it is already loaded, else None (never loads)."""
        with self._guard:
            return self._models.get(name)

    def preload(self, name: str) -> threading.Thread:
        """Start loading `name` in a background thread; failures land in status()."""

        with self._guard:  # "loading" from this call on, so no caller reads a stale state
            if name not in self._models:
                self._status[name] = ModelStatus("loading", f"loading {model_label(name)}…")

        def work() -> None:
            try:
                self.get(name)
            except Exception:
                pass  # the reason is in status(name)

        t = threading.Thread(target=work, name=f"load-{name}", daemon=True)
        t.start()
        return t


def warm_cost_curves(lm, capacity: int | None = None, background: bool = True):
    """Give the cost-aware tree its forward-cost curves at load time without measuring:
    the curve stored by an earlier start on this machine, else a default shape, which
    decoding corrects as it goes. Curves not stored are measured in the background, a pass
    at a time while the model thread is idle (see logitspec.calibration); returns that
    thread, or None when nothing is left to measure.
    """
    from .calibration import BackgroundCalibration, start_curves
    from .verify import free_head_rows

    free_head_rows(lm.model)  # measured once per model, before any timed step
    if capacity is None:  # every tree a visitor may ask for, so no race measures in front
        capacity = Limits.from_env().capacity
    starts = start_curves(lm.model, max_context=1024, capacity=capacity)
    if not background or all(s.stored for s in starts):
        return None
    job = BackgroundCalibration(lm.model, starts)
    job.start()
    return job


# ---------------------------------------------------------------- cancellation per user

class StopSignals:
    """One stop flag per browser session's run: set by Stop, by leaving the page, or by a new run.

    Run arms the flag the moment it is clicked (`start`), before the run waits in the queue
    or for the model, and the run takes that same flag when it begins (`claim`): a Stop
    pressed while it waited is seen before its first step.
    """

    def __init__(self) -> None:
        self._events: dict[str, threading.Event] = {}
        self._running: set[threading.Event] = set()
        self._guard = threading.Lock()

    def start(self, session: str) -> threading.Event:
        """A fresh flag for a new run of `session` (the previous run's flag is set)."""
        ev = threading.Event()
        with self._guard:
            old = self._events.get(session)
            if old is not None:
                old.set()
            self._events[session] = ev
        return ev

    def claim(self, session: str) -> threading.Event:
        """The flag armed for this session's run (already set if Stop came first), or a fresh one."""
        with self._guard:
            ev = self._events.get(session)
            if ev is not None and ev not in self._running:
                self._running.add(ev)
                return ev
        ev = self.start(session)
        with self._guard:
            self._running.add(ev)
        return ev

    def stop(self, session: str) -> bool:
        """Ask the session's run to stop; True when there was one not yet stopped."""
        with self._guard:
            ev = self._events.get(session)
        if ev is None or ev.is_set():
            return False
        ev.set()
        return True

    def finish(self, session: str, ev: threading.Event) -> None:
        """Forget the flag of a run that ended (unless a newer run replaced it)."""
        with self._guard:
            self._running.discard(ev)
            if self._events.get(session) is ev:
                del self._events[session]

    def running(self) -> int:
        """Runs that have begun and not yet ended, across all sessions."""
        with self._guard:
            return len(self._running)


def run_deadline(limits: Limits | None = None) -> float:
    """time.monotonic() value after which a run must stop."""
    return time.monotonic() + (limits or Limits.from_env()).run_seconds


# ---------------------------------------------------------------- uploaded traces

def read_trace_upload(path: str | Path, limits: Limits | None = None, vocab_size: int | None = None) -> RunTrace:
    """A RunTrace from an uploaded file, or InputError saying what is wrong with it.

    Refuses files over Limits.trace_bytes, text that is not (complete) JSON, JSON that is
    not a trace, and token ids outside the vocabulary: `vocab_size` when given, else the
    known size for the trace's model, else the token texts the trace carries.
    """
    lim = limits or Limits.from_env()
    p = Path(path)
    size = p.stat().st_size
    if size > lim.trace_bytes:
        raise InputError(f"the trace file is {size / 1e6:.1f} MB; the limit is {lim.trace_bytes / 1e6:.1f} MB")
    raw = p.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"the trace file is not text (bad byte at position {e.start})") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) - 1:
            raise InputError("the trace file is truncated: the JSON ends early") from e
        raise InputError(f"the trace file is not JSON ({e.msg} at line {e.lineno})") from e
    return trace_from_data(data, vocab_size)


def trace_from_data(data: object, vocab_size: int | None = None) -> RunTrace:
    """A RunTrace from parsed JSON, checked for shape and token ids; InputError otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise InputError("this JSON is not a LogitSpec trace: it has no list of steps")
    if not str(data.get("format", "")).startswith("logitspec-trace/"):
        raise InputError("this JSON is not a LogitSpec trace: the format field is missing or unknown")
    try:
        trace = RunTrace.from_dict(data)
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise InputError(f"this trace has the wrong shape: {e}") from e
    if not trace.steps:
        raise InputError("this trace holds no steps")
    _check_ids(trace, vocab_size or KNOWN_VOCAB.get(trace.model))
    return trace


def _ids(trace: RunTrace):
    yield from trace.prompt_tokens
    for s in trace.steps:
        yield s.root
        yield from s.tokens
        if s.bonus is not None:
            yield s.bonus
        for n in s.tree:
            yield n.token
        for c in s.candidates:
            yield c.token


def _check_ids(trace: RunTrace, vocab_size: int | None) -> None:
    for t in _ids(trace):
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise InputError(f"this trace holds a token id that is not a whole number ≥ 0: {t!r}")
        if vocab_size is not None and t >= vocab_size:
            raise InputError(f"this trace holds token id {t}, outside the vocabulary of {vocab_size:,} tokens "
                             f"of {trace.model}")
        if vocab_size is None and str(t) not in trace.token_texts:
            raise InputError(f"this trace holds token id {t}, which its own token table does not know")


def example_cache_folder(base: Path, sources: list[Path]) -> Path:
    """A folder for Gradio's example cache named by a hash of what the examples are drawn from.

    Gradio reuses an existing cache folder as it is; naming the folder by the content of the
    traces and of the code that draws them means a change to either draws afresh instead of
    serving stale pictures.
    """
    import hashlib

    h = hashlib.sha256()
    for p in sorted(sources):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return base / h.hexdigest()[:16]
