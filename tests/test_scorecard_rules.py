"""How the scorecard counts (docs/reproduce.md, "How items are counted"): only numbers the paper
prints as results, each once, with bands that can fail; set-up values, other readings and values a
plain fair allocation matches are shown and not counted. Each rule is checked on the packaged
experiments and shown to fail on a deliberately bad reference file
(python/aqmlab/reproduce/audit.py, references.py, compare.py)."""

import pytest

from conftest import ROOT
from test_reproduce import TINY_EXPERIMENT, TINY_SCENARIO

from aqmlab.reproduce import ExperimentError, list_experiments, load_experiment
from aqmlab.reproduce.audit import audit
from aqmlab.reproduce.compare import evaluate, evaluate_claim, tally

EXPERIMENTS = ROOT / "experiments"


def _study(tmp_path, reference: str, experiment: str = TINY_EXPERIMENT):
    d = tmp_path / "exps" / "tiny"
    d.mkdir(parents=True)
    (d / "scenario.toml").write_text(TINY_SCENARIO)
    (d / "experiment.toml").write_text(experiment)
    (d / "reference.toml").write_text(reference)
    return d


def _value(col: str, value, where: str, extra: str = "", line: int = 12) -> str:
    return (f'[[reference]]\nlabel = "a value"\nsource = "[TEST] Fig. 1"\nline = {line}\ncol = "{col}"\n'
            f'where = {where}\nvalue = {value}\n{extra}\n')


def test_the_packaged_experiments_keep_the_counting_rules():
    """No counted value restates its set-up, none is counted twice, none is matched by a plain fair
    allocation, and every band can fail (the checks of the tests below, on the shipped files)."""
    assert audit(list_experiments(EXPERIMENTS)) == []


# ----------------------------------------------------------------------------- set-up values

@pytest.mark.parametrize("col, value, unit, what", [
    ("bottleneck.queue_mean_pkts", 10, "packets", "10"),          # RED's min_th of the variant
    ("aqm.avg_mean", 60, "", "60"),                               # the buffer
    ("udp.throughput_bps", 2, "Mb/s", "2e+06 b/s"),               # the UDP source's rate
])
def test_a_set_up_value_scored_is_caught(tmp_path, col, value, unit, what):
    u = f'unit = "{unit}"' if unit else ""
    exp = load_experiment(_study(tmp_path, _value(col, value, '{ scheme = "RED", N = 4 }', u)))
    problems = audit([exp])
    assert len(problems) == 1 and f"equals a number of its set-up ({what})" in problems[0], problems
    # said to be context, it is shown and not counted
    exp = load_experiment(_study(tmp_path / "ok", _value(col, value, '{ scheme = "RED", N = 4 }',
                                                          u + '\ncontext = "the set-up value, restated"')))
    assert exp.references[0]["role"] == "context" and audit([exp]) == []


# ----------------------------------------------------------------------------- one number, one item

def test_one_number_counted_twice_is_caught_and_a_statement_counts_once(tmp_path):
    twice = (_value("tcp.goodput_bps", 300, '{ scheme = "RED", N = 2 }', 'unit = "kb/s"')
             + _value("tcp.goodput_bps", 300, '{ scheme = "CHOKe", N = 2 }', 'unit = "kb/s"'))
    problems = audit([load_experiment(_study(tmp_path, twice))])
    assert len(problems) == 1 and "the same printed number as" in problems[0], problems
    once = twice.replace('unit = "kb/s"', 'unit = "kb/s"\nstatement = "300 kb/s for both schemes"')
    exp = load_experiment(_study(tmp_path / "ok", once))
    assert audit([exp]) == []

    class Runs:
        import pandas as pd

        runs = pd.DataFrame([{"scheme": s, "N": 2, "seed": k, "tcp.goodput_bps": g}
                             for s, g in (("RED", 300e3), ("CHOKe", 500e3)) for k in (1, 2)])
        coords, quick = ["scheme", "N"], False

    Runs.exp = exp
    from aqmlab.reproduce.compare import score

    rows = score(Runs)["values"]
    assert [x["ok"] for x in rows] == [True, False]
    assert tally(rows) == (0, 1, 0)  # one item, missed because one of its parts is


# ----------------------------------------------------------------------------- bands that can fail

@pytest.mark.parametrize("extra, error", [
    ("", "reaches 1, the bound of udp.share"),                       # 0.97 ± 25 % reaches the ceiling
    ("abs_tolerance = 0.05", "reaches 1, the bound of udp.share"),   # an absolute band that still does
    ("complement = true", None),                                     # 0.03 ± 25 % of the distance to 1
    ("abs_tolerance = 0.02", None),
])
def test_a_band_that_reaches_its_metric_bound_is_refused(tmp_path, extra, error):
    d = _study(tmp_path, _value("udp.share", 0.97, '{ scheme = "RED", N = 4 }', extra))
    if error is None:
        load_experiment(d)
        return
    with pytest.raises(ExperimentError, match=error) as e:
        load_experiment(d)
    assert "\n" not in str(e.value)


class _Runs:
    def __init__(self, rows, coords):
        import pandas as pd

        self.runs, self.coords, self.quick = pd.DataFrame(rows), coords, False


