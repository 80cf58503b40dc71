//! tt-mlir's `SplitQueryKeyValueAndSplitHeadsFusing` in its prefill form: the slices, reshapes
//! and permutes that cut a fused QKV projection into heads become one
//! `split_query_key_value_and_split_heads`.
//!
//! After `SharedLHSMatmulFusion` ([`super::shared_lhs`]) Q, K and V are one matmul (or linear)
//! over concatenated weights, followed by three `slice_static`s of its last dim, each
//! reshaped to `[B, S, H, D]` and permuted `[0, 2, 1, 3]` to the `[B, H, S, D]` the attention
//! reads. tt-mlir's TTNN fusing (with the op model on, as for the decode form) replaces them,
//! and the importer follows its match:
//!
//! * the matmul's `slice_static` users whose only use is a 4-D reshape are the chains (other
//!   users are left alone); there must be three, each slicing the last dim only, together
//!   covering it contiguously from 0 (a remainder, such as a fused MLP's first projection,
//!   may follow);
//! * each reshape is `[B·S, H·D]` to `[B, S, H, D]` and its only use the permute
//!   `[0, 2, 1, 3]` (a chain without it, or with the decode permute `[2, 0, 1, 3]`, is not this
//!   form: decode chains become `nlp_create_qkv_heads_decode`, [`super::decode_qkv`]);
//! * the weight is a `concat`; the roles come from the attention operand each chain reaches,
//!   else from the head counts (the most heads is Q, the other two need equal heads), Q, K
//!   and V share a head size and K and V a head count, and the concat's operands (and a
//!   linear's bias concat) are put in Q, K, V order;
//! * what tt-mlir's op-model validation and its workaround leave fused: a `bf16`, `bfp_bf8` or
//!   `f32` result (tt-metal's `nlp_create_qkv_heads`) and a head size that is a multiple of
//!   32 (tt-mlir's `SplitQueryKeyValueAndSplitHeadsOpRewritePattern` splits the op back
//!   otherwise).
//!
//! The rewrite reshapes the matmul's result (after a slice of its QKV part when there is a
//! remainder) to `[B, S, Q+K+V]` and gives it to one `split_query_key_value_and_split_heads`
//! (`num_heads`, `num_kv_heads` when it differs, `transpose_key = false`) whose three results
//! replace the permutes. Chains with typecasts between the slice, reshape and permute, which
//! tt-mlir looks through, are not reproduced.

use ttnn_types::DataType;

use super::Uses;
use super::decode_qkv::{Head as Chain, int_list, one, parse_perm, tile_the_width};
use crate::func::{FuncOut, OutOp, ValueId};

/// A matched prefill head split.
struct SplitHeads {
    matmul_at: usize,
    /// In Q, K, V order.
    chains: [Chain; 3],
    /// The concat operand order that puts the weights (and biases) in Q, K, V order.
    order: [usize; 3],
}

impl FuncOut {
    /// The split of a fused QKV projection into prefill heads is one
    /// `split_query_key_value_and_split_heads` (see the module doc).
    pub(crate) fn fuse_split_query_key_value_and_split_heads(&mut self) {
        let uses = self.uses();
        let found: Vec<SplitHeads> =
            (0..self.ops.len()).filter_map(|i| self.match_split_heads(i, &uses)).collect();
        if found.is_empty() {
            return;
        }
        let mut at: rustc_hash::FxHashMap<usize, Vec<OutOp>> = Default::default();
        let mut drop: rustc_hash::FxHashSet<usize> = Default::default();
        for m in &found {
            let first = m.chains.iter().map(|c| c.permute_at).min().unwrap_or(m.matmul_at);
            if let Some(ops) = self.rewrite_split_heads(m, &uses) {
                at.insert(first, ops);
                drop.extend(m.chains.iter().map(|c| c.permute_at));
            }
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            if let Some(ops) = at.remove(&i) {
                self.ops.extend(ops);
            }
            if !drop.contains(&i) {
                self.ops.push(op);
            }
        }
    }

