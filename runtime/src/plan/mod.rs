//! The coalescing planner: block pairs -> groups (single, batched, free-axis, contraction-axis,
//! rectangle) by a calibrated cost model; output layouts; the pairwise order; a plan cache.

pub mod cache;
pub mod calibrate;
pub mod coefficient;
mod coefficient_chain;
mod coefficient_plan;
mod coefficient_terms;
pub mod cost;
mod explain;
mod family;
pub mod group;
pub mod kernel_choice;
mod keys;
mod layout;
mod members;
pub mod options;
pub mod order;
mod price;
mod reach;
pub mod step;
mod step_plan;

pub use cache::{fingerprint, CacheStats, PlanCache};
pub use coefficient::CoefficientPlan;
pub use cost::CostModel;
pub use group::{Access, Group, GroupKind, KernelCounts, Member, Place, Reach, SplitAt};
pub use layout::{THIN_MAX_K, THIN_MAX_R};
pub use options::{PlanOptions, Policy, TIE};
pub use step::{plan_step, plan_step_with, OperandPlan, StepPlan};
pub use step_plan::Components;

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::{monomorphic, Conj, Scalar};
use crate::spec::{permutation, ContractionSpec, Tree};
use crate::step::{check_operands, step_desc};
use std::sync::Arc;
use std::time::Instant;

/// Where a step's operand comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// An operand of the contraction.
    Operand(usize),
    /// The result of an earlier step.
    Step(usize),
}

/// One step of a network plan.
#[derive(Debug, Clone)]
pub struct PlannedStep {
    /// The step's plan.
    pub plan: StepPlan,
    /// Left input.
    pub left: Input,
    /// Right input.
    pub right: Input,
    /// `(a*b)`-style name.
    pub name: String,
    /// Labels of the step's output legs.
    pub labels: Vec<usize>,
}

/// The plan of a whole contraction: its pairwise steps in execution order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The steps.
    pub steps: Vec<PlannedStep>,
    /// The pairwise order used.
    pub tree: Tree,
    /// Whether the order came from the user (parentheses, a workload's `order`).
    pub order_given: bool,
    /// For a single operand: the permutation and conjugation that make the result.
    pub finish: Option<(Vec<usize>, Conj)>,
    /// Time spent planning, seconds.
    pub plan_s: f64,
    /// The options planned with.
    pub options: PlanOptions,
    /// Structure fingerprints of the operands planned for.
    operand_fps: Vec<u64>,
    /// The structure fingerprint of the target the last step writes into, if planned so.
    pub(crate) output_fp: Option<u64>,
    /// The coefficient form, where chosen: the CPU executor runs it instead of the steps
    /// (which the other executors run, and which give the output's structure).
    pub coefficient: Option<Arc<CoefficientPlan>>,
}

impl Plan {
    /// Checks that `ops` have the block structure (legs, charges, blocks, layouts, element
    /// type) this plan was made for; running a plan on anything else is refused.
    pub fn check_operands<T: Scalar>(&self, ops: &[&DynTensor<T>]) -> Result<()> {
        if ops.len() != self.operand_fps.len() {
            return Err(Error::OperandCount {
                expected: self.operand_fps.len(),
                found: ops.len(),
            });
        }
        for (i, (t, fp)) in ops.iter().zip(&self.operand_fps).enumerate() {
            if t.structure_fingerprint() != *fp {
                return Err(Error::PlanMismatch { operand: i });
            }
        }
        Ok(())
    }

