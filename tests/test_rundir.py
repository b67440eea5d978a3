"""Runs keep their results: unique default folders, no silent overwrite, the resolved scenario
beside every result (python/aqmlab/rundir.py; docs/scenarios.md, "Where results go")."""

import json

from aqmlab.base.compat import tomllib

CHOKE = 'bottleneck.aqm={type="choke", min_th=40, max_th=80, w_q=0.002, max_p=0.1}'
SHORT = "simulation.duration=20s"


def test_two_runs_with_different_set_keep_both(tmp_path, run_cli, example):
    red = run_cli("run", example, "--set", SHORT, cwd=tmp_path)
    choke = run_cli("run", example, "--set", SHORT, "--set", CHOKE, cwd=tmp_path)
    assert red.returncode == 0 and choke.returncode == 0, red.stderr + choke.stderr
    folders = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert len(folders) == 2 and all(f.startswith("dumbbell-red-set-") for f in folders)
    aqms = {json.loads((tmp_path / "results" / f / "summary.json").read_text())["bottleneck"]["aqm"] for f in folders}
    assert aqms == {"red", "choke"}
    # the printed header and the summary say what was changed
    assert f"overrides: {SHORT}; {CHOKE}" in choke.stdout
    s = json.loads(next((tmp_path / "results").glob("*/summary.json")).read_text())
    assert "[with --set simulation.duration=20s" in s["scenario"]["description"]
    # another seed: another folder
    assert run_cli("run", example, "--set", SHORT, "--seed", "5", "-q", cwd=tmp_path).returncode == 0
    assert len(list((tmp_path / "results").iterdir())) == 3


