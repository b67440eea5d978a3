"""The ``hook`` figure kind: an experiment's own ``hook.py``, loaded as a module and called to draw
a figure the other kinds do not (:mod:`aqmlab.analysis.figures`). A hook draws with the names of
:mod:`aqmlab.reproduce.figures` and :mod:`aqmlab.reproduce.context`, so it runs in this layer:
``tests/test_layers.py`` counts a loaded file's imports as the loader's."""

from __future__ import annotations

import importlib.util

from ..analysis.context import Context, Output
from ..analysis.stats import SpecError


def fig_hook(ctx: Context, spec: dict) -> Output:
    """Call ``spec["function"]`` of the experiment's ``hook.py`` with the context and the spec."""
    path = ctx.exp.path / "hook.py"
    modname = f"aqmlab_experiment_hook_{ctx.exp.id.replace('-', '_').replace('.', '_')}"
    sp = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(sp)
    sp.loader.exec_module(mod)
    fn = getattr(mod, spec.get("function", ""), None)
    if fn is None:
        raise SpecError(f"figure {spec['name']}: {path} has no function {spec.get('function')!r}")
    return fn(ctx, spec)


#: the figure kinds this layer adds to :data:`aqmlab.analysis.figures.FIGURES`
KINDS = {"hook": fig_hook}
