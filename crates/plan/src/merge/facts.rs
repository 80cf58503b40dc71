//! What a walk reads of each op again and again, looked up once per walk: the op's
//! signature, the producers of its operands and its shape; and the op-model query and cost
//! arguments its validations fill in place.
//!
//! A walk validates about two op-model queries and costs one op per op of its chunk. Each
//! of them read the signature (a group memo), resolved every operand by name and built its
//! query from fresh vectors; none of that changes while the walk runs, and one query is
//! built at a time.

use std::{
    cell::{Cell, OnceCell},
    sync::Arc,
};

use ir::ValueRef;
use opmodel::{OpConfig, OpKind, OpQuery, OutputHint, TensorDesc};
use smallvec::SmallVec;
use ttnn_types::{DataType, PageLayout, TensorType, TtnnLayout};

use crate::{chunks::ChunkLayout, merge::WalkSource};

/// How many chunks a [`PerChunk`] holds in place before it makes room for every chunk of the
/// function: a walk reads its own chunk and a few near it.
const NEAR: usize = 16;

/// A value per chunk, filled on first use and kept for the walk. The first chunks read get
/// the slots of a small array, so that a walk does not build (and drop) a table as long as
/// the function's chunks for each thing it memoizes: five such tables of 300-odd chunks cost
/// as much as the rest of a small walk's bookkeeping.
pub(super) struct PerChunk<T> {
    /// Per chunk of the function: 1 + its slot in `near`, or 0 if it has none.
    slot_of: Box<[Cell<u8>]>,
    /// How many slots of `near` are taken.
    used: Cell<u8>,
    near: [OnceCell<T>; NEAR],
    /// One slot per chunk, for the chunks read after `near` is full.
    far: OnceCell<Box<[OnceCell<T>]>>,
}

impl<T> PerChunk<T> {
    pub(super) fn new(chunks: usize) -> PerChunk<T> {
        PerChunk {
            slot_of: vec![Cell::new(0); chunks].into_boxed_slice(),
            used: Cell::new(0),
            near: Default::default(),
            far: OnceCell::new(),
        }
    }

    /// Chunk `k`'s value, made by `init` on first use; `None` for a chunk past the last.
    pub(super) fn get_or_init(&self, k: u32, init: impl FnOnce() -> T) -> Option<&T> {
        let slot = self.slot_of.get(k as usize)?;
        let at = match slot.get() {
            0 if usize::from(self.used.get()) < NEAR => {
                let taken = self.used.get() + 1;
                self.used.set(taken);
                slot.set(taken);
                taken
            }
            0 => {
                let far = self
                    .far
                    .get_or_init(|| (0..self.slot_of.len()).map(|_| OnceCell::new()).collect());
                return Some(far.get(k as usize)?.get_or_init(init));
            }
            taken => taken,
        };
        Some(self.near.get(usize::from(at) - 1)?.get_or_init(init))
    }
}

/// A value per op, filled on first use and kept for the walk, in one slab per chunk: a walk
/// reads few ops outside its chunk, so it allocates for the chunks it reads rather than for
/// every op of the function.
pub(super) struct PerOp<T> {
    chunks: PerChunk<Box<[OnceCell<T>]>>,
}

impl<T> PerOp<T> {
    pub(super) fn new(layout: &ChunkLayout) -> PerOp<T> {
        PerOp { chunks: PerChunk::new(layout.len()) }
    }

    /// Op `i`'s value, made by `init` on first use; `None` for an op past the body.
    pub(super) fn get_or_init(
        &self,
        layout: &ChunkLayout,
        i: u32,
        init: impl FnOnce() -> T,
    ) -> Option<&T> {
        let (k, at) = layout.locate(i)?;
        let slab = self.chunks.get_or_init(k, || {
            (0..layout.range(k as usize).len()).map(|_| OnceCell::new()).collect()
        })?;
        Some(slab.get(at)?.get_or_init(init))
    }
}

/// Where an operand's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Producer {
    /// A result of the op with this body index.
    Op(u32),
    /// The function's argument with this index.
    Arg(u32),
    /// Undefined, or defined where the body does not track it.
    Unknown,
}

/// What a walk reads of op `i` that does not change while it runs.
#[derive(Default)]
pub(super) struct OpFacts<'a> {
    /// The body's op (reading it anew goes through its group's memo).
    pub(super) op: Option<&'a ir::OpData>,
    pub(super) sig: Option<Arc<layout::OpSignature>>,
    /// The producer of each operand of the body's op.
    pub(super) operands: SmallVec<[Producer; 4]>,
    /// The static shape of the body op's first result.
    pub(super) shape: Option<SmallVec<[u64; 4]>>,
}

