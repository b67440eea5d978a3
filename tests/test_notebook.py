"""examples/notebook.ipynb runs as it is (issue 26 item 7): every cell executes in a fresh kernel
(nbclient), from a copy of examples/, with the sweep on two processes; its outputs say what the
README and the docs say."""

import shutil

import pytest

from conftest import EXAMPLES

nbformat = pytest.importorskip("nbformat", reason="pip install '.[test]' (nbclient, nbformat, ipykernel)")
nbclient = pytest.importorskip("nbclient", reason="pip install '.[test]' (nbclient, nbformat, ipykernel)")


def test_the_notebook_runs(tmp_path, monkeypatch):
    work = tmp_path / "examples"
    shutil.copytree(EXAMPLES, work)
    nb = nbformat.read(work / "notebook.ipynb", as_version=4)
    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "cache"))  # the kernel inherits it: no shared cache
    # "python3" is ipykernel's own kernel: this interpreter, the environment aqmlab is installed in
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(work)}})
    client.execute()
    text = "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "")
                     for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    assert "red: utilisation" in text and "UDP share: model" in text
    assert "95 %" in text or "min–max" in text  # the figure's caption says what the bars are
    assert (work / "notebook-out" / "udp-share.png").is_file() and (work / "notebook-out" / "udp-share.csv").is_file()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the sweep's figure and the model beside the run
