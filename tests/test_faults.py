"""Faults a user meets (issue 11, the Python side): each class of the issue has a regression test here.

Bad seeds, a read-only or full cache or output disk, a killed sweep worker, a damaged cache entry,
deeply nested values, /dev/zero as a scenario, bad dict scenarios, a billion seeds, names that would
write outside --out, API argument forms, workers outliving their parent, Ctrl-C. Every user mistake
is one line `error: ...` (exit 2) on the command line and an `aqmlab.ScenarioError` /
`aqmlab.SweepError` in Python; a fault of the machine is detected before work starts or handled.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import aqmlab
from aqmlab.sweep.cache import Cache
from aqmlab.sweep import cache_layout
from conftest import SMALL
from conftest import aqmlab as cli

ERROR_LINE = re.compile(r"^error: [^\n]+$")

SCEN = SMALL.replace('name = "small"', 'name = "faulty"').replace('duration = "20s"\nwarmup = "2s"',
                                                                   'duration = "5s"').replace("count = 4", "count = 3")


#: runs whose results take about 1 MB (per-flow series of 20 flows every 10 ms for 60 s)
BIG = SCEN.replace('duration = "5s"', 'duration = "60s"\nflow_series_interval = "10ms"').replace("count = 3",
                                                                                                "count = 20")


@pytest.fixture
def scen(tmp_path):
    p = tmp_path / "faulty.toml"
    p.write_text(SCEN)
    return p


def one_error(r, code=2, contains=""):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and ERROR_LINE.match(lines[0]), r.stderr
    assert contains in lines[0], lines[0]
    return lines[0]


def entries(cache: Path):
    return sorted((cache / cache_layout()).glob("*/*.zip"))


def in_mount(tmp_path, size: str, ro: bool = False):
    """A command prefix that runs inside a private mount namespace with a small tmpfs at
    ``tmp_path / "mnt"`` (read-only if ``ro``). Skips where mount namespaces are not allowed."""
    if not shutil.which("unshare"):
        pytest.skip("unshare(1) not available")
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no mount namespaces here (needs root)")
    opts = f"size={size}" + (",ro" if ro else "")

    def wrap(args):
        script = f'mount -t tmpfs -o {opts} tmpfs "$1" && shift && exec "$@"'
        return ["unshare", "-m", "sh", "-c", script, "sh", str(mnt), *map(str, args)]

    return mnt, wrap


def run_cmd(args, timeout=300):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


AQMLAB = [sys.executable, "-m", "aqmlab.cli"]


# ----------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("seed", ["-1", str(2 ** 64), str(10 ** 30)])
def test_seed_out_of_range_is_one_line(scen, tmp_path, seed):
    one_error(cli("run", scen, "--seed", seed, "--out", tmp_path / "o"), contains="--seed: must be an integer from 0 to 2^64-1")
    one_error(cli("sweep", scen, "--seed", seed, "--out", tmp_path / "o", "--cache", tmp_path / "c"),
              contains="--seed")
    assert not (tmp_path / "o").exists()


def test_largest_seed_runs(scen, tmp_path):
    r = cli("run", scen, "--seed", str(2 ** 64 - 1), "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    one_error(cli("sweep", scen, "--seed", str(2 ** 64 - 1), "--seeds", "2", "--no-cache", "--out", tmp_path / "o"),
              contains="2^64-1")


@pytest.mark.parametrize("seed", [-1, 2 ** 64, 1.5, True, "3"])
def test_seed_out_of_range_in_python(scen, seed):
    with pytest.raises(aqmlab.ScenarioError, match="seed"):
        aqmlab.run(scen, seed=seed)
    with pytest.raises(aqmlab.SweepError, match="seed"):
        aqmlab.sweep(scen, seed=seed, cache=False)


# ----------------------------------------------------------------------------- long values


HUGE = "x" * 100_000


@pytest.mark.parametrize("args", [
    ("validate", "{scen}", "--set", f'bottleneck.aqm.type="{HUGE}"'),   # the engine's scenario errors
    ("validate", "{scen}", "--set", f'{HUGE}=1'),                       # a long key
    ("sweep", "{scen}", "--vary", f"bottleneck.aqm.type={HUGE}", "--no-cache", "--out", "{tmp}/o"),
    ("run", "{scen}", "--seed", HUGE),                                  # argparse's usage errors
    ("model", "choke", "--c", HUGE),
    ("reproduce", HUGE),
], ids=["value", "key", "vary", "seed", "model", "experiment"])
def test_a_huge_value_is_quoted_by_its_start_and_length(scen, tmp_path, args):
    args = [a.format(scen=scen, tmp=tmp_path) if len(a) < 1000 else a for a in args]
    r = cli(*args)
    err = r.stderr.strip().splitlines()[-1]
    # short, but for the list of the library's disciplines the line offers (it grows with the library)
    listed = re.sub(r"available: [\w, ]+", "available: …", err)
    assert r.returncode == 2 and err.startswith("error: ") and len(listed) < 500, err[:300]
    assert "x" * 59 + "\u2026" in err and "characters)" in err, err


# ----------------------------------------------------------------------------- cache and output disks


def test_read_only_cache_detected_before_the_first_run(scen, tmp_path):
    mnt, wrap = in_mount(tmp_path, "4m", ro=True)
    r = run_cmd(wrap(AQMLAB + ["sweep", scen, "--seeds", "3", "--cache", mnt / "cache", "--out", tmp_path / "o"]))
    one_error(r, contains=f"cache {mnt / 'cache'}: cannot write: read-only file system")
    assert not (tmp_path / "o" / "runs.csv").exists()


def test_full_cache_detected_before_the_first_run(scen, tmp_path):
    mnt, wrap = in_mount(tmp_path, "1m")
    r = run_cmd(wrap(AQMLAB + ["sweep", scen, "--seeds", "3", "--cache", mnt / "cache", "--out", tmp_path / "o"]))
    one_error(r, contains="disk full")


def test_cache_filling_up_mid_sweep_keeps_what_was_stored(scen, tmp_path):
    """Entries of ~1 MB on an 8 MB disk: the sweep stops with one line, the stored entries are whole."""
    scen.write_text(BIG)
    mnt, wrap = in_mount(tmp_path, "8m")
    check = ("import sys; from aqmlab.sweep.cache import Cache; from pathlib import Path; c = Cache(sys.argv[1]); "
             "es = sorted((Path(sys.argv[1]) / 'v2').glob('*/*.zip')); "
             "print(len(es), all(c.check(e.stem) is None for e in es), "
             "[p.name for p in (Path(sys.argv[1]) / 'tmp').iterdir() if not p.name.startswith('.aqmlab-probe')])")
    script = ("{0} sweep {1} --seeds 20 --jobs 1 --cache {2} --out {3} -q; echo rc=$?; {4} -c \"{5}\" {2}"
              .format(" ".join(AQMLAB), scen, mnt / "cache", tmp_path / "o", sys.executable, check))
    r = run_cmd(wrap(["sh", "-c", script]))
    err = [ln for ln in r.stderr.strip().splitlines() if ln]
    assert len(err) == 1 and "disk full" in err[0] and "runs stored" in err[0], r.stderr
    assert "rc=2" in r.stdout
    n, whole, tmp_left = r.stdout.strip().splitlines()[-1].split(" ", 2)
    assert 1 <= int(n) < 20 and whole == "True" and tmp_left == "[]", r.stdout


def test_out_checked_before_the_run(scen, tmp_path):
    (tmp_path / "file").write_text("x")
    slow = SCEN.replace('duration = "5s"', 'duration = "2000s"').replace("1Mb/s", "100Mb/s")
    scen.write_text(slow)
    t0 = time.time()
    one_error(cli("run", scen, "--out", tmp_path / "file" / "sub"), contains="--out")
    one_error(cli("sweep", scen, "--seeds", "2", "--out", tmp_path / "file", "--cache", tmp_path / "c"),
              contains="--out")
    assert time.time() - t0 < 30  # nothing was simulated
    assert not entries(tmp_path / "c")
    mnt, wrap = in_mount(tmp_path, "1m", ro=True)
    one_error(run_cmd(wrap(AQMLAB + ["run", scen, "--out", mnt / "out"])), contains="read-only file system")


def test_results_never_truncated_on_a_full_disk(scen, tmp_path):
    """A run whose result files do not fit: one line, and every file left in --out is whole."""
    scen.write_text(BIG)
    mnt, wrap = in_mount(tmp_path, "3m")
    script = ("{0} run {1} --out {2} -q; echo rc=$?; ls -la {2}; "
              "{3} -c \"import sys, pandas as pd, glob; [pd.read_csv(f) for f in glob.glob(sys.argv[1] + '/*.csv')]; "
              "[pd.read_parquet(f) for f in glob.glob(sys.argv[1] + '/*.parquet')]; print('whole')\" {2}"
              .format(" ".join(AQMLAB), scen, mnt / "out", sys.executable))
    r = run_cmd(wrap(["sh", "-c", script]))
    assert "rc=2" in r.stdout and "disk full" in r.stderr, (r.stdout, r.stderr)
    assert "whole" in r.stdout and ".tmp" not in r.stdout, r.stdout  # no partial file, no temporary left


# ----------------------------------------------------------------------------- killed workers

POISON = '''
import os, signal
seed = os.environ.get("AQMLAB_TEST_KILL_SEED")
if seed is not None:
    from aqmlab.sweep import executors as ex
    real = ex.run_task
    once = os.environ.get("AQMLAB_TEST_KILL_ONCE")

    def run_task(task, *args, **kw):
        if str(task.seed) == seed and (not once or not os.path.exists(once)):
            if once:
                open(once, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
        return real(task, *args, **kw)

    ex.run_task = run_task
'''


def poisoned(tmp_path, seed, once: bool):
    d = tmp_path / "site"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(POISON)
    env = {**os.environ, "PYTHONPATH": f"{d}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "AQMLAB_TEST_KILL_SEED": str(seed), "PYTHONWARNINGS": "ignore"}
    if once:
        env["AQMLAB_TEST_KILL_ONCE"] = str(tmp_path / "killed-once")
    return env


def test_a_killed_worker_is_replaced_and_its_runs_made_again(scen, tmp_path):
    args = AQMLAB + ["sweep", scen, "--seeds", "8", "--jobs", "2", "--cache", tmp_path / "c", "--out", tmp_path / "o"]
    r = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=300,
                       env=poisoned(tmp_path, 3, once=True))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "killed-once").exists()  # the worker really died
    assert "8 runs (0 from the cache, 8 run now)" in r.stdout
    runs = pd.read_csv(tmp_path / "o" / "runs.csv")
    assert len(runs) == 8 and runs["run"].is_unique and sorted(runs["seed"]) == list(range(1, 9))
    fresh = cli("sweep", scen, "--seeds", "8", "--jobs", "1", "--no-cache", "--out", tmp_path / "fresh", "-q")
    assert fresh.returncode == 0, fresh.stderr
    pd.testing.assert_frame_equal(runs, pd.read_csv(tmp_path / "fresh" / "runs.csv"))


def test_a_pool_broken_between_looks_fails_the_batch_instead_of_raising(monkeypatch):
    """A worker can die after the driver last looked and before it hands out the next batch: the
    submission then fails like the pool's other batches (and is retried with them), not raise."""
    from concurrent.futures.process import BrokenProcessPool

    from aqmlab.sweep.executors import LocalPool

    class Broken:
        def submit(self, *a, **k):
            raise BrokenProcessPool("A child process terminated abruptly")

    pool = LocalPool(2)
    monkeypatch.setattr(pool, "_pool", lambda: Broken())
    fut = pool.submit([], "engine")
    assert fut.done() and pool.died(fut.exception())


