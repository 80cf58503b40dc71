//! The decode step's head split as tt-mlir reaches it: cache updates in the paged form, the
//! rotary embeddings in decode mode, and one `nlp_create_qkv_heads_decode` for Q, K and V.
//!
//! tt-xla writes a decode layer's attention input as three projections, each reshaped to
//! `[B, H, 1, D]` (every user's heads padded to a tile row of their own), the rotary
//! embeddings applied there, and the results permuted to the layouts the cache update and the
//! decode attention read. tt-mlir gets from there to tt-metal's decode ops in four steps,
//! reproduced here in its order:
//!
//! 1. TTIR canonicalization (`UpdateCacheOp`'s pattern) writes every `update_cache` as a
//!    `paged_update_cache` without a page table: an input in `[1, H, B, D]` (the cache's heads
//!    and users) is permuted `[0, 2, 1, 3]` to `[1, B, H, D]` and a one-element index repeated
//!    to one per user (CSE leaves one repeat per index); `batch_offset` is dropped. The
//!    permute then composes with tt-xla's own (permute folding), giving `[2, 0, 1, 3]` from
//!    the rotary's `[B, H, 1, D]`.
//! 2. `SharedLHSMatmulFusion` ([`super::shared_lhs`]) makes the three projections one matmul
//!    and three slices.
//! 3. TTNN fusing's `RoPEDecodeFusing`: a rotary embedding (not yet in decode mode, of a
//!    `[B, H, 1, D]` input, with single-position cos and sin) whose only use is a permute
//!    moving dim 2 first (through at most one single-use typecast) runs after the permute
//!    instead, with `token_index = 0` (the typecast re-applied after it). It declines when the
//!    rotary's input comes from an RMS norm (tt-mlir folds a QK norm into the rewrite; not
//!    reproduced, so such models keep the written form).
//! 4. `SplitQueryKeyValueAndSplitHeadsFusing` then `NLPCreateQKVHeadsDecodeFusing`: a matmul
//!    (or linear) over a concatenated weight whose result three slices cut contiguously from
//!    the start of the last dim, each reshaped to `[B, H, 1, D]` and that reshape's only use a
//!    permute `[2, 0, 1, 3]`, becomes a reshape of the matmul's result to `[1, 1, B, Q+K+V]`
//!    and one `nlp_create_qkv_heads_decode` whose three results replace the permutes. The
//!    roles come from where each chain goes (the attention's query, or a cache the attention
//!    reads as its key or value), else from the head counts (the most heads is Q), and the
//!    weight concat's operands (biases too) are put in Q, K, V order. tt-mlir checks the op
//!    with its op model; the importer checks tt-metal's `validate` instead: a `bf16` or `f32`
//!    input, at most 32 users and 32 query heads, no more KV heads than query heads, a head
//!    size that is a multiple of 32, and at least as many worker cores as users.
//!
//! Prefill chains (`[B, S, H, D]` permuted `[0, 2, 1, 3]`) become
//! `split_query_key_value_and_split_heads` in [`super::split_qkv`].

use rustc_hash::{FxHashMap, FxHashSet};
use ttnn_types::DataType;

use super::{Uses, prop};
use crate::{
    func::{Def, Form, FuncOut, OutOp, OutTy, ValueId},
    ty::TType,
};

/// Ops whose operands 0, 1 and 2 are an attention's query, key and value.
const ATTENTION: &[&str] = &[
    "ttnn.scaled_dot_product_attention",
    "ttnn.scaled_dot_product_attention_decode",
    "ttnn.paged_scaled_dot_product_attention_decode",
];

/// Ops that write their operand 0, a cache, in place.
const CACHE_WRITES: &[&str] =
    &["ttnn.paged_update_cache", "ttnn.fill_cache", "ttnn.paged_fill_cache"];

/// tt-mlir's bound on the forward walk that finds a chain's role.
const ROLE_TRACE_DEPTH: u32 = 20;

