"""The documentation and the command line cite papers (docs/references.md), never files a user does
not have (the specification's aqm.md, experiments.md, models.md, or its item numbers A12, E3, M2)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC_REF = re.compile(r"(?<![\w/])(?:aqm|models|experiments)\.md\b|(?<![\w.-])[AEM]\d{1,2}(?![\w.])|shared/spec")


def user_docs():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))


def offending(text: str):
    for i, line in enumerate(text.splitlines(), 1):
        for m in SPEC_REF.finditer(line):
            yield i, m.group(0), line.strip()[:120]


@pytest.mark.parametrize("path", list(user_docs()), ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cite_papers_not_specification_files(path):
    bad = [f"{path.relative_to(ROOT)}:{i}: {m!r} in {line!r}" for i, m, line in offending(path.read_text("utf-8"))]
    assert not bad, "\n".join(bad)


def test_references_give_the_five_papers_in_full():
    text = (ROOT / "docs" / "references.md").read_text("utf-8")
    for tag, needle in [("[TWL]", "Understanding CHOKe"), ("[CHOKeW]", "Differentiated Bandwidth Allocation"),
                        ("[CHOKeD]", "CHOKeD: A Fair Active Queue Management System"),
                        ("[RAQM]", "Rate-based Algorithm for Active Queue Management"),
                        ("[WARD]", "WARD: a transmission control protocol-friendly")]:
        row = next((ln for ln in text.splitlines() if ln.startswith(f"| {tag} |")), "")
        assert needle in row and re.search(r"(19|20)\d\d", row), tag
    assert "references.md" in (ROOT / "README.md").read_text("utf-8")


@pytest.mark.parametrize("args", [["list", "aqm", "-d"], ["list", "tcp", "-d"], ["list", "traffic", "-d"],
                                  ["list", "experiments", "-d"], ["--help"], ["run", "--help"], ["sweep", "--help"],
                                  ["reproduce", "--help"], ["plot", "--help"], ["model", "choke", "--help"],
                                  ["model", "chokew", "--help"], ["model", "raqm", "--help"],
                                  ["model", "ward", "--help"]])
def test_command_line_texts_cite_papers(args):
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    bad = [f"{m!r} in {line!r}" for _, m, line in offending(r.stdout)]
    assert not bad, "\n".join(bad)