def test_a_bounded_value_near_its_bound_is_compared_by_its_distance_to_it():
    """A Jain index of 0.97 within ±25 % would be matched by a perfectly even allocation (1.0);
    compared as 1 − J it is not, and 0.97 itself is."""
    r = {"label": "Jain", "col": "fairness.jain_throughput_tcp", "value": 0.97, "where": {}}
    even = _Runs([{"seed": k, "fairness.jain_throughput_tcp": 0.999} for k in (1, 2)], [])
    near = _Runs([{"seed": k, "fairness.jain_throughput_tcp": 0.968} for k in (1, 2)], [])
    assert evaluate(even, r)["ok"] is True                        # the old band: anything above 0.73
    assert evaluate(even, dict(r, complement=True))["ok"] is False
    assert evaluate(near, dict(r, complement=True))["ok"] is True
    low = dict(r, value=0.19, complement=True)                     # far from the ceiling: the distance to 0
    assert evaluate(_Runs([{"seed": 1, "fairness.jain_throughput_tcp": 0.22}], []), low)["ok"] is True


# ----------------------------------------------------------------------------- no information

def test_a_value_a_plain_fair_allocation_matches_is_caught(tmp_path):
    # N = 4: five flows on 1 Mb/s, 200 kb/s each; 190 kb/s per TCP flow matches an even split
    near = _value("tcp.throughput_per_flow_bps", 190, '{ scheme = "CHOKe", N = 4 }', 'unit = "kb/s"')
    problems = audit([load_experiment(_study(tmp_path, near))])
    assert len(problems) == 1 and "a plain fair allocation (2e+05 b/s) lies in its band" in problems[0], problems
    marked = near.replace('unit = "kb/s"', 'unit = "kb/s"\nno_information = "an even split matches it"')
    exp = load_experiment(_study(tmp_path / "ok", marked))
    assert exp.references[0]["role"] == "no information" and audit([exp]) == []
    # a value that tells the paper's allocation from a fair one may not be marked away
    far = marked.replace("value = 190", "value = 20")
    problems = audit([load_experiment(_study(tmp_path / "far", far))])
    assert len(problems) == 1 and "marked no_information, but no plain fair allocation" in problems[0], problems


# ----------------------------------------------------------------------------- readings

READINGS = TINY_EXPERIMENT.replace("[runs]\n", '''[[readings]]
coord = "scheme"
main = "RED"
others = { CHOKe = "the other reading" }

[runs]
''')


def test_only_the_main_reading_is_counted(tmp_path):
    ref = (_value("udp.share", 0.5, '{ scheme = "CHOKe", N = 4 }')
           + '[[claim]]\ntext = "CHOKe: the UDP share falls with N"\nsource = "[TEST] Fig. 1"\nline = 14\n'
             'kind = "trend"\nalong = "N"\ndirection = "decreasing"\ncol = "udp.share"\nwhere = { scheme = "CHOKe" }\n')
    exp = load_experiment(_study(tmp_path, ref, READINGS))
    assert [x["role"] for x in exp.references + exp.claims] == ["other reading", "other reading"]
    runs = _Runs([{"scheme": "CHOKe", "N": n, "seed": k, "udp.share": 0.9} for n in (2, 4) for k in (1, 2)],
                 ["scheme", "N"])
    rows = [evaluate(runs, exp.references[0])]
    assert rows[0]["ok"] is False and tally(rows) == (0, 0, 0)  # shown (a miss), not counted
    claim = evaluate_claim(runs, exp.claims[0])
    assert claim["role"] == "other reading" and tally([claim]) == (0, 0, 0)
    # a claim that names no reading compares the readings with each other: refused
    bad = ref.replace('where = { scheme = "CHOKe" }\n', "")
    with pytest.raises(ExperimentError, match=r"claim\[0\]\.where: name the reading"):
        load_experiment(_study(tmp_path / "bad", bad, READINGS))


# ----------------------------------------------------------------------------- statements about flows

class _RunsAndFlows(_Runs):
    def __init__(self, per_flow: dict):
        import pandas as pd

        super().__init__([{"scheme": s, "seed": 1, "run": s, "fair_share_bps": 100.0} for s in per_flow], ["scheme"])
        self.flows = pd.DataFrame([{"scheme": s, "seed": 1, "run": s, "transport": "tcp", "throughput_bps": v}
                                   for s, vals in per_flow.items() for v in vals])

    def table(self, name):
        return self.flows


@pytest.mark.parametrize("throughputs, holds", [
    ([100, 90, 80, 10], True),     # three of four at 75 % of the fair share or more: most
    ([100, 70, 20, 10], False),    # one of four
])
def test_most_flows_achieve_their_fair_share(throughputs, holds):
    ctx = _RunsAndFlows({"CHOKeD": throughputs})
    c = {"text": "most TCP flows achieve their fair share", "kind": "flows", "flows": {"transport": "tcp"},
         "col": "throughput_bps", "at_least": 0.75, "min": 0.5, "where": {"scheme": "CHOKeD"}}
    assert evaluate_claim(ctx, c)["ok"] is holds