def test_a_run_that_keeps_killing_its_worker_is_reported(scen, tmp_path):
    args = AQMLAB + ["sweep", scen, "--seeds", "6", "--jobs", "2", "--cache", tmp_path / "c", "--out", tmp_path / "o",
                     "-q"]
    r = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=300,
                       env=poisoned(tmp_path, 4, once=False))
    line = one_error(r, code=1, contains="--seed 4")
    assert "died 3 times" in line and "SIGKILL" in line
    assert len(entries(tmp_path / "c")) == 5  # every other run is stored
    again = cli("sweep", scen, "--seeds", "6", "--jobs", "2", "--cache", tmp_path / "c", "--out", tmp_path / "o")
    assert again.returncode == 0 and "6 runs (5 from the cache, 1 run now)" in again.stdout, again.stderr


# ----------------------------------------------------------------------------- damaged cache entries


def test_damaged_entries_are_made_again_with_a_warning(scen, tmp_path):
    cache = tmp_path / "c"
    first = cli("sweep", scen, "--seeds", "4", "--cache", cache, "--out", tmp_path / "a", "-q")
    assert first.returncode == 0, first.stderr
    es = entries(cache)
    assert len(es) == 4
    es[0].write_bytes(es[0].read_bytes()[:-100])  # truncated (a full disk, a killed copy)
    data = bytearray(es[1].read_bytes())
    i = data.index(b'"row"') + 20
    data[i] = ord("7") if data[i] != ord("7") else ord("8")  # one digit of the metrics changed
    es[1].write_bytes(bytes(data))
    es[2].write_bytes(b"")
    r = cli("sweep", scen, "--seeds", "4", "--cache", cache, "--out", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    warns = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: cache entry")]
    assert len(warns) == 3 and all("making it again" in w for w in warns), r.stderr
    assert "4 runs (1 from the cache, 3 run now)" in r.stdout
    assert all(Cache(cache).check(e.stem) is None for e in entries(cache))
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "runs.csv"), pd.read_csv(tmp_path / "b" / "runs.csv"))


