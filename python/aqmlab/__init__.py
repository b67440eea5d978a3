"""aqmlab: a fast, deterministic packet-level simulator and AQM library.

Python API::

    import aqmlab
    res = aqmlab.run("examples/dumbbell-red.toml", seed=3)
    res.summary["bottleneck"]["utilisation"]
    res.flows            # pandas DataFrame, one row per flow
    res.timeseries       # pandas DataFrame, one row per bottleneck sample
    res.jain(group="tcp")
    df = aqmlab.sweep("s.toml", vary={"flows[0].count": [10, 20]}, seeds=3)   # one row per run

The simulation engine is Rust (``aqmlab._core``, described by ``_core.pyi``); this package loads
scenarios, runs them and writes tidy results (CSV, Parquet, JSON). Importing it loads no pandas,
pyarrow, matplotlib or scipy: they are imported when a DataFrame, a Parquet file, a figure or a
model is first needed.

Errors (all in :mod:`aqmlab.base.errors`): ``ScenarioError`` for a bad scenario or bad arguments,
``SweepError`` for a bad sweep, ``SimulationError``/``RunFailed`` when a run fails.

**Layers.** The package is built in layers, each a subpackage that imports only itself, lower
layers and the engine; the five apps are siblings that never import each other; nothing imports
this module, which only re-exports (``tests/test_layers.py`` checks all of it; docs/architecture.md
draws it)::

    cli                                   the `aqmlab` command, one module per subcommand
    reproduce   plot   emulate   bench   ns3    the apps (siblings)
    analysis                              statistics, figures, tables, plot style
    models                                the analytical models
    sweep                                 sweeps, run keys, the cache, executors
    ns2                                   ns-2.35 as a second engine
    run                                   one run: source, run, result, run folder
    base                                  errors, version, units, Jain's index, file formats
    _core                                 the engine (Rust)

Every module, by layer:

==============================  ================================================================
module                          contents
==============================  ================================================================
``base``                        the lowest layer
``base.errors``                 every exception class (the engine's two re-exported)
``base.version``                ``__version__`` and the engine build's fingerprint
``base.units``                  the engine's unit parsers; printed forms of rates, times, numbers
``base.metrics``                Jain's index, written once
``base.io``                     bounded reads, atomic writes, tables as CSV, Parquet and Arrow
``base.parquet``                a standard-library Parquet writer for the engine's tables
``base.compat``                 ``tomllib`` on Python 3.10
``run``                         one scenario run
``run.source``                  a scenario (path, TOML text, dict) read into a ``Source``
``run.api``                     ``run``, ``validate``, ``names``, ``spatial_distribution``
``run.result``                  ``Result``: a run's summary and tables
``run.rundir``                  where a run's results go; the resolved ``scenario.toml``
``run.metrics``                 a run's results as one flat row of metrics
``run.snapshots``               the spatial distribution of flows in the queue
``run.diff``                    two runs side by side: scenario keys and summary numbers that differ
``run.summary``                 ``summary.json`` from a flows table and link counts (emulation, ns-2.35)
``run.columns``                 what every column means: the definitions and units docs/metrics.md and
                                ``aqmlab list metrics`` print (``columns.toml``)
``ns2``                         ns-2.35 as a second engine (docs/crosscheck.md)
``ns2.plan``                    a scenario translated for ns-2.35, or refused in one line naming the key
``ns2.script``                  the translation written as an ns-2 Tcl script
``ns2.trace``                   ns-2's packet trace read into aqmlab's counters, conservation checked
``ns2.results``                 the counters as aqmlab's flows table, summary and series
``ns2.engine``                  ``run`` and ``row``: a scenario run in ns-2.35
``ns2.crosscheck``              one scenario in both engines, side by side
``ns2.agreement``               the agreement suite, aqmlab against ns-2.35 (``python -m``)
``sweep``                       sweeps: a scenario × dimensions × seeds, cached
``sweep.grammar``               value lists, values, ``${...}`` templates
``sweep.spec``                  ``Sweep``, ``Dimension``, ``Choice``, tasks; ``sweep()``
``sweep.keys``                  run keys (content addresses)
``sweep.cache``                 the result cache: one verified file per run
``sweep.executors``             where runs are made: here, a local pool, a Dask cluster
``sweep.workers``               how local workers start: spawned, without the caller's main script
``sweep.gather``                ``SweepResult``: runs and tables gathered from the cache
``sweep.engines``               a sweep's points run in ns-2.35 too: the tasks it can express
``models``                      the papers' analytical models (loaded lazily)
``models.common``               parameter checks and small numerics
``models.choke``                the CHOKe fluid model; Perfect CHOKe; the large-N limit
``models.chokew``               the CHOKeW steady state
``models.raqm``                 RAQM's stability bound and iterated loop
``models.ward``                 the WARD statement and a reference curve
``models.runs``                 run folders read for comparison with the models
``models.plots``                model figures with simulation points
``analysis``                    figures and tables of gathered runs (for ``plot`` and ``reproduce``)
``analysis.context``            what figure and table code gets and returns
``analysis.stats``              metric specifications, means with intervals
``analysis.canvas``             what every figure kind draws on: panels, labels, files, selections
``analysis.figures``            the figure kinds
``analysis.latency``            per-packet delay distributions (``latency_cdf``)
``analysis.marks``              one look per series, plotted data as CSV, unit groups, log ticks
``analysis.tables``             metric tables and pivots
``analysis.overlays``           model curves over simulations
``analysis.plotstyle``          the ``paper`` and ``draft`` styles
``analysis.markdown``           Markdown tables
``analysis.latex``              LaTeX tables (booktabs), beside the CSV and Markdown ones
``reproduce``                   the papers' experiments, run, drawn and reported
``reproduce.experiment``        experiment.toml read and checked; an experiment as a sweep
``reproduce.references``        reference.toml: published values, tables and claims, read and checked
``reproduce.compare``           published values, tables and claims beside ours
``reproduce.crosscheck``        the ns-2.35 column: items measured in ns-2.35 too, misses arbitrated
``reproduce.audit``             the counting rules checked: no set-up value, no number twice, no fair match
``reproduce.explain``           a miss's reason written from the run it explains (placeholders, markers)
``reproduce.papers``            the papers' inventories: every figure and table of each paper
``reproduce.scorecard``         the report's front page: counts per paper, figure and experiment
``reproduce.report``            report.md and report.html
``reproduce.runner``            ``aqmlab reproduce``
``reproduce.hooks``             the ``hook`` figure kind: an experiment's own ``hook.py``
``reproduce.figures``           names for experiments' ``hook.py`` (from ``analysis.figures``)
``reproduce.context``           names for experiments' ``hook.py`` (from ``analysis.context``)
``plot``                        ``aqmlab plot`` from Python
``plot.draw``                   run and sweep folders read and drawn
``emulate``                     real Linux TCP through the same queues (root)
``emulate.netns``               namespaces, TUN devices, addresses, processes
``emulate.plan``                the engine's emulation plan, checked; Linux congestion controls
``emulate.run``                 one emulation run
``emulate.results``             an emulation's results in the simulator's format
``emulate.agent``               the traffic agents (standard library only, run in namespaces)
``emulate.fidelity``            emulation against simulation (``python -m``)
``emulate.limits``              the forwarder's limits (``python -m``)
``emulate.vslinux``             the simulated TCPs against Linux's, traces and table (``python -m``)
``bench``                       ``aqmlab bench``
``bench.points``                the engine's benchmark points (``python -m aqmlab.bench``)
``bench.overhead``              import, whole-run and sweep overhead
``bench.choke``                 the CHOKe family against RED
``bench.htsim``                 aqmlab beside htsim
``ns3``                         ns-3.44 as a third opinion on the modern senders and queues
``ns3.build``                   the ns-3 program compiled against the ``ns3`` wheel, once
``ns3.plan``                    a dumbbell translated for ns-3, or refused in one line naming the key
``ns3.engine``                  ``run``: a scenario run in ns-3, read back as a ``Result``
``ns3.cases``                   the comparison's cases and tolerances
``ns3.report``                  its table and figures
``ns3.vsns3``                   aqmlab against ns-3 (``python -m``)
``cli``                         the ``aqmlab`` command (``aqmlab.cli:main``)
``cli.app``                     the parser and ``main``
``cli.common``                  exit codes, one-line errors, shared options
``cli.output``                  the printed tables
``cli.run``                     ``aqmlab run``
``cli.validate``                ``aqmlab validate``
``cli.diff``                    ``aqmlab diff``
``cli.list``                    ``aqmlab list``
``cli.bench``                   ``aqmlab bench``
``cli.sweep``                   ``aqmlab sweep``
``cli.reproduce``               ``aqmlab reproduce``
``cli.plot``                    ``aqmlab plot``
``cli.model``                   ``aqmlab model``
``cli.emulate``                 ``aqmlab emulate``
``cli.crosscheck``              ``aqmlab crosscheck``
==============================  ================================================================

``experiments/`` holds the experiment folders, ``examples/`` the example scenarios (data, installed
with the package: ``aqmlab.example("voip-latency")`` is one's path, ``aqmlab run --example NAME``
runs it).
"""

from .base.errors import RunFailed, ScenarioError, SimulationError, SweepError
from .base.version import __version__
from .run import Result, example, examples, names, run, spatial_distribution, validate
from .sweep import sweep

__all__ = ["run", "validate", "names", "spatial_distribution", "sweep", "Result", "ScenarioError", "SweepError",
           "SimulationError", "RunFailed", "__version__", "example", "examples"]
