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
writes tidy results (CSV, Parquet, JSON).
"""

from ._core import ScenarioError, SimulationError, __version__
from .api import Result, names, run, spatial_distribution, validate
from .sweep import sweep

__all__ = ["run", "validate", "names", "spatial_distribution", "sweep", "Result", "ScenarioError", "SimulationError",
           "__version__"]
