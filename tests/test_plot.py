"""aqmlab plot and the paper style: files written, axes shared where panels are compared, no title
in the image, labels in mathtext, one legend outside the axes; one-line errors."""

import json

import pytest

CHOKE = 'bottleneck.aqm={type="choke", min_th=40, max_th=80, w_q=0.002, max_p=0.1}'
SHORT = ["--set", "simulation.duration=25s", "--set", "simulation.warmup=5s"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three seeds of RED and of CHOKe (README scenario, shortened, with queue snapshots), and a
    sweep over the UDP rate with two seeds."""
    from conftest import EXAMPLES, aqmlab

    d = tmp_path_factory.mktemp("plotruns")
    for seed in (1, 2, 3):
        for extra in ([], ["--set", CHOKE]):
            r = aqmlab("run", EXAMPLES / "dumbbell-red.toml", "--seed", seed, *SHORT, "--set",
                       "simulation.queue_snapshots=true", *extra, "-q", cwd=d)
            assert r.returncode == 0, r.stderr
    r = aqmlab("sweep", EXAMPLES / "dumbbell-red.toml", "--vary", "flows[1].rate=0.5Mb/s,1Mb/s,2Mb/s",
               "--vary", 'bottleneck.aqm.type="red","choke"', "--set", "bottleneck.aqm.min_th=40",
               "--set", "bottleneck.aqm.max_th=80", "--seeds", "2", *SHORT, "--tables", "flows,timeseries",
               "--out", d / "sweep", "-q", cwd=d)
    assert r.returncode == 0, r.stderr
    return d


def test_plot_bar_of_run_folders_by_aqm(runs, run_cli):
    out = runs / "plots"
    folders = sorted(str(p) for p in (runs / "results").iterdir())
    r = run_cli("plot", *folders, "--kind", "bar", "--x", "aqm", "--y", "udp.share", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "3 seeds per point" in r.stdout and "95 % Student-t" in r.stdout
    for ext in ("pdf", "svg", "png"):
        assert (out / f"bar-udp.share.{ext}").stat().st_size > 1000
    png = (out / "bar-udp.share.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import struct

    w, h = struct.unpack(">II", png[16:24])
    assert 900 <= w <= 1150  # one column (3.5 in) at 300 dpi, cropped to its content
    svg = (out / "bar-udp.share.svg").read_text()
    assert "bar-udp.share" not in svg  # no title inside the image


def test_paper_style_shares_y_and_writes_no_title(runs, monkeypatch):
    """Compared panels (one per AQM) share their y axis; labels use mathtext; the legend is the
    figure's, outside the axes; no title in the image (the draft style has one)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from aqmlab import plot as P

    seen = {}
    orig = Figure.savefig

    def spy(fig, *a, **k):
        seen["axes"] = [ax for ax in fig.axes if ax.get_visible()]
        seen["legends"] = [ax.get_legend() for ax in fig.axes]
        seen["fig_legends"] = list(fig.legends)
        seen["suptitle"] = fig._suptitle.get_text() if fig._suptitle else ""
        seen["ylabels"] = [ax.get_ylabel() for ax in fig.axes] + [fig._supylabel.get_text() if fig._supylabel else ""]
        return orig(fig, *a, **k)

    monkeypatch.setattr(Figure, "savefig", spy)
    folders = sorted((runs / "results").iterdir())
    P.plot(folders, kind="flows", by="aqm", out=runs / "p2", name="per-flow")
    axes = seen["axes"]
    assert len(axes) == 2
    assert axes[0].get_ylim() == axes[1].get_ylim()
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])
    assert seen["suptitle"] == "" and all(lg is None for lg in seen["legends"]) and len(seen["fig_legends"]) == 1
    o = P.plot(folders, kind="queue", by="aqm", out=runs / "p2", name="queue")
    assert any(r"$\rho_0(y)$" in t for t in seen["ylabels"])
    assert {p.suffix for p in o.files} == {".pdf", ".svg", ".png", ".csv"}  # the plotted data beside it
    o = P.plot(folders, kind="flows", by="aqm", out=runs / "p3", name="draft", style="draft", title="Per flow")
    assert seen["suptitle"].startswith("Per flow")
    assert {p.suffix for p in o.files} == {".png", ".svg", ".csv"}


def test_plot_a_sweep_with_intervals_and_groups(runs, run_cli):
    out = runs / "plots"
    r = run_cli("plot", runs / "sweep", "--y", "udp.share", "--x", "flows[1].rate",
                "--by", "bottleneck.aqm.type", "--out", out, "--name", "share")
    assert r.returncode == 0, r.stderr
    assert "2 seeds per point" in r.stdout and "min–max" in r.stdout
    assert "choke is highest" in r.stdout or "red is highest" in r.stdout
    for kind in ("cdf", "timeseries", "flows"):
        r = run_cli("plot", runs / "sweep", "--kind", kind, "--where", "flows[1].rate=2Mb/s", "--out", out)
        assert r.returncode == 0, (kind, r.stderr)


@pytest.mark.parametrize("args,match", [
    (["--kind", "line"], "--y: line needs the metric"),
    (["--y", "nonsense"], "--y nonsense: not a column of the runs table"),
    (["--kind", "queue"], "no queue_snapshots table"),
    (["--where", "oops"], "--where oops: expected COLUMN=VALUE"),
])
def test_plot_mistakes_are_one_line(runs, run_cli, args, match):
    r = run_cli("plot", runs / "sweep", *args, "--out", runs / "bad")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and match in r.stderr, r.stderr


def test_plot_of_a_missing_folder(run_cli, tmp_path):
    r = run_cli("plot", tmp_path / "nope")
    assert r.returncode == 2 and "no such file or folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run_cli("plot", tmp_path / "empty")
    assert r.returncode == 2 and "neither a run folder" in r.stderr


def test_sweep_prints_intervals(runs, run_cli):
    from conftest import EXAMPLES

    r = run_cli("sweep", EXAMPLES / "dumbbell-red.toml", "--vary", "flows[1].rate=1Mb/s,2Mb/s", "--seeds", "3",
                *SHORT, "--out", runs / "sw3", cwd=runs)
    assert r.returncode == 0, r.stderr
    assert " ± " in r.stdout and "95 % Student-t" in r.stdout
