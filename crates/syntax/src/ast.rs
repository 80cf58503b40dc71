//! The syntax tree: MLIR's structure (chunks, aliases, operations, regions, blocks) with a
//! text range on every node.
//!
//! Attribute and type values are parsed structurally where the grammar is MLIR's own
//! (builtin attributes, tensor and memref types). Dialect attribute bodies (`#ttnn.x<...>`)
//! are kept as token ranges, the way MLIR keeps unregistered dialect attributes, and are
//! decoded by the semantic layer. Nothing here is resolved: aliases and SSA names are text.

use crate::TextRange;

/// An identifier with its range. `text` is the source spelling (`%0`, `@main`, `#loc3`,
/// `"ttnn.add"` without quotes, `func.func`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub text: String,
    pub range: TextRange,
}

/// A parsed file: one chunk, or several separated by `// -----` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub chunks: Vec<Chunk>,
}

/// One independent module of a split file, with its own aliases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub range: TextRange,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// `#name = <attribute>`.
    AttrAlias(AttrAliasDef),
    /// `!name = <type>`.
    TypeAlias(TypeAliasDef),
    /// `#loc3 = loc(...)`, usually printed after the module and used before it.
    LocAlias(LocAliasDef),
    Op(Op),
    /// `{-# dialect_resources: ... #-}`, kept verbatim.
    Resources(TextRange),
    /// Text the parser could not make sense of at the top level.
    Error(TextRange),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrAliasDef {
    pub name: Ident,
    pub value: Attr,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeAliasDef {
    pub name: Ident,
    pub value: Type,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocAliasDef {
    pub name: Ident,
    pub loc: Location,
    pub range: TextRange,
}

/// `%a`, `%3#1` (a use of result 1 of `%3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueUse {
    pub name: Ident,
    pub index: Option<u32>,
    pub range: TextRange,
}

/// `%a` or `%3:2` on the left of `=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultDef {
    pub name: Ident,
    pub count: u32,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub range: TextRange,
    pub results: Vec<ResultDef>,
    /// The op name: the string of a generic op, the keyword of a custom one.
    pub name: Ident,
    pub body: OpBody,
    /// The trailing `loc(...)`, if written.
    pub loc: Option<LocSpec>,
}