def test_damaged_entry_warns_in_python(scen, tmp_path):
    from aqmlab.base.errors import CacheWarning

    aqmlab.sweep(scen, seeds=2, cache=tmp_path / "c", jobs=1)
    e = entries(tmp_path / "c")[0]
    e.write_bytes(e.read_bytes()[:50])
    with pytest.warns(CacheWarning, match="damaged"):
        df = aqmlab.sweep(scen, seeds=2, cache=tmp_path / "c", jobs=1)
    assert len(df) == 2


# ----------------------------------------------------------------------------- odd input


def test_deeply_nested_values(scen, tmp_path):
    deep = "[" * 20_000 + "1" + "]" * 20_000  # (one argument may be at most 128 KiB)
    one_error(cli("sweep", scen, "--vary", f"flows[0].count={deep}", "--out", tmp_path / "o", "--cache", tmp_path / "c"),
              contains="nested")
    one_error(cli("run", scen, "--set", f"flows[0].count={deep}", "--out", tmp_path / "o"))
    nested: list = [1]
    for _ in range(5000):
        nested = [nested]
    with pytest.raises(aqmlab.SweepError, match="nested"):
        aqmlab.sweep(scen, vary={"flows[0].count": [nested]}, cache=False)
    d: dict = {"v": 1}
    for _ in range(5000):
        d = {"a": d}
    with pytest.raises(aqmlab.ScenarioError, match="nested"):
        aqmlab.run(d)
    with pytest.raises(aqmlab.ScenarioError):
        aqmlab.run(scen, overrides=[f"flows[0].count={deep}"])


