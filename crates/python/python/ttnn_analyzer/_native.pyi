"""Typed interface of the native module (crates/python/src/lib.rs); keep the two in step."""

from typing import Optional, final

from .types import Cost, Diagnostic, OpLayouts, OverrideOption, Plan, Policy

class AnalyzerError(Exception):
    """An error reported by the analyzer: a diagnostic ``code`` (kebab-case, as the command
    line prints it), its ``message`` and the ``diagnostics`` behind it."""

    code: str
    message: str
    diagnostics: list[Diagnostic]

@final
class Analysis:
    """An analysis of one TTNN (or imported TTIR) file, kept up to date incrementally as
    overrides change. Every computing method releases the GIL while it runs."""

    @staticmethod
    def open(
        path: str, *, target: Optional[str] = None, policy: Policy = "df-sharding-merge"
    ) -> Analysis:
        """Opens a TTNN or TTIR ``.mlir`` file (TTIR is imported first); ``target`` is a
        builtin device (``n150``, ``n300``, ``p150``; default ``n150``) or a target file.
        Raises ``OSError`` if it cannot be read, ``AnalyzerError`` if it is not UTF-8 or its
        import has errors."""

    @staticmethod
    def from_text(
        text: str,
        *,
        name: str = "input.mlir",
        target: Optional[str] = None,
        policy: Policy = "df-sharding-merge",
    ) -> Analysis:
        """Analyses ``text`` (TTNN, or TTIR which is imported first)."""

    @property
    def name(self) -> str:
        """The file's path, or the name given to ``from_text``."""

    @property
    def imported(self) -> bool:
        """True when the input was TTIR and the analysis runs on its import."""

    @property
    def text(self) -> str:
        """The TTNN text analysed."""

    @property
    def policy(self) -> Policy:
        """The policy ``cost``, ``plan`` and ``final_ir`` use when not given one."""

    @policy.setter
    def policy(self, policy: Policy) -> None: ...

    def set_override(
        self, op: str, params: str, option: OverrideOption = "override-output-layout"
    ) -> None:
        """Sets one op's override (tt-mlir option syntax), keeping the others. Raises
        ``AnalyzerError`` and keeps the overrides as they were if the entry does not parse or
        names no op; ``ValueError`` if ``op`` or ``params`` contain whitespace, ``,`` or
        ``=``."""

    def clear_override(self, op: str, option: Optional[OverrideOption] = None) -> None:
        """Removes one op's overrides: every option, or only ``option``."""

    def set_overrides(self, text: str) -> None:
        """Replaces all overrides with ``text`` (tt-mlir optimizer options)."""

    def overrides(self) -> str:
        """The current overrides in tt-mlir's option syntax, one entry per line."""

    def cost(self, policy: Optional[Policy] = None) -> Cost:
        """The estimated device time in ns, with its parts and baselines. Raises
        ``AnalyzerError`` if the file has errors."""

    def plan(self, policy: Optional[Policy] = None) -> Plan:
        """The optimizer's per-op decisions, chains and merges."""

    def final_ir(self, policy: Optional[Policy] = None) -> str:
        """The rewritten IR with every op's chosen layout and config."""

    def layouts(self, op: str) -> OpLayouts:
        """An op's legal layouts and configs; ``op`` is a ``loc`` name, ``%N`` or
        ``@func:%N``. Raises ``AnalyzerError`` (``unknown-op``) for no such op."""

    def diagnostics(self) -> list[Diagnostic]:
        """The file's diagnostics and the overrides' errors and warnings."""

def import_ttir(text: str, name: str = "model.mlir") -> str:
    """Imports TTIR text to TTNN with DRAM-interleaved layouts. Raises ``AnalyzerError`` if
    an op cannot be lowered."""

__all__ = ["Analysis", "AnalyzerError", "import_ttir"]
