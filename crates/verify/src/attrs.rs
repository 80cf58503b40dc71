//! Reading an op's properties for the op model: attribute lookup and op-specific configs.
//!
//! The verifier reads these itself rather than through the planner's op signature, so a
//! planner bug in attribute decoding cannot hide in both places at once.

use ir::{AttrValue, Decoded, OpData};
use opmodel::{AttrLookup, OpConfig, OpKind};

/// An op's inherent attributes (and, for old files, its discardable ones) as the op model
/// reads them.
pub(crate) struct OpAttrs<'a>(pub(crate) &'a OpData);

impl AttrLookup for OpAttrs<'_> {
    fn int(&self, name: &str) -> Option<i64> {
        match self.0.property(name)? {
            AttrValue::Int { value, .. } => i64::try_from(*value).ok(),
            // `dim = array<i32: 1>` is written for single dims too.
            other => match other.as_ints()?.as_slice() {
                [v] => Some(*v),
                _ => None,
            },
        }
    }

    fn bool(&self, name: &str) -> Option<bool> {
        self.0.property(name)?.as_bool()
    }

    fn ints(&self, name: &str) -> Option<Vec<i64>> {
        let value = self.0.property(name)?;
        match value.decoded() {
            // `#ttnn.shape<1x32>`.
            Some(Decoded::Shape(dims)) => dims.iter().map(|d| i64::try_from(*d).ok()).collect(),
            _ => value.as_ints(),
        }
    }

    fn string(&self, name: &str) -> Option<String> {
        match self.0.property(name)? {
            AttrValue::Str(s) | AttrValue::Keyword(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn float(&self, name: &str) -> Option<f64> {
        match self.0.property(name)? {
            AttrValue::Float { text, ty } => float_value(text, ty.as_deref()),
            AttrValue::Int { value, .. } => Some(*value as f64),
            _ => None,
        }
    }
}

/// MLIR prints floats either in decimal or, when decimal would not round-trip (NaN, inf), as
/// the hex bit pattern of the declared type.
fn float_value(text: &str, ty: Option<&str>) -> Option<f64> {
    let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) else {
        return text.parse().ok();
    };
    let bits = u64::from_str_radix(hex, 16).ok()?;
    if ty == Some("f64") {
        Some(f64::from_bits(bits))
    } else {
        u32::try_from(bits).ok().map(|b| f64::from(f32::from_bits(b)))
    }
}

/// The op-specific config written on the op (for a conv, its `conv2d_config`, `compute_config`
/// and `conv2d_slice_config`). Convolutions and matmuls without one still get their family's
/// config variant, so the op model applies its defaults rather than treating the op as
/// config-less.
pub(crate) fn op_config(op: &OpData, kind: &OpKind) -> OpConfig {
    let decoded = |key: &str| op.property(key).and_then(AttrValue::decoded);
    let compute = match decoded("compute_config") {
        Some(Decoded::ComputeConfig(c)) => Some(*c),
        _ => None,
    };
    let slice = match decoded("conv2d_slice_config") {
        Some(Decoded::Conv2dSliceConfig(s)) => Some(*s),
        _ => None,
    };
    match (decoded("conv2d_config"), decoded("matmul_program_config")) {
        (Some(Decoded::Conv2dConfig(conv)), _) => {
            OpConfig::Conv2d { conv: Box::new(conv.clone()), compute, slice }
        }
        (_, Some(Decoded::MatmulProgramConfig(program))) => {
            OpConfig::Matmul { program: Some(Box::new(program.clone())), compute }
        }
        _ if kind.is_conv2d_like() || matches!(kind, OpKind::Conv1d(_)) => {
            OpConfig::Conv2d { conv: Box::default(), compute, slice }
        }
        _ if kind.is_matmul_like() => OpConfig::Matmul { program: None, compute },
        _ => OpConfig::None,
    }
}
