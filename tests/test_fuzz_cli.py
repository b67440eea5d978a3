"""Fuzzing the command's newer surfaces (issue 27, item 8): `aqmlab model ... --run DIR`, `aqmlab
plot` and `aqmlab diff` on damaged and mismatched folders with odd options, and the executor options (`--executor`,
`--scheduler`, `--jobs`) of sweeps, in Python and through the command.

Whatever is thrown at them, the answer is a result (exit 0) or one `error:` line (exit 2; argparse's
own usage errors add their usage line), never a traceback, and a bad `--scheduler` is refused
within the probe's few seconds. Hypothesis drives the cases from a fixed seed, so a failure in CI
reproduces exactly.

Two sizes: a bounded slice that runs with every `pytest` (`AQMLAB_FUZZ_CLI_EXAMPLES`, default 60
cases a target), and long runs behind the `fuzz` marker, skipped unless selected:

    pytest -m fuzz tests/test_fuzz_cli.py                       # 1000 cases a target
    AQMLAB_FUZZ_CLI_LONG=20000 pytest -m fuzz tests/test_fuzz_cli.py

`aqmlab plot` and `aqmlab diff` on run and sweep folders, damaged ones too (docs/testing.md).
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import EXAMPLES, SMALL  # noqa: E402

CI_EXAMPLES = int(os.environ.get("AQMLAB_FUZZ_CLI_EXAMPLES", "60"))
LONG_EXAMPLES = int(os.environ.get("AQMLAB_FUZZ_CLI_LONG", "1000"))


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=not os.environ.get("AQMLAB_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


# ----------------------------------------------------------------------------- outcomes


def check_outcome(rc, err: str, what):
    """Exit 0 with no error line, or exit 2 with exactly one `error:` line (argparse's usage errors
    print their usage line first); every other line of stderr a warning or a note."""
    assert "Traceback" not in err, (what, err)
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert all(line.startswith(("error:", "warning:", "note:", "plot:", "usage:", " ")) for line in lines), (what, err)
    if rc == 0:
        assert not errors, (what, err)
    else:
        assert rc == 2 and len(errors) == 1, (what, rc, err)


def cli_in_process(args):
    """`aqmlab ARGS` in this process: (exit status, stdout, stderr)."""
    from aqmlab.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


# ----------------------------------------------------------------------------- model --run

RUNS = {
    # a CHOKe dumbbell with queue snapshots (choke, ward), a CHOKeW one with two priorities (chokew)
    "choke": ("dumbbell-red.toml", ["simulation.duration=6s", "simulation.warmup=1s", "flows[0].count=8",
                                    'bottleneck.aqm={type="choke", min_th=20, max_th=60}',
                                    "simulation.queue_snapshots=true"]),
    "chokew": ("chokew-diffserv.toml", ["simulation.duration=6s", "simulation.warmup=1s"]),
    "ward": ("dumbbell-red.toml", ["simulation.duration=6s", "simulation.warmup=1s", "flows[0].count=8",
                                   'bottleneck.aqm={type="ward"}']),
}
FILES = ["summary.json", "scenario.toml", "flows.csv", "flows.parquet", "timeseries.csv", "queue_snapshots.csv"]
GARBAGE = ["", "\x00\x01\x02", "{", "[bottleneck]\nrate = ", "not,a\ncsv", "a,b\n1", "\ufeff{}", "nan", "[]",
           '{"bottleneck": 1}', '{"scenario": {"flows": "x"}}', "x" * 5000]
TOML_EDITS = ['bottleneck.aqm = { type = "droptail" }', 'bottleneck.aqm = { type = "red", min_th = 5, max_th = 500 }',
              'bottleneck.rate = "1b/s"', "bottleneck.rate = 0", "bottleneck.limit = -1", 'bottleneck = "x"',
              "flows = []", 'flows = [{ transport = "udp" }]', 'topology = "star"', "[[flows]]\ncount = 1e9",
              "simulation.duration = 0"]
OPTIONS = {
    "choke": ["--N", "--c", "--d", "--min-th", "--max-th", "--max-p", "--x0-rel", "--x0", "--points", "--plot-kind",
              "--beta-mode", "--packet-size", "--profile", "--perfect", "--allow-partial"],
    "chokew": ["--p0", "--weights", "--queue", "--eta", "--capacity", "--packet-size"],
    "ward": ["--s", "--c", "--packet-size"],
}
FLAGS = {"--profile", "--perfect", "--allow-partial"}
VALID = {"--x0-rel": ["0.5", "0.1,1,10", "0.1:10:3"], "--x0": ["50", "10,100"], "--points": ["5"],
         "--plot-kind": ["profile", "shares"], "--beta-mode": ["exact", "first_order"], "--packet-size": ["500"],
         "--p0": ["0.002", "0.001,0.01"], "--weights": ["1=1,2=2", "1=2,2=1"], "--queue": ["150", "10"],
         "--eta": ["maclaurin", "exact"], "--s": ["0.1,1,10", "0.01:100:5"], "--max-p": ["0.1"]}
VALUES = ["1", "0", "-1", "32", "0.5", "1e400", "nan", "inf", "abc", "", "1Mb/s", "100ms", "1:10:3", "0.1,1,10",
          "1=1,2=2", "x=y", "profile", "exact", "first_order", "maclaurin", "1:0:0", "9" * 40]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import aqmlab

    root = tmp_path_factory.mktemp("runs")
    out = {}
    for model, (example, overrides) in RUNS.items():
        res = aqmlab.run(EXAMPLES / example, overrides=overrides)
        res.save(root / model)
        out[model] = root / model
    return out


def _damage(run: Path, where: Path, mutations) -> Path:
    """A copy of ``run`` at ``where`` with ``mutations`` applied (or a path that is not a run)."""
    shutil.copytree(run, where)
    for op, name, arg in mutations:
        f = where / name
        if f.is_dir():  # made a directory by an earlier mutation
            if op in ("delete", "replace"):
                shutil.rmtree(f)
            if op != "replace":
                continue
        if op == "delete":
            f.unlink(missing_ok=True)
        elif op == "truncate" and f.exists():
            data = f.read_bytes()
            f.write_bytes(data[: int(len(data) * arg)])
        elif op == "replace":
            f.write_text(arg)
        elif op == "append":
            with open(f, "a") as fh:
                fh.write(arg)
        elif op == "toml" and (where / "scenario.toml").exists():
            text = (where / "scenario.toml").read_text()
            key = arg.split(" = ")[0]
            kept = [line for line in text.splitlines() if not line.startswith(key.split(".")[-1] + " ")]
            (where / "scenario.toml").write_text(f"{arg}\n" + "\n".join(kept) + "\n")
        elif op == "directory":
            f.unlink(missing_ok=True)
            f.mkdir(exist_ok=True)
    return where


mutation = st.one_of(
    st.tuples(st.just("delete"), st.sampled_from(FILES), st.none()),
    st.tuples(st.just("truncate"), st.sampled_from(FILES), st.floats(0, 1)),
    st.tuples(st.just("replace"), st.sampled_from(FILES), st.one_of(st.sampled_from(GARBAGE), st.text(max_size=40))),
    st.tuples(st.just("append"), st.sampled_from(FILES), st.sampled_from(["\n1,2,3", ",x\n", "\x00", "\nnan"])),
    st.tuples(st.just("toml"), st.just("scenario.toml"), st.sampled_from(TOML_EDITS)),
    st.tuples(st.just("directory"), st.sampled_from(FILES), st.none()),
)


@st.composite
def model_cases(draw):
    model = draw(st.sampled_from(sorted(RUNS)))
    source = draw(st.sampled_from(sorted(RUNS)))  # sometimes another model's run: a mismatch to refuse
    where = draw(st.sampled_from(["run", "run", "run", "missing", "file", "two"]))
    mutations = draw(st.lists(mutation, max_size=3))
    opts = []
    # most cases keep the options valid (or none), so that the folder's damage is what is tested
    values = draw(st.sampled_from(["none", "none", "valid", "any"]))
    for opt in draw(st.lists(st.sampled_from(OPTIONS[model]), max_size=0 if values == "none" else 3)):
        value = st.sampled_from(VALID.get(opt, ["1"])) if values == "valid" else \
            st.one_of(st.sampled_from(VALUES), st.text(max_size=8))
        opts += [opt] if opt in FLAGS else [opt, draw(value)]
    plot = draw(st.sampled_from([None, None, None, "fig.png", "fig.svg", "fig.txt", "no/such/dir/fig.png"]))
    return model, source, where, mutations, opts, plot


def check_model_case(runs, case):
    model, source, where, mutations, opts, plot = case
    tmp = Path(tempfile.mkdtemp(prefix="aqmlab-fuzz-"))
    try:
        if where == "missing":
            paths = [tmp / "nothing-here"]
        elif where == "file":
            (tmp / "a-file").write_text("x")
            paths = [tmp / "a-file"]
        else:
            paths = [_damage(runs[source], tmp / "run", mutations)]
            if where == "two":
                paths.append(runs[model])
        args = ["model", model, "--run", *paths, *opts, "--json"]
        if plot:
            args += ["--plot", tmp / plot]
        if model == "chokew" and len(paths) > 1:
            args = ["model", model, "--run", paths[0], *opts, "--json"]  # chokew takes one run
        t0 = time.monotonic()
        rc, _, err = cli_in_process(args)
        check_outcome(rc, err, args)
        assert time.monotonic() - t0 < 120, args
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@_settings(CI_EXAMPLES)
@given(case=model_cases())
# found by this fuzzer: tracebacks for a summary.json holding a list, a flows.csv row without its
# priority, and --queue 1e40 (a division by zero in the CHOKeW model)
@example(case=("choke", "choke", "run", [("replace", "summary.json", "[]")], [], None))
@example(case=("chokew", "chokew", "run", [("append", "flows.csv", "\n1,2,3")], [], None))
@example(case=("chokew", "chokew", "run", [], ["--queue", "9" * 40], None))
def test_model_run_on_damaged_and_mismatched_runs(runs, case):
    check_model_case(runs, case)


@pytest.mark.fuzz
@_settings(LONG_EXAMPLES)
@given(case=model_cases())
def test_model_run_on_damaged_and_mismatched_runs_long(runs, case):
    check_model_case(runs, case)


def test_model_run_on_the_undamaged_runs_works(runs):
    """The fuzzed folders start from runs the models accept."""
    for model in RUNS:
        rc, out, err = cli_in_process(["model", model, "--run", runs[model], "--json"])
        assert rc == 0 and out.strip().startswith(("{", "[")), (model, err)


# ----------------------------------------------------------------------------- executor options

hosts = st.one_of(st.sampled_from(["127.0.0.1", "localhost", "[::1]", "::1", "", "no-such-host.invalid", "0.0.0.0",
                                   "256.1.1.1", "[::1", "a b", "\x00"]),
                  st.text(alphabet="abcxyz.-:[]%", max_size=10))
ports = st.one_of(st.integers(-5, 70000).map(str), st.sampled_from(["", "0", "9", "65535", "65536", "x", "8786/path",
                                                                    "8786?x=1", " 1"]))
schemes = st.sampled_from(["tcp://", "tls://", "ws://", "wss://", "inproc://", "ucx://", "TCP://", "foo://", "",
                           "tcp:/", "tcp:///", "://", "http://"])
schedulers = st.one_of(st.builds(lambda s, h, p: f"{s}{h}:{p}", schemes, hosts, ports),
                       st.builds(lambda s, h: f"{s}{h}", schemes, hosts),
                       st.text(max_size=30), st.sampled_from(["", " ", "scheduler.json", "-1", "tcp://:8786"]))
executors = st.one_of(st.none(), st.sampled_from(["local", "dask", "Local", "", "slurm"]), st.text(max_size=6),
                      st.integers(-1, 3))
jobs = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True), st.booleans(), st.text(max_size=3),
                 st.just(10 ** 30))


def check_pool(executor, jobs_, scheduler):
    from aqmlab.base.errors import SweepError
    from aqmlab.sweep.executors import PROBE_TIMEOUT, make_pool

    t0 = time.monotonic()
    try:
        pool = make_pool(executor, jobs_, scheduler)
    except SweepError as e:
        assert "\n" not in str(e) and str(e), repr(e)
    else:
        if pool is not None:
            pool.close()
    assert time.monotonic() - t0 < 2 * PROBE_TIMEOUT + 5, (executor, jobs_, scheduler)


@_settings(CI_EXAMPLES * 4)
@given(executor=executors, jobs_=jobs, scheduler=st.one_of(st.none(), schedulers))
def test_executor_options_in_python(executor, jobs_, scheduler):
    """`make_pool` (what `aqmlab.sweep(executor=, jobs=, scheduler=)` and the command use): a pool,
    or one SweepError line, within the scheduler probe's time."""
    check_pool(executor, jobs_, scheduler)


