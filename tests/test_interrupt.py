"""Ctrl-C ends any run within 2 s of the signal, in every phase (issue 27, item 5).

A run goes through building (the engine's network and flows), the event loop, the results
(the engine's tables), their conversion to Python, and writing the files. The first and the
fourth used to ignore Ctrl-C until they were done (about 17 s after the event loop of a parking
lot sampled every microsecond). Each phase is found from outside, as it happens: the engine builds
on a thread named ``aqmlab-build`` and computes its results on one named ``aqmlab-results``; the
event loop follows the first, the conversion the second, and the files are written under temporary
names (``.<file>.*.tmp``).
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads threads' names from /proc")

#: seconds from SIGINT to the end of the process (the issue's bound)
BOUND = 2.0
#: a parking lot sampled every microsecond: ~3 million time-series rows (3 links, 1 s)
MICRO = ["--set", "simulation.sample_interval=1us", "--set", "simulation.duration=1s",
         "--set", "simulation.warmup=0.1s"]
#: 300 000 flows: about a second of building
BIG = """
[simulation]
duration = "1ms"
[bottleneck]
rate = "10Gb/s"
delay = "10ms"
limit = 1000
[[flows]]
transport = "tcp"
count = 300000
"""


def _thread(proc, name: str) -> bool:
    """Whether ``proc`` has a thread called ``name`` now."""
    for comm in Path(f"/proc/{proc.pid}/task").glob("*/comm"):
        try:
            if comm.read_text().strip() == name:
                return True
        except OSError:
            pass
    return False


def _wait(proc, until, what: str, timeout: float = 240.0):
    t0 = time.monotonic()
    while not until():
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()}"
        assert time.monotonic() - t0 < timeout, f"never reached {what}"
        time.sleep(0.002)


@pytest.mark.parametrize("phase", ["building", "event loop", "results", "conversion", "writing"])
def test_ctrl_c_ends_a_run_within_two_seconds_in_every_phase(phase, tmp_path):
    out = tmp_path / "out"
    if phase == "building":
        scen = tmp_path / "big.toml"
        scen.write_text(BIG)
        args = [str(scen), "--max-memory", "64GB"]
    else:
        args = [str(EXAMPLES / "parking-lot.toml"), *MICRO]
        if phase == "event loop":
            args += ["--set", "simulation.duration=5s"]  # (a loop of seconds; nothing is kept)
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab.cli", "run", *args, "-q", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if phase == "building":
            _wait(proc, lambda: _thread(proc, "aqmlab-build"), "building")
        elif phase == "event loop":  # the output folder is made just before the run; building takes ms
            _wait(proc, out.exists, "the run's start")
            time.sleep(0.2)
            assert not _thread(proc, "aqmlab-results")
        elif phase == "results":
            _wait(proc, lambda: _thread(proc, "aqmlab-results"), "the results")
        elif phase == "conversion":
            _wait(proc, lambda: _thread(proc, "aqmlab-results"), "the results")
            _wait(proc, lambda: not _thread(proc, "aqmlab-results"), "the conversion")
        else:
            _wait(proc, lambda: any(out.glob(".timeseries.*.tmp")), "writing the time series")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err, err
    print(f"{phase}: {took:.2f} s from SIGINT to exit")
    assert took < BOUND, f"{phase}: {took:.2f} s from SIGINT to exit"
    # nothing half-written: no temporary file, no time series
    assert not list(out.glob(".*.tmp")) and not (out / "timeseries.csv").exists()
