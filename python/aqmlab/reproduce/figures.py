"""The figure code (now :mod:`aqmlab.analysis.figures`) under its old name, for experiments'
``hook.py`` files: ``from aqmlab.reproduce.figures import PALETTE, finish_figure, new_figure``."""

from ..analysis.figures import (COMMON, FIGURES, KINDS, MARKERS, OWN, PALETTE, agreement, as_run, check_figure,
                                finish_figure, make_figure, new_figure)

__all__ = ["COMMON", "FIGURES", "KINDS", "MARKERS", "OWN", "PALETTE", "agreement", "as_run", "check_figure",
           "finish_figure", "make_figure", "new_figure"]
