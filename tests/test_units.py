"""One unit parser: the engine's, exposed as aqmlab._core.parse_rate / parse_duration / parse_size,
reads rates, durations and sizes for scenario files, --set, and every command-line option. One
difference, on purpose: a scenario value needs its unit (a bare number is refused), while the
parsers read a bare number (b/s, seconds, bytes) for options that say so (`aqmlab model --d 0.1`)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from aqmlab import _core

SCENARIO = """
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
[[flows]]
transport = "tcp"
"""

RATE_UNITS = ["", "b/s", "bps", "kb/s", "kbps", "Kb/s", "Mb/s", "Mbps", "mbps", "Gb/s", "Gbps"]
TIME_UNITS = ["", "s", "ms", "us", "ns", "min"]  # (and "h": below; 1e4 h is past what a run may last)


def refused_without_unit(text: str, override: str) -> None:
    try:
        _core.validate(SCENARIO, "s", [override])
    except _core.ScenarioError as e:
        assert "give a unit" in str(e), str(e)
    else:
        raise AssertionError(f"{text}: a value without its unit was accepted")


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=0.001, max_value=1e4, allow_nan=False), st.sampled_from(RATE_UNITS))
def test_rates_read_as_the_scenario_loader_reads_them(v, unit):
    text = f"{v!r}{unit}"
    if not unit:
        return refused_without_unit(text, f'bottleneck.rate="{text}"')
    try:
        bps = _core.parse_rate(text)
    except ValueError:
        bps = None
    try:
        info = json.loads(_core.validate(SCENARIO, "s", [f'bottleneck.rate="{text}"']))
        loaded = info["bottleneck_rate_bps"]
    except _core.ScenarioError:
        loaded = None
    assert bps == loaded


@settings(max_examples=150, deadline=None)
@given(st.floats(min_value=0.0, max_value=1e4, allow_nan=False), st.sampled_from(TIME_UNITS))
def test_durations_read_as_the_scenario_loader_reads_them(v, unit):
    text = f"{v!r}{unit}"
    if not unit:
        return refused_without_unit(text, f'simulation.duration="{text}"')
    try:
        secs = _core.parse_duration(text)
    except ValueError:
        secs = None
    try:
        info = json.loads(_core.validate(SCENARIO, "s", [f'simulation.duration="{text}"']))
        loaded = info["duration_s"]
    except _core.ScenarioError:
        loaded = None
    if loaded is None or secs is None:  # a zero duration is valid text but not a valid run length
        assert secs is None or secs == 0 or loaded is not None
    else:
        assert secs == loaded


def test_refusals_say_what_is_accepted():
    for bad in ("1mb/s", "fast", "10 MB/s"):
        try:
            _core.parse_rate(bad)
        except ValueError as e:
            assert "Mb/s" in str(e) and bad in str(e)
        else:
            raise AssertionError(bad)
    assert _core.parse_duration("2min") == 120.0 and _core.parse_duration("1h") == 3600.0
    assert _core.parse_size("64KiB") == 65536
