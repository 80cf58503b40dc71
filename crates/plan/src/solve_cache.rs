//! Solutions kept by problem, across revisions and chains.
//!
//! ShardSolver is a pure function of a chain's problem and the target, and after most
//! re-runs of a `solve_chain` memo its problem is the one solved before: salsa re-runs a
//! query whose input's durability dropped even when that input's value did not change (an
//! editor lowers the durability of the ops a user starts editing; see `ir`'s `inputs`
//! module), and a tuning loop comes back to layouts it tried. Solving one chain of a 10k-op
//! graph costs up to a few million instructions, so this keeps the solutions.
//!
//! A key is matched without hashing the candidate lists, which are long: a problem shares
//! its ops' candidate and reshard-target lists with the legality memos that made them, so two
//! problems built from the same memos hold the same allocations, and the key compares and
//! hashes those lists by address (holding them, so an address cannot be reused while a key
//! names it). Two problems with equal lists in different allocations are different keys:
//! the cost is a solve, never a wrong answer.

use std::{
    hash::{Hash, Hasher},
    sync::Arc,
};

use solver::{ChainProblem, ChainSolution, Generations, ProblemOp};
use target::Target;

/// Solutions kept per generation (see [`Generations`]): the memory stays bounded in a long
/// tuning loop while the solutions still in use are carried over.
const GENERATION: usize = 8192;

/// The cache (see the module docs). Shared by every snapshot of a database.
pub struct SolveCache {
    solutions: Generations<ProblemKey, ChainSolution>,
    /// The op model's answers to the solver's probes, per op: a problem not solved before (a
    /// chain whose op an override changed) shares most of its ops with problems that were.
    probes: solver::ProbeMemo,
}

impl Default for SolveCache {
    fn default() -> Self {
        SolveCache { solutions: Generations::new(GENERATION), probes: solver::ProbeMemo::default() }
    }
}

impl std::fmt::Debug for SolveCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolveCache").finish_non_exhaustive()
    }
}

impl SolveCache {
    /// `solver::solve` of `problem`, or the solution kept for it.
    pub fn solve(
        &self,
        problem: &Arc<ChainProblem>,
        model: &dyn opmodel::OpModel,
        target: &Target,
    ) -> Arc<ChainSolution> {
        self.solutions.get_or_compute(target, ProblemKey(Arc::clone(problem)), || {
            solver::solve_with(problem, model, target, Some(&self.probes))
        })
    }
}

/// A problem as a cache key: its lists by address (see the module docs).
struct ProblemKey(Arc<ChainProblem>);

impl PartialEq for ProblemKey {
    fn eq(&self, other: &ProblemKey) -> bool {
        let (a, b) = (&*self.0, &*other.0);
        Arc::ptr_eq(&self.0, &other.0)
            || (a.edges == b.edges
                && a.user_reshards == b.user_reshards
                && a.preferred_output == b.preferred_output
                && a.spills_output == b.spills_output
                && a.ops.len() == b.ops.len()
                && a.ops.iter().zip(&b.ops).all(|(x, y)| same_op(x, y)))
    }
}

impl Eq for ProblemKey {}

fn same_op(a: &ProblemOp, b: &ProblemOp) -> bool {
    Arc::ptr_eq(&a.candidates, &b.candidates)
        && a.reshard_targets.len() == b.reshard_targets.len()
        && a.reshard_targets.iter().zip(&b.reshard_targets).all(|(x, y)| Arc::ptr_eq(x, y))
        && a.name == b.name
        && a.kind == b.kind
        && a.operands == b.operands
        && a.output_shape == b.output_shape
        && a.output_dtype == b.output_dtype
        && a.input_from_d2m == b.input_from_d2m
}

impl Hash for ProblemKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let p = &*self.0;
        p.edges.hash(state);
        p.user_reshards.hash(state);
        p.preferred_output.hash(state);
        p.spills_output.hash(state);
        p.ops.len().hash(state);
        for op in &p.ops {
            std::ptr::hash(Arc::as_ptr(&op.candidates).cast::<u8>(), state);
            for t in &op.reshard_targets {
                std::ptr::hash(Arc::as_ptr(t).cast::<u8>(), state);
            }
            op.name.hash(state);
            op.kind.hash(state);
            op.output_shape.hash(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(candidates: Arc<[solver::Candidate]>) -> Arc<ChainProblem> {
        Arc::new(ChainProblem {
            ops: vec![ProblemOp {
                name: "a".to_owned(),
                kind: opmodel::OpKind::Unknown("x".to_owned()),
                operands: Vec::new(),
                output_shape: vec![32, 32],
                output_dtype: ttnn_types::DataType::BF16,
                candidates,
                reshard_targets: Vec::new(),
                input_from_d2m: false,
            }],
            edges: Vec::new(),
            user_reshards: Vec::new(),
            preferred_output: None,
            spills_output: false,
        })
    }

    #[test]
    fn problems_sharing_their_lists_are_one_key_and_others_are_not() {
        let list: Arc<[solver::Candidate]> = Arc::from(Vec::new());
        let (a, b) = (problem(Arc::clone(&list)), problem(Arc::clone(&list)));
        let c = problem(Arc::from(Vec::new()));
        let hash = |p: &Arc<ChainProblem>| {
            let mut h = rustc_hash::FxHasher::default();
            ProblemKey(Arc::clone(p)).hash(&mut h);
            h.finish()
        };
        assert!(ProblemKey(Arc::clone(&a)) == ProblemKey(Arc::clone(&b)));
        assert_eq!(hash(&a), hash(&b));
        // Equal content in another allocation: a different key (a solve, never a wrong hit).
        assert!(ProblemKey(a) != ProblemKey(c));
    }
}
