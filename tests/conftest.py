import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def aqmlab(*args, cwd=None, timeout=300):
    """Run the installed `aqmlab` command; returns CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, "-m", "aqmlab.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


@pytest.fixture
def run_cli():
    return aqmlab


@pytest.fixture
def example():
    return EXAMPLES / "dumbbell-red.toml"


SMALL = """
name = "small"
[simulation]
duration = "20s"
warmup = "2s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
aqm = { type = "red", min_th = 10, max_th = 30 }
[[flows]]
name = "tcp"
transport = "tcp"
count = 4
[[flows]]
name = "udp"
transport = "udp"
rate = "500kb/s"
"""


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p


def pytest_collection_modifyitems(config, items):
    """Long fuzzing runs (marker ``fuzz``) and long runs of the packaged experiments (marker
    ``slow``) run only when asked for: ``pytest -m fuzz``, ``pytest -m slow``."""
    for mark, why in (("fuzz", "long fuzzing run"), ("slow", "long run (a whole reproduction)")):
        if mark in (config.option.markexpr or ""):
            continue
        skip = pytest.mark.skip(reason=f"{why}: select it with -m {mark}")
        for item in items:
            if mark in item.keywords:
                item.add_marker(skip)
