"""Mistakes a researcher makes on the command line (issue 40, item 5): an error an override caused
names the override, not the file; an unknown node gets a "did you mean"; a missing parameter names
every parameter the discipline requires; the rate error offers only what is accepted; and every
default the documentation gives can be pasted into a scenario as written."""

from __future__ import annotations

import re

import pytest

import aqmlab
from aqmlab import _core
from aqmlab.run.source import attribute
from conftest import EXAMPLES, ROOT, aqmlab as cli

RED = EXAMPLES / "dumbbell-red.toml"
VOIP = EXAMPLES / "voip-latency.toml"


def one_line(r) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


@pytest.mark.parametrize("cmd", ["validate", "run"])
@pytest.mark.parametrize("override, why", [
    ("bottleneck.aqm.max_p=2", "must be in (0, 1], got 2"),
    ('bottleneck.aqm={type="red"}', "missing field `min_th`"),
    ("flows[0].count=abc", 'invalid type: string "abc"'),
    ("bottleneck.limt=3", 'did you mean "limit"?'),
])
def test_an_override_s_mistake_names_the_override_not_the_file(tmp_path, cmd, override, why):
    line = one_line(cli(cmd, RED, "--set", override, *(["--out", tmp_path / "o"] if cmd == "run" else [])))
    assert line.startswith(f"error: --set {override}: ") and why in line and str(RED) not in line, line
    with pytest.raises(aqmlab.ScenarioError, match=re.escape(f"--set {override}: ")):
        aqmlab.validate(RED, overrides=[override])


def test_a_varied_value_s_mistake_names_the_vary(tmp_path):
    line = one_line(cli("sweep", RED, "--vary", "bottleneck.aqm.max_p=0.1,2", "--no-cache", "--out", tmp_path))
    assert line == "error: --vary bottleneck.aqm.max_p=2: must be in (0, 1], got 2"
    line = one_line(cli("sweep", RED, "--vary", "flows[0].count=1,2", "--set", "bottleneck.delay=5",
                        "--no-cache", "--out", tmp_path))
    assert line.startswith("error: --set bottleneck.delay=5: ") and "give a unit" in line


def test_the_file_is_blamed_for_its_own_mistakes_and_a_neighbour_override_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(RED.read_text().replace('delay = "10ms"', 'delay = "10"', 1))
    line = one_line(cli("validate", bad, "--set", "bottleneck.aqm.max_p=0.2"))
    assert line.startswith(f"error: {bad}: ") and "--set" not in line
    # a key beside the override's, whose reason names the override's key: the file's, with the override
    line = one_line(cli("validate", RED, "--set", "bottleneck.aqm.min_th=90"))
    assert line.startswith(f"error: {RED}: bottleneck.aqm.") or line.startswith("error: --set bottleneck.aqm.min_th")
    msg, theirs = attribute("bottleneck.aqm.max_th: must be greater than min_th (600), got 150",
                            ["bottleneck.aqm.min_th=600"])
    assert not theirs and msg.endswith("(with --set bottleneck.aqm.min_th=600)")
    # a key elsewhere whose reason names the override's whole key
    msg, theirs = attribute("simulation.warmup: must be shorter than simulation.duration",
                            ['simulation.duration="10s"'])
    assert not theirs and msg.endswith('(with --set simulation.duration="10s")')


def test_an_unknown_node_gets_a_did_you_mean():
    net = ROOT / "tests" / "data" / "net-hosts.toml"
    for given, near in (("bb", "b"), ("A", "a"), ("r_2", "r2")):
        line = one_line(cli("validate", net, "--set", f'flows[0].to="{given}"'))
        assert f'unknown node "{given}"' in line and f'did you mean "{near}"?' in line, line
    line = one_line(cli("validate", net, "--set", 'flows[0].to="zz"'))
    assert "did you mean" not in line and "nodes are:" in line
    # a link's ends too
    for key, given, near in (("to", "r_2", "r2"), ("from", "R1", "r1")):
        line = one_line(cli("validate", net, "--set", f'topology.links[2].{key}="{given}"'))
        assert f'unknown node "{given}"' in line and f'did you mean "{near}"?' in line, line


@pytest.mark.parametrize("aqm", ["red", "choke", "fred", "gchoke", "perfect_choke", "wfq"])
def test_a_missing_parameter_names_every_required_one(aqm):
    required = [p[0] for p in _core.aqm_describe(aqm)[2] if p[3] is None]
    line = one_line(cli("validate", RED, "--set", f'bottleneck.aqm={{type="{aqm}"}}'))
    assert "missing field" in line and f'type = "{aqm}" requires {", ".join(required)}' in line, line
    assert f"aqmlab list aqm {aqm}" in line


@pytest.mark.parametrize("value", ['"10Mbit"', '"10 megabits"', '"fast"'])
def test_the_rate_error_offers_only_what_is_accepted(value):
    line = one_line(cli("validate", RED, "--set", f"bottleneck.rate={value}"))
    assert "number in b/s" not in line and "a number" not in line and "Mb/s" in line, line
    line = one_line(cli("validate", RED, "--set", 'flows[1].rate="2 Mbit/s"'))
    assert "number in b/s" not in line


