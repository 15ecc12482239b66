"""LogitSpec Explorer: a live race against greedy decoding and every step of LogitSpec, drawn.

Services and start-up only: the page is built in ui/ (ui/page.py and one module per part),
the decoding lives in logitspec/ and the pictures in visual/. Run `python app.py`;
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read by Gradio itself.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import gradio as gr

from logitspec.core.limits import Limits
from serve.examples import example_cache_folder
from serve.model_cache import allowed_models
from serve.zerogpu import on_zerogpu
from ui.figures import FIGURES_CSS
from ui.files import ROOT, shipped_traces
from ui.page import CSS, Page
from ui.present import PRESENT_CSS
from ui.services import Services


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app on `services`; building it loads no model. Gradio's cache of the recorded
    examples is kept as long as the traces and the code that draws them are unchanged."""
    drawn_from = (shipped_traces() + [Path(__file__)] + sorted((ROOT / "visual").glob("*.py"))
                  + sorted((ROOT / "ui").glob("*.py"))
                  + [ROOT / "logitspec" / m for m in ("analysis/whatif.py", "core/retrieval.py", "analysis/drafts.py")])
    os.environ.setdefault("GRADIO_EXAMPLES_CACHE",
                          str(example_cache_folder(ROOT / ".gradio" / "cached_examples", drawn_from)))
    return Page(services).build()


# Gradio's queue looks for new work every millisecond while it has none: about 5% of a core
# for an idle server. Every 20 ms is as quick to a visitor and costs a tenth of that.
QUEUE_POLL_SECONDS = 0.02
PROGRESS_POLL_SECONDS = 0.05


def quiet_queue(demo: gr.Blocks) -> None:
    """Poll the queue less often while idle (a no-op on a Gradio without these settings)."""
    queue = getattr(demo, "_queue", None)
    for name, seconds in (("sleep_when_free", QUEUE_POLL_SECONDS),
                          ("progress_update_sleep_when_free", PROGRESS_POLL_SECONDS)):
        if isinstance(getattr(queue, name, None), float):
            setattr(queue, name, max(getattr(queue, name), seconds))


def main(argv: list[str] | None = None) -> None:
    """Serve the app (on the model --model names, else the deployment's default); the default model
    starts loading in the background at once. A model that cannot be served is refused in one line."""
    from logitspec.core.errors import ModelLoadError
    from serve.own_model import model_from_argv

    try:
        model_from_argv(argv)
    except ModelLoadError as e:
        raise SystemExit(f"error: {e}") from None
    if on_zerogpu():
        import spaces  # noqa: F401  before anything touches CUDA: ZeroGPU takes the placement over
    services = Services.create()
    default = allowed_models()[0]
    loading = services.models.preload(default)  # loads while the UI is built and served

    def report() -> None:
        loading.join()
        print(f"LogitSpec Explorer: {services.models.status(default).message}", flush=True)

    threading.Thread(target=report, daemon=True).start()
    demo = build_app(services)
    # max_file_size: the browser refuses a larger file before sending it, and the server stops reading it;
    # a set file may be larger than a trace, whose own box refuses one over its limit.
    lim = Limits.from_env()
    demo.queue(default_concurrency_limit=1, max_size=64)
    quiet_queue(demo)
    demo.launch(show_error=True, theme=gr.themes.Soft(), css=CSS + FIGURES_CSS + PRESENT_CSS,
                max_file_size=max(lim.trace_bytes, lim.set_bytes))


if __name__ == "__main__":
    main()
