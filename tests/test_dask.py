"""Sweeps on a real Dask cluster: a `dask scheduler` and two `dask worker` processes on localhost.

The same sweep on the cluster and on the local pool gives the same table; a worker killed in the
middle of a sweep costs nothing (every run exactly once, the same table); a sweep interrupted on the
cluster finishes locally without recomputing; two clients on one cache leave it whole.
"""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

import aqmlab  # noqa: E402
from conftest import SMALL  # noqa: E402
from aqmlab.sweep.cache import Cache  # noqa: E402
from aqmlab.sweep import cache_layout  # noqa: E402

SCEN = SMALL.replace('name = "small"', 'name = "clustered"').replace('\nwarmup = "2s"', "")
VARY = ["flows[0].count=2,4,6", 'bottleneck.aqm={type="red",min_th=10,max_th=30},{type="choke",min_th=10,max_th=30}']
DEADLINE = 120  # seconds for any one step of these tests


def _dask(*args):
    exe = Path(sys.executable).with_name("dask")
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "dask", *args]


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


class Cluster:
    def __init__(self, tmp: Path, workers: int = 2):
        self.tmp = tmp
        sched_file = tmp / "scheduler.json"
        self.scheduler = subprocess.Popen(
            _dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                  str(sched_file)), stdout=subprocess.DEVNULL, stderr=open(tmp / "scheduler.log", "w"))
        deadline = time.time() + DEADLINE
        while not sched_file.exists() and time.time() < deadline:
            assert self.scheduler.poll() is None, (tmp / "scheduler.log").read_text()
            time.sleep(0.1)
        time.sleep(0.2)
        self.address = json.loads(sched_file.read_text())["address"]
        self.workers = []
        for _ in range(workers):
            self.add_worker()
        self.wait_for(workers)

    def add_worker(self):
        i = len(self.workers)
        self.workers.append(subprocess.Popen(
            _dask("worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                  "--name", f"w{i}"), stdout=subprocess.DEVNULL, stderr=open(self.tmp / f"worker{i}.log", "w")))

    def wait_for(self, n: int):
        with distributed.Client(self.address, timeout="30s") as c:
            c.wait_for_workers(n, timeout=DEADLINE)

    def close(self):
        _stop(self.workers)
        _stop([self.scheduler])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One scheduler and two workers for the module (a test that kills a worker starts another)."""
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def scen(tmp_path):
    p = tmp_path / "clustered.toml"
    p.write_text(SCEN)
    return p


def sweep_cmd(scen, out, cache, *extra, seeds=2):
    args = [sys.executable, "-m", "aqmlab.cli", "sweep", str(scen), "--seeds", str(seeds), "--out", str(out),
            "--cache", str(cache), "--tables", "flows"]
    for v in VARY:
        args += ["--vary", v]
    return args + [str(e) for e in extra]


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=DEADLINE, **kw)
    assert r.returncode == 0, r.stderr
    return r


def entries(cache):
    return sorted((cache / cache_layout()).glob("*/*.zip"))


def same_results(a: Path, b: Path):
    pd.testing.assert_frame_equal(pd.read_csv(a / "runs.csv"), pd.read_csv(b / "runs.csv"))
    pd.testing.assert_frame_equal(pd.read_parquet(a / "flows.parquet"), pd.read_parquet(b / "flows.parquet"))


def test_cluster_sweep_gives_the_local_table(cluster, scen, tmp_path):
    local = run(sweep_cmd(scen, tmp_path / "local", tmp_path / "c-local", "--jobs", "2"))
    remote = run(sweep_cmd(scen, tmp_path / "remote", tmp_path / "c-remote", "--scheduler", cluster.address))
    assert "12 runs (0 from the cache, 12 run now)" in remote.stdout
    same_results(tmp_path / "local", tmp_path / "remote")
    assert remote.stdout.splitlines()[:8] == local.stdout.splitlines()[:8]  # the printed table
    # the same cache entries: a cluster's entries are the local pool's
    assert [p.name for p in entries(tmp_path / "c-local")] == [p.name for p in entries(tmp_path / "c-remote")]
    # and in Python, with a client
    with distributed.Client(cluster.address, timeout="30s") as client:
        df = aqmlab.sweep(scen, vary=VARY, seeds=2, cache=tmp_path / "c-api", client=client)
    pd.testing.assert_frame_equal(df, pd.read_parquet(tmp_path / "local" / "runs.parquet"), check_dtype=False)


def test_a_worker_killed_mid_sweep_loses_nothing(cluster, scen, tmp_path):
    cache = tmp_path / "cache"
    slow = scen.read_text().replace('duration = "20s"', 'duration = "150s"')
    scen.write_text(slow)
    p = subprocess.Popen(sweep_cmd(scen, tmp_path / "remote", cache, "--scheduler", cluster.address, "-q",
                                   seeds=3), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + DEADLINE
    while len(entries(cache)) < 3 and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    victim = next(w for w in cluster.workers if w.poll() is None)
    victim.send_signal(signal.SIGKILL)  # mid-run: each worker always has a batch
    victim.wait(timeout=10)
    cluster.add_worker()  # (for the next tests; the sweep itself goes on with one)
    n_at_kill = len(entries(cache))
    out, err = p.communicate(timeout=DEADLINE)
    assert p.returncode == 0, err
    assert n_at_kill < 18  # really killed mid-sweep
    runs = pd.read_csv(tmp_path / "remote" / "runs.csv")
    assert len(runs) == 18 and runs["run"].is_unique  # every run exactly once
    assert len(entries(cache)) == 18 and all(Cache(cache).check(e.stem) is None for e in entries(cache))
    run(sweep_cmd(scen, tmp_path / "local", tmp_path / "c-local", "--jobs", "2", "-q", seeds=3))
    same_results(tmp_path / "local", tmp_path / "remote")
    cluster.wait_for(2)


def test_interrupted_on_the_cluster_finished_locally(cluster, scen, tmp_path):
    cache = tmp_path / "cache"
    # runs of about 0.4 s each: after the second entry the other ten take seconds on two workers, so
    # the interrupt lands mid-sweep even on a loaded machine (at 150 s, 14 ms a run, it sometimes did not)
    scen.write_text(scen.read_text().replace('duration = "20s"', 'duration = "4000s"'))
    p = subprocess.Popen(sweep_cmd(scen, tmp_path / "remote", cache, "--scheduler", cluster.address, "-q"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + DEADLINE
    while len(entries(cache)) < 2 and time.time() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=DEADLINE)
    assert p.returncode == 130
    done = len(entries(cache))
    assert 2 <= done < 12
    r = run(sweep_cmd(scen, tmp_path / "out", cache, "--jobs", "2"))
    assert f"12 runs ({done} from the cache, {12 - done} run now)" in r.stdout  # nothing recomputed
    run(sweep_cmd(scen, tmp_path / "fresh", tmp_path / "c-fresh", "--jobs", "2", "-q"))
    same_results(tmp_path / "out", tmp_path / "fresh")


def test_two_clients_on_one_cache(cluster, scen, tmp_path):
    """A cluster client and a local one make the same runs into one cache at the same time."""
    cache = tmp_path / "cache"
    a = subprocess.Popen(sweep_cmd(scen, tmp_path / "a", cache, "--scheduler", cluster.address, "-q", seeds=3),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen(sweep_cmd(scen, tmp_path / "b", cache, "--jobs", "2", "-q", seeds=3),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for p in (a, b):
        out, err = p.communicate(timeout=DEADLINE)
        assert p.returncode == 0, err
    same_results(tmp_path / "a", tmp_path / "b")
    es = entries(cache)
    assert len(es) == 18 and all(Cache(cache).check(e.stem) is None for e in es)
    assert not [f for f in (cache / "tmp").iterdir() if not f.name.startswith(".aqmlab-probe")]
    r = run(sweep_cmd(scen, tmp_path / "c", cache, "--jobs", "2", seeds=3))
    assert "18 runs (18 from the cache, 0 run now)" in r.stdout


def test_reproduce_on_the_cluster(cluster, tmp_path):
    """`aqmlab reproduce --scheduler`: the runs on the cluster, figures drawn where the cache is."""
    from test_reproduce import TINY_EXPERIMENT, TINY_REFERENCE, TINY_SCENARIO

    from aqmlab.sweep.executors import execute
    from aqmlab.reproduce import load_experiment
    from aqmlab.sweep import SweepResult

    d = tmp_path / "exps" / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(TINY_EXPERIMENT)
    (d / "reference.toml").write_text(TINY_REFERENCE)
    run([sys.executable, "-m", "aqmlab.cli", "reproduce", "tiny", "--quick", "--experiments", str(tmp_path / "exps"),
         "--out", str(tmp_path / "remote"), "--cache", str(tmp_path / "c1"), "--scheduler", cluster.address])
    assert (tmp_path / "remote" / "tiny" / "fig1-udp-share.png").stat().st_size > 5000
    assert "## tiny" in (tmp_path / "remote" / "report.md").read_text()
    sw = load_experiment(d).sweep(quick=True)
    tasks = sw.tasks()
    local = Cache(tmp_path / "c2")
    execute(tasks, local, jobs=1)  # the same runs made here
    assert sorted(p.name for p in entries(tmp_path / "c1")) == sorted(p.name for p in entries(tmp_path / "c2"))
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "remote" / "tiny" / "runs.csv"),
                                  pd.read_csv(_csv(SweepResult(sw, tasks, local, {}).runs)))


def _csv(df):
    import io

    return io.StringIO(df.to_csv(index=False))


def test_unreachable_scheduler_is_a_one_line_error(scen, tmp_path):
    r = subprocess.run(sweep_cmd(scen, tmp_path / "o", tmp_path / "c", "--scheduler", "tcp://127.0.0.1:9"),
                       capture_output=True, text=True, timeout=DEADLINE)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --scheduler tcp://127.0.0.1:9: cannot reach"), r.stderr
    assert not entries(tmp_path / "c")


# ----------------------------------------------------------------------------- bad --scheduler values (issue 27)

BAD_SCHEDULERS = [
    ("foo://localhost:8786", "unknown address scheme 'foo'; one of: tcp, tls, ws, wss"),
    ("", "empty"),
    ("   ", "empty"),
    ("tcp://", "expected tcp://HOST:PORT"),
    ("tcp://127.0.0.1", "expected tcp://HOST:PORT"),
    ("tcp://127.0.0.1:0", "with a port from 1 to 65535"),
    ("tcp://127.0.0.1:65536", "with a port from 1 to 65535"),
    ("tcp://127.0.0.1:8786/path", "expected tcp://HOST:PORT"),
    ("tcp://[::1", "expected tcp://HOST:PORT"),
    ("tcp://a\nb:1", "no spaces or control characters"),
    ("inproc://x", "exists only inside its own Python process"),
    ("tls://127.0.0.1:8786", "needs TLS certificates"),
    ("tcp://127.0.0.1:9", "cannot reach a Dask scheduler there"),
    ("127.0.0.1:9", "cannot reach a Dask scheduler there"),
    ("tcp://no-such-host.invalid:8786", "cannot resolve host"),
]


@pytest.mark.parametrize("address,why", BAD_SCHEDULERS)
def test_a_bad_scheduler_is_refused_at_once(address, why):
    """Each bad value is a SweepError naming it, before any client exists (a half-made Client
    used to wait twice its timeout at exit, then print a TimeoutError traceback)."""
    from aqmlab.base.errors import SweepError
    from aqmlab.sweep.executors import make_pool

    t0 = time.monotonic()
    with pytest.raises(SweepError, match="^--scheduler") as e:
        make_pool("dask", scheduler=address)
    assert why in str(e.value)
    assert "\n" not in str(e.value)
    assert time.monotonic() - t0 < 5


def _listener(answer: bytes | None):
    """A TCP server on localhost that accepts, sends ``answer`` (if any) and says nothing more."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    held = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            held.append(c)
            if answer:
                c.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return srv


@pytest.mark.parametrize("answer,why", [
    (None, "no Dask scheduler answered within"),
    (b"HTTP/1.0 426 Upgrade Required\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
     "not as a Dask scheduler does"),
])
def test_something_else_listening_is_not_a_scheduler(answer, why, scen, tmp_path):
    """A silent listener, or a web server, at the address: one line within the probe's timeout,
    through the command, with no traceback."""
    from aqmlab.sweep.executors import PROBE_TIMEOUT

    srv = _listener(answer)
    try:
        address = f"tcp://127.0.0.1:{srv.getsockname()[1]}"
        t0 = time.monotonic()
        r = subprocess.run(sweep_cmd(scen, tmp_path / "o", tmp_path / "c", "--scheduler", address),
                           capture_output=True, text=True, timeout=DEADLINE)
        took = time.monotonic() - t0
    finally:
        srv.close()
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --scheduler {address}: ") and why in lines[0], r.stderr
    assert took < PROBE_TIMEOUT + 25  # (the interpreter's start and Dask's import on a loaded machine)


def test_unknown_scheme_through_the_command_is_one_line_at_once(scen, tmp_path):
    t0 = time.monotonic()
    r = subprocess.run(sweep_cmd(scen, tmp_path / "o", tmp_path / "c", "--scheduler", "foo://localhost:8786"),
                       capture_output=True, text=True, timeout=DEADLINE)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: --scheduler foo://localhost:8786: unknown address scheme 'foo'; one of: tcp, tls, ws, wss"]
    assert time.monotonic() - t0 < 25  # was about 40 s, then a traceback


def test_a_worker_is_not_a_scheduler(cluster):
    from aqmlab.base.errors import SweepError
    from aqmlab.sweep.executors import check_scheduler

    with distributed.Client(cluster.address, timeout="30s") as c:
        worker = next(iter(c.scheduler_info()["workers"]))
    with pytest.raises(SweepError, match="a Dask worker answers there, not a scheduler"):
        check_scheduler(worker)
    assert check_scheduler(cluster.address) == cluster.address