def test_validate_a_device_or_binary_file(tmp_path):
    t0 = time.time()
    one_error(cli("validate", "/dev/zero"), contains="larger than 16 MiB")
    assert time.time() - t0 < 30
    (tmp_path / "bin.toml").write_bytes(b"name = 1\x00\xff")
    one_error(cli("validate", tmp_path / "bin.toml"), contains="not a text (UTF-8) file")
    one_error(cli("validate", tmp_path), contains="is a directory")
    with pytest.raises(aqmlab.ScenarioError, match="larger than"):
        aqmlab.validate("/dev/zero")


@pytest.mark.parametrize("scenario, message", [
    ({"simulation": {"duration": None}}, "simulation.duration: None has no TOML form"),
    ({"simulation": {"duration": object()}}, "simulation.duration: a object is not a scenario value"),
    ({"flows": [{"name": "t", "count": {1, 2}}]}, "flows[0].count: a set is not a scenario value"),
    ({1: 2}, "keys must be strings"),
    ({"simulation": {"duration": "x"}}, "simulation.duration"),  # a TOML value the loader refuses
])
def test_bad_dict_scenarios(scenario, message):
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.run(scenario)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_billion_seeds_are_refused_at_once(scen, tmp_path):
    t0 = time.time()
    one_error(cli("sweep", scen, "--seeds", "1000000000", "--out", tmp_path / "o", "--cache", tmp_path / "c"),
              contains="more than the 1000000")
    assert time.time() - t0 < 20
    with pytest.raises(aqmlab.SweepError, match="1000000000 runs"):
        aqmlab.sweep(scen, vary={"flows[0].count": [1, 2]}, seeds=500_000_000, cache=False)


