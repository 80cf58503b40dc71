//! `op_signature`: the position-free, layout-relevant view of one op.
//!
//! It keeps what decides an op's legal layouts and configs: the op kind with its
//! layout-relevant attributes (from the op model's `op_kind`), the operand and result types,
//! and the op-specific configs. An edit to anything else (a discardable attribute, a constant
//! value, a location) yields an equal signature, salsa backdates it, and the layout queries
//! keyed by the op do not re-run.

use std::sync::Arc;

use ir::{AttrValue, Decoded, FuncId, Name, OpData, OpId, Ty, ValueRef};
use opmodel::{AttrLookup, OpConfig, OpKind};

use crate::{Db, groups::GroupRef};

/// Where an operand comes from, by name rather than by arena index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OperandSource {
    Arg(u32),
    /// Result `result` of the op with this key in the same function.
    Op {
        key: String,
        result: u32,
    },
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperandSig {
    pub source: OperandSource,
    pub ty: Ty,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpSignature {
    pub kind: OpKind,
    pub operands: Vec<OperandSig>,
    pub results: Vec<Ty>,
    /// The op-specific config written on the op (`conv2d_config`, `matmul_program_config`,
    /// `compute_config`), the starting point of config search.
    pub config: OpConfig,
}

impl OpSignature {
    /// The single tensor result, if the op has exactly one result and it is a tensor.
    #[must_use]
    pub fn tensor_result(&self) -> Option<&ttnn_types::TensorType> {
        match self.results.as_slice() {
            [Ty::Tensor(t)] => Some(t),
            _ => None,
        }
    }

    /// The tensor operands (device and other non-tensor operands dropped), in order.
    pub fn tensor_operands(&self) -> impl Iterator<Item = (usize, &ttnn_types::TensorType)> {
        self.operands.iter().enumerate().filter_map(|(i, o)| o.ty.as_tensor().map(|t| (i, t)))
    }
}

/// The layout-relevant signature of an op, or `None` if the op no longer exists: read from
/// its group's [`group_signatures`].
#[must_use]
pub fn op_signature(db: &dyn Db, op: OpId) -> Option<Arc<OpSignature>> {
    let func = op.func(db);
    let frame = ir::func_frame(db, func)?;
    let idx = frame.op_index(op.key(db))?;
    let groups = ir::func_groups(db, func);
    let (g, at) = groups.locate(idx)?;
    let sigs = signatures_of_group(db, func, GroupRef::of(Some(&frame), &groups, g));
    sigs.get(at)?.clone()
}

/// One group's signatures, per op.
pub type GroupSignatures = Arc<[Option<Arc<OpSignature>>]>;

/// The signatures of the ops of one group of a function: [`group_signatures`] where the
/// group has a name, else computed from its ops (see [`crate::groups`]).
#[must_use]
pub fn signatures_of_group(db: &dyn Db, func: FuncId, group: GroupRef) -> GroupSignatures {
    match group {
        GroupRef::Named(start) => group_signatures(db, func, start),
        GroupRef::Unnamed(_) => signatures_of(&group.ops(db, func)),
    }
}

/// The signatures of the ops of the group of a function that starts with the op keyed
/// `start` (`ir::func_group_at`).
///
/// One memo per group rather than per op: salsa walks the dependencies of every memo whose
/// inputs changed, and per-op memos were 10k to walk on a 10k-op function. The price: a
/// changed signature re-runs the readers of its whole group, which mostly come out equal
/// and stop there.
#[salsa::tracked(returns(clone))]
pub fn group_signatures(db: &dyn Db, func: FuncId, start: Name) -> GroupSignatures {
    // The group alone, not the whole body nor the frame: an edit to another group of the
    // function, or one that inserts or removes an op elsewhere, leaves it as it was (values
    // name their ops by key, groups by their first op's), so this is not re-run.
    let ops = ir::func_group_at(db, func, start);
    let _p = tracing::trace_span!("group_signatures").entered();
    signatures_of(&ops)
}

/// The signatures of `ops`.
#[must_use]
pub fn signatures_of(ops: &[Arc<OpData>]) -> GroupSignatures {
    ops.iter().map(|data| Some(Arc::new(signature_of(data)))).collect()
}

/// The signature of `data`.
pub(crate) fn signature_of(data: &OpData) -> OpSignature {
    let operands = data
        .operands
        .iter()
        .zip(data.operand_types.iter().chain(std::iter::repeat(&Ty::Unknown)))
        .map(|(v, ty)| {
            let source = match *v {
                ValueRef::Arg(i) => OperandSource::Arg(i),
                ValueRef::Result { op, index } => {
                    OperandSource::Op { key: op.as_str().to_owned(), result: index }
                }
                ValueRef::Unknown => OperandSource::Unknown,
            };
            OperandSig { source, ty: ty.clone() }
        })
        .collect();
    OpSignature {
        kind: opmodel::op_kind(&data.name, &Props(data)),
        operands,
        results: data.results.clone(),
        config: op_config(data),
    }
}

/// The op-specific config written on an op.
fn op_config(data: &OpData) -> OpConfig {
    let compute = match data.property("compute_config").and_then(AttrValue::decoded) {
        Some(Decoded::ComputeConfig(c)) => Some(*c),
        _ => None,
    };
    let slice = match data.property("conv2d_slice_config").and_then(AttrValue::decoded) {
        Some(Decoded::Conv2dSliceConfig(s)) => Some(*s),
        _ => None,
    };
    if let Some(Decoded::Conv2dConfig(conv)) =
        data.property("conv2d_config").and_then(AttrValue::decoded)
    {
        return OpConfig::Conv2d { conv: Box::new(conv.clone()), compute, slice };
    }
    if let Some(Decoded::MatmulProgramConfig(p)) =
        data.property("matmul_program_config").and_then(AttrValue::decoded)
    {
        return OpConfig::Matmul { program: Some(Box::new(p.clone())), compute };
    }
    match data.name.as_str() {
        "ttnn.conv2d" | "ttnn.conv_transpose2d" => {
            OpConfig::Conv2d { conv: Box::default(), compute, slice }
        }
        "ttnn.matmul" | "ttnn.linear" => OpConfig::Matmul { program: None, compute },
        _ => OpConfig::None,
    }
}

/// The op model reads attributes through this view of an op's properties.
pub(crate) struct Props<'a>(pub(crate) &'a OpData);

