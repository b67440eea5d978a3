"""aqmlab plot on what a user gives it (issue 26 item 3, issue 27 item 1): every mistake is one
`error:` line with exit 2 naming what to give instead; figures a paper can use (labels with units,
one look per series in every panel, readable names of varied tables, log axes labelled at the swept
values, no zero-width error bars); --label, --link; the plotted data as CSV beside each figure."""

import shutil

import pandas as pd
import pytest

from conftest import EXAMPLES, aqmlab

SHORT = ["--set", "simulation.duration=6s", "--set", "simulation.warmup=1s"]
TABLES = '{type="red", min_th=40, max_th=80},{type="choke", min_th=40, max_th=80}'


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """A sweep varying the discipline as TOML tables and the UDP rate (one seed), two run folders,
    an empty sweep (header, no rows) and a parking-lot run (three measured links)."""
    d = tmp_path_factory.mktemp("plotinput")
    r = aqmlab("sweep", EXAMPLES / "dumbbell-red.toml", "--vary", f"bottleneck.aqm={TABLES}",
               "--vary", "flows[1].rate=0.25Mb/s:2Mb/s:x2", *SHORT, "--tables", "flows,timeseries",
               "--cache", d / "cache", "--out", d / "sweep", "-q")
    assert r.returncode == 0, r.stderr
    for name, extra in (("red", []), ("choke", ["--set", 'bottleneck.aqm={type="choke", min_th=40, max_th=80}'])):
        r = aqmlab("run", EXAMPLES / "dumbbell-red.toml", *SHORT, *extra, "--out", d / name, "-q")
        assert r.returncode == 0, r.stderr
    r = aqmlab("run", EXAMPLES / "parking-lot.toml", *SHORT, "--out", d / "lot", "-q")
    assert r.returncode == 0, r.stderr
    empty = d / "empty"
    empty.mkdir()
    for t in ("runs", "flows"):  # a header and no rows
        head = (d / "sweep" / f"{t}.csv").read_text().splitlines()[0]
        (empty / f"{t}.csv").write_text(head + "\n")
    (d / "afile").write_text("x")
    return d


def plot(*args, cwd=None):
    return aqmlab("plot", *map(str, args), cwd=cwd)


def one_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize("args, needles", [
    (["sweep", "--y", "udp.share", "--by", "nope"], ["--by nope", "not a column of the runs table"]),
    (["red", "-k", "flows", "--by", "nope"], ["--by nope", "flows table"]),
    (["sweep", "-k", "flows", "--by", "nope"], ["--by nope", "flows table"]),
    (["sweep", "--y", "scenario"], ["--y scenario", "text column", "udp.share"]),
    (["sweep", "red", "--y", "udp.share"], ["a run folder", "a sweep folder"]),
    (["empty", "-k", "flows"], ["no rows"]),
    (["empty", "-k", "bar", "--y", "udp.share"], ["no rows"]),
    (["sweep", "--y", "udp.share", "--where", "aqm=pie"], ["no rows match", "aqm has red, choke"]),
    (["sweep", "--y", "udp.share", "-o", "/proc/aqmlab-x"], ["--out /proc/aqmlab-x", "cannot create"]),
    (["sweep", "--y", "udp.share", "-o", "afile"], ["--out afile", "not a folder"]),
    (["sweep", "--y", "udp.share", "--name", "../escape"], ["--name ../escape", "path separator"]),
    (["sweep", "--y", "udp.share", "--name", ".."], ["--name ..", "'..'"]),
    (["lot", "-k", "timeseries", "--link", "nowhere"], ["--link nowhere", "r0-r1"]),
    (["lot", "-k", "timeseries"], ["--link", "several links"]),
    (["sweep", "--y", "udp.share", "--label", "oops"], ["--label oops", "OLD=NEW"]),
    (["sweep", "--y", "udp.shar"], ["--y udp.shar", "did you mean", "udp.share"]),
])
def test_bad_input_is_one_error_line(src, args, needles):
    one_error(plot(*args, cwd=src), *needles)
    assert not (src / "escape.png").exists() and not (src.parent / "escape.png").exists()


