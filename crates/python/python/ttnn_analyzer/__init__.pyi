"""Typed interface of the ttnn_analyzer package (its native module is ``_native``)."""

from ._native import Analysis as Analysis
from ._native import AnalyzerError as AnalyzerError
from ._native import import_ttir as import_ttir

__all__ = ["Analysis", "AnalyzerError", "import_ttir"]