/// The worker cores of a Wormhole n150 (8x8): the op places one user per core.
const WORKER_CORES: u64 = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Query,
    Key,
    Value,
}

/// One slice, reshape and permute chain of a split matmul.
pub(super) struct Head {
    pub(super) begin: u64,
    pub(super) end: u64,
    /// The head layout the chain ends in: the reshape's `[B, H, 1, D]` in decode, the
    /// permute's `[B, H, S, D]` in prefill.
    pub(super) shape: [u64; 4],
    pub(super) reshape_result: ValueId,
    pub(super) permute_at: usize,
}

/// Whether three heads' slices, sorted here by where they begin, cover the projection's
/// width from 0 without a gap or an overlap.
pub(super) fn tile_the_width(heads: &mut [Head]) -> bool {
    heads.sort_by_key(|h| h.begin);
    let mut next = 0;
    for h in heads.iter() {
        if h.begin != next {
            return false;
        }
        next = h.end;
    }
    heads.len() == 3
}

/// A matched decode head split.
struct CreateHeads {
    matmul_at: usize,
    /// In Q, K, V order.
    heads: [Head; 3],
    /// The concat operand order that puts the weights (and biases) in Q, K, V order.
    order: [usize; 3],
}

pub(super) fn one<T>(v: Vec<T>) -> Option<T> {
    let mut it = v.into_iter();
    let x = it.next()?;
    it.next().is_none().then_some(x)
}

fn perm_text(p: &[usize]) -> String {
    format!("array<i64: {}>", p.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))
}

pub(super) fn parse_perm(op: &OutOp) -> Option<Vec<usize>> {
    let text = prop(op, "permutation")?.strip_prefix("array<i64:")?.strip_suffix('>')?;
    text.split(',').map(|p| p.trim().parse().ok()).collect()
}

impl FuncOut {
    /// Step 1: every `ttnn.update_cache` becomes a `ttnn.paged_update_cache` (see the module
    /// doc). Runs before the permute folding, as tt-mlir's canonicalizer runs first.
    pub(crate) fn canonicalize_update_caches(&mut self) {
        let mut repeated: FxHashMap<ValueId, ValueId> = FxHashMap::default();
        let old = std::mem::take(&mut self.ops);
        let mut ops = Vec::with_capacity(old.len());
        for mut op in old {
            let [cache, input, index] = op.operands[..] else {
                ops.push(op);
                continue;
            };
            let shapes = (self.tensor_ty(cache).cloned(), self.tensor_ty(input).cloned());
            let (Some(ct), Some(it)) = shapes else {
                ops.push(op);
                continue;
            };
            if op.name != "ttnn.update_cache" || ct.rank() != 4 || it.rank() != 4 {
                ops.push(op);
                continue;
            }
            let (users, heads) = (ct.shape[0], ct.shape[1]);
            let mut new_input = input;
            if it.shape[2] == users && it.shape[1] == heads {
                let t = it.reshaped(vec![1, users, heads, ct.shape[3]]);
                let id = self.values.len() as ValueId;
                self.values.push((OutTy::Tensor(t), Def::Op));
                ops.push(OutOp {
                    name: "ttnn.permute".to_owned(),
                    form: Form::Generic { raw_props: None, attrs: None },
                    operands: vec![input],
                    props: vec![("permutation".to_owned(), perm_text(&[0, 2, 1, 3]))],
                    results: vec![id],
                    loc: format!("{}_input_permute", op.loc),
                    written: false,
                    pure_op: true,
                });
                new_input = id;
            }
            let mut new_index = index;
            if self.tensor_ty(index).is_some_and(|t| t.shape == [1]) {
                new_index = match repeated.get(&index) {
                    Some(r) => *r,
                    None => {
                        let Some(xt) = self.tensor_ty(index).cloned() else { continue };
                        let id = self.values.len() as ValueId;
                        self.values.push((OutTy::Tensor(xt.reshaped(vec![users])), Def::Op));
                        ops.push(OutOp {
                            name: "ttnn.repeat".to_owned(),
                            form: Form::Generic { raw_props: None, attrs: None },
                            operands: vec![index],
                            props: vec![(
                                "repeat_dims".to_owned(),
                                format!("#ttnn.shape<{users}>"),
                            )],
                            results: vec![id],
                            loc: format!("{}_index_repeat", op.loc),
                            written: false,
                            pure_op: true,
                        });
                        repeated.insert(index, id);
                        id
                    }
                };
            }
            op.name = "ttnn.paged_update_cache".to_owned();
            op.operands = vec![cache, new_input, new_index];
            op.props = vec![("share_cache".to_owned(), "false".to_owned())];
            ops.push(op);
        }
        self.ops = ops;
    }