    /// Approximate memory held by the plan, in bytes (what a plan cache counts).
    pub fn approx_bytes(&self) -> usize {
        use std::mem::size_of;
        let mut b = size_of::<Plan>();
        for st in &self.steps {
            let p = &st.plan;
            // the keys (shared, reference-counted) and two lists of pointers to them
            b += p.out_keys.iter().map(|k| k.len() * 4 + 16).sum::<usize>();
            b += 2 * p.out_keys.len() * size_of::<crate::block::BlockKey>();
            b += p.pairs.len() * size_of::<crate::step::PairGemm>();
            // the layouts, in the shared block index, with its key map
            b += p
                .out_index
                .blocks()
                .iter()
                .map(|x| {
                    let spilled = if x.layout.dims.spilled() {
                        16 * x.layout.dims.len()
                    } else {
                        0
                    };
                    size_of::<crate::view::Layout>() + spilled
                })
                .sum::<usize>();
            b += 32 * p.out_keys.len();
            b += p.c_mats.len() * size_of::<Option<crate::view::MatShape>>();
            for o in &p.operands {
                b += o.mats.len() * size_of::<Option<crate::view::MatShape>>();
                b += o.splits.len() * size_of::<(u32, crate::view::SplitShape)>();
                b += (o.offsets.len() + o.cache.len()) * 16;
            }
            for g in &p.groups {
                b += size_of::<Group>() + g.pairs.len() * 4;
                b += g.place_list.len() * size_of::<Place>();
            }
            b += p.components.approx_bytes();
            b += p.zero_blocks.len() * 4;
            b += p.packs.approx_bytes() + p.c_pack.len() * 4;
            b += p.members.len() * size_of::<group::Member>() + p.c_offsets.len() * 8;
            b += (p.splits.len() + p.thin.len()) * size_of::<SplitAt>();
            // shared with the plans made from this one: counted in each
            b += p.keys.approx_bytes();
            b += p
                .operands
                .iter()
                .map(|o| o.block_pack.len() * 4)
                .sum::<usize>();
        }
        b + self.coefficient.as_ref().map_or(0, |c| c.approx_bytes())
    }

    /// The result's structure (legs, charge, blocks, layouts) with no buffer; an error for a
    /// plan without pairwise steps.
    pub fn output_skeleton<T: Scalar>(&self) -> Result<DynTensor<T>> {
        let last = self.steps.last().ok_or_else(|| Error::EmptyPlan {
            executor: "planned".into(),
        })?;
        let g = &last.plan.geometry;
        Ok(DynTensor::from_shared(
            g.out_legs.clone(),
            g.symmetry.clone(),
            g.out_charge.clone(),
            last.plan.out_index.clone(),
            Vec::new(),
        ))
    }

    /// Block-pair GEMMs over all steps.
    pub fn pair_gemms(&self) -> usize {
        self.steps.iter().map(|s| s.plan.pairs.len()).sum()
    }
    /// Kernel calls over all steps.
    pub fn kernel_calls(&self) -> usize {
        self.steps.iter().map(|s| s.plan.kernel_calls()).sum()
    }
    /// Useful flops over all steps.
    pub fn flops(&self) -> f64 {
        self.steps.iter().map(|s| s.plan.flops).sum()
    }
    /// Kernel calls per kind.
    pub fn counts(&self) -> KernelCounts {
        let mut c = KernelCounts::default();
        for s in &self.steps {
            for g in &s.plan.groups {
                c.by_kind[g.kind as usize] += g.kernel_calls();
                c.pairs += g.pairs.len();
            }
        }
        c
    }
}

struct Partial<T: Scalar> {
    skel: DynTensor<T>,
    labels: Vec<usize>,
    conj: Conj,
    input: Input,
    name: String,
}

/// Plans `spec` on the operands' block structure (values are not read).
pub fn build_plan<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    options: &PlanOptions,
) -> Result<Plan> {
    (entry::<T>()?.build_plan)(spec, ops, options)
}

/// Plans `spec` so that its last step writes in place into `target`'s buffer, with
/// `target`'s blocks and layouts (for `=` and `+=`); None when that cannot be (a single
/// operand, or `target` lacks a block the contraction produces). The target's legs and
/// charge must have been checked against the result's.
pub fn build_plan_into<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    target: &DynTensor<T>,
    options: &PlanOptions,
) -> Result<Option<Plan>> {
    (entry::<T>()?.build_plan_into)(spec, ops, target, options)
}

