"""aqmlab: a fast, deterministic packet-level simulator and AQM library.

Python API::

    import aqmlab
    res = aqmlab.run("examples/dumbbell-red.toml", seed=3)
    res.summary["bottleneck"]["utilisation"]
    res.flows            # pandas DataFrame, one row per flow
    res.timeseries       # pandas DataFrame, one row per bottleneck sample
    res.jain(group="tcp")
    df = aqmlab.sweep("s.toml", vary={"flows[0].count": [10, 20]}, seeds=3)   # one row per run

The simulation engine is Rust (``aqmlab._core``); this package loads scenarios, runs them and
writes tidy results (CSV, Parquet, JSON). Importing it loads no pandas, pyarrow, matplotlib or
scipy: they are imported when a DataFrame, a Parquet file, a figure or a model is first needed.

Errors (see :mod:`aqmlab.errors`): ``ScenarioError`` for a bad scenario or bad arguments,
``SweepError`` for a bad sweep, ``SimulationError``/``RunFailed`` when a run fails.
"""

from ._core import __version__
from .errors import RunFailed, ScenarioError, SimulationError, SweepError
from .api import Result, names, run, spatial_distribution, validate
from .sweep import sweep

__all__ = ["run", "validate", "names", "spatial_distribution", "sweep", "Result", "ScenarioError", "SweepError",
           "SimulationError", "RunFailed", "__version__"]