    /// Step 3: a rotary embedding followed by the decode permute runs after it, in decode mode.
    pub(crate) fn commute_decode_permutes_into_rotary(&mut self) {
        let uses = self.uses();
        let mut at: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        for i in 0..self.ops.len() {
            if let Some(ops) = self.decode_rotary(i, &uses) {
                at.insert(i, ops);
            }
        }
        if at.is_empty() {
            return;
        }
        let old = std::mem::take(&mut self.ops);
        for (i, op) in old.into_iter().enumerate() {
            match at.remove(&i) {
                Some(ops) => self.ops.extend(ops),
                None => self.ops.push(op),
            }
        }
    }

    fn decode_rotary(&mut self, i: usize, u: &Uses) -> Option<Vec<OutOp>> {
        let p = self.ops.get(i)?;
        if p.name != "ttnn.permute" {
            return None;
        }
        let perm = parse_perm(p)?;
        if perm.len() != 4 || perm[0] != 2 {
            return None;
        }
        let (&input, &result) = (p.operands.first()?, p.results.first()?);
        let permute_loc = p.loc.clone();
        let single = |v: ValueId| u.count.get(&v).copied() == Some(1);
        let (rope_v, cast) = match self.def(input, "ttnn.typecast", u) {
            Some(c) if single(input) => (*c.operands.first()?, Some(input)),
            _ => (input, None),
        };
        let rope = self.def(rope_v, "ttnn.rotary_embedding", u)?.clone();
        let [x, cos, sin] = rope.operands[..] else { return None };
        if prop(&rope, "token_index").is_some() || !single(rope_v) {
            return None;
        }
        let xt = self.tensor_ty(x)?.clone();
        if xt.rank() != 4 || xt.shape[2] != 1 {
            return None;
        }
        // A norm on the way into the rotary (a QK norm) is folded by tt-mlir, not here.
        let mut src = x;
        while let Some(op) = u.producer.get(&src).map(|k| &self.ops[*k]) {
            match op.name.as_str() {
                "ttnn.typecast" | "ttnn.permute" | "ttnn.reshape" | "ttnn.repeat" => {
                    src = *op.operands.first()?;
                }
                "ttnn.rms_norm" | "ttnn.distributed_rms_norm" => return None,
                _ => break,
            }
        }
        let ct = self.tensor_ty(cos)?;
        if ct.rank() < 2 || ct.shape[ct.rank() - 2] != 1 {
            return None;
        }
        let shape: Vec<u64> = perm.iter().map(|d| xt.shape[*d]).collect();
        let rope_t = self.tensor_ty(rope_v)?.reshaped(shape.clone());
        let mut ops = Vec::new();
        let new_val = |f: &mut FuncOut, t: TType| {
            let id = f.values.len() as ValueId;
            f.values.push((OutTy::Tensor(t), Def::Op));
            id
        };
        let permuted = new_val(self, xt.reshaped(shape));
        ops.push(OutOp {
            name: "ttnn.permute".to_owned(),
            form: Form::Generic { raw_props: None, attrs: None },
            operands: vec![x],
            props: vec![("permutation".to_owned(), perm_text(&perm))],
            results: vec![permuted],
            loc: format!("{}_decode_permute", rope.loc),
            written: false,
            pure_op: true,
        });
        let rotated = if cast.is_some() { new_val(self, rope_t) } else { result };
        let mut props = rope.props.clone();
        props.push(("token_index".to_owned(), "0 : ui32".to_owned()));
        ops.push(OutOp {
            operands: vec![permuted, cos, sin],
            props,
            results: vec![rotated],
            loc: format!("{}_decode", rope.loc),
            written: false,
            ..rope
        });
        if cast.is_some() {
            ops.push(OutOp {
                name: "ttnn.typecast".to_owned(),
                form: Form::Generic { raw_props: None, attrs: None },
                operands: vec![rotated],
                props: Vec::new(),
                results: vec![result],
                loc: format!("{permute_loc}_decode_typecast"),
                written: false,
                pure_op: true,
            });
        }
        Some(ops)
    }