/// The planner's entry points, instantiated in this crate per element type (see
/// [`monomorphic!`](crate::scalar::monomorphic)).
// a table of function pointers spells out each signature
#[allow(clippy::type_complexity)]
struct Entry<T: Scalar> {
    build_plan: fn(&ContractionSpec, &[&DynTensor<T>], &PlanOptions) -> Result<Plan>,
    build_plan_into:
        fn(&ContractionSpec, &[&DynTensor<T>], &DynTensor<T>, &PlanOptions) -> Result<Option<Plan>>,
    get_or_plan:
        fn(&PlanCache, &ContractionSpec, u64, &[&DynTensor<T>], &PlanOptions) -> Result<Arc<Plan>>,
    get_or_plan_into: fn(
        &PlanCache,
        &ContractionSpec,
        u64,
        &[&DynTensor<T>],
        &DynTensor<T>,
        &PlanOptions,
    ) -> Result<Option<Arc<Plan>>>,
}

impl<T: Scalar> Entry<T> {
    const NEW: Self = Entry {
        build_plan: |spec, ops, options| {
            build(spec, ops, options, None, None)?.ok_or_else(|| Error::InvalidSpec {
                reason: "a plan without a fixed output has no output".into(),
            })
        },
        build_plan_into: |spec, ops, target, options| build(spec, ops, options, Some(target), None),
        get_or_plan: cache::get_or_plan_here::<T>,
        get_or_plan_into: cache::get_or_plan_into_here::<T>,
    };
}

fn entry<T: Scalar>() -> Result<&'static Entry<T>> {
    monomorphic!(T, Entry)
}

/// Plans `spec` on `ops` (into `target`'s layout when given). With `template`, a plan of the
/// same spec for operands (and target) with the same sectors and blocks: its order and its
/// grouping decisions are reused, and only sizes, layouts and prices recomputed.
fn build<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    options: &PlanOptions,
    target: Option<&DynTensor<T>>,
    template: Option<&Plan>,
) -> Result<Option<Plan>> {
    let t0 = Instant::now();
    spec.validate()?;
    refuse_traces(spec)?;
    check_operands(spec, ops)?;
    let mut parts = leaves(spec, ops);
    let out_labels = spec.output_labels();
    let (tree, order_given) = choose_order(spec, &parts, &out_labels, template, options)?;
    let mut steps = Vec::new();
    let root = tree.fold(
        &mut |i| {
            let p = parts[i].take().ok_or_else(|| Error::InvalidSpec {
                reason: format!("the order uses operand {i} twice"),
            })?;
            Ok(Some(p))
        },
        &mut |pl, pr, root| {
            let (Some(pl), Some(pr)) = (pl, pr) else {
                return Ok(None);
            };
            let root_out = root.then_some(out_labels.as_slice());
            let fixed = if root { target } else { None };
            let like = template
                .and_then(|tp| tp.steps.get(steps.len()))
                .map(|s| &s.plan);
            let node = Node {
                root_out,
                fixed,
                like,
            };
            plan_node(pl, pr, node, &mut steps, options, &spec.labels)
        },
    )?;
    let Some(root) = root else {
        return Ok(None);
    };
    let Some(finish) = finish_of(&root, &steps, &out_labels, target.is_some())? else {
        return Ok(None);
    };
    let coefficient =
        coefficient::choose_coefficient_form(spec, ops, &steps, options).map(Arc::new);
    Ok(Some(Plan {
        coefficient,
        steps,
        tree,
        order_given,
        finish,
        plan_s: t0.elapsed().as_secs_f64(),
        options: *options,
        operand_fps: ops.iter().map(|t| t.structure_fingerprint()).collect(),
        output_fp: target.map(|t| t.structure_fingerprint()),
    }))
}

/// The order of the pairwise steps and whether the spec gave it: the spec's own, else the
/// template's, else the cost model's ([`auto_order`]).
fn choose_order<T: Scalar>(
    spec: &ContractionSpec,
    parts: &[Option<Partial<T>>],
    out_labels: &[usize],
    template: Option<&Plan>,
    options: &PlanOptions,
) -> Result<(Tree, bool)> {
    Ok(match (&spec.tree, template) {
        (Some(t), _) => (t.clone(), true),
        (None, Some(tp)) => (tp.tree.clone(), false),
        (None, None) => (auto_order(parts, out_labels, spec, options)?, false),
    })
}