def test_figure_or_table_names_cannot_leave_the_output_folder(tmp_path):
    from test_reproduce import TINY_EXPERIMENT, TINY_SCENARIO

    from aqmlab.reproduce import ExperimentError, load_experiment

    for kind, name in [("figures", "../../x"), ("tables", "../escape"), ("figures", "/etc/x"), ("tables", "a/b")]:
        d = tmp_path / kind / "tiny"
        d.mkdir(parents=True, exist_ok=True)
        (d / "scenario.toml").write_text(TINY_SCENARIO)
        text = TINY_EXPERIMENT.replace('name = "fig1-udp-share"' if kind == "figures" else 'name = "table1"',
                                       f'name = "{name}"', 1)
        assert text != TINY_EXPERIMENT
        (d / "experiment.toml").write_text(text)
        with pytest.raises(ExperimentError, match="must be a plain file name"):
            load_experiment(d)
        if name == "../../x":  # (one command is enough: the same check)
            r = cli("reproduce", "tiny", "--quick", "--experiments", tmp_path / kind, "--out",
                    tmp_path / "out" / "deep", "--no-cache")
            one_error(r, contains=f"{kind}[0].name")
    assert not (tmp_path / "x.png").exists() and not list(tmp_path.glob("escape*"))


# ----------------------------------------------------------------------------- the API's argument forms


def test_api_argument_forms(scen, tmp_path):
    odd = tmp_path / "a=b.toml"  # a path with '=' is a path
    odd.write_text(SCEN)
    assert aqmlab.run(str(odd)).summary["scenario"]["name"] == "faulty"
    with pytest.raises(aqmlab.ScenarioError, match="no such file"):
        aqmlab.run(str(tmp_path / "x=1.toml"))
    with pytest.raises(FileNotFoundError):  # (also a FileNotFoundError)
        aqmlab.run(str(tmp_path / "missing.toml"))
    one = aqmlab.run(scen, overrides="flows[0].count=2")  # one string is one override
    assert one.summary["scenario"]["flows"] == 3
    assert aqmlab.validate(scen, overrides="flows[0].count=5")["flows"] == 6
    with pytest.raises(aqmlab.ScenarioError, match="overrides"):
        aqmlab.run(scen, overrides=[1])
    with pytest.raises(aqmlab.ScenarioError, match="scenario"):
        aqmlab.run(42)
    df = aqmlab.sweep(scen, overrides="flows[0].count=2", cache=False, jobs=1)
    assert df["all.flows"].tolist() == [3.0]
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(aqmlab.SweepError, match="--jobs"):
            aqmlab.sweep(scen, cache=False, jobs=jobs)
    for vary in (42, {"": [1]}, {"flows[0].count": []}):
        with pytest.raises(aqmlab.SweepError):
            aqmlab.sweep(scen, vary=vary, cache=False)


# ----------------------------------------------------------------------------- stopping


SLOW = SCEN.replace('duration = "5s"', 'duration = "300s"').replace('rate = "1Mb/s"', 'rate = "200Mb/s"').replace(
    "count = 3", "count = 50").replace('rate = "500kb/s"', 'rate = "50Mb/s"')


def _children(pid: int) -> set:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d.name))
    return out


def _alive(pids) -> set:
    alive = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(p)
    return alive


def _start_slow_sweep(scen, tmp_path):
    scen.write_text(SLOW)
    p = subprocess.Popen(list(map(str, AQMLAB + ["sweep", scen, "--seeds", "4", "--jobs", "2", "--cache",
                                                 tmp_path / "c", "--out", tmp_path / "o", "-q"])),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    kids: set = set()
    while time.time() < deadline and len(kids) < 2:  # the two workers (and the resource tracker, maybe)
        kids = {k for k in _children(p.pid) if "spawn_main" in Path(f"/proc/{k}/cmdline").read_text(errors="replace")}
        time.sleep(0.1)
    assert len(kids) >= 2, "no workers started"
    time.sleep(2)  # let them start their runs
    return p, kids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_ctrl_c_stops_the_pool_promptly(scen, tmp_path):
    p, kids = _start_slow_sweep(scen, tmp_path)
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    assert p.returncode == 130
    assert time.time() - t0 < 10  # not the ~minute a run takes
    deadline = time.time() + 10
    while _alive(kids) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(kids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_workers_die_with_their_parent(scen, tmp_path):
    p, kids = _start_slow_sweep(scen, tmp_path)
    p.kill()  # kill -9: no chance to clean up
    p.wait(timeout=10)
    deadline = time.time() + 10
    while _alive(kids) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(kids), "orphaned workers still running"