@pytest.mark.fuzz
@_settings(LONG_EXAMPLES)
@given(executor=executors, jobs_=jobs, scheduler=st.one_of(st.none(), schedulers))
def test_executor_options_in_python_long(executor, jobs_, scheduler):
    check_pool(executor, jobs_, scheduler)


def check_sweep_command(tmp, args):
    scen = tmp / "s.toml"
    scen.write_text(SMALL.replace('duration = "20s"\nwarmup = "2s"', 'duration = "1s"'))
    cmd = [sys.executable, "-m", "aqmlab.cli", "sweep", str(scen), "--vary", "flows[0].count=1,2", "--no-cache",
           "-q", "--out", str(tmp / "out"), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    check_outcome(r.returncode, r.stderr, args)


cli_executor_args = st.lists(st.one_of(
    st.tuples(st.just("--executor"), st.one_of(st.sampled_from(["local", "dask", "x", ""]), st.text(max_size=4))),
    st.tuples(st.just("--scheduler"), schedulers),
    st.tuples(st.just("--jobs"), st.one_of(st.integers(-2, 3).map(str), st.sampled_from(["", "x", "1e3", "9" * 30]))),
), min_size=1, max_size=3).map(lambda pairs: [x.replace("\x00", "") for p in pairs for x in p])  # (argv has no NUL)


@settings(max_examples=max(3, CI_EXAMPLES // 5), deadline=None,
          derandomize=not os.environ.get("AQMLAB_HYPOTHESIS_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(args=cli_executor_args)
@example(args=["--jobs", "9" * 30])  # found by this fuzzer: an OverflowError traceback from the process pool
@example(args=["--scheduler", "foo://localhost:8786"])  # issue 27: 40 s, then a TimeoutError traceback
def test_executor_options_through_the_command(tmp_path_factory, args):
    """A few cases through `aqmlab sweep` itself (each a fresh interpreter)."""
    check_sweep_command(tmp_path_factory.mktemp("sweep"), args)


@pytest.mark.fuzz
@settings(max_examples=max(20, LONG_EXAMPLES // 20), deadline=None,
          derandomize=not os.environ.get("AQMLAB_HYPOTHESIS_RANDOM"),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(args=cli_executor_args)
def test_executor_options_through_the_command_long(tmp_path_factory, args):
    check_sweep_command(tmp_path_factory.mktemp("sweep"), args)


# ----------------------------------------------------------------------------- plot and diff

PLOT_COLUMNS = ["udp.share", "tcp.jain", "queue.mean", "seed", "scenario", "aqm", "flows[1].rate", "goodput_bps",
                "throughput_bps", "flow", "kind", "time_s", "queue_pkts", "nope", "", "a,b", "udp.share,tcp.jain",
                "rate", "throughput"]
# plots that work on the sweep (s), the CHOKe run with its queue snapshots (r) or both (sr): most cases
# start from one, so that the options and the damage are what is tested
VALID_PLOTS = [("s", ["--y", "udp.share"]), ("s", ["-k", "bar", "--y", "udp.share,tcp.jain"]),
               ("sr", ["-k", "flows"]), ("sr", ["-k", "cdf", "--y", "throughput_bps"]),
               ("sr", ["-k", "timeseries"]), ("sr", ["-k", "timeseries", "--y", "queue_pkts"]), ("r", ["-k", "queue"])]
PLOT_KINDS = ["line", "bar", "cdf", "timeseries", "flows", "queue", "pie", ""]
PLOT_NAMES = ["fig", "a b", "../escape", "/abs", "x/y", ".", "..", "", "é", "n" * 300, "fig.png"]
PLOT_OUTS = ["out", "out/deeper", "afile", "/proc/x", "", "."]


@pytest.fixture(scope="module")
def plot_inputs(tmp_path_factory, runs):
    """Two run folders (CHOKe, WARD), a small sweep of two points with its flows and time series,
    and a file where a folder is expected."""
    from conftest import aqmlab as command

    d = tmp_path_factory.mktemp("plotfuzz")
    r = command("sweep", EXAMPLES / "dumbbell-red.toml", "--vary", "flows[1].rate=0.5Mb/s,2Mb/s",
                "--set", "simulation.duration=4s", "--set", "simulation.warmup=1s", "--set", "flows[0].count=4",
                "--tables", "flows,timeseries", "--cache", d / "cache", "--out", d / "sweep", "-q")
    assert r.returncode == 0, r.stderr
    (d / "afile").write_text("x")
    return {"choke": runs["choke"], "ward": runs["ward"], "sweep": d / "sweep", "afile": d / "afile"}


@st.composite
def plot_cases(draw):
    where, opts = draw(st.sampled_from(VALID_PLOTS))
    opts = list(opts)
    if draw(st.booleans()):
        folders = [draw(st.sampled_from([{"s": "sweep", "r": "choke"}[w] for w in where] + ["damaged"] * ("r" in where)))]
    else:
        folders = draw(st.lists(st.sampled_from(["choke", "ward", "sweep", "afile", "missing", "damaged"]),
                                min_size=1, max_size=2))
    mutations = draw(st.lists(mutation, max_size=2)) if "damaged" in folders else []
    for opt in draw(st.lists(st.sampled_from(["--kind", "--x", "--y", "--by", "--panels", "--where", "--link",
                                              "--label", "--name", "--logx", "--logy", "--width", "--style"]),
                             max_size=4)):
        if opt in ("--logx", "--logy"):
            opts.append(opt)
            continue
        value = {
            "--kind": st.sampled_from(PLOT_KINDS),
            "--name": st.sampled_from(PLOT_NAMES),
            "--where": st.builds(lambda c, v: f"{c}={v}", st.sampled_from(PLOT_COLUMNS),
                                 st.sampled_from(["red", "0.5Mb/s", "1", "x", "", "1,2"])),
            "--label": st.builds(lambda a, b: f"{a}={b}", st.sampled_from(PLOT_COLUMNS), st.text(max_size=5)),
            "--link": st.sampled_from(["bottleneck", "reverse", "nope", "", "0"]),
            "--width": st.sampled_from(["1", "2", "3", "x"]),
            "--style": st.sampled_from(["paper", "draft", "x"]),
        }.get(opt, st.one_of(st.sampled_from(PLOT_COLUMNS), st.text(max_size=6)))
        opts += [opt, draw(value)]
    out = draw(st.sampled_from(PLOT_OUTS))
    return folders, mutations, opts, out


def check_plot_case(inputs, case):
    folders, mutations, opts, out = case
    base = Path(tempfile.mkdtemp(prefix="aqmlab-fuzz-plot-"))
    tmp = base / "work"
    tmp.mkdir()
    try:
        paths = []
        for f in folders:
            if f == "missing":
                paths.append(tmp / "nothing-here")
            elif f == "damaged":
                paths.append(_damage(inputs["choke"], tmp / f"run{len(paths)}", mutations))
            else:
                paths.append(inputs[f])
        (tmp / "afile").write_text("x")
        o = Path(out) if out.startswith("/") else tmp / out
        args = ["plot", *paths, *opts, "--out", o, "-q"]
        rc, _, err = cli_in_process(args)
        check_outcome(rc, err, args)
        # nothing is written outside the output folder it was given (issue 27, item 2)
        assert [p.name for p in base.iterdir()] == ["work"], args
    finally:
        shutil.rmtree(base, ignore_errors=True)


@_settings(CI_EXAMPLES)
@given(case=plot_cases())
@example(case=(["sweep"], [], ["--y", "udp.share", "--by", "nope"], "out"))  # issue 27: a traceback for an unknown --by
@example(case=(["sweep", "choke"], [], [], "out"))  # a sweep and a run together
@example(case=(["choke"], [], ["-k", "flows", "--name", "../escape"], "out"))  # outside --out
def test_plot_on_what_a_user_gives_it(plot_inputs, case):
    """`aqmlab plot` on run and sweep folders (damaged ones too) with any options: a figure, or one
    `error:` line with exit 2; nothing written outside --out."""
    check_plot_case(plot_inputs, case)


@pytest.mark.fuzz
@_settings(LONG_EXAMPLES)
@given(case=plot_cases())
def test_plot_on_what_a_user_gives_it_long(plot_inputs, case):
    check_plot_case(plot_inputs, case)


@st.composite
def diff_cases(draw):
    a, b = draw(st.sampled_from(["choke", "ward", "chokew", "missing", "afile", "damaged"])), \
        draw(st.sampled_from(["choke", "ward", "chokew", "missing", "damaged"]))
    mutations = draw(st.lists(mutation, max_size=3))
    flags = draw(st.lists(st.sampled_from(["--all", "--engine"]), max_size=2, unique=True))
    return a, b, mutations, flags


def check_diff_case(runs, case):
    a, b, mutations, flags = case
    tmp = Path(tempfile.mkdtemp(prefix="aqmlab-fuzz-diff-"))
    try:
        (tmp / "afile").write_text("x")
        paths = []
        for i, f in enumerate((a, b)):
            if f == "missing":
                paths.append(tmp / "nothing-here")
            elif f == "afile":
                paths.append(tmp / "afile")
            elif f == "damaged":
                paths.append(_damage(runs["choke"], tmp / f"run{i}", mutations))
            else:
                paths.append(runs[f])
        args = ["diff", *paths, *flags]
        rc, _, err = cli_in_process(args)
        check_outcome(rc, err, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@_settings(CI_EXAMPLES)
@given(case=diff_cases())
def test_diff_on_damaged_and_mismatched_runs(runs, case):
    """`aqmlab diff A B` on any two folders, damaged ones too: a comparison or one `error:` line."""
    check_diff_case(runs, case)


@pytest.mark.fuzz
@_settings(LONG_EXAMPLES)
@given(case=diff_cases())
def test_diff_on_damaged_and_mismatched_runs_long(runs, case):
    check_diff_case(runs, case)
