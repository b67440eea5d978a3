"""Analytical models of the papers, to set beside the simulations.

=============  ===================================================================  ==================
module         model                                                                paper
=============  ===================================================================  ==================
``choke``      CHOKe fluid model of Tang, Wang & Low: backlog, shares, queueing      [TWL]
               delay, spatial distribution rho0(y) and velocity v(y); Perfect CHOKe;
               the large-N limit
``chokew``     CHOKeW steady state: per-class drawing factor, matching and drop      [CHOKeW] §3
               probabilities, throughput; starvation bound; p0 sweeps
``raqm``       RAQM stability: the bound alpha_hat and c(x); the discrete loop       [RAQM] §2
               iterated to show convergence or oscillation
``ward``       WARD: the stated UDP-share peak 1/(2e) and a reference curve           [WARD] §3.2
``runs``       reading ``aqmlab run`` directories (and queue snapshots) to compare
``plots``      figures with model curves and simulation points (matplotlib, Agg)
``common``     parameter checks and small numerics shared by the models
=============  ===================================================================  ==================

Solvers return results with a ``converged`` flag (numbers are NaN when it is False, and
``message`` says why) or DataFrames with a ``converged`` column; ``require()`` raises
:class:`NotConvergedError`. Bad parameters raise :class:`ParameterError`. The command line is
``aqmlab model choke|chokew|raqm|ward`` (:mod:`aqmlab.cli.model`); docs in ``docs/models/``. The
errors live with every other exception class in :mod:`aqmlab.base.errors`; this layer imports
:mod:`aqmlab.run` and :mod:`aqmlab.base` only.

Example::

    from aqmlab import models
    df = models.choke_sweep([12.5, 125, 1250])          # x0 in packets/s, paper parameters
    df[["x0_over_c", "b", "mu0", "tcp_share"]]
"""

from ..base.errors import ModelError, NotConvergedError, ParameterError, RunDataError

# The solvers pull in scipy and matplotlib; load them on first use so that importing this package
# (the `aqmlab` command does, to build its parser) stays cheap.
_LAZY = {
    "choke": ["ChokeParams", "ChokeSolution", "PerfectChokeSolution", "solve_choke", "choke_sweep",
              "solve_perfect_choke", "choke_min_flows", "large_n_share", "large_n_share_parametric",
              "equal_rate_x0", "ode_profile"],
    "chokew": ["FlowClass", "ChokewParams", "ChokewSolution", "solve_chokew", "chokew_p0_sweep",
               "starvation_bound", "q_of", "eta_of"],
    "raqm": ["c_of_x", "alpha_hat", "unstable_band", "static_map", "adaptive_map", "iterate_raqm",
             "RaqmTrajectory"],
    "ward": ["ward_curve", "share_curve_summary"],
    "runs": ["read_run", "run_point", "sweep_points", "spatial_distribution"],
}
_ALIASES = {"WARD_PEAK_SHARE": ("ward", "PEAK_SHARE"), "WARD_PEAK_S": ("ward", "PEAK_S"),
            "ward_reference_share": ("ward", "reference_share")}
_WHERE = {name: (mod, name) for mod, names in _LAZY.items() for name in names} | _ALIASES

__all__ = ["ModelError", "ParameterError", "NotConvergedError", "RunDataError", *_WHERE]


def __getattr__(name):
    if name in _WHERE:
        import importlib

        mod, attr = _WHERE[name]
        value = getattr(importlib.import_module(f".{mod}", __name__), attr)
        globals()[name] = value
        return value
    if name in ("choke", "chokew", "raqm", "ward", "runs", "plots"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
