"""The examples run end to end in a real Jupyter kernel, on the bundled model."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_debug_retrieval_notebook_runs_and_draws_the_failed_steps(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "examples" / "debug_retrieval.ipynb", as_version=4)
    # A kernel of this interpreter, started in a folder outside the checkout.
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "both failed" in text and "step " in text  # the failed steps were listed
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figures) == 2  # two trees drawn inline
    assert sum("text/html" in o.get("data", {}) for o in outputs) >= 2  # and their lookups
