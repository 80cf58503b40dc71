//! An analytical device-time model for TTNN programs, so layout policies can be compared and
//! tuned without hardware.
//!
//! The op model (`opmodel`) says whether a placement fits in L1; this crate says how long it
//! takes. Per op:
//!
//! ```text
//! total = dispatch + max(compute, dram + noc + l1)
//! compute = busiest core's tiles x per-tile cycles of each execution unit / clock
//! dram    = DRAM bytes / min(sustained DRAM bandwidth, cores x NoC port bandwidth)
//! noc     = core-to-core bytes / (cores x NoC port bandwidth)
//! l1      = bytes through L1 / (cores x L1 bandwidth per core)
//! ```
//!
//! * [`CostModel::op_cost`] prices one op in the layouts a plan chose.
//! * [`CostModel::reshard_cost`] and [`CostModel::spill_cost`] price inserted moves.
//! * [`CostModel::plan_cost`] adds a plan's steps up.
//! * [`CostModel::lower_bound`] bounds every plan from below, to say how far a plan is from
//!   the best the model can imagine.
//!
//! All hardware numbers live in [`Figures`], one set per target; `docs/cost-model.md` cites
//! them and lists what is not modelled. Upstream tt-mlir uses no runtime estimate in its
//! layout decisions at all (its `getOpRuntime` is unused), so this goes beyond it.
//!
//! Pure: no salsa, no IO. All arithmetic is in integers and saturates, so the model is
//! deterministic and never panics.

mod cache;
mod cost;
mod figures;
mod model;
mod tensor;
mod validation;
mod work;

pub use crate::{
    cache::CostCache,
    cost::{Bound, OpCost, PlanCost},
    figures::Figures,
    model::{CostModel, OpUnit, PlanStep, UnitTensor},
    validation::{validation_table, whole_model_table},
};

#[cfg(test)]
mod tests;
