"""The `aqmlab` command.

    aqmlab run SCENARIO [--seed N] [--out DIR] [--set key.path=value ...]
    aqmlab sweep SCENARIO --vary key.path=v1,v2,... [--seeds K] [--jobs N] [--out DIR]
                 [--executor local|dask --scheduler tcp://HOST:PORT]
    aqmlab validate SCENARIO [--set ...]
    aqmlab list aqm|tcp|traffic|experiments [--describe]
    aqmlab reproduce ID ... | --all [--quick] [--jobs N] [--out DIR] [--scheduler tcp://HOST:PORT]
    aqmlab bench [--point NAME ...] [--repeat K] [--json] [--htsim PATH]
    aqmlab model choke|chokew|raqm|ward [--param value ...] [--json] [--plot FILE] [--run DIR ...]
    aqmlab plot FOLDER ... [--kind line|bar|cdf|timeseries|flows|queue] [--x X] [--y Y] [--by COL] [--out DIR]
    aqmlab emulate SCENARIO [--seed N] [--out DIR] [--set ...] [--cc [GROUP=]NAME] [-- CMD ...]   (root)

A user's mistake (a bad scenario, a missing file, a bad option) prints one line
``error: <file>: <key path>: <what is wrong and what is allowed>`` on stderr and exits with 2;
never a traceback.

=============  =====================================================================================
module         contents
=============  =====================================================================================
``app``        the parser and :func:`main` (the ``aqmlab`` entry point)
``common``     exit codes, one-line errors and warnings, options several commands share
``output``     the tables the commands print (a run's summary, a sweep's means)
``run``        ``aqmlab run``
``validate``   ``aqmlab validate``
``list``       ``aqmlab list``
``bench``      ``aqmlab bench``
``sweep``      ``aqmlab sweep``
``reproduce``  ``aqmlab reproduce``
``plot``       ``aqmlab plot``
``model``      ``aqmlab model``
``emulate``    ``aqmlab emulate``
=============  =====================================================================================

The top layer: it may import every other layer, and nothing imports it.
"""

from .app import build_parser, main, split_emulate_command

__all__ = ["main", "build_parser", "split_emulate_command"]
