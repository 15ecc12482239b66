"""The models a deployment offers and the cache that loads them, one at a time.

A public deployment must only load the models its deployer allowed and keep serving when
one fails to load. No UI code lives here; the app wires these into events.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from logitspec import environment
from logitspec.core.limits import InputError, Limits
from logitspec.core.settings import DecodeSettings

BUNDLED = "bundled"
BUNDLED_LABEL = "SmolLM2-135M-Instruct (bundled, CPU-friendly)"


# ---------------------------------------------------------------- model allow-list and cache

def allowed_models(env: dict[str, str] | None = None) -> list[str]:
    """The models a user may pick: the bundled one, then LOGITSPEC_MODELS (comma-separated hub ids).

    LOGITSPEC_DEFAULT_MODEL is allowed too, and comes first when set, so a GPU deployment
    can make a larger model the default.
    """
    ids = [m.strip() for m in environment.MODELS.read(env).split(",") if m.strip()]
    default = environment.DEFAULT_MODEL.read(env).strip() or BUNDLED
    out: list[str] = []
    for m in [default, BUNDLED, *ids]:
        if m not in out:
            out.append(m)
    return out


def load_for_app(name: str, env: dict[str, str] | None = None):
    """The app's loader: the dtype LOGITSPEC_DTYPE names (float32 by default); auto loads the
    faster exact dtype, timed here, and keeps the reason for the status line."""
    from logitspec.models import load_model

    dtype = environment.DTYPE.read(env).strip()
    if dtype != "auto":
        lm = load_model(name, None, dtype)  # an unknown dtype is refused there, in one line
        lm.dtype_note = lm.half_mode.note if lm.half_mode else ""
        return lm
    from logitspec.dtype_pick import pick_dtype

    lm, pick = pick_dtype(name, None, DecodeSettings().max_new_tokens)
    lm.dtype_note = pick.words()
    return lm


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

    def __init__(self, loader=None, keep: int = 2, warm=None, thread=None) -> None:
        from logitspec.runtime.threads import ModelThread

        # Every load, warm-up and decoding step of these models runs on this one thread (ModelThread).
        self.thread = thread or ModelThread()
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
        from logitspec.core.errors import ModelLoadError
        from logitspec.runtime.heap import refreeze_heap
        from logitspec.runtime.threads import configure_threads

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
                run = self.thread.call
                run(configure_threads)
                lm = run(self._loader or load_for_app, name)
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
                note = getattr(lm, "dtype_note", "")
                self._status[name] = ModelStatus("ready", f"{model_label(name)} ready on {lm.device} "
                                                 f"(loaded in {secs:.0f} s" + (f"; {note})" if note else ")"),
                                                 secs)
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


def warm_cost_curves(lm, capacity: int | None = None, background: bool | None = None):
    """Give the cost-aware tree its forward-cost curves at load time without measuring:
    the curve stored by an earlier start on this machine, else a default shape, which
    decoding corrects as it goes. Curves not stored are measured in the background, a pass
    at a time while the model thread is idle (see logitspec.sizing.calibration); returns that
    thread, or None when nothing is left to measure. LOGITSPEC_MEASURE_CURVES=0 measures
    nothing and loads no stored curve: every bucket starts from the default shape.
    """
    from logitspec.sizing.calibration import BackgroundCalibration, start_curves
    from logitspec.runtime import measuring_allowed
    from logitspec.core.drafter import cost_capacity
    from logitspec.core.verify import head_batch_rows

    head_batch_rows(lm.model)  # measured once per model, before any timed step
    if capacity is None:  # every cost tree a visitor may ask for, so no race measures in front
        capacity = cost_capacity(DecodeSettings(capacity=Limits.from_env().capacity), lm.model)
    starts = start_curves(lm.model, max_context=1024, capacity=capacity)
    if background is None:
        background = measuring_allowed()
    if not background or all(s.stored for s in starts):
        return None
    job = BackgroundCalibration(lm.model, starts)
    job.start()
    return job
