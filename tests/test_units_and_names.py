"""What a researcher hits first in a scenario (issue 26 items 2 and 5): a time, rate or size without
its unit is refused in one line naming the key and the units; a discipline that can never act with
its buffer is refused as a DropTail in disguise; `1h` is a unit; `aqmlab list aqm NAME` prints a
scheme's parameters; unknown names get a "did you mean"."""

import re

import pytest

import aqmlab
from conftest import EXAMPLES, aqmlab as cli

RED = EXAMPLES / "dumbbell-red.toml"


def one_error(r, *needles):
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("override, key, unit", [
    ('bottleneck.aqm={type="codel", target=5, interval=100}', "bottleneck.aqm.interval", "5ms or 5s"),
    ("bottleneck.delay=5", "bottleneck.delay", "5ms or 5s"),
    ('bottleneck.delay="5"', "bottleneck.delay", "5ms or 5s"),
    ("bottleneck.rate=1000000", "bottleneck.rate", "10Mb/s"),
    ("simulation.duration=100", "simulation.duration", "5ms or 5s"),
    ("flows[1].rate=2e6", "flows[1].rate", "10Mb/s"),
])
def test_a_number_without_its_unit_is_refused(override, key, unit):
    line = one_error(cli("validate", RED, "--set", override), key, f"give a unit, e.g. {unit}")
    with pytest.raises(aqmlab.ScenarioError, match="give a unit"):
        aqmlab.validate(RED, overrides=[override])
    # the override made the mistake, not the file: the error names it (issue 40)
    assert line.startswith(f"error: --set {override}: ") and str(RED) not in line


@pytest.mark.parametrize("override, key, why", [
    (["bottleneck.aqm.min_th=100", "bottleneck.aqm.max_th=200"], "bottleneck.aqm.min_th", "at or above the buffer"),
    (['bottleneck.aqm={type="choke", min_th=150, max_th=300}'], "bottleneck.aqm.min_th", "CHOKe never draws"),
    (['bottleneck.aqm={type="codel", target="5s", interval="100s"}'], "bottleneck.aqm.target", "longest a packet"),
])
def test_a_droptail_in_disguise_is_refused(override, key, why):
    args = [a for o in override for a in ("--set", o)]
    one_error(cli("validate", RED, *args), key, why, "DropTail")


def test_hours_are_a_unit():
    info = aqmlab.validate(RED, overrides=['simulation.duration="1h"'])
    assert info["duration_s"] == 3600.0


def test_list_aqm_name_prints_parameters_units_defaults_and_reference():
    r = cli("list", "aqm", "codel")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("codel: CoDel (RFC 8289)") and "Reference: K. Nichols" in out
    row = next(l for l in out.splitlines() if l.strip().startswith("target "))
    assert "duration" in row and '"5ms"' in row and "standing queueing delay" in row
    r = cli("list", "aqm", "red")
    rows = {l.split()[0]: l for l in r.stdout.splitlines() if l.startswith("  ") and l.split()}
    assert "required" in rows["min_th"] and "0.002" in rows["w_q"]
    assert "One of: packet" in r.stdout and "Floyd" in r.stdout
    # every scheme of the registry has a page of its own
    for name, _ in aqmlab.names("aqm"):
        r = cli("list", "aqm", name)
        assert r.returncode == 0 and r.stdout.startswith(f"{name}: "), (name, r.stderr)


@pytest.mark.parametrize("typed, meant", [("chokee", "choke"), ("fq-codel", "fq_codel"), ("CHOKe", "choke"),
                                          ("FQ_CODEL", "fq_codel")])
def test_did_you_mean(typed, meant):
    one_error(cli("list", "aqm", typed), f'did you mean "{meant}"?')
    one_error(cli("validate", RED, "--set", f'bottleneck.aqm.type="{typed}"'), "bottleneck.aqm.type",
              f'did you mean "{meant}"?')
    with pytest.raises(aqmlab.ScenarioError, match=re.escape(f'did you mean "{meant}"?')):
        aqmlab.validate(RED, overrides=[f'bottleneck.aqm.type="{typed}"'])


def test_did_you_mean_for_keys_and_variants():
    one_error(cli("validate", RED, "--set", "bottleneck.aqm.min_thresh=3"), 'did you mean "min_th"?')
    one_error(cli("validate", RED, "--set", 'tcp.variant="Reno"'), 'did you mean "reno"?')
    one_error(cli("validate", RED, "--set", 'bottleneck.rat="1Mb/s"'), 'did you mean "rate"?')
    one_error(cli("list", "aqm", "zzz"), "unknown queue discipline")  # nothing close: no guess
