"""ttnn-analyzer from Python: incremental analysis and layout optimization of Tenstorrent TTNN IR.

``Analysis`` opens a TTNN (or TTIR, imported first) model and answers the optimizer's questions:
its plan, estimated cost, rewritten IR and per-op candidate layouts, re-deriving only what an
override change affects. It runs on the same tuning host as ``ttnn-analyzer session``. ``ttnn_analyzer.types`` has the
shapes of its results as ``TypedDict`` classes, for type checkers.
"""

from ._native import Analysis, AnalyzerError, import_ttir

__all__ = ["Analysis", "AnalyzerError", "import_ttir"]
