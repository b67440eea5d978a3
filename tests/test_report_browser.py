"""The report as a reader sees it: report.html opened in headless Chromium (Debian's ``chromium``;
.ci/run installs it). Every figure loads, every link leads somewhere (an anchor of the page or a
file beside it), the page raises no error, the summary and the contents come first and each
section links back to the contents; a study of one's own is titled after that study."""

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from browser import find_chromium, inspect_page
from conftest import aqmlab as cli
from test_reproduce import TINY_EXPERIMENT, TINY_REFERENCE, TINY_SCENARIO


@pytest.fixture(scope="module")
def chromium():
    path = find_chromium()
    if path is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def _study(root: Path, title: str | None) -> Path:
    d = root / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(TINY_EXPERIMENT)
    (d / "reference.toml").write_text(TINY_REFERENCE)
    if title:
        (root / "study.toml").write_text(f'title = "{title}"\ndescription = "a study of UDP share against N"\n')
    return root


def check_page(report: Path, binary: str) -> dict:
    page = inspect_page(report, binary)
    assert not page["errors"], page["errors"]
    assert page["imgs"], "no figure in the report"
    bad = [i["src"] for i in page["imgs"] if not i["ok"]]
    assert not bad, f"figures that do not load: {bad}"
    for link in page["links"]:
        href = link["href"]
        if href.startswith("#"):
            assert link["anchor"], f"link to a missing anchor: {href} ({link['text']})"
        else:
            u = urlparse(href)
            assert u.scheme in ("", "file"), f"a link leaving the report: {href}"
            target = (report.parent / unquote(u.path)).resolve()
            assert target.is_file(), f"link to a missing file: {href}"
    return page


def test_report_opens_in_chromium_with_every_figure_and_link(chromium, tmp_path):
    root = _study(tmp_path / "exps", "UDP share against the number of TCP flows")
    out = tmp_path / "out"
    r = cli("reproduce", "--all", "--quick", "--experiments", root, "--out", out, "--cache", tmp_path / "cache", "-q")
    assert r.returncode == 0, r.stderr
    page = check_page(out / "report.html", chromium)
    # titled after the study, not "reproduction of the papers"
    assert page["title"] == "UDP share against the number of TCP flows"
    assert page["h1"][0].startswith("aqmlab: UDP share against the number of TCP flows")
    # the scorecard is the front page, then the contents and the summary; every section links back to the contents
    ids = page["ids"]
    assert ids.index("scorecard") < ids.index("contents") < ids.index("summary-of-the-experiments") < ids.index("tiny")
    back = [l for l in page["links"] if l["href"] == "#contents"]
    assert len(back) >= 2  # the summary and the one experiment
    # the summary table links to each figure
    to_figures = [l for l in page["links"] if l["href"].startswith("#tiny-")]
    assert {l["href"] for l in to_figures} >= {"#tiny-fig1-udp-share", "#tiny-per-flow", "#tiny-queue"}
    md = (out / "report.md").read_text()
    assert "reproduction of the papers" not in md and "a study of UDP share against N" in md


def test_a_study_without_study_toml_is_titled_after_its_folder(chromium, tmp_path):
    root = _study(tmp_path / "my-buffer-study", None)
    out = tmp_path / "out"
    r = cli("reproduce", "tiny", "--quick", "--experiments", root, "--out", out, "--cache", tmp_path / "cache", "-q")
    assert r.returncode == 0, r.stderr
    page = check_page(out / "report.html", chromium)
    assert page["title"] == "my-buffer-study"


def test_the_papers_report_is_titled_as_the_reproduction(tmp_path):
    """The experiments shipped with aqmlab keep the papers' title (no browser needed)."""
    from aqmlab.reproduce.experiment import load_experiment
    from aqmlab.reproduce.runner import Done, study_title

    exp_dir = Path(__import__("aqmlab").__file__).parent / "experiments" / "choke-perfect"
    title, _ = study_title([Done(load_experiment(exp_dir))])
    assert title == "aqmlab: reproduction of the papers"