    /// Step 4: the split of a fused QKV projection into decode heads is one
    /// `nlp_create_qkv_heads_decode` (see the module doc).
    pub(crate) fn fuse_nlp_create_qkv_heads_decode(&mut self) {
        let uses = self.uses();
        let found: Vec<CreateHeads> =
            (0..self.ops.len()).filter_map(|i| self.match_create_heads(i, &uses)).collect();
        if found.is_empty() {
            return;
        }
        let mut at: FxHashMap<usize, Vec<OutOp>> = FxHashMap::default();
        let mut drop: FxHashSet<usize> = FxHashSet::default();
        for m in &found {
            let first = m.heads.iter().map(|h| h.permute_at).min().unwrap_or(m.matmul_at);
            if let Some(ops) = self.rewrite_create_heads(m, &uses) {
                at.insert(first, ops);
                drop.extend(m.heads.iter().map(|h| h.permute_at));
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

    pub(super) fn users_of(&self, v: ValueId) -> Vec<usize> {
        (0..self.ops.len()).filter(|k| self.ops[*k].operands.contains(&v)).collect()
    }

    fn match_create_heads(&self, i: usize, u: &Uses) -> Option<CreateHeads> {
        let mm = self.ops.get(i)?;
        if !matches!(mm.name.as_str(), "ttnn.matmul" | "ttnn.linear") || mm.results.len() != 1 {
            return None;
        }
        let out = mm.results[0];
        let out_t = self.tensor_ty(out)?;
        let last = out_t.rank().checked_sub(1)?;
        let mut heads = Vec::new();
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
            let Some([b, h, s1, d]) = self
                .tensor_ty(rv)
                .map(|t| t.shape.clone())
                .as_deref()
                .map(|sh| <[u64; 4]>::try_from(sh).ok())?
            else {
                continue;
            };
            // The one sliced dim, which must be the features.
            let begins = int_list(prop(s, "begins")?)?;
            let ends = int_list(prop(s, "ends")?)?;
            let sliced: Vec<usize> = (0..out_t.rank())
                .filter(|d| begins.get(*d) != Some(&0) || ends.get(*d) != out_t.shape.get(*d))
                .collect();
            if sliced != [last] {
                return None;
            }
            // BHSD with one user position: `[B·S, H·D]` to `[B, H, 1, D]`.
            let st = self.tensor_ty(sv)?;
            let batch_seq: u64 = st.shape[..st.rank() - 1].iter().product();
            if s1 != 1 || b != batch_seq || h * d != *st.shape.last()? {
                return None;
            }
            // Its only use is the decode permute.
            let p = one(self.users_of(rv))?;
            if u.count.get(&rv).copied() != Some(1)
                || self.ops[p].name != "ttnn.permute"
                || parse_perm(&self.ops[p])? != [2, 0, 1, 3]
            {
                return None;
            }
            heads.push(Head {
                begin: begins[last],
                end: ends[last],
                shape: [b, h, s1, d],
                reshape_result: rv,
                permute_at: p,
            });
        }
        if !tile_the_width(&mut heads) {
            return None;
        }
        // The weight is a concat whose first three operands are the three parts.
        let concat = self.def(*mm.operands.get(1)?, "ttnn.concat", u)?;
        if u.count.get(mm.operands.get(1)?).copied() != Some(1) || concat.operands.len() < 3 {
            return None;
        }
        let order = self.qkv_order(&heads)?;
        let [q, k, _] = order.map(|o| heads[o].shape);
        // tt-metal's validate (tt-mlir asks its op model).
        let dtype_ok = matches!(out_t.dtype, DataType::BF16 | DataType::F32);
        let users = q[0];
        if !dtype_ok
            || users > 32
            || users > WORKER_CORES
            || q[1] > 32
            || q[1] < k[1]
            || q[3] % 32 != 0
        {
            return None;
        }
        // With a bias, it must be a concat too, to be reordered.
        if let Some(bias) = mm.operands.get(2)
            && order != [0, 1, 2]
            && self.def(*bias, "ttnn.concat", u).is_none_or(|c| c.operands.len() < 3)
        {
            return None;
        }
        let mut slots: Vec<Option<Head>> = heads.into_iter().map(Some).collect();
        let [Some(hq), Some(hk), Some(hv)] = order.map(|o| slots[o].take()) else { return None };
        Some(CreateHeads { matmul_at: i, heads: [hq, hk, hv], order })
    }

    /// The order of three head chains as Q, K and V: where each chain goes (`qkv_role`), else
    /// by head counts (the query has the most heads, key and value the same), with the
    /// shapes a split into heads needs (one head size, as many key as value heads).
    pub(super) fn qkv_order(&self, heads: &[Head]) -> Option<[usize; 3]> {
        let traced: Option<Vec<Role>> =
            heads.iter().map(|h| self.qkv_role(h.reshape_result)).collect();
        let roles = match traced {
            Some(r)
                if r.contains(&Role::Query)
                    && r.contains(&Role::Key)
                    && r.contains(&Role::Value) =>
            {
                r
            }
            _ => {
                let hs: Vec<u64> = heads.iter().map(|h| h.shape[1]).collect();
                if hs.len() != 3 {
                    return None;
                }
                let q = (0..3).fold(0, |q, k| if hs[k] > hs[q] { k } else { q });
                let kv: Vec<usize> = (0..3).filter(|k| *k != q).collect();
                if hs[kv[0]] != hs[kv[1]] || heads[kv[0]].shape[3] != heads[kv[1]].shape[3] {
                    return None;
                }
                let mut r = vec![Role::Key; 3];
                r[q] = Role::Query;
                r[kv[1]] = Role::Value;
                r
            }
        };
        let pos = |role: Role| roles.iter().position(|r| *r == role);
        let order = [pos(Role::Query)?, pos(Role::Key)?, pos(Role::Value)?];
        let [q, k, v] = order.map(|o| heads[o].shape);
        if q[3] != k[3] || k[3] != v[3] || k[1] != v[1] {
            return None;
        }
        Some(order)
    }

    /// The attention operand a chain reaches, walking forward through every op (and from a
    /// cache write to the cache it writes), not past an attention.
    pub(super) fn qkv_role(&self, start: ValueId) -> Option<Role> {
        let mut queue = vec![(start, 0u32)];
        let mut seen: FxHashSet<ValueId> = FxHashSet::default();
        seen.insert(start);
        let mut found: Option<Role> = None;
        let mut next = 0;
        while let Some(&(v, depth)) = queue.get(next) {
            next += 1;
            if depth >= ROLE_TRACE_DEPTH {
                continue;
            }
            for k in self.users_of(v) {
                let op = &self.ops[k];
                let mut role = None;
                if ATTENTION.contains(&op.name.as_str()) {
                    role = match op.operands.iter().position(|o| *o == v) {
                        Some(0) => Some(Role::Query),
                        Some(1) => Some(Role::Key),
                        Some(2) => Some(Role::Value),
                        _ => None,
                    };
                    if let Some(r) = role {
                        if found.is_some_and(|f| f != r) {
                            return None;
                        }
                        found = Some(r);
                    }
                }
                if CACHE_WRITES.contains(&op.name.as_str())
                    && let Some(&cache) = op.operands.first()
                    && depth + 1 < ROLE_TRACE_DEPTH
                    && seen.insert(cache)
                {
                    queue.push((cache, depth + 1));
                }
                if role.is_some() {
                    continue;
                }
                for r in &op.results {
                    if depth + 1 < ROLE_TRACE_DEPTH && seen.insert(*r) {
                        queue.push((*r, depth + 1));
                    }
                }
            }
        }
        found
    }

    fn rewrite_create_heads(&mut self, m: &CreateHeads, u: &Uses) -> Option<Vec<OutOp>> {
        let mm = self.ops.get(m.matmul_at)?.clone();
        let out = *mm.results.first()?;
        let out_t = self.tensor_ty(out)?.clone();
        let [q, k] = [&m.heads[0], &m.heads[1]];
        let users = q.shape[0];
        let qkv = (q.shape[1] + 2 * k.shape[1]) * q.shape[3];
        // The weights (and biases) in Q, K, V order: the concat's first three operands.
        if m.order != [0, 1, 2] {
            for operand in mm.operands.iter().skip(1) {
                let at = *u.producer.get(operand)?;
                let c = &mut self.ops[at];
                let parts: Vec<ValueId> = m.order.iter().map(|o| c.operands[*o]).collect();
                c.operands.splice(0..3, parts);
            }
        }
        let mut ops = Vec::new();
        let new_val = |f: &mut FuncOut, t: TType| {
            let id = f.values.len() as ValueId;
            f.values.push((OutTy::Tensor(t), Def::Op));
            id
        };
        let generic = |name: &str, operands, props, results, loc| OutOp {
            name: name.to_owned(),
            form: Form::Generic { raw_props: None, attrs: None },
            operands,
            props,
            results,
            loc,
            written: false,
            pure_op: true,
        };
        let mut x = out;
        let last = out_t.rank() - 1;
        if out_t.shape[last] != qkv {
            let mut ends = out_t.shape.clone();
            ends[last] = qkv;
            let list = |s: &[u64]| {
                format!(
                    "[{}]",
                    s.iter().map(|d| format!("{d} : i32")).collect::<Vec<_>>().join(", ")
                )
            };
            let props = vec![
                ("begins".to_owned(), list(&vec![0; out_t.rank()])),
                ("ends".to_owned(), list(&ends)),
                ("step".to_owned(), list(&vec![1; out_t.rank()])),
            ];
            let id = new_val(self, out_t.reshaped(ends.clone()));
            ops.push(generic(
                "ttnn.slice_static",
                vec![x],
                props,
                vec![id],
                format!("{}_qkv", mm.loc),
            ));
            x = id;
        }
        let shape = vec![1, 1, users, qkv];
        let props = vec![(
            "shape".to_owned(),
            format!(
                "[{}]",
                shape.iter().map(|d| format!("{d} : i32")).collect::<Vec<_>>().join(", ")
            ),
        )];
        let id = new_val(self, out_t.reshaped(shape));
        ops.push(generic(
            "ttnn.reshape",
            vec![x],
            props,
            vec![id],
            format!("{}_heads_input", mm.loc),
        ));
        let mut props = vec![("num_heads".to_owned(), format!("{} : ui32", q.shape[1]))];
        if q.shape[1] != k.shape[1] {
            props.push(("num_kv_heads".to_owned(), format!("{} : ui32", k.shape[1])));
        }
        let results: Vec<ValueId> =
            m.heads.iter().map(|h| self.ops[h.permute_at].results[0]).collect();
        ops.push(generic(
            "ttnn.nlp_create_qkv_heads_decode",
            vec![id],
            props,
            results,
            format!("{}_heads", mm.loc),
        ));
        Some(ops)
    }
}

/// `[a : i32, b : i32]` as numbers.
pub(super) fn int_list(text: &str) -> Option<Vec<u64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner.split(',').map(|t| t.split(':').next()?.trim().parse().ok()).collect()
}
