//! The L1-interleaved fallback (`l1-interleaved-fallback-analysis-enabled`): tt-mlir's
//! `L1InterleavedFallbackAnalysis`, run after the layouts are chosen.
//!
//! Walking the schedule, an op whose result the plan leaves in DRAM moves to L1 interleaved
//! when that helps without risk, by tt-mlir's rules:
//!
//! - not for ops whose L1 output tt-mlir's runtime does not keep or that gain nothing from it
//!   (`max_pool2d`, `upsample`, `slice_static`, `typecast`, `matmul`, `linear`, and a
//!   `conv2d` that runs as a matmul: a 1x1 kernel, stride 1, no padding, dilation 1), nor for
//!   ops one of whose users is a `slice_static`, `typecast`, `matmul`, `linear` or such a
//!   `conv2d`;
//! - only with an L1-interleaved layout among the op's legal layouts (an output-layout
//!   override that leaves none keeps the op where it is);
//! - only for a result used exactly once, not by the `return`, by the op scheduled right
//!   after it;
//! - not for a reshape tt-metal can run as a view (same last dimension and, for tiles, the
//!   same or tile-aligned second-to-last one) whose input is in DRAM, nor for the producer of
//!   such a reshape whose output is in DRAM;
//! - and only if the op model accepts the op with the L1-interleaved output (the layouts
//!   matching the op's current tiledness first), producing exactly that layout, and then
//!   accepts its user, unchanged otherwise, reading it from there: both must fit L1.
//!
//! An op moved this way is seen as L1 by the ops after it (their inputs), as in tt-mlir,
//! where each check reads the upgrades made before it.

use ttnn_types::{BufferType, PageLayout, TtnnLayout};

use super::{Merger, OpKind};

/// tt-mlir's tile height and width.
const TILE: u64 = 32;