# ----------------------------------------------------------------------------- defaults pasteable as written

SECTIONS = {"`[simulation]`": "simulation", "`[bottleneck]`": "bottleneck", "`[access]`": "access",
            "`[tcp]`": "tcp", "`[[flows]]`": "flows[0]", "`[reverse]`": "reverse"}


def _documented_defaults():
    """(section, key, default) of every docs/scenarios.md table with a default column whose cell
    starts with a value in backticks (a reference to another key, `bottleneck.rate`, is not a value)."""
    out, section, head = [], None, None
    for line in (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            section = next((v for k, v in SECTIONS.items() if k in line), None)
        if not line.startswith("|"):
            head = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            head = cells
            continue
        col = next((i for i, h in enumerate(head) if "default" in h), None)
        if section is None or col is None or set(line) <= set("|-: "):
            continue
        m = re.match(r"(?:TCP: )?`([^`]+)`", cells[col])
        key = re.match(r"`(\w+)`", cells[0])
        if m and key and not re.fullmatch(r"\[?[a-z_]+(\.[a-z_]+)?\]?", m.group(1)) or (
                m and key and m.group(1) in ("true", "false")):
            out.append((section, key.group(1), m.group(1)))
    return out


DEFAULTS = _documented_defaults()


def test_the_documented_defaults_were_found():
    keys = {(s, k) for s, k, _ in DEFAULTS}
    assert {("simulation", "duration"), ("simulation", "warmup"), ("tcp", "min_rto"), ("access", "rate"),
            ("flows[0]", "interval"), ("bottleneck", "aqm")} <= keys, sorted(keys)


@pytest.mark.parametrize("section, key, default", DEFAULTS, ids=[f"{s}.{k}" for s, k, _ in DEFAULTS])
def test_every_documented_default_can_be_pasted_as_written(section, key, default):
    """`key = <the default as the page writes it>` is a valid scenario line (a duration with its unit
    and quotes, "0s" not 0)."""
    scenario = VOIP if section != "reverse" else RED
    if section == "flows[0]" and key in ("rate", "on_time", "off_time", "distribution", "shape", "arrival_rate",
                                         "response_size", "think_time", "request_size", "size", "flow_duration"):
        pytest.skip("a key of another traffic model")
    errors = []
    # a group's key in the example's TCP, UDP or probe group, whichever takes it
    for path in (["flows[0]", "flows[1]", "flows[2]"] if section == "flows[0]" else [section]):
        extra = [f'{path}.variant="{key.split("_")[0]}"'] if key.startswith(("dctcp_", "vegas_", "cubic_")) else []
        try:
            aqmlab.validate(scenario, overrides=extra + [f"{path}.{key}={default}"])
            return
        except aqmlab.ScenarioError as e:
            errors.append(str(e))
    raise AssertionError(f"docs/scenarios.md's default for {section}.{key}, {default}, is refused: {errors}")


def _rule(default: str, params) -> bool:
    """A default written as the rule that computes it (``limit × 100/500``, ``3 × min_th``): it names
    the buffer or another parameter, and is not a value to paste."""
    return bool(re.search(r"\blimit\b|[×/]", default)) and any(
        re.search(rf"\b{re.escape(k)}\b", default) for k in ["limit"] + [p[0] for p in params])


def _aqm_defaults():
    out = []
    for name, _ in _core.names("aqm"):
        params = _core.aqm_describe(name)[2]
        for key, _, _, default, _, _ in params:
            if default is not None and default != "none" and not _rule(default, params):
                out.append((name, key, default))
    return out


def test_a_default_is_a_value_or_a_rule_the_listing_explains():
    for name, _ in _core.names("aqm"):
        params = _core.aqm_describe(name)[2]
        rules = [p[0] for p in params if p[3] not in (None, "none") and _rule(p[3], params)]
        if rules:
            text = cli("list", "aqm", name).stdout
            assert "the rule that sets it from the buffer" in text, name


REQUIRED = {"min_th": "100", "max_th": "300", "weights": "[1.0]"}


@pytest.mark.parametrize("aqm, key, default", _aqm_defaults(), ids=lambda v: str(v)[:20])
def test_every_default_list_aqm_prints_can_be_pasted(aqm, key, default):
    required = [p[0] for p in _core.aqm_describe(aqm)[2] if p[3] is None]
    fields = [f"type = \"{aqm}\""] + [f"{r} = {REQUIRED[r]}" for r in required] + [f"{key} = {default}"]
    aqmlab.validate(RED, overrides=["bottleneck.limit=1000", "bottleneck.rate=\"10Mb/s\"",
                                    "bottleneck.aqm={" + ", ".join(fields) + "}"])


def test_list_aqm_writes_unset_parameters_as_unset_not_none():
    r = cli("list", "aqm", "chokew")
    assert r.returncode == 0
    row = next(l for l in r.stdout.splitlines() if l.strip().startswith("p0_max"))
    assert "(unset)" in row and " none " not in row
