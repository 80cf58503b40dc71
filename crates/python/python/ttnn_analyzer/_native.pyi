"""Typed interface of the native module (crates/python/src/lib.rs); keep the two in step."""

from typing import Literal, Optional, TypedDict

Policy = Literal["df-sharding", "df-sharding-merge"]
OverrideOption = Literal[
    "override-output-layout", "override-conv2d-config", "insert-memreconfig"
]

class Diagnostic(TypedDict):
    source: Literal["file", "overrides", "import"]
    range: list[int]
    severity: Literal["error", "warning", "info", "hint"]
    code: str
    message: str

class Layout(TypedDict):
    buffer: str
    memory_layout: Optional[str]
    grid: list[int]
    shard_shape: list[int]
    page: str
    dtype: Optional[str]
    short: str
    params: Optional[str]

class Cost(TypedDict):
    policy: Policy
    total_ns: int
    op_ns: int
    reshard_ns: int
    spill_ns: int
    written_ns: int
    lower_bound_ns: int
    load_ns: int

class ChainRef(TypedDict):
    id: int
    position: int
    length: int
    state: str

class Reshard(TypedDict):
    operand: int
    layout: Layout
    reason: str

class Spill(TypedDict):
    layout: Layout
    reason: str

class OpDecision(TypedDict):
    func: str
    op: str
    kind: str
    written: Optional[Layout]
    planned: Optional[Layout]
    config: Optional[str]
    chain: Optional[ChainRef]
    reason: str
    reshards: list[Reshard]
    spill: Optional[Spill]
    position: Optional[int]
    time_ns: int

class Chain(TypedDict):
    func: str
    id: int
    ops: list[str]
    state: str
    concat: bool
    failure: Optional[str]
    spill: str
    spill_reason: str

class Skipped(TypedDict):
    func: str
    reason: str

class Plan(TypedDict):
    policy: Policy
    ops: list[OpDecision]
    chains: list[Chain]
    merges: list[str]
    ops_in_l1: int
    reshards: int
    spills: int
    skipped: list[Skipped]

class Config(TypedDict):
    layout: int
    config: Optional[str]

class OpLayouts(TypedDict):
    op: str
    kind: str
    fixed: bool
    scalar_types: list[str]
    layouts: list[Layout]
    configs: list[Config]
    rejected_by_op_model: int
    first_rejection: Optional[str]
    override: Optional[str]
    unknown_op: Optional[str]

class AnalyzerError(Exception):
    """An error reported by the analyzer: a diagnostic ``code`` (kebab-case, as the command
    line prints it), its ``message`` and the ``diagnostics`` behind it."""

    code: str
    message: str
    diagnostics: list[Diagnostic]

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

__all__: list[str]