impl AttrLookup for Props<'_> {
    fn int(&self, name: &str) -> Option<i64> {
        self.0.property(name)?.as_int().and_then(|v| i64::try_from(v).ok())
    }

    fn bool(&self, name: &str) -> Option<bool> {
        self.0.property(name)?.as_bool()
    }

    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        let v = self.0.property(name)?;
        if let Some(Decoded::Shape(dims)) = v.decoded() {
            return dims.iter().map(|d| i64::try_from(*d).ok()).collect();
        }
        v.as_ints()
    }

    fn string(&self, name: &str) -> Option<String> {
        match self.0.property(name)? {
            AttrValue::Str(s) | AttrValue::Keyword(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn float(&self, name: &str) -> Option<f64> {
        match self.0.property(name)? {
            AttrValue::Float { text, ty } => parse_float(text, ty.as_deref()),
            AttrValue::Int { value, .. } => Some(*value as f64),
            _ => None,
        }
    }
}

/// MLIR prints non-finite floats as hex bit patterns (`0x7FC00000 : f32`).
fn parse_float(text: &str, ty: Option<&str>) -> Option<f64> {
    if let Some(hex) = text.strip_prefix("0x") {
        let bits = u64::from_str_radix(hex, 16).ok()?;
        return Some(match ty {
            Some("f64") => f64::from_bits(bits),
            _ => f64::from(f32::from_bits(u32::try_from(bits).ok()?)),
        });
    }
    text.parse().ok()
}
