//! Which of an op's configs each reshard of one of its operands enables, kept across solves.
//!
//! When an edge has no valid path the solver probes every reshard target of the operand
//! against every test config of the consumer: tens to hundreds of op-model queries, each
//! built, hashed and compared in full. The answer depends on the consumer op alone (its
//! kind, operands, output, candidates and the operand's reshard targets), not on the rest
//! of the chain, and the same op appears in many problems: a graph repeats its layers, an
//! override re-solves a chain whose other ops were solved before, an edit re-solves a chain
//! whose ops are the same. So the answer is kept per op and operand,
//! keyed by content.
//!
//! The key hashes the op's small fields and the lengths of its long lists (candidates and
//! reshard targets); equality compares everything, and the long lists are shared with the
//! legality memos that made them, so comparing two keys built from the same memos is a
//! pointer comparison (`Arc`'s equality checks the pointer first).

use std::{
    collections::BTreeMap,
    hash::{Hash, Hasher},
    sync::Arc,
};

use opmodel::{Candidate, OpKind, TensorDesc};
use target::Target;
use ttnn_types::{DataType, TtnnLayout};

use crate::{Generations, ProblemOp};

/// Per consumer config (index into the op's candidates): the reshard layouts that enable it.
pub(crate) type Enabled = BTreeMap<usize, Vec<TtnnLayout>>;

/// The consumer configs (indices into the op's candidates) that accept one input layout.
pub(crate) type Accepting = Vec<u32>;

/// Answers kept per generation (see [`Generations`]).
const GENERATION: usize = 16_384;

/// The memo (see the module docs). Shared by every solve that passes it; thread-safe.
pub struct ProbeMemo {
    reshards: Generations<Key, Enabled>,
    inputs: Generations<Key, Accepting>,
}

impl Default for ProbeMemo {
    fn default() -> Self {
        ProbeMemo { reshards: Generations::new(GENERATION), inputs: Generations::new(GENERATION) }
    }
}

impl std::fmt::Debug for ProbeMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeMemo").finish_non_exhaustive()
    }
}

/// Everything the answers to one probe of operand `operand` depend on: the reshards of the
/// operand (`input: None`) or one input layout.
#[derive(PartialEq, Eq)]
pub(crate) struct Key {
    kind: OpKind,
    operands: Vec<Option<TensorDesc>>,
    output_shape: Vec<u64>,
    output_dtype: DataType,
    operand: u32,
    candidates: Arc<[Candidate]>,
    targets: Option<Arc<[TtnnLayout]>>,
    input: Option<TtnnLayout>,
}

impl Key {
    /// The key of the reshards of `operand`.
    pub(crate) fn reshards(op: &ProblemOp, operand: u32) -> Key {
        Key::of(op, operand, op.reshard_targets.get(operand as usize).cloned(), None)
    }

    /// The key of `input` as operand `operand`.
    pub(crate) fn input(op: &ProblemOp, operand: u32, input: &TtnnLayout) -> Key {
        Key::of(op, operand, None, Some(input.clone()))
    }

    fn of(
        op: &ProblemOp,
        operand: u32,
        targets: Option<Arc<[TtnnLayout]>>,
        input: Option<TtnnLayout>,
    ) -> Key {
        Key {
            kind: op.kind.clone(),
            operands: op.operands.clone(),
            output_shape: op.output_shape.clone(),
            output_dtype: op.output_dtype,
            operand,
            candidates: Arc::clone(&op.candidates),
            targets,
            input,
        }
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.operands.hash(state);
        self.output_shape.hash(state);
        self.output_dtype.hash(state);
        self.operand.hash(state);
        // The long lists by length only: hashing their content would cost what the memo
        // saves. Equality still compares them (see the module docs).
        self.candidates.len().hash(state);
        self.targets.as_ref().map(|t| t.len()).hash(state);
        self.input.hash(state);
    }
}

impl ProbeMemo {
    /// The configs each reshard enables, kept for `key` on `target`, or `compute`'s, kept.
    pub(crate) fn reshards(
        &self,
        target: &Target,
        key: Key,
        compute: impl FnOnce() -> Enabled,
    ) -> Arc<Enabled> {
        self.reshards.get_or_compute(target, key, compute)
    }

    /// The configs accepting an input layout, kept for `key` on `target`, or `compute`'s,
    /// kept.
    pub(crate) fn accepting(
        &self,
        target: &Target,
        key: Key,
        compute: impl FnOnce() -> Accepting,
    ) -> Arc<Accepting> {
        self.inputs.get_or_compute(target, key, compute)
    }

    /// The number of answers kept.
    pub fn len(&self) -> usize {
        self.reshards.len() + self.inputs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(candidates: Arc<[Candidate]>, targets: Arc<[TtnnLayout]>) -> ProblemOp {
        ProblemOp {
            name: "a".to_owned(),
            kind: OpKind::Unknown("x".to_owned()),
            operands: Vec::new(),
            output_shape: vec![32, 32],
            output_dtype: DataType::BF16,
            candidates,
            reshard_targets: vec![targets],
            input_from_d2m: false,
        }
    }

    #[test]
    fn an_op_solved_again_reads_its_reshards_from_the_memo_and_another_operand_does_not() {
        let target = Target::n150();
        let memo = ProbeMemo::default();
        let (candidates, targets): (Arc<[Candidate]>, Arc<[TtnnLayout]>) =
            (Arc::from(Vec::new()), Arc::from(Vec::new()));
        let answer = || BTreeMap::from([(0, Vec::new())]);
        let first = op(Arc::clone(&candidates), Arc::clone(&targets));
        let _ = memo.reshards(&target, Key::reshards(&first, 0), answer);
        // The same op in another problem (its lists shared, its name another): the answer
        // kept, without asking again.
        let again = ProblemOp { name: "b".to_owned(), ..first.clone() };
        let kept = memo.reshards(&target, Key::reshards(&again, 0), || unreachable!());
        assert_eq!(*kept, answer());
        // Equal lists in other allocations compare by content: the same key.
        let copied = op(Arc::from(Vec::new()), Arc::from(Vec::new()));
        let _ = memo.reshards(&target, Key::reshards(&copied, 0), || unreachable!());
        assert_eq!(memo.len(), 1);
        // Another operand is another question.
        let other = memo.reshards(&target, Key::reshards(&first, 1), BTreeMap::new);
        assert!(other.is_empty());
        assert_eq!(memo.len(), 2);
    }
}
