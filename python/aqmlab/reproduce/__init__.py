"""Reproducing the papers: experiment definitions, sweeps, figures, tables and a report.

Every experiment of the specification (experiments.md §4) is a folder ``experiments/<id>/`` with
``experiment.toml`` (what to run and what to draw), a base ``scenario.toml`` (and sometimes more
scenario files), optionally ``reference.toml`` (published values) and ``hook.py`` (a figure no
generic kind covers). The generic machinery lives here:

=================  ==================================================================================
module             contents
=================  ==================================================================================
``experiment``     reading and checking experiment.toml; an experiment as a :class:`~aqmlab.sweep.Sweep`
``compare``        published reference values and claims beside ours (the scorecard's rows)
``crosscheck``     the ns-2.35 column: each item measured in ns-2.35 too, a miss arbitrated by it
``report``         report.md / report.html
``runner``         ``aqmlab reproduce``: one pool and one cache for all experiments
``figures``,       the names an experiment's ``hook.py`` imports, from :mod:`aqmlab.analysis.figures`
``context``        and :mod:`aqmlab.analysis.context`
=================  ==================================================================================

Metric specs, figures, tables, model overlays and the plot style are shared with ``aqmlab plot``
and live in :mod:`aqmlab.analysis`.

The format is documented in docs/reproduce.md.
"""

from .experiment import (Experiment, ExperimentError, experiments_dir, find_experiments, list_experiments,
                         load_experiment)
from .runner import reproduce, select

__all__ = ["Experiment", "ExperimentError", "experiments_dir", "find_experiments", "list_experiments",
           "load_experiment", "reproduce", "select"]