impl Op {
    /// The total number of results the op defines (`%a, %b` is 2, `%3:2` is 2).
    #[must_use]
    pub fn result_count(&self) -> u32 {
        self.results.iter().map(|r| r.count).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpBody {
    Generic(GenericOp),
    Module(ModuleOp),
    Func(FuncOp),
    Return(ReturnOp),
    Call(CallOp),
    D2mSubgraph(D2mSubgraphOp),
    /// `ttnn.tt_lang_op(%a) {attrs} : (T) -> (T)`.
    TtLang(CustomCallLike),
    /// `ttcore.load_cached(@f, [%a, %b]) : (T) -> (T)`.
    LoadCached(LoadCachedOp),
    /// `ttcore.device_module { ... }`, `ttcore.cpu_module { ... }`: a name and one region.
    RegionOp(RegionOp),
    /// `ttcore.device @name = <...>`.
    DeviceDecl(DeviceDecl),
    /// Custom syntax of a dialect we do not parse (emitc, llvm, linalg, ...), skipped by
    /// balanced tokens. The SSA values it uses are collected so def-use stays complete.
    Opaque(OpaqueOp),
    /// An op that failed to parse; the error is in `Parse::errors`.
    Error,
}

/// `"dialect.op"(%a, %b) [^succ] <{props}> ({regions}) {attrs} : (T, T) -> T`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericOp {
    pub operands: Vec<ValueUse>,
    pub successors: Vec<Ident>,
    pub properties: Option<AttrDict>,
    pub regions: Vec<Region>,
    pub attrs: Option<AttrDict>,
    pub fn_type: Option<FunctionType>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleOp {
    pub sym_name: Option<Ident>,
    pub attrs: Option<AttrDict>,
    pub body: Region,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncOp {
    pub visibility: Option<Ident>,
    pub sym_name: Ident,
    pub args: Vec<FuncArg>,
    pub results: Vec<FuncResult>,
    /// True when the results were written in parentheses (`-> (T)`).
    pub results_parenthesized: bool,
    pub attrs: Option<AttrDict>,
    pub body: Option<Region>,
}

/// A function argument; declarations (no body) write types only, with no name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncArg {
    pub name: Option<Ident>,
    pub ty: Type,
    pub attrs: Option<AttrDict>,
    pub loc: Option<LocSpec>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncResult {
    pub ty: Type,
    pub attrs: Option<AttrDict>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnOp {
    pub operands: Vec<ValueUse>,
    pub types: Vec<Type>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOp {
    pub callee: Ident,
    pub operands: Vec<ValueUse>,
    pub fn_type: Option<FunctionType>,
}

/// `ttnn.d2m_subgraph @f {attrs} ins(%a : T) outs(%o : T) : T`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct D2mSubgraphOp {
    pub callee: Ident,
    pub attrs: Option<AttrDict>,
    pub ins: Vec<ValueUse>,
    pub in_types: Vec<Type>,
    pub outs: Vec<ValueUse>,
    pub out_types: Vec<Type>,
    pub result_types: Vec<Type>,
}

/// A custom form `name(%operands) {attrs} : (T) -> (T)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCallLike {
    pub operands: Vec<ValueUse>,
    pub attrs: Option<AttrDict>,
    pub fn_type: Option<FunctionType>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadCachedOp {
    pub callee: Ident,
    pub operands: Vec<ValueUse>,
    pub fn_type: Option<FunctionType>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionOp {
    pub attrs: Option<AttrDict>,
    pub body: Region,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDecl {
    pub sym_name: Ident,
    pub value: Attr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpaqueOp {
    /// The op's text after its name, up to (not including) a trailing `loc(...)`.
    pub rest: TextRange,
    pub uses: Vec<ValueUse>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub blocks: Vec<Block>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub label: Option<BlockLabel>,
    pub ops: Vec<Op>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLabel {
    pub name: Ident,
    pub args: Vec<BlockArg>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockArg {
    pub name: Ident,
    pub ty: Type,
    pub loc: Option<LocSpec>,
    pub range: TextRange,
}

/// `{key = value, unit_key}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrDict {
    pub entries: Vec<AttrEntry>,
    pub range: TextRange,
}

impl AttrDict {
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&AttrEntry> {
        self.entries.iter().find(|e| e.key.text == key)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrEntry {
    /// The key; a quoted key is stored without its quotes.
    pub key: Ident,
    /// `None` for a unit entry written without `= value`.
    pub value: Option<Attr>,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub kind: AttrKind,
    pub range: TextRange,
}

/// A `<...>` group kept as tokens: `open` and `close` are indices into the token vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    pub open: u32,
    pub close: u32,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrKind {
    /// `#name`: a reference to an attribute alias.
    Alias(String),
    /// `#dialect.mnemonic<body>` or the angle form `#dialect<mnemonic body>` (then
    /// `mnemonic` is `None`).
    Dialect {
        dialect: String,
        mnemonic: Option<String>,
        body: Option<Body>,
    },
    /// An integer with its spelling (sign included, hex kept) and optional `: type`.
    Int {
        text: String,
        ty: Option<Box<Type>>,
    },
    Float {
        text: String,
        ty: Option<Box<Type>>,
    },
    Bool(bool),
    /// A string; `value` is unescaped.
    Str {
        value: String,
        ty: Option<Box<Type>>,
    },
    Unit,
    Array(Vec<Attr>),
    /// `array<i32: 1, 2>`.
    DenseArray {
        elem: Box<Type>,
        values: Vec<String>,
    },
    /// `dense<...> : T`, `dense_resource<name> : T`, `sparse<...> : T`, `opaque<...> : T`.
    Elements {
        kind: String,
        body: Body,
        ty: Option<Box<Type>>,
    },
    Dict(AttrDict),
    /// `@a` or `@a::@b`.
    SymbolRef(Vec<String>),
    Type(Box<Type>),
    /// `affine_map<...>`, `affine_set<...>`.
    Affine {
        body: Body,
    },
    /// A stripped nested value `<...>`, as printed inside dialect attributes.
    Stripped(Body),
    /// A bare keyword used as a value (`dram`, `interleaved`, `host`).
    Keyword(String),
    Loc(Box<Location>),
    /// Tokens the attribute grammar does not cover, kept verbatim (`distinct[0]<...>`).
    Opaque,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    pub kind: TypeKind,
    pub range: TextRange,
}

/// One dimension of a shaped type: a size or `?`.
pub type Dim = Option<u64>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeKind {
    Tensor {
        shape: Vec<Dim>,
        elem: Box<Type>,
        encoding: Option<Box<Attr>>,
    },
    MemRef {
        shape: Vec<Dim>,
        elem: Box<Type>,
        params: Vec<Attr>,
    },
    Vector {
        shape: Vec<Dim>,
        elem: Box<Type>,
    },
    Tuple(Vec<Type>),
    Complex(Box<Type>),
    /// A builtin keyword type: `bf16`, `f32`, `si32`, `i1`, `index`, `none`.
    Builtin(String),
    /// `!dialect.name<body>` (`!ttcore.tile<32x32, bf16>`, `!ttnn.device`).
    Dialect {
        dialect: String,
        name: String,
        body: Option<Body>,
    },
    /// `!name`: a reference to a type alias.
    Alias(String),
    Function(FunctionType),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionType {
    pub inputs: Vec<Type>,
    pub results: Vec<Type>,
    /// True when the results were written in parentheses.
    pub results_parenthesized: bool,
    pub range: TextRange,
}

/// `loc(...)` as written after an op, argument or function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocSpec {
    pub loc: Location,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub kind: LocKind,
    pub range: TextRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocKind {
    Unknown,
    /// `"name"` or `"name"(child)`.
    Name {
        name: String,
        child: Option<Box<Location>>,
    },
    /// `"file":line:col`.
    FileLineCol {
        file: String,
        line: u32,
        col: u32,
    },
    /// `callsite(callee at caller)`.
    CallSite {
        callee: Box<Location>,
        caller: Box<Location>,
    },
    /// `fused<metadata>[a, b]`.
    Fused {
        metadata: Option<Box<Attr>>,
        locs: Vec<Location>,
    },
    /// `#loc3`: a reference to a location alias.
    Alias(String),
}
