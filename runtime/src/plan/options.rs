//! What the planner may do: the group kinds allowed, how they are chosen, the cost model.

use super::cost::CostModel;
use super::group::GroupKind;

/// Predicted times within this fraction count as a tie, broken towards fewer kernel calls
/// (a launch is cheap on a CPU but costs microseconds on a GPU).
pub const TIE: f64 = 0.02;

/// Whether a group kind is chosen by the cost model, always when possible, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Coalesce where the cost model predicts a gain.
    CostModel,
    /// Coalesce wherever the kind applies (tests, comparisons).
    Always,
}

/// What the planner may do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanOptions {
    /// Batched groups allowed.
    pub batched: bool,
    /// Free-axis groups allowed.
    pub free_axis: bool,
    /// Contraction-axis groups allowed.
    pub contraction_axis: bool,
    /// Fully populated rectangles allowed.
    pub rectangle: bool,
    /// Grouped calls (pairs of different shapes, different outputs) allowed.
    pub grouped: bool,
    /// How kinds are chosen.
    pub policy: Policy,
    /// The coefficient form (R/A/B/C, `plan/coefficient.rs`): chosen by the cost model, wherever it
    /// applies, or (None) never.
    pub coefficient_form: Option<Policy>,
    /// The cost model's constants.
    pub model: CostModel,
}

impl Default for PlanOptions {
    /// Every kind allowed, chosen by this machine's calibrated cost model.
    fn default() -> Self {
        PlanOptions {
            batched: true,
            free_axis: true,
            contraction_axis: true,
            rectangle: true,
            grouped: true,
            policy: Policy::CostModel,
            coefficient_form: Some(Policy::CostModel),
            model: CostModel::calibrated(),
        }
    }
}

impl PlanOptions {
    /// Only single GEMMs: the per-pair plan.
    pub fn uncoalesced() -> Self {
        PlanOptions {
            batched: false,
            free_axis: false,
            contraction_axis: false,
            rectangle: false,
            grouped: false,
            coefficient_form: None,
            ..Self::default()
        }
    }
    /// Exactly one kind forced on wherever it applies (plus singles), with default constants.
    pub fn only(kind: GroupKind) -> Self {
        PlanOptions {
            batched: kind == GroupKind::Batched,
            free_axis: kind == GroupKind::FreeAxis,
            contraction_axis: kind == GroupKind::ContractionAxis,
            rectangle: kind == GroupKind::Rectangle,
            grouped: kind == GroupKind::Grouped,
            policy: Policy::Always,
            coefficient_form: None,
            model: CostModel::default(),
        }
    }
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut h = 0u64;
        for (i, b) in [
            self.batched,
            self.free_axis,
            self.contraction_axis,
            self.rectangle,
            self.grouped,
        ]
        .iter()
        .enumerate()
        {
            h |= (*b as u64) << i;
        }
        let mut f = crate::hash::Fx::default();
        let coef = match self.coefficient_form {
            None => 0u64,
            Some(Policy::CostModel) => 1,
            Some(Policy::Always) => 2,
        };
        f.write(h | ((self.policy == Policy::Always) as u64) << 8 | coef << 9);
        for x in self.model.to_array() {
            f.write(x.to_bits());
        }
        f.finish()
    }
}
