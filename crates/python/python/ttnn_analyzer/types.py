"""The shapes of what ``Analysis`` returns, as ``TypedDict`` classes for type checkers (at run
time the results are plain dicts and lists)."""

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
    # The op's part of the cost model's lower bound, in ns.
    bound_ns: int


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