impl Merger<'_> {
    /// Moves the ops of `here` that qualify to L1 interleaved, in schedule order.
    pub(super) fn l1_interleaved_fallback(&mut self, here: &[u32]) {
        let mut order = here.to_vec();
        order.sort_by_key(|&i| self.pos.get(i as usize).copied().unwrap_or(u32::MAX));
        for x in order {
            if let Some(l1) = self.l1_interleaved_upgrade(x) {
                let p = self.plan_mut(x);
                p.layout = Some(l1);
                p.reason = "moved to L1 interleaved by the L1-interleaved fallback: its one user \
                            runs right after it and both fit L1, as in tt-mlir's \
                            L1InterleavedFallbackAnalysis"
                    .into();
            }
        }
    }

    /// The L1-interleaved layout op `x` moves to, if it qualifies.
    fn l1_interleaved_upgrade(&self, x: u32) -> Option<TtnnLayout> {
        let sig = self.sig(x)?;
        if !keeps_l1_output(&sig.kind) {
            return None;
        }
        let topo = self.topo.ops.get(x as usize)?;
        for u in &topo.users {
            if !reads_l1_input(&self.sig(u.user)?.kind) {
                return None;
            }
        }
        let plan = self.plan(x);
        let current = plan.layout.as_ref()?;
        if current.buffer != BufferType::Dram || plan.spill.is_some() {
            return None;
        }
        if topo.num_uses != 1 || topo.returned {
            return None;
        }
        let use_ = topo.users.first()?;
        let user = use_.user;
        let at = *self.pos.get(x as usize)? as usize;
        if self.sched.get(at + 1) != Some(&user) {
            return None;
        }
        if self.reshape_stays_in_dram(x, user) {
            return None;
        }
        let legal = self.src.legal_layouts(x)?;
        if legal.fixed {
            return None;
        }
        let tiled = current.page_layout() == PageLayout::Tile;
        let mut candidates: Vec<&TtnnLayout> =
            legal.layouts.iter().filter(|l| l.is_l1() && !l.is_sharded()).collect();
        // Those with the op's current tiledness first, as tt-mlir partitions them.
        candidates.sort_by_key(|l| (l.page_layout() == PageLayout::Tile) != tiled);
        let user_sig = self.sig(user)?;
        let check_user =
            user_sig.tensor_result().is_some() && !matches!(user_sig.kind, OpKind::ToLayout);
        let user_out = self.plan(user).layout.clone();
        candidates.into_iter().find_map(|cand| {
            let out = self.validate(x, &[], Some(cand), None, self.active(at as u32)).ok()?;
            if &out != cand {
                return None;
            }
            if check_user {
                let user_at = self.pos.get(user as usize).copied().unwrap_or(0);
                let got = self
                    .validate(
                        user,
                        &[(use_.operand as usize, cand.clone())],
                        None,
                        None,
                        self.active(user_at),
                    )
                    .ok()?;
                if user_out.as_ref().is_some_and(|l| *l != got) {
                    return None;
                }
            }
            Some(cand.clone())
        })
    }

    /// tt-mlir keeps a reshape that tt-metal can run as a view in DRAM: a reshape `x` with a
    /// DRAM input, and the producer `x` of such a reshape `user` whose output is in DRAM.
    fn reshape_stays_in_dram(&self, x: u32, user: u32) -> bool {
        let is_reshape = |i: u32| self.sig(i).is_some_and(|s| matches!(s.kind, OpKind::Reshape));
        let dram = |l: Option<TtnnLayout>| l.is_some_and(|l| l.buffer == BufferType::Dram);
        (is_reshape(x) && dram(self.incoming(x, 0)) && self.reshape_is_view(x))
            || (is_reshape(user)
                && dram(self.plan(user).layout.clone())
                && self.reshape_is_view(user))
    }

    /// Whether tt-metal runs reshape `r` as a view: the same last dimension, and for a tiled
    /// input the same second-to-last one or both tile aligned. A rank-0 reshape is not one.
    fn reshape_is_view(&self, r: u32) -> bool {
        let Some(sig) = self.sig(r) else { return false };
        let input = sig.operands.first().and_then(|o| o.ty.as_tensor()?.static_shape());
        let output = sig.tensor_result().and_then(ttnn_types::TensorType::static_shape);
        let (Some(input), Some(output)) = (input, output) else { return false };
        let (Some(&in_last), Some(&out_last)) = (input.last(), output.last()) else {
            return false;
        };
        let second_last = |s: &[u64]| if s.len() >= 2 { s[s.len() - 2] } else { 1 };
        let tiled = self.incoming(r, 0).is_none_or(|l| l.page_layout() == PageLayout::Tile);
        in_last == out_last
            && (!tiled
                || second_last(&input) == second_last(&output)
                || (second_last(&output) % TILE == 0 && second_last(&input) % TILE == 0))
    }
}

/// Whether tt-mlir's fallback may move this op's output to L1 interleaved.
fn keeps_l1_output(kind: &OpKind) -> bool {
    !matches!(
        kind,
        OpKind::Pool2d { op: opmodel::PoolOp::MaxPool2d, .. }
            | OpKind::Upsample { .. }
            | OpKind::SliceStatic
            | OpKind::Typecast
            | OpKind::Matmul(_)
            | OpKind::Linear(_)
    ) && !conv_as_matmul(kind)
}

/// Whether tt-mlir's fallback may move the input of an op of this kind to L1 interleaved.
fn reads_l1_input(kind: &OpKind) -> bool {
    !matches!(kind, OpKind::SliceStatic | OpKind::Typecast | OpKind::Matmul(_) | OpKind::Linear(_))
        && !conv_as_matmul(kind)
}

/// A `conv2d` tt-metal runs as a matmul: a 1x1 kernel, stride 1, no padding, dilation 1.
fn conv_as_matmul(kind: &OpKind) -> bool {
    matches!(kind, OpKind::Conv2d(a)
        if a.kernel == [1, 1] && a.stride == [1, 1] && a.padding == [0; 4] && a.dilation == [1, 1])
}
