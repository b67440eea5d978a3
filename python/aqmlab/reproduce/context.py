"""The figure and table context (now :mod:`aqmlab.analysis.context`) under its old name, for
experiments' ``hook.py`` files: ``from aqmlab.reproduce.context import Output``."""

from ..analysis.context import Context, Output

__all__ = ["Context", "Output"]
