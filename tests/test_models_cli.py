"""End-to-end tests of `aqmlab model choke|chokew|raqm|ward`: JSON output, plots, overlays with run
directories, and one-line errors (exit 2) for user mistakes.

A few tests start the real command in a subprocess; the rest call ``aqmlab.cli.main`` in-process
(same parser, same error handling, without paying the interpreter start-up for every case)."""

import json

import pytest

from conftest import aqmlab
from test_models_overlay import snapshots_from, write_run

PNG = b"\x89PNG\r\n\x1a\n"


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def model(capsys):
    """Run `aqmlab model ARGS...` in-process; returns an object like CompletedProcess."""
    from aqmlab.cli import main

    def run(*args):
        capsys.readouterr()
        try:
            rc = main(["model", *map(str, args)])
        except SystemExit as e:  # argparse's own usage errors
            rc = e.code
        out = capsys.readouterr()
        return Result(rc, out.out, out.err)

    return run


@pytest.fixture
def ok_json(model):
    def run(*args):
        r = model(*args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    return run


@pytest.fixture
def one_error_line(model):
    def run(*args, match=None):
        r = model(*args)
        assert r.returncode == 2, (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
        if match:
            assert match in lines[0], lines[0]
        return lines[0]

    return run


# ----------------------------------------------------------------------------- the real command


def test_command_json_exit_zero_and_plot(tmp_path):
    png = tmp_path / "out.png"
    r = aqmlab("model", "choke", "--x0-rel", "0.5,1", "--json", "--plot", png)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [p["converged"] for p in out["points"]] == [True, True]
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 20_000


def test_command_bad_value_exit_two_with_one_error_line():
    for args in (["choke", "--N", "0"], ["choke", "--N", "2", "--x0", "125"], ["raqm", "--m", "x"]):
        r = aqmlab("model", *args)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- choke


def test_choke_json_matches_the_library(ok_json):
    from aqmlab.models import ChokeParams, solve_choke

    out = ok_json("choke", "--x0-rel", "0.5,1,10", "--profile", "--points", "5")
    assert out["model"] == "choke" and out["params"]["N"] == 32
    pts = out["points"]
    assert [p["converged"] for p in pts] == [True] * 3
    ref = solve_choke(125.0, ChokeParams())
    assert pts[1]["mu0"] == pytest.approx(ref.mu0, rel=1e-9)
    assert pts[1]["b"] == pytest.approx(ref.b, rel=1e-9)
    prof = pts[1]["profile"]
    assert len(prof["y"]) == 5 and prof["y"][0] == 0 and prof["v"][-1] == pytest.approx(125.0)


def test_choke_text_table_and_units(model):
    r = model("choke", "--c", "1Mb/s", "--d", "100ms", "--x0", "62.5,125")
    assert r.returncode == 0, r.stderr
    assert "N = 32, c = 125 pkt/s, d = 0.1 s" in r.stdout and "UDP share" in r.stdout


def test_choke_plots_png_and_svg(tmp_path, model):
    png, svg = tmp_path / "sweep.png", tmp_path / "profile.svg"
    r = model("choke", "--perfect", "--plot", png)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 20_000
    r = model("choke", "--x0-rel", "0.1,1,10", "--plot-kind", "profile", "--plot", svg)
    assert r.returncode == 0, r.stderr
    assert svg.read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("args,match", [
    (["--N", "0"], "--N: must be an integer >= 1"),
    (["--N", "many"], "--N: 'many' is not a number"),
    (["--max-p", "2"], "--max-p: must be"),
    (["--min-th", "600"], "--max-th: must be"),
    (["--beta-mode", "exactly"], "--beta-mode"),
    (["--x0", "12,abc"], "--x0: 'abc' is not a number"),
    (["--x0", "0"], "--x0: UDP rates must be > 0"),
    (["--x0-rel", "1:10"], "LO:HI:COUNT"),
    (["--c", "fast"], "--c: 'fast' is not a rate"),
    (["--plot-kind", "pie"], "--plot-kind"),
    (["--plot", "out.bmp"], "unknown file type"),
])
def test_choke_bad_values_give_one_error_line(args, match, one_error_line):
    one_error_line("choke", *args, match=match)


def test_options_read_units_like_scenario_files(one_error_line, ok_json, run_cli, example):
    """One unit parser (the engine's): what a scenario refuses, a model option refuses with the same
    words, and what it accepts (2min, 600kbps), the options accept."""
    bad = run_cli("validate", example, "--set", "bottleneck.rate=\"1mb/s\"")
    assert bad.returncode == 2
    why = bad.stderr.strip().split(": ", 3)[-1]
    assert 'got "1mb/s"' in why
    one_error_line("choke", "--c", "1mb/s", match=why)
    assert run_cli("validate", example, "--set", "bottleneck.delay=\"1min\"").returncode == 0
    assert ok_json("choke", "--d", "0.002min", "--x0-rel", "2")["params"]["d"] == pytest.approx(0.12)
    assert ok_json("choke", "--c", "600kbps", "--x0-rel", "2")["params"]["c"] == pytest.approx(75)


def test_choke_without_equilibrium_fails_with_the_reason(model, one_error_line):
    line = one_error_line("choke", "--N", "2", "--x0", "125")
    assert "not permanently active" in line and "8.43" in line
    # --allow-partial reports it instead
    r = model("choke", "--N", "10", "--x0-rel", "0.01,1", "--allow-partial", "--json")
    assert r.returncode == 0, r.stderr
    pts = json.loads(r.stdout)["points"]
    assert [p["converged"] for p in pts] == [False, True] and pts[0]["mu0"] is None


def test_choke_overlay_with_run_directories(tmp_path, model, ok_json):
    runs = [write_run(tmp_path / f"udp{i}", x0_pps=s * 125.0, udp_share=m, queue_mean=b)
            for i, (s, m, b) in enumerate([(0.5, 0.2, 110.0), (2.0, 0.22, 135.0), (10.0, 0.03, 140.0)])]
    out = ok_json("choke", "--run", *runs)
    assert out["params"]["N"] == 32 and out["params"]["d"] == pytest.approx(0.1)  # taken from the runs
    sim = out["simulation"]
    assert [round(p["s"], 6) for p in sim] == [0.5, 2.0, 10.0]
    assert all(0 < p["model_mu0"] < 0.5 for p in sim)
    assert [p["x0"] for p in out["points"]] == pytest.approx([62.5, 250.0, 1250.0])
    png = tmp_path / "sweep.png"
    r = model("choke", "--run", *runs, "--plot", png)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == PNG
    assert "simulation vs model" in r.stdout


def test_choke_profile_overlay_reads_queue_snapshots(tmp_path, model):
    snaps = snapshots_from([(0.1 * j, ["udp"] * 40 + ["tcp"] * 100) for j in range(20)])
    d = write_run(tmp_path / "snap", x0_pps=625.0, udp_share=0.1, snapshots=snaps)
    png = tmp_path / "rho.png"
    r = model("choke", "--run", d, "--plot-kind", "profile", "--plot", png)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == PNG and "note:" not in r.stderr
    # without snapshots the model is plotted alone, with a note
    d2 = write_run(tmp_path / "nosnap", x0_pps=625.0, udp_share=0.1)
    r = model("choke", "--run", d2, "--plot-kind", "profile", "--plot", tmp_path / "rho2.png")
    assert r.returncode == 0 and "no queue_snapshots.csv" in r.stderr


def test_choke_run_directory_mistakes(tmp_path, model, one_error_line):
    one_error_line("choke", "--run", tmp_path / "missing", match="no such run directory")
    (tmp_path / "empty").mkdir()
    one_error_line("choke", "--run", tmp_path / "empty", match="summary.json is missing")
    a = write_run(tmp_path / "a", x0_pps=100.0, udp_share=0.2, N=32)
    b = write_run(tmp_path / "b", x0_pps=200.0, udp_share=0.2, N=40)
    one_error_line("choke", "--run", a, b, match="the runs differ in N")
    # an option may confirm the runs' values, never replace them
    one_error_line("choke", "--run", a, b, "--N", "32", match=f"--N 32 disagrees with the run {b}")
    assert model("choke", "--run", a, "--N", "32", "--json").returncode == 0
    one_error_line("choke", "--run", a, "--min-th", "40", match="has bottleneck.aqm.min_th = 20); omit --min-th")
    one_error_line("choke", "--run", a, "--c", "2Mb/s", match="--c 250 disagrees")
    # a run of another discipline, or of a CHOKe the model does not describe, is refused
    red = write_run(tmp_path / "red", x0_pps=100.0, udp_share=0.5, aqm='type = "red"\nmin_th = 5.0\nmax_th = 15.0')
    one_error_line("choke", "--run", red, match="the run's bottleneck is red")
    multi = write_run(tmp_path / "multi", x0_pps=100.0, udp_share=0.2,
                      aqm='type = "choke"\nmin_th = 20.0\nmax_th = 520.0\nmax_p = 0.5\nn_cand = 3')
    one_error_line("choke", "--run", multi, match="draws 3 candidates")
    # without scenario.toml the thresholds must be given
    bare = write_run(tmp_path / "bare", x0_pps=100.0, udp_share=0.2, aqm=None)
    one_error_line("choke", "--run", bare, match="or give --min-th, --max-th, --max-p")
    assert model("choke", "--run", bare, "--min-th", "20", "--max-th", "520", "--max-p", "0.5").returncode == 0


# ----------------------------------------------------------------------------- chokew, raqm, ward


def test_chokew_json_and_plot(tmp_path, model, ok_json):
    out = ok_json("chokew")
    cls = {c["class"]: c for c in out["classes"]}
    assert out["in_domain"] and out["utilisation"] == pytest.approx(1.0)
    assert cls["w2"]["throughput_share"] > cls["w1"]["throughput_share"]
    out = ok_json("chokew", "--tcp", "a=50:1:10ms", "--tcp", "b=50:2:10ms", "--udp", "u=1:2:10Mb/s")
    assert out["starved"] == ["u"] and not out["in_domain"]
    out = ok_json("chokew", "--p0", "1:100:4")
    assert len(out["sweep"]) == 8
    png = tmp_path / "w.png"
    r = model("chokew", "--udp", "1:2:10Mb/s", "--plot", png)
    assert r.returncode == 0 and png.read_bytes()[:8] == PNG and "starved" in r.stdout


@pytest.mark.parametrize("args,match", [
    (["--tcp", "100:1"], "--tcp: '100:1' is not"),
    (["--tcp", "100:0:6ms"], "weight"),
    (["--udp", "1:2:fast"], "is not a rate"),
    (["--tcp", "x=1:1:6ms", "--tcp", "x=2:1:6ms"], "used twice"),
    (["--p0", "0"], "--p0: must be > 0"),
    (["--eta", "taylor"], "--eta"),
    (["--weights", "1=2"], "only meaningful with --run"),
])
def test_chokew_bad_values_give_one_error_line(args, match, one_error_line):
    one_error_line("chokew", *args, match=match)


def test_raqm_json_plot_and_required_convergence(tmp_path, model, ok_json, one_error_line):
    out = ok_json("raqm", "--m", "1,4.5", "--x", "0.5,1,1.5")
    assert [it["outcome"] for it in out["iterations"]] == ["converged", "oscillating"]
    assert out["bound"][0]["c"] == pytest.approx(4.394449, rel=1e-6)
    assert out["iterations"][1]["unstable_band"][0] == pytest.approx(0.4488, abs=1e-4)
    png = tmp_path / "r.png"
    r = model("raqm", "--epsilon", "0.5,0.9,1", "--plot", png)
    assert r.returncode == 0 and png.read_bytes()[:8] == PNG
    line = one_error_line("raqm", "--m", "4.5", "--require-convergence")
    assert "m = 4.5" in line and "did not converge" in line
    one_error_line("raqm", "--x", "2.5", match="--x: c(x) is defined for 0 < x < 2")
    one_error_line("raqm", "--epsilon", "-1", match="--epsilon: must be > 0")
    one_error_line("raqm", "--alpha", "0", match="--alpha: must be > 0")


def test_ward_json_and_errors(ok_json, one_error_line):
    out = ok_json("ward", "--s", "0.25,0.5,1")
    assert out["peak_share"] == pytest.approx(0.18394, abs=1e-5) and out["peak_s_reference"] == 0.5
    assert out["curve"][1]["mu0_reference"] == pytest.approx(out["peak_share"])
    one_error_line("ward", "--s", "0,1", match="--s: UDP rates x0/c must be > 0")


# ----------------------------------------------------------------------------- a real run


def test_models_read_a_real_aqmlab_run(tmp_path, small, ok_json, one_error_line):
    import aqmlab

    out = tmp_path / "run"
    aqmlab.run(small).save(out)
    w = ok_json("ward", "--run", out)
    pt = w["simulation"]["points"][0]
    assert pt["s"] == pytest.approx(0.5, rel=0.02) and 0 < pt["udp_share"] < 1
    one_error_line("ward", "--run", out, "--c", "250", match="--c 250 disagrees")
    # the run is RED: neither CHOKe model describes it
    one_error_line("choke", "--run", out, match="the run's bottleneck is red")
    one_error_line("chokew", "--run", out, match="the run's bottleneck is red")


def test_choke_model_takes_the_runs_red_thresholds(tmp_path, example, ok_json, one_error_line, model):
    """The README's run with CHOKe 40/80 and a 100-packet buffer. The model is solved at the run's
    thresholds (not the paper's 20/520/0.5), so its backlog stays within the buffer."""
    import aqmlab

    readme = tmp_path / "readme"
    aqmlab.run(example, overrides=['bottleneck.aqm={type="choke", min_th=40, max_th=80, w_q=0.002, max_p=0.1}']
               ).save(readme)
    # at max_p = 0.1 the model's backlog would pass max_th: said, not passed off as a result
    one_error_line("choke", "--run", readme, match="outside the model's linear RED branch")
    choke = 'bottleneck.aqm={type="choke", min_th=40, max_th=80, w_q=0.002, max_p=0.5}'
    out = tmp_path / "choke"
    aqmlab.run(example, overrides=[choke]).save(out)
    assert (out / "scenario.toml").is_file()
    ch = ok_json("choke", "--run", out)
    p = ch["params"]
    assert (p["N"], p["min_th"], p["max_th"], p["max_p"]) == (33, 40, 80, 0.5)
    assert p["c"] == pytest.approx(125.0) and p["d"] == pytest.approx(0.024)
    sim = ch["simulation"][0]
    assert 40 < sim["model_b"] < 80  # on RED's linear branch, within the buffer
    one_error_line("choke", "--run", out, "--max-th", "520", match="has bottleneck.aqm.max_th = 80); omit --max-th")
    # a model backlog above the buffer is pointed out, not passed off as a result
    small_buf = tmp_path / "small-buffer"
    aqmlab.run(example, overrides=[choke, "bottleneck.limit=45"]).save(small_buf)
    r = model("choke", "--run", small_buf)
    assert r.returncode == 0 and "exceeds the run's buffer of 45 packets" in r.stderr


def test_chokew_model_takes_the_runs_weights(tmp_path, small, ok_json, one_error_line):
    import aqmlab

    out = tmp_path / "chokew"
    aqmlab.run(small, overrides=['bottleneck.aqm={type="chokew", weights=[1, 3], l_th=5, l_minus=10, l_plus=20}',
                                 "flows[1].priority=2"]).save(out)
    cw = ok_json("chokew", "--run", out)
    w = {c["class"]: c["weight"] for c in cw["classes"]}
    assert w == {"tcp/p1": 1.0, "udp/p2": 3.0}
    assert cw["params"]["queue"] == pytest.approx(aqmlab.run(small, overrides=[
        'bottleneck.aqm={type="chokew", weights=[1, 3], l_th=5, l_minus=10, l_plus=20}',
        "flows[1].priority=2"]).summary["bottleneck"]["queue_mean_pkts"])
    assert ok_json("chokew", "--run", out, "--weights", "2=3")["classes"]
    one_error_line("chokew", "--run", out, "--weights", "2=2", match="(weight 3 for priority 2 in its scenario.toml)")
    one_error_line("chokew", "--run", out, "--capacity", "2Mb/s", match="--capacity 250 disagrees")


def test_the_readme_model_recipe_and_the_udp_rate_check(tmp_path, model):
    """The README's two commands, as written (the run shortened): the model takes the run's UDP rate,
    draws the profile beside the simulated one, and refuses a rate the run was not made at, as it
    refuses an N or a threshold."""
    import re
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"Model beside simulation:.*?```sh\n(.*?)```", readme, re.S).group(1)
    commands = [shlex.split(c.replace("\\\n", " ")) for c in block.strip().split("\naqmlab ")]
    assert commands[0][:2] == ["aqmlab", "run"] and commands[1][:2] == ["model", "choke"]
    (tmp_path / "examples").symlink_to(Path(__file__).resolve().parents[1] / "examples")
    run = commands[0][1:] + ["--set", "simulation.duration=40s", "-q"]
    r = aqmlab(*run, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = aqmlab(*commands[1], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "profile.png").read_bytes()[:8] == PNG
    assert "0.12" in r.stdout and "simulation vs model" in r.stdout
    run_dir = tmp_path / "results" / "choke-model"
    ok = model("choke", "--run", run_dir, "--x0-rel", "0.125")
    assert ok.returncode == 0, ok.stderr
    bad = model("choke", "--run", run_dir, "--x0-rel", "2")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--x0-rel 2 disagrees with the run" in bad.stderr and "0.125 c" in bad.stderr
    bad = model("choke", "--run", run_dir, "--x0", "100")
    assert bad.returncode == 2 and "--x0 100 disagrees with the run" in bad.stderr
