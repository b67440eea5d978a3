"""Property tests (hypothesis) of the Python API and of `--set`/`--vary` parsing.

Whatever a user passes, the API answers with a result or with one of its documented exceptions
(`aqmlab.ScenarioError`, `aqmlab.SweepError`), never with a TypeError, a RecursionError, an
OverflowError or a traceback from a library; the sweep layer's messages are one line. The number
of examples per test is `AQMLAB_HYPOTHESIS_EXAMPLES` (default 150, a few seconds each; run
locally with e.g. 5000 for a longer search). Runs are never started here with random values (a
random duration could be long): only validation, parsing and the argument checks before a run.
"""

import importlib
import math
import os
import string

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import aqmlab  # noqa: E402
from conftest import SMALL  # noqa: E402

sw = importlib.import_module("aqmlab.sweep")
SweepError = sw.SweepError
EXAMPLES = int(os.environ.get("AQMLAB_HYPOTHESIS_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("AQMLAB_HYPOTHESIS_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

BASE = SMALL.replace('duration = "20s"\nwarmup = "2s"', 'duration = "2s"')

KEYS = ["simulation.duration", "simulation.seed", "simulation.warmup", "bottleneck.rate", "bottleneck.delay",
        "bottleneck.limit", "bottleneck.aqm", "bottleneck.aqm.type", "bottleneck.aqm.max_p", "bottleneck.aqm.min_th",
        "flows[0].count", "flows[1].rate", "flows[0].tcp.variant", "flows[2].count", "flows[-1].count", "access.rate",
        "flows", "flows[0]", "name", "", " ", "a..b", "flows[", "flows[0]].x", "x=y", "é.ü"]

toml_atoms = st.one_of(
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["true", "false", "nan", "inf", "-inf", "1e400", "0x10", "1_000", "10ms", "1.8e10s", "5Mb/s",
                     '"10ms"', '"1Mb/s"', "'red'", '"choke"', "[]", "[1, 2]", "{}", '{type="red"}',
                     '{type="choke", min_th=5, max_th=15}', "[[1]]", '"\\u0000"', '"a\\nb"', "1979-05-27"]),
    st.text(max_size=20),
)


def nested(depth_text: st.SearchStrategy) -> st.SearchStrategy:
    return st.builds(lambda d, v, o, c: o * d + v + c * d, st.integers(0, 300), toml_atoms,
                     st.sampled_from(["[", "{a="]), st.sampled_from(["]", "}"]))


values = st.one_of(toml_atoms, nested(toml_atoms), st.lists(toml_atoms, max_size=4).map(lambda v: ",".join(v)))
overrides = st.builds(lambda k, sep, v: f"{k}{sep}{v}", st.one_of(st.sampled_from(KEYS), st.text(max_size=12)),
                      st.sampled_from(["=", "==", " = ", "", "=\n"]), values)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 80), 2 ** 80), st.floats(), st.text(max_size=10),
                    st.binary(max_size=5), st.just(object()), st.sets(st.integers(), max_size=2),
                    st.complex_numbers(allow_nan=False))
dict_values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3),
                                                        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()),
                                                                        c, max_size=3)), max_leaves=12)
dict_scenarios = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(["simulation", "bottleneck", "flows", "access", "name", "tcp"]),
                              st.text(max_size=6), st.integers()), dict_values, max_size=5),
    st.builds(lambda d, k, v: {**d, k: v}, st.just(__import__("tomllib").loads(BASE)),
              st.sampled_from(["simulation", "bottleneck", "flows", "name", "tcp", "access"]), dict_values),
)
seeds = st.one_of(st.none(), st.integers(-(2 ** 70), 2 ** 70), st.floats(), st.booleans(), st.text(max_size=4),
                  st.sampled_from([2 ** 64 - 1, 2 ** 64, -1, 0]))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    p = tmp_path_factory.mktemp("prop") / "prop.toml"
    p.write_text(BASE)
    return p


def one_line(e: BaseException):
    assert "\n" not in str(e), f"a message of several lines: {str(e)!r}"


@SETTINGS
@given(ov=st.lists(overrides, max_size=3))
def test_set_overrides_validate_or_scenario_error(base, ov):
    """`--set key=value`: accepted, or a ScenarioError."""
    try:
        aqmlab.validate(base, overrides=ov)
    except aqmlab.ScenarioError:
        pass


@SETTINGS
@given(text=st.one_of(overrides, st.text(max_size=40), nested(toml_atoms).map(lambda v: "flows[0].count=" + v)))
def test_vary_parsing_gives_a_dimension_or_a_sweep_error(base, text):
    """`--vary key=v1,v2`: a dimension (then the sweep validates or explains), or a one-line SweepError."""
    try:
        s = sw.Sweep(base, [text], seeds=1)
        s.tasks()
    except SweepError as e:
        one_line(e)


@SETTINGS
@given(scenario=dict_scenarios)
def test_dict_scenarios_validate_or_scenario_error(scenario):
    try:
        aqmlab.validate(scenario)
    except aqmlab.ScenarioError:
        pass


@SETTINGS
@given(seed=seeds, ov=st.one_of(st.none(), st.text(max_size=10), st.lists(st.one_of(st.text(max_size=8), st.integers()),
                                                                          max_size=2), st.integers()))
def test_run_arguments_are_checked_before_the_run(base, seed, ov):
    """Seeds and overrides of any type: the run is made (a valid seed, no overrides) or refused with a
    ScenarioError; never an OverflowError or TypeError from the engine binding."""
    try:
        aqmlab.validate(base, overrides=ov if ov is not None else ())
        if ov in (None, [], ""):
            aqmlab.run(base, seed=seed)
    except aqmlab.ScenarioError:
        pass


scenario_like = st.one_of(st.text(max_size=30), st.text(alphabet=string.printable, max_size=60),
                          st.sampled_from(["a=b.toml", "x = 1", "/dev/null", "/dev/zero", "/", ".", "name = 'x'\n",
                                           "\x00", "~/nope.toml", "a" * 5000]),
                          st.integers(), st.floats(), st.none(), st.lists(st.integers(), max_size=2))


@SETTINGS
@given(scenario=scenario_like)
def test_any_scenario_argument(scenario):
    try:
        aqmlab.validate(scenario)
    except aqmlab.ScenarioError:
        pass


@SETTINGS
@given(vary=st.one_of(st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)),
                                      st.one_of(st.lists(dict_values, max_size=3), dict_values), max_size=2),
                      st.text(max_size=20), st.integers(), st.lists(st.text(max_size=15), max_size=2)),
       seeds_=st.one_of(st.integers(-5, 3), st.floats(), st.just(10 ** 12)),
       seed=seeds, jobs=st.one_of(st.none(), st.integers(-2, 2), st.floats(), st.booleans()))
def test_sweep_arguments(base, vary, seeds_, seed, jobs):
    """`aqmlab.sweep` arguments: refused with a one-line SweepError before any run, or a valid sweep
    (whose tasks are then built, not run)."""
    try:
        sw.check_jobs(jobs) if hasattr(sw, "check_jobs") else None
        s = sw.Sweep(base, [vary] if isinstance(vary, (str, dict)) else vary, seeds_, seed=seed)
        tasks = s.tasks()
        assert len(tasks) == math.prod(len(d.choices) for d in s.dims) * s.seeds
    except SweepError as e:
        one_line(e)
    except aqmlab.ScenarioError:
        pass
