"""Turning gathered runs into figures and tables: shared by ``aqmlab plot`` and ``aqmlab reproduce``.

=============  =====================================================================================
module         contents
=============  =====================================================================================
``context``    what figure and table code gets (:class:`Context`: an experiment, its gathered runs,
               an output folder) and what it returns (:class:`Output`)
``stats``      metric specifications (column, label, unit, scale), means with 95 % intervals
``canvas``     what every figure kind draws on: the panels, labels, legend and files, row selections
``figures``    the figure kinds (xy, bar, timeseries, flows_bar, rcf, queue_profile, ...)
``latency``    per-packet delay distributions from the ``latency`` table (``latency_cdf``)
``tables``     metric tables and pivots, CSV, Markdown and LaTeX
``overlays``   model curves from :mod:`aqmlab.models` drawn over the simulations
``plotstyle``  how figures look: the ``paper`` and ``draft`` styles
``markdown``   Markdown tables
``latex``      LaTeX tables (booktabs)
=============  =====================================================================================

Uses :mod:`aqmlab.models`, :mod:`aqmlab.sweep`, :mod:`aqmlab.run` and :mod:`aqmlab.base`; pandas,
numpy, scipy and matplotlib load with these modules (``import aqmlab`` loads none of them).
"""
