"""No command writes outside the folder it was given (issue 27 item 2): a name taken from an option
or a file (a scenario's `name`, `plot --name`, an experiment's figure and table names) with a path
separator or `..` is refused with one error line, and a command given an output folder (or file)
writes nothing anywhere else. Every command that takes a name or an output folder is here; `aqmlab
emulate` (root, network namespaces) names its default folder after the scenario file, not a name
inside it, and writes into its --out like `run` (tests/test_emulate.py)."""

import os

import pytest

from conftest import EXAMPLES, aqmlab
from test_reproduce import TINY_EXPERIMENT, TINY_SCENARIO

SHORT = ["--set", "simulation.duration=4s", "--set", "simulation.warmup=1s"]


def files(root):
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def box(tmp_path):
    """A sandbox: commands run in box/work; anything written outside the folders they are given
    shows up as a new file under the sandbox (or beside it)."""
    work = tmp_path / "box" / "work"
    work.mkdir(parents=True)
    return work


def check(box, before, r, allowed=(), refused=False):
    new = files(box.parent.parent) - before
    outside = [f for f in new if not any(f.startswith(str(a) + os.sep) or f == str(a) for a in allowed)]
    assert not outside, (outside, r.stderr)
    if refused:
        assert r.returncode == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    else:
        assert r.returncode == 0, r.stderr


def test_run_refuses_a_scenario_name_that_is_a_path(box):
    text = (EXAMPLES / "dumbbell-red.toml").read_text().replace('name = "dumbbell-red"', 'name = "../../escape"', 1)
    (box / "s.toml").write_text(text)
    before = files(box.parent.parent)
    r = aqmlab("run", "s.toml", *SHORT, cwd=box)
    check(box, before, r, refused=True)
    assert "name: '../../escape' cannot name the results folder" in r.stderr
    # with --out the name is only a label, and the results stay in --out
    r = aqmlab("run", "s.toml", *SHORT, "--out", box / "out", "-q", cwd=box)
    check(box, before, r, allowed=[box / "out"])


def test_run_and_sweep_write_only_into_their_folders(box):
    before = files(box.parent.parent)
    # (the example's second capture, 10-20 s, is moved inside the shortened run)
    r = aqmlab("run", EXAMPLES / "pcap-choke.toml", *SHORT, "--set", "pcap[1].start=1s", "--set", "pcap[1].stop=3s",
               "--out", box / "o1", "-q", cwd=box)
    check(box, before, r, allowed=[box / "o1"])
    r = aqmlab("sweep", EXAMPLES / "dumbbell-red.toml", "--vary", "flows[0].count=1:2:1", *SHORT, "--out", box / "o2",
               "--cache", box / "cache", "-q", cwd=box)
    check(box, before, r, allowed=[box / "o1", box / "o2", box / "cache"])


@pytest.mark.parametrize("name, refused", [("../escape", True), ("a/b", True), ("..", True), (".hidden", True),
                                           ("fine-name", False)])
def test_plot_name(box, name, refused):
    r = aqmlab("run", EXAMPLES / "dumbbell-red.toml", *SHORT, "--out", box / "run", "-q", cwd=box)
    assert r.returncode == 0, r.stderr
    before = files(box.parent.parent)
    r = aqmlab("plot", box / "run", "-k", "flows", "--name", name, "-o", box / "plots", "-q", cwd=box)
    check(box, before, r, allowed=[box / "plots"], refused=refused)
    if not refused:
        assert (box / "plots" / f"{name}.png").is_file() and (box / "plots" / f"{name}.csv").is_file()


@pytest.mark.parametrize("edit, refused", [
    (('name = "fig1-udp-share"', 'name = "../escape"'), True),
    (('name = "table1"', 'name = "sub/table1"'), True),
    (None, False),
])
def test_reproduce_names_of_figures_and_tables(box, edit, refused):
    exp = box / "exps" / "tiny"
    exp.mkdir(parents=True)
    (exp / "scenario.toml").write_text(TINY_SCENARIO)
    (exp / "experiment.toml").write_text(TINY_EXPERIMENT.replace(*edit, 1) if edit else TINY_EXPERIMENT)
    before = files(box.parent.parent)
    r = aqmlab("reproduce", "tiny", "--quick", "--experiments", box / "exps", "--out", box / "out", "--cache",
               box / "cache", cwd=box)
    check(box, before, r, allowed=[box / "out", box / "cache"], refused=refused)
    if refused:
        assert ".name" in r.stderr and "must be a plain file name" in r.stderr


def test_model_writes_only_its_figure(box):
    (box / "m").mkdir()
    before = files(box.parent.parent)
    r = aqmlab("model", "choke", "--x0-rel", "0.5,2", "--plot", box / "m" / "fig.png", cwd=box)
    check(box, before, r, allowed=[box / "m"])
    assert (box / "m" / "fig.png").is_file()


def test_diff_writes_nothing(box):
    for name in ("a", "b"):
        r = aqmlab("run", EXAMPLES / "dumbbell-red.toml", *SHORT, "--out", box / name, "-q", cwd=box)
        assert r.returncode == 0
    before = files(box.parent.parent)
    r = aqmlab("diff", box / "a", box / "b", cwd=box)
    check(box, before, r)
