"""Sweeps: one scenario run over a grid of changes and several seeds, in parallel, with a cache.

A sweep is a base scenario, a list of *dimensions* and a number of seeds. Each dimension is a list
of *choices*; a choice has a value (what the results table shows in the dimension's column), a list
of ``--set`` overrides and optionally another base scenario. The sweep runs the cartesian product of
the dimensions, each point with seeds ``base, base + 1, …, base + K − 1`` (``base`` is the
scenario's ``simulation.seed``, 1 by default, or the ``seed`` given).

``aqmlab sweep s.toml --vary flows[0].count=10,20 --vary bottleneck.aqm.max_p=0.1,0.2 --seeds 3``
makes two dimensions with the choices ``flows[0].count=10`` … and runs 2 × 2 × 3 = 12 runs. A
value is read as a TOML value, as ``--set`` reads it; commas inside brackets, braces or quotes do
not split (``--vary 'bottleneck.aqm={type="red",min_th=5,max_th=15},{type="choke",min_th=5,max_th=15}'``).
An item may be a range: ``10:40:10`` (10, 20, 30, 40), ``0.25Mb/s:8Mb/s:x2`` (doubling),
``1ms:1s:log4`` (4 values evenly spaced on a log scale); see :func:`~aqmlab.sweep.grammar.expand_range`.
A sweep has at most :data:`MAX_RUNS` runs.

Override templates (used by experiment files): ``${expr}`` in an override is replaced by the value
of ``expr``, an arithmetic expression over the values of the point's dimensions
(``flows[0].count=${N // 2}``); see :func:`expand`.

**Cache.** Every run is identified by a SHA-256 key over a canonical form of what determines its
result: the parsed base scenario (so comments and layout do not count, but every value does), its
default name, the overrides in order, the seed, the aqmlab version, the cache format and a
fingerprint of the engine binary (so a rebuilt engine never reuses old results). A finished run is
stored as ``<cache>/v2/<key[:2]>/<key>.zip`` (see :mod:`aqmlab.sweep.cache`): written atomically,
checked on read, so an interrupted sweep leaves no partial entry and a damaged one is made again.
Running the sweep again runs only what is missing. The cache directory is ``$AQMLAB_CACHE`` or
``~/.cache/aqmlab``; ``cache=False`` (``--no-cache``) uses a temporary directory that is removed
afterwards.

**Where runs are made** (:mod:`aqmlab.sweep.executors`): a local pool of processes (the default; every
core), or a Dask cluster (``executor="dask"`` with ``scheduler="tcp://host:8786"`` or
``client=distributed.Client(...)``; ``aqmlab sweep --executor dask --scheduler ...``). Both hand
out batches of runs and store the same cache entries, so a sweep begun on one finishes on the other.

Python::

    import aqmlab
    df = aqmlab.sweep("s.toml", vary={"flows[0].count": [10, 20]}, seeds=3)   # one row per run

=============  =====================================================================================
module         contents
=============  =====================================================================================
``grammar``    value lists, values, ranges (``10:40:10``, ``1ms:1s:log4``) and ``${...}`` templates
``spec``       :class:`Sweep`, :class:`Dimension`, :class:`Choice`, the tasks, :func:`sweep`
``keys``       run keys (content addresses)
``cache``      the result cache: one verified file per run
``executors``  where runs are made: this process, a local pool, a Dask cluster
``workers``    local workers spawned without the caller's main script (no main guard needed)
``gather``     :class:`SweepResult`: the runs' rows and tables, gathered from the cache
``engines``    the same sweep in ns-2.35: the runs of the points it can express
=============  =====================================================================================

Uses :mod:`aqmlab.run` and :mod:`aqmlab.base`. ``aqmlab.sweep`` is the function :func:`sweep` once
``aqmlab`` is imported: reach this package with ``from aqmlab.sweep import Sweep`` or
``from aqmlab.sweep.spec import ...``.
"""

from ..base.errors import CacheError, RunFailed, SweepError
from ..run.result import TABLES
from .cache import CACHE_FORMAT, LAYOUT, Cache, cache_layout, default_cache_dir, open_cache
from .executors import check_jobs, describe_task, execute, pending_tasks
from .gather import SweepResult
from .grammar import expand, expand_range, parse_value, split_top_level, toml_value
from .keys import run_key
from .spec import MAX_RUNS, Choice, Dimension, Point, Sweep, Task, parse_vary, sweep, vary_dimension

__all__ = ["Choice", "Dimension", "Sweep", "SweepResult", "SweepError", "CacheError", "RunFailed", "Cache", "sweep",
           "parse_vary", "vary_dimension", "expand", "expand_range", "parse_value", "split_top_level", "toml_value", "execute",
           "pending_tasks", "check_jobs", "describe_task", "default_cache_dir", "open_cache", "cache_layout", "run_key",
           "Point", "Task", "TABLES", "CACHE_FORMAT", "LAYOUT", "MAX_RUNS"]
