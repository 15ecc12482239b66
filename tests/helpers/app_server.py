"""The app as a subprocess on a free loopback port, and the race's inputs and outputs, for the
tests that drive it (gradio_client, the browser, the load test)."""
from __future__ import annotations

from pathlib import Path

from helpers.threads import TEST_THREADS
from scripts.local_app import STEADY_CURVES, start
from scripts.local_app import stop as stop_app  # noqa: F401  (the tests' name for it)

MAX_NEW = 24


def start_app(log_path: Path, env_extra: dict[str, str] | None = None, timeout: float = 180.0):
    """Start app.py on a free port, decoding on the tests' thread count with its cost curves as
    installed; return (process, url) once it answers."""
    return start(log_path, {"LOGITSPEC_THREADS": str(TEST_THREADS), **STEADY_CURVES, **(env_extra or {})}, timeout)


def race_args(prompt: str, model: str = "bundled", max_new: int = MAX_NEW, tree: str = "static", **given) -> dict:
    """The race's inputs in order (ui/form.py), each at its default unless given: a lane box by
    its name (with_pld=True), sampling (temperature, top_p, seed) and every other setting."""
    from ui.form import default_values

    return default_values(prompt=prompt, model=model, max_new=max_new, tree=tree, **given)


def trace_file(result) -> Path:
    """The downloaded race file among the race's outputs (the last one): every lane's trace."""
    last = result[-1]
    path = last.get("value", last) if isinstance(last, dict) else last
    return Path(path)


def downloaded_lane(result, lane: str = "logitspec"):
    """One lane's trace from the race's download."""
    from logitspec.analysis.race import read_race

    return read_race(trace_file(result)).lanes[lane]