def test_tables_labels_and_data_file(src):
    """A discipline varied as TOML tables is shown by what differs (red, choke), --label renames it,
    --by aqm works on a sweep, and the plotted points are written as CSV beside the figure."""
    out = src / "p-labels"
    r = plot("sweep", "--y", "udp.share", "--by", "aqm", "--logx", "--label", "choke=CHOKe", "-o", out, cwd=src)
    assert r.returncode == 0, r.stderr
    data = pd.read_csv(out / "line-udp.share.csv")
    assert set(data["series"]) == {"red", "CHOKe"}
    assert list(data.columns[:3]) == ["series", "metric", "flows[1].rate (Mb/s)"]
    assert sorted(set(data["flows[1].rate (Mb/s)"])) == [0.25, 0.5, 1.0, 2.0]
    svg = (out / "line-udp.share.svg").read_text()
    assert "CHOKe" in svg and "{type" not in svg and "min_th" not in svg
    for tick in ("0.25", "0.5", "2"):  # a log axis labelled at the swept values
        assert f">{tick}<" in svg
    # the categories of a bar chart too
    r = plot("sweep", "-k", "bar", "--y", "udp.share", "--x", "bottleneck.aqm", "-o", out, cwd=src)
    assert r.returncode == 0, r.stderr
    bars = pd.read_csv(out / "bar-udp.share.csv")
    assert set(bars["AQM"]) == {"red", "choke"}


def test_units_on_axes_and_one_look_per_series(src, monkeypatch):
    """Metrics in different units get an axis each, labelled with its unit; a series has one colour in
    every panel; one seed draws no error bars."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.axes import Axes

    from aqmlab.plot import plot as draw

    seen = []
    real = Axes.errorbar

    def spy(self, x, y, yerr=None, xerr=None, **kw):
        seen.append((self, kw.get("label"), kw.get("color"), yerr))
        return real(self, x, y, yerr=yerr, xerr=xerr, **kw)

    monkeypatch.setattr(Axes, "errorbar", spy)
    o = draw([src / "sweep"], kind="line", y="udp.share,udp.throughput_bps", by="aqm", out=src / "p-units")
    axes = list(dict.fromkeys(a for a, *_ in seen))
    assert len(axes) == 2
    assert {a.get_ylabel() for a in axes} == {"UDP bandwidth share", "UDP throughput (kb/s)"}
    colours = {}
    for _, label, colour, yerr in seen:
        assert colours.setdefault(label, colour) == colour  # red is red in both panels
        assert yerr is None  # one seed: no bars, not bars of zero width
    assert set(colours) == {"red", "choke"}
    assert {p.suffix for p in o.files} == {".pdf", ".svg", ".png", ".csv"}


def test_timeseries_labels_and_link(src):
    out = src / "p-ts"
    r = plot("red", "choke", "-k", "timeseries", "-o", out, cwd=src)
    assert r.returncode == 0, r.stderr
    svg = (out / "timeseries-queue.svg").read_text()
    assert "queue length (packets)" in svg and "queue_pkts" not in svg
    r = plot("lot", "-k", "timeseries", "--link", "r1-r2", "--name", "r1r2", "-o", out, cwd=src)
    assert r.returncode == 0, r.stderr
    assert "data: " in r.stdout and (out / "r1r2.csv").is_file()


def test_python_api_takes_labels_as_a_dict(src):
    from aqmlab.plot import plot as draw

    o = draw([src / "red", src / "choke"], kind="bar", x="aqm", y="udp.share", labels={"red": "RED"},
             out=src / "p-api")
    data = pd.read_csv(next(p for p in o.files if p.suffix == ".csv"))
    assert set(data["AQM"]) == {"RED", "choke"}