    fn match_split_heads(&self, i: usize, u: &Uses) -> Option<SplitHeads> {
        let mm = self.ops.get(i)?;
        if !matches!(mm.name.as_str(), "ttnn.matmul" | "ttnn.linear") || mm.results.len() != 1 {
            return None;
        }
        let out = mm.results[0];
        let out_t = self.tensor_ty(out)?;
        let last = out_t.rank().checked_sub(1)?;
        let mut chains = Vec::new();
        for k in self.users_of(out) {
            let s = &self.ops[k];
            if s.name != "ttnn.slice_static" {
                continue;
            }
            let Some(&sv) = s.results.first() else { continue };
            let Some(r) = one(self.users_of(sv)).map(|r| &self.ops[r]) else { continue };
            if r.name != "ttnn.reshape" || u.count.get(&sv).copied() != Some(1) {
                continue;
            }
            let Some(&rv) = r.results.first() else { continue };
            let Some([b, s_len, h, d]) =
                self.tensor_ty(rv).and_then(|t| <[u64; 4]>::try_from(t.shape.as_slice()).ok())
            else {
                continue;
            };
            // One sliced dim, the features.
            let begins = int_list(super::prop(s, "begins")?)?;
            let ends = int_list(super::prop(s, "ends")?)?;
            let sliced: Vec<usize> = (0..out_t.rank())
                .filter(|d| begins.get(*d) != Some(&0) || ends.get(*d) != out_t.shape.get(*d))
                .collect();
            if sliced != [last] {
                return None;
            }
            // BSHD: `[B·S, H·D]` to `[B, S, H, D]`, then the permute to `[B, H, S, D]`.
            let st = self.tensor_ty(sv)?;
            let batch_seq: u64 = st.shape[..st.rank() - 1].iter().product();
            if b.checked_mul(s_len)? != batch_seq || h.checked_mul(d)? != *st.shape.last()? {
                return None;
            }
            let p = one(self.users_of(rv))?;
            if u.count.get(&rv).copied() != Some(1)
                || self.ops[p].name != "ttnn.permute"
                || parse_perm(&self.ops[p])? != [0, 2, 1, 3]
            {
                return None;
            }
            chains.push(Chain {
                begin: begins[last],
                end: ends[last],
                shape: [b, h, s_len, d],
                reshape_result: rv,
                permute_at: p,
            });
        }
        if !tile_the_width(&mut chains) {
            return None;
        }
        let weight = *mm.operands.get(1)?;
        self.def(weight, "ttnn.concat", u)?;
        let order = self.qkv_order(&chains)?;
        let [q, _, _] = order.map(|o| chains[o].shape);
        // What tt-mlir's op-model validation and its head-size workaround leave fused.
        let dtype_ok = matches!(out_t.dtype, DataType::BF16 | DataType::BfpBF8 | DataType::F32);
        if !dtype_ok || q[3] % 32 != 0 {
            return None;
        }
        // Reordering needs the weight (and a bias) to be concats used only here.
        if order != [0, 1, 2] {
            for operand in mm.operands.iter().skip(1) {
                let c = self.def(*operand, "ttnn.concat", u);
                if c.is_none_or(|c| c.operands.len() < 3)
                    || u.count.get(operand).copied() != Some(1)
                {
                    return None;
                }
            }
        }
        let mut slots: Vec<Option<Chain>> = chains.into_iter().map(Some).collect();
        let [Some(cq), Some(ck), Some(cv)] = order.map(|o| slots[o].take()) else { return None };
        Some(SplitHeads { matmul_at: i, chains: [cq, ck, cv], order })
    }

    fn rewrite_split_heads(&mut self, m: &SplitHeads, u: &Uses) -> Option<Vec<OutOp>> {
        let mm = self.ops.get(m.matmul_at)?.clone();
        let out = *mm.results.first()?;
        let out_t = self.tensor_ty(out)?.clone();
        let [q, k, _] = [&m.chains[0], &m.chains[1], &m.chains[2]];
        let (batch, seq) = (q.shape[0], q.shape[2]);
        let qkv = (q.shape[1] + 2 * k.shape[1]) * q.shape[3];
        if m.order != [0, 1, 2] {
            for operand in mm.operands.iter().skip(1) {
                let at = *u.producer.get(operand)?;
                let c = &mut self.ops[at];
                let parts: Vec<ValueId> = m.order.iter().map(|o| c.operands[*o]).collect();
                c.operands.splice(0..3, parts);
            }
        }
        let list = |s: &[u64]| {
            format!("[{}]", s.iter().map(|d| format!("{d} : i32")).collect::<Vec<_>>().join(", "))
        };
        let mut ops = Vec::new();
        let mut x = out;
        let last = out_t.rank() - 1;
        if out_t.shape[last] != qkv {
            let mut ends = out_t.shape.clone();
            ends[last] = qkv;
            let props = vec![
                ("begins".to_owned(), list(&vec![0; out_t.rank()])),
                ("ends".to_owned(), list(&ends)),
                ("step".to_owned(), list(&vec![1; out_t.rank()])),
            ];
            let ty = out_t.reshaped(ends);
            x = self.push_generic(
                &mut ops,
                "ttnn.slice_static",
                vec![x],
                props,
                ty,
                format!("{}_qkv", mm.loc),
            );
        }
        let shape = vec![batch, seq, qkv];
        let props = vec![("shape".to_owned(), list(&shape))];
        let ty = out_t.reshaped(shape);
        let input = self.push_generic(
            &mut ops,
            "ttnn.reshape",
            vec![x],
            props,
            ty,
            format!("{}_split_input", mm.loc),
        );
        let mut props = vec![("num_heads".to_owned(), format!("{} : ui32", q.shape[1]))];
        if q.shape[1] != k.shape[1] {
            props.push(("num_kv_heads".to_owned(), format!("{} : ui32", k.shape[1])));
        }
        props.push(("transpose_key".to_owned(), "false".to_owned()));
        let results: Vec<ValueId> =
            m.chains.iter().map(|c| self.ops[c.permute_at].results[0]).collect();
        ops.push(OutOp {
            name: "ttnn.split_query_key_value_and_split_heads".to_owned(),
            form: crate::func::Form::Generic { raw_props: None, attrs: None },
            operands: vec![input],
            props,
            results,
            loc: format!("{}_split_heads", mm.loc),
            written: false,
            pure_op: true,
        });
        Some(ops)
    }
}