/// The tree's leaves: one partial result per operand, its structure and labels.
fn leaves<T: Scalar>(spec: &ContractionSpec, ops: &[&DynTensor<T>]) -> Vec<Option<Partial<T>>> {
    spec.operands
        .iter()
        .enumerate()
        .map(|(i, o)| {
            Some(Partial {
                skel: ops[i].skeleton(),
                labels: spec.operand_labels(i),
                conj: o.conj,
                input: Input::Operand(i),
                name: o.name.clone(),
            })
        })
        .collect()
}

/// A plan without pairwise steps (one operand) finishes with a permutation of it; `None`
/// (the outer option) when it would have to write into a target, which it cannot.
#[allow(clippy::type_complexity)]
fn finish_of<T: Scalar>(
    root: &Partial<T>,
    steps: &[PlannedStep],
    out_labels: &[usize],
    into_target: bool,
) -> Result<Option<Option<(Vec<usize>, Conj)>>> {
    if !steps.is_empty() {
        return Ok(Some(None));
    }
    if into_target {
        return Ok(None);
    }
    Ok(Some(Some((
        permutation(&root.labels, out_labels)?,
        root.conj,
    ))))
}

/// A plan takes no partial traces (they are done before planning, see `exec::untrace`).
fn refuse_traces(spec: &ContractionSpec) -> Result<()> {
    match spec
        .traces()
        .iter()
        .enumerate()
        .find(|(_, p)| !p.is_empty())
    {
        Some((i, pairs)) => Err(Error::InvalidSpec {
            reason: format!(
                "operand {i} ({}) traces its axes {:?}; a plan takes no traces: take them first \
                 (DynTensor::partial_trace, or contract_dyn, which does)",
                spec.operands[i].name, pairs
            ),
        }),
        None => Ok(()),
    }
}

/// The pairwise order the cost model predicts fastest (no order given).
fn auto_order<T: Scalar>(
    parts: &[Option<Partial<T>>],
    out_labels: &[usize],
    spec: &ContractionSpec,
    options: &PlanOptions,
) -> Result<Tree> {
    let leaves: Vec<order::Leaf<'_, T>> = parts
        .iter()
        .flatten()
        .map(|p| order::Leaf {
            skel: &p.skel,
            labels: &p.labels,
            conj: p.conj,
        })
        .collect();
    order::choose_order(&leaves, out_labels, &spec.labels, &options.model)
}

/// Where a step sits: the output labels when it is the root, the target it writes into, and
/// a template of it.
struct Node<'x, T: Scalar> {
    root_out: Option<&'x [usize]>,
    fixed: Option<&'x DynTensor<T>>,
    like: Option<&'x StepPlan>,
}

/// Plans the step joining two partial results; its output's structure is the next partial.
fn plan_node<T: Scalar>(
    pl: Partial<T>,
    pr: Partial<T>,
    node: Node<'_, T>,
    steps: &mut Vec<PlannedStep>,
    options: &PlanOptions,
    names: &[String],
) -> Result<Option<Partial<T>>> {
    let (desc, labels) = step_desc(
        &pl.labels,
        pl.conj,
        &pr.labels,
        pr.conj,
        node.root_out,
        names,
    );
    let made = step::plan_step_like(&pl.skel, &pr.skel, &desc, options, node.fixed, node.like)?;
    let Some(plan) = made else {
        return Ok(None);
    };
    let g = &plan.geometry;
    let skel = DynTensor::<T>::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        plan.out_index.clone(),
        Vec::new(),
    );
    let name = format!("({}*{})", pl.name, pr.name);
    steps.push(PlannedStep {
        plan,
        left: pl.input,
        right: pr.input,
        name: name.clone(),
        labels: labels.clone(),
    });
    Ok(Some(Partial {
        skel,
        labels,
        conj: Conj::No,
        input: Input::Step(steps.len() - 1),
        name,
    }))
}
