"""The tutorial notebook runs top to bottom (so it cannot rot) and shows what it claims."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "ranking_with_uncertainty.ipynb"


def _text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    data = output.get("data", {})
    return data.get("text/plain", "") + data.get("text/html", "")


@pytest.mark.slow
def test_notebook_executes_and_reaches_a_decision(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the committed notebook carries no outputs (they would go stale)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on any failing cell (including its asserts)
    outputs = [_text(o) for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    joined = "\n".join(outputs)
    assert "top set at alpha=0.05:" in joined
    assert "top set (closed form):" in joined
    assert "dispersion" in joined  # the PPC summary table
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs)
    assert images >= 5  # forest, superiority, rank distribution, PPC statistics, plot_ppc
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert errors == []
