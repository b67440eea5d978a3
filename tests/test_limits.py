"""Engine limits as a user meets them: the memory budget (``--max-memory``, ``max_memory=``),
runs that used to hang, Ctrl-C during a run, and one-line errors for what the loader refuses."""

import os
import signal
import subprocess
import sys
import time

import pytest

import aqmlab
from conftest import SMALL, aqmlab as cli

ONOFF_SHORT_ON = """
[simulation]
duration = "200s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[flows]]
name = "udp"
transport = "udp"
app = "onoff"
rate = "64kb/s"
on_time = "1ms"
off_time = "1ms"
"""

# ~10^14 ON/OFF periods too short for a packet: a run that only an interruption ends
ENDLESS = ONOFF_SHORT_ON.replace('duration = "200s"', 'duration = "1e8s"\nsample_interval = "1e4s"').replace(
    '"1ms"', '"1us"'
)


def test_max_memory_refuses_before_running_with_estimate_and_limit(tmp_path):
    with pytest.raises(aqmlab.ScenarioError, match=r"the run would need about .* more than the limit of 1\.0 MB"):
        aqmlab.validate(SMALL, max_memory="1MB")
    with pytest.raises(aqmlab.ScenarioError, match="more than the limit"):
        aqmlab.run(SMALL, max_memory=1_000_000)
    info = aqmlab.validate(SMALL, max_memory="1GB")
    assert info["memory_limit_bytes"] == 1_000_000_000
    assert 0 < info["memory_estimate_bytes"] < 1_000_000_000 and info["events_estimate"] > 0


def test_max_memory_on_the_command_line(small, tmp_path):
    r = cli("run", small, "--max-memory", "1MB", "--out", tmp_path / "o")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "more than the limit of 1.0 MB" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    r = cli("validate", small, "--max-memory", "lots")
    assert r.returncode == 2 and "--max-memory" in r.stderr
    r = cli("validate", small)
    assert r.returncode == 0 and "of memory" in r.stdout


def test_ten_million_flows_are_refused_at_once(small):
    t0 = time.perf_counter()
    r = cli("validate", small, "--set", "flows[0].count=9999999", "--max-memory", "8GB")
    assert r.returncode == 2 and "error:" in r.stderr and "flows: the run would need about" in r.stderr, r.stderr
    assert time.perf_counter() - t0 < 30


def test_onoff_source_with_short_on_periods_finishes():
    res = aqmlab.run(ONOFF_SHORT_ON)
    assert res.summary["engine"]["conservation"] == "ok"


def test_ctrl_c_stops_a_run_promptly(tmp_path):
    p = tmp_path / "endless.toml"
    p.write_text(ENDLESS)
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab.cli", "run", str(p), "-q", "--out", str(tmp_path / "o")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # interpreter start-up, then well into the run
    assert proc.poll() is None, proc.communicate()
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.perf_counter() - t0 < 5, "Ctrl-C took too long"
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err


@pytest.mark.parametrize("setting, where", [
    ('bottleneck.delay="1.8e10s"', "must be a duration from 0 to 1.8e10 s"),
    ("flows[0]=1", "invalid type: integer `1`, expected a flow group"),
])
def test_loader_errors_say_what_is_allowed(small, setting, where):
    r = cli("validate", small, "--set", setting)
    # (the override made the mistake: the line names it, issue 40)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and where in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: --set {setting}: "), r.stderr


def test_control_characters_in_keys_are_escaped(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(SMALL + '"evil\\nkey\\u001b[31m" = 1\n')
    r = cli("validate", p)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "\x1b" not in r.stderr, r.stderr
    assert '"evil\\nkey\\u{1b}[31m"' in r.stderr, r.stderr


# ----------------------------------------------------------------------------- the process's own limits (issue 27)

def _ulimit_v(kib: int):
    """A preexec_fn that sets the address-space limit, as `ulimit -v KIB` does."""
    import resource

    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, resource.RLIM_INFINITY))

    return set_limit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is read from /proc")
def test_a_run_beyond_ulimit_v_is_refused_at_once_with_the_estimate(small, tmp_path):
    """Under `ulimit -v 4194304` (4 GiB), 7 million flows (an estimate of about 5.8 GB) are refused
    before any work, although they fit half of a 24 GB machine's memory."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", "run", str(small), "--set", "flows[0].count=7000000",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120,
                       preexec_fn=_ulimit_v(4194304))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "flows: the run would need about" in lines[0], r.stderr
    assert "address-space limit (ulimit -v)" in lines[0] and "--max-memory cannot raise it" in lines[0]
    assert time.monotonic() - t0 < 30
    # --max-memory cannot raise it either
    r = subprocess.run([sys.executable, "-m", "aqmlab.cli", "validate", str(small), "--set", "flows[0].count=7000000",
                        "--max-memory", "64GB"], capture_output=True, text=True, timeout=120,
                       preexec_fn=_ulimit_v(4194304))
    assert r.returncode == 2 and "ulimit -v" in r.stderr, r.stderr
    # and validate says where the limit comes from
    r = subprocess.run([sys.executable, "-c", "import aqmlab, json, sys; print(json.dumps(aqmlab.validate(sys.argv[1])))",
                        str(small)], capture_output=True, text=True, timeout=120, preexec_fn=_ulimit_v(4194304))
    import json

    info = json.loads(r.stdout)
    assert info["memory_limit_source"] == "address-space" and info["memory_limit_bytes"] <= 4194304 * 1024


# lowers the address-space limit to what the process uses plus 64 MiB at the run's first progress
# report, so the engine's time series (about 200 MB by the end) cannot grow to their size
OUT_OF_MEMORY_MID_RUN = r"""
import resource, sys
import aqmlab

def squeeze(t, done=[]):
    if not done:
        done.append(1)
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                used = int(line.split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (used + (64 << 20), resource.RLIM_INFINITY))

aqmlab.run(sys.argv[1], overrides=["simulation.sample_interval=1us", "simulation.duration=1s",
                                   "simulation.warmup=0.1s"], progress=squeeze)
print("finished")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is read from /proc")
def test_an_engine_allocation_that_fails_is_one_line(tmp_path):
    """Past the estimate, a failed allocation in the engine ends the process with one line and
    status 2 (it was Rust's 'memory allocation of N bytes failed' and an abort)."""
    from conftest import EXAMPLES

    script = tmp_path / "squeeze.py"
    script.write_text(OUT_OF_MEMORY_MID_RUN)
    r = subprocess.run([sys.executable, str(script), str(EXAMPLES / "parking-lot.toml")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: out of memory: the engine could not get "), r.stderr
    assert "the run's estimate was" in lines[0] and "Resources" in lines[0]


def test_a_memory_error_in_python_is_one_line(monkeypatch, capsys, small):
    """A MemoryError anywhere in a command (the Parquet writer, pandas) is one line, status 2."""
    from aqmlab.cli import app, run as run_cmd

    def out_of_memory(a):
        raise MemoryError

    monkeypatch.setattr(run_cmd, "cmd_run", out_of_memory)
    assert app.main(["run", str(small)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {small}: out of memory:"), err