impl<'a> OpFacts<'a> {
    pub(super) fn new(src: &'a dyn WalkSource, i: u32) -> OpFacts<'a> {
        let Some(op) = src.op(i) else { return OpFacts { sig: src.sig(i), ..OpFacts::default() } };
        let operands = op
            .operands
            .iter()
            .map(|&v| match v {
                ValueRef::Result { .. } => {
                    src.result_of(v).map_or(Producer::Unknown, |(op, _)| Producer::Op(op))
                }
                ValueRef::Arg(a) => Producer::Arg(a),
                ValueRef::Unknown => Producer::Unknown,
            })
            .collect();
        let shape = op
            .results
            .first()
            .and_then(|t| t.as_tensor()?.shape.iter().copied().collect::<Option<_>>());
        OpFacts { op: Some(op), sig: src.sig(i), operands, shape }
    }
}

/// `t`'s static shape into `out` (left empty when a dim is dynamic), reusing its buffer.
pub(super) fn static_shape_into(t: &TensorType, out: &mut Vec<u64>) {
    out.clear();
    for d in &t.shape {
        let Some(d) = d else {
            out.clear();
            return;
        };
        out.push(*d);
    }
}

/// The op-model query a validation fills in, and the arguments an op's cost is asked with:
/// kept across the walk's validations so that their vectors are reused.
pub(super) struct Scratch {
    pub(super) query: OpQuery,
    /// Descriptors the query's inputs had beyond what the last query needed, kept for their
    /// shapes' buffers.
    pub(super) spare: Vec<TensorDesc>,
    /// An op's cost's operands: the first few, as many as the op has with a layout.
    pub(super) cost_inputs: Vec<TensorDesc>,
    pub(super) cost_output: TensorDesc,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        let placeholder = TtnnLayout::dram_interleaved(&[1], DataType::BF16, PageLayout::Tile);
        Scratch {
            query: OpQuery {
                kind: OpKind::ToMemoryConfig,
                inputs: Vec::new(),
                output_shape: Vec::new(),
                output_dtype: DataType::BF16,
                output: OutputHint::Null,
                config: OpConfig::None,
                l1_in_use: 0,
            },
            spare: Vec::new(),
            cost_inputs: Vec::new(),
            cost_output: TensorDesc { shape: Vec::new(), layout: placeholder },
        }
    }

    /// Gives the query `n` inputs, each to be filled in.
    pub(super) fn query_inputs(&mut self, n: usize) {
        let inputs = &mut self.query.inputs;
        while inputs.len() > n {
            self.spare.extend(inputs.pop());
        }
        while inputs.len() < n {
            let desc = self.spare.pop().unwrap_or_else(|| TensorDesc {
                shape: Vec::new(),
                layout: self.cost_output.layout.clone(),
            });
            inputs.push(desc);
        }
    }

    /// The cost's operand `at`, to be filled in.
    pub(super) fn cost_input(&mut self, at: usize) -> &mut TensorDesc {
        while self.cost_inputs.len() <= at {
            let layout = self.cost_output.layout.clone();
            self.cost_inputs.push(TensorDesc { shape: Vec::new(), layout });
        }
        &mut self.cost_inputs[at]
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::{NEAR, PerChunk, PerOp};
    use crate::chunks::ChunkLayout;

    /// `n` ops in body order, cut into chunks of `size`.
    fn layout(n: u32, size: u32) -> ChunkLayout {
        let mut bounds: Vec<u32> = (0..n).step_by(size as usize).collect();
        bounds.push(n);
        ChunkLayout {
            order: (0..n).collect(),
            bounds,
            chunk_of: (0..n).map(|i| i / size).collect(),
            at: (0..n).collect(),
            scheduled: n,
        }
    }

    #[test]
    fn per_chunk_keeps_each_chunks_first_value_past_the_near_slots() {
        let chunks = 3 * NEAR;
        let table: PerChunk<usize> = PerChunk::new(chunks);
        let made = Cell::new(0);
        let make = |k: usize| {
            made.set(made.get() + 1);
            k * 10
        };
        // Every chunk in a scattered order (so the near slots go to chunks of every part of
        // the function), then every chunk again: each value is made once, on first use.
        let order: Vec<usize> = (0..chunks).map(|i| (i * 7) % chunks).collect();
        for &k in order.iter().chain(&order) {
            assert_eq!(table.get_or_init(k as u32, || make(k)), Some(&(k * 10)));
        }
        assert_eq!(made.get(), chunks);
        // Later inits of a filled chunk are not run.
        assert_eq!(table.get_or_init(0, || 99), Some(&0));
        assert_eq!(table.get_or_init(chunks as u32 - 1, || 99), Some(&((chunks - 1) * 10)));
    }

    #[test]
    fn per_chunk_and_per_op_answer_none_past_the_end() {
        let table: PerChunk<u8> = PerChunk::new(4);
        assert_eq!(table.get_or_init(4, || 1), None);
        assert_eq!(table.get_or_init(u32::MAX, || 1), None);

        let layout = layout(10, 4);
        let ops: PerOp<u32> = PerOp::new(&layout);
        assert_eq!(ops.get_or_init(&layout, 10, || 1), None);
    }

    #[test]
    fn per_op_gives_each_op_its_own_value_across_chunks_of_uneven_size() {
        // 70 ops in chunks of 4: 18 chunks, the last of 2 ops, more than the near slots.
        let layout = layout(70, 4);
        let ops: PerOp<u32> = PerOp::new(&layout);
        for i in (0..70).rev() {
            assert_eq!(ops.get_or_init(&layout, i, || i + 1000), Some(&(i + 1000)));
        }
        for i in 0..70 {
            assert_eq!(ops.get_or_init(&layout, i, || 0), Some(&(i + 1000)));
        }
    }
}