def test_a_folder_with_another_run_is_refused_unless_forced(tmp_path, run_cli, example):
    out = tmp_path / "out"
    first = run_cli("run", example, "--set", SHORT, "--set", "simulation.queue_snapshots=true", "--out", out, "-q")
    assert first.returncode == 0 and (out / "queue_snapshots.csv").is_file()
    before = (out / "flows.csv").read_bytes()
    # the same run again is harmless (bit-identical results) and allowed
    again = run_cli("run", example, "--set", SHORT, "--set", "simulation.queue_snapshots=true", "--out", out, "-q")
    assert again.returncode == 0 and (out / "flows.csv").read_bytes() == before
    # another run is refused, in one line that names what differs
    r = run_cli("run", example, "--set", SHORT, "--set", CHOKE, "--out", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "holds the results of another run" in r.stderr and "bottleneck.aqm.type: 'red' -> 'choke'" in r.stderr
    assert "--force" in r.stderr and (out / "flows.csv").read_bytes() == before
    # --force replaces it, and the earlier run's extra tables go with it
    r = run_cli("run", example, "--set", SHORT, "--set", CHOKE, "--out", out, "--force", "-q")
    assert r.returncode == 0
    assert json.loads((out / "summary.json").read_text())["bottleneck"]["aqm"] == "choke"
    assert not (out / "queue_snapshots.csv").exists()


def test_foreign_files_and_old_results_are_not_replaced(tmp_path, run_cli, example):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    r = run_cli("run", example, "--set", SHORT, "--out", mine)
    assert r.returncode == 2 and "not results of aqmlab run (notes.txt)" in r.stderr
    old = tmp_path / "old"
    old.mkdir()
    (old / "summary.json").write_text("{}")
    r = run_cli("run", example, "--set", SHORT, "--out", old)
    assert r.returncode == 2 and "without a scenario.toml" in r.stderr
    assert run_cli("run", example, "--set", SHORT, "--out", mine, "--force", "-q").returncode == 0
    assert (mine / "notes.txt").read_text() == "my notes"  # --force replaces results, never other files


def test_the_resolved_scenario_runs_again_into_the_same_folder(tmp_path, run_cli, example):
    assert run_cli("run", example, "--set", SHORT, "--set", CHOKE, "-q", cwd=tmp_path).returncode == 0
    (folder,) = (tmp_path / "results").iterdir()
    text = (folder / "scenario.toml").read_text()
    sc = tomllib.loads(text)
    # every default filled in: RED's weight and gentle mode, the TCP timers, the access links
    aqm = sc["bottleneck"]["aqm"]
    assert aqm["type"] == "choke" and aqm["w_q"] == 0.002 and "gentle" in aqm and "uniformise" in aqm
    assert sc["flows"][0]["tcp"]["min_rto"] == "200ms" and sc["simulation"]["duration"] == "20s"
    assert sc["name"] == folder.name and text.startswith("# The scenario of this run")
    before = (folder / "flows.csv").read_bytes()
    r = run_cli("run", folder / "scenario.toml", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [p.name for p in (tmp_path / "results").iterdir()] == [folder.name]
    assert (folder / "flows.csv").read_bytes() == before


def test_api_result_carries_the_resolved_scenario(tmp_path, small):
    import aqmlab

    res = aqmlab.run(small, seed=4, overrides=["bottleneck.limit=60"])
    sc = tomllib.loads(res.scenario)
    assert sc["simulation"]["seed"] == 4 and sc["bottleneck"]["limit"] == 60
    assert aqmlab.validate(res.scenario)["seed"] == 4
    files = {p.name for p in res.save(tmp_path / "r")}
    assert "scenario.toml" in files


def test_an_edited_scenario_lands_in_a_new_folder(tmp_path, run_cli, example):
    """Edit the file, run it again: the results go beside the earlier ones (results/<name>-2/), never
    over them; running either version again finds its own folder."""
    scen = tmp_path / "dumbbell-red.toml"
    scen.write_text(example.read_text().replace('duration = "100s"', 'duration = "12s"'))
    first = run_cli("run", scen, "-q", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = (tmp_path / "results" / "dumbbell-red" / "flows.csv").read_bytes()
    scen.write_text(scen.read_text().replace("count = 33", "count = 20"))
    second = run_cli("run", scen, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "results/dumbbell-red-2/" in second.stdout
    assert "note: results/dumbbell-red: holds the results of another run (flows[0].count: 33 -> 20)" in second.stderr
    assert (tmp_path / "results" / "dumbbell-red" / "flows.csv").read_bytes() == before
    assert run_cli("run", scen, "-q", cwd=tmp_path).returncode == 0  # the same edit again: its own folder
    scen.write_text(scen.read_text().replace("count = 20", "count = 33"))
    again = run_cli("run", scen, cwd=tmp_path)
    assert again.returncode == 0 and "results/dumbbell-red/" in again.stdout and "note:" not in again.stderr
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["dumbbell-red", "dumbbell-red-2"]
    # the resolved scenario of the second run runs again into its folder
    r = run_cli("run", tmp_path / "results" / "dumbbell-red-2" / "scenario.toml", cwd=tmp_path)
    assert r.returncode == 0 and "results/dumbbell-red-2/" in r.stdout, r.stdout + r.stderr
    # an explicit --out holding another run is still refused
    r = run_cli("run", scen, "--out", tmp_path / "results" / "dumbbell-red-2", cwd=tmp_path)
    assert r.returncode == 2 and "holds the results of another run" in r.stderr


def test_diff_of_two_runs(tmp_path, run_cli, example):
    for out, extra in (("a", []), ("b", ["--set", CHOKE])):
        r = run_cli("run", example, "--set", SHORT, *extra, "--out", tmp_path / out, "-q")
        assert r.returncode == 0, r.stderr
    r = run_cli("diff", tmp_path / "a", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    import re

    assert "scenario keys that differ:" in out and re.search(r'bottleneck.aqm.type +"red" -> "choke"', out)
    assert "bottleneck.aqm.n_cand" in out  # every key that differs (CHOKe's defaults), not the first three
    row = next(l for l in out.splitlines() if l.startswith("groups.udp.share "))
    a, b = (json.loads((tmp_path / x / "summary.json").read_text()) for x in "ab")
    share = lambda s: next(g["share"] for g in s["groups"] if g["name"] == "udp")
    assert f"{share(a) * 100:.1f}%" in row and f"{share(b) * 100:.1f}%" in row  # fractions printed in %
    assert "links.bottleneck." not in out and "engine." not in out  # the bottleneck once; no engine counters
    same = run_cli("diff", tmp_path / "a", tmp_path / "a")
    assert "scenario: the same" in same.stdout and "all" in same.stdout and "numbers are equal" in same.stdout
    for bad in (tmp_path / "nope", tmp_path):
        r = run_cli("diff", tmp_path / "a", bad)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    # from Python
    from aqmlab.run.diff import diff

    d = diff(tmp_path / "a", tmp_path / "b")
    assert ("bottleneck.aqm.type", "red", "choke") in d.scenario
    assert any(k == "groups.udp.share" for k, _, _ in d.changed())
