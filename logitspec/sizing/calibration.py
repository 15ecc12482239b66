"""c(n) without measuring in front of a visitor: stored curves, a default shape, and a
measurement done in small chunks on the model thread while it is idle.

Measuring every curve before the model is ready would keep the first visitor waiting, so
the app starts from the curve stored by an earlier start on the same machine (per model,
CPU, thread count, kernel build, dtype and context) or from a default shape, decoding
corrects it (costcurve.LiveCost), and a fresh measurement runs one forward pass at a time
whenever the model thread has been idle a while. Those passes fall between steps, so no
lane's clock counts them.
"""
from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

from ..runtime import measuring_allowed
from ..runtime.files import written_whole
from .costcurve import CONTEXT_BUCKETS, CurveMeasurement, install_curve, measure_context
from .curve import CostCurve, default_curve, model_dtype

log = logging.getLogger(__name__)

IDLE_SECONDS = 1.0  # the model thread must have been idle this long before a chunk runs
FORMAT = "logitspec-cost-curve/2"  # /2: every size to 16 measured


def curve_key(model, bucket: int, max_n: int) -> dict:
    """What a stored curve must match to be used: the model, the machine and the settings
    that change what a pass costs. Read on the model thread (threads are per thread)."""
    from ..runtime.fewrows import build_directory, cpu_model, kernel_variant

    cfg = model.config
    isa = kernel_variant()[0]
    return {
        "model": str(getattr(cfg, "_name_or_path", "") or type(model).__name__),
        "params": int(sum(p.numel() for p in model.parameters())),
        "cpu": cpu_model(), "threads": torch.get_num_threads(), "kernel": isa,
        "kernel_build": build_directory(isa).name if isa else None,  # a changed kernel is re-timed
        "device": str(model.device), "dtype": model_dtype(model), "torch": torch.__version__,
        "context": bucket, "max_n": max_n,
    }


def curve_path(key: dict) -> Path:
    import hashlib

    from ..runtime.fewrows import cache_root

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root() / "cost-curves" / f"{digest}.json"


def load_curve(key: dict) -> CostCurve | None:
    """The stored curve for exactly this key, or None (a missing, stale or damaged file)."""
    path = curve_path(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT or data.get("key") != key:
            return None
        c = data["curve"]
        sizes, secs = [int(n) for n in c["sizes"]], [float(s) for s in c["seconds"]]
        ok = (len(sizes) == len(secs) >= 2 and sizes[0] == 1 and sizes[-1] >= key["max_n"]
              and all(s > 0 for s in secs) and sizes == sorted(set(sizes)))
        if not ok:
            return None
        return CostCurve(sizes, secs, int(c["context_len"]), key["device"], key["dtype"], int(c["measurements"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_curve(key: dict, curve: CostCurve) -> Path | None:
    """Store the curve atomically (a temporary file renamed over the old one); None on failure."""
    path = curve_path(key)
    try:
        with written_whole(path) as tmp:
            tmp.write_text(json.dumps({"format": FORMAT, "key": key, "curve": curve.to_dict()}), encoding="utf-8")
        return path
    except OSError as e:  # a read-only home only costs measuring again next start
        log.info("cost curve not stored: %s", e)
        return None


@dataclass
class StartCurve:
    """The curve one context bucket starts from, and whether it still needs measuring."""

    bucket: int
    max_n: int
    key: dict
    curve: CostCurve
    stored: bool


def start_curves(model, max_context: int, capacity: int = 64) -> list[StartCurve]:
    """Install, for every bucket a run up to `max_context` may reach, the stored curve or
    the default shape; no forward pass is run. Call on the model thread. Where nothing may be
    timed, no stored curve either: a curve timed on this machine would size trees by its CPU."""
    out = []
    for below, at in CONTEXT_BUCKETS:
        max_n = max(capacity, 8)
        key = curve_key(model, at, max_n)
        stored = load_curve(key) if measuring_allowed() else None
        curve = stored or default_curve(model, at, max_n)
        install_curve(model, at, curve)
        out.append(StartCurve(at, max_n, key, curve, stored is not None))
        if max_context < below:
            break
    return out


class BackgroundCalibration(threading.Thread):
    """Measures the curves that were not stored, one forward pass per chunk on the model
    thread, each only after the thread has been idle IDLE_SECONDS; installs and stores each."""

    def __init__(self, model, starts: list[StartCurve], runner=None, idle_seconds: float = IDLE_SECONDS) -> None:
        super().__init__(name="calibration", daemon=True)
        from ..runtime.threads import ModelThread

        self._model = weakref.ref(model)  # an unloaded model is not kept alive for this
        self._todo = [s for s in starts if not s.stored]
        # The model thread this is started from (warming runs there), else one of its own.
        self._runner = runner or ModelThread.current() or ModelThread()
        self._idle = idle_seconds
        self.stop_event = threading.Event()
        self.measured: list[CostCurve] = []

    def _chunk(self, fn):
        """fn run on the model thread once it has been idle long enough; None if stopped."""
        while not self.stop_event.is_set():
            if self._runner.idle_seconds() >= self._idle:
                try:
                    return self._runner.background(fn)
                except RuntimeError as e:  # the process is exiting: its pool takes no more work
                    if "after interpreter shutdown" not in str(e):
                        raise
                    self.stop_event.set()
                    return None
            time.sleep(min(0.1, self._idle / 4))
        return None

    def run(self) -> None:
        for s in self._todo:
            model = self._model()
            if model is None:
                return
            m = CurveMeasurement(model, measure_context(model, s.bucket, s.max_n), s.max_n)
            del model
            while not self.stop_event.is_set():
                if self._chunk(m.step):
                    break
            if not m.done:
                return
            curve = m.result()
            model = self._model()
            if model is None:
                return
            install_curve(model, s.bucket, curve)
            save_curve(s.key, curve)
            self.measured.append(curve)
            del model
