//! Runs a whole [`ContractionSpec`] as a sequence of pairwise steps.

use super::pairs::{enumerate, geometry, Conj, Src, StepDesc};
use super::pairwise::{permute, run_pairwise, StepStats};
use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::plan::cache::spec_fingerprint;
use crate::plan::{execute, Plan, PlanCache, PlanOptions};
use crate::scalar::Scalar;
use crate::spec::{ContractionSpec, Tree};
use crate::symmetry::{same_space, Flow, SpaceKind};
use std::borrow::Cow;
use std::sync::Arc;

/// Which executor runs the pairwise steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Executor {
    /// One GEMM per block pair (the reference).
    Pairwise,
    /// The coalescing planner's groups on the CPU.
    Planned,
    /// Dense arrays (small problems only; an independent oracle).
    Dense,
}

impl Executor {
    /// Parses `pairwise`, `planned` or `dense`.
    pub fn from_name(s: &str) -> Result<Self> {
        match s {
            "pairwise" => Ok(Executor::Pairwise),
            "planned" => Ok(Executor::Planned),
            "dense" => Ok(Executor::Dense),
            _ => Err(Error::InvalidContraction(format!(
                "unknown executor `{s}`; expected pairwise, planned or dense"
            ))),
        }
    }
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Executor::Pairwise => "pairwise",
            Executor::Planned => "planned",
            Executor::Dense => "dense",
        }
    }
}

/// What a contraction did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStats {
    /// Per pairwise step, in execution order.
    pub steps: Vec<StepStats>,
    /// Useful flops (2mnk summed over block pairs).
    pub flops: f64,
}

impl RunStats {
    /// Block-pair GEMMs over all steps.
    pub fn pair_gemms(&self) -> usize {
        self.steps.iter().map(|s| s.pair_gemms).sum()
    }
    /// GEMM kernel calls over all steps.
    pub fn kernel_calls(&self) -> usize {
        self.steps.iter().map(|s| s.kernel_calls).sum()
    }
}

/// Checks operands against the spec: count, ranks, annotations, and every contracted index's
/// spaces and flows. Errors name the operand, index and leg.
pub fn check_operands<T: Scalar>(spec: &ContractionSpec, ops: &[&DynTensor<T>]) -> Result<()> {
    if ops.len() != spec.operands.len() {
        return Err(Error::InvalidContraction(format!(
            "{} operands given for a contraction of {}",
            ops.len(),
            spec.operands.len()
        )));
    }
    // (operand, leg) of the first occurrence of each label
    let mut first: Vec<Option<(usize, usize)>> = vec![None; spec.labels.len()];
    for (i, (os, t)) in spec.operands.iter().zip(ops).enumerate() {
        if os.indices.len() != t.rank() {
            return Err(Error::RankMismatch {
                what: format!("operand `{}`", os.name),
                expected: os.indices.len(),
                found: t.rank(),
            });
        }
        if t.symmetry() != ops[0].symmetry() {
            return Err(Error::SymmetryMismatch {
                what: format!("operand `{}`", os.name),
                left: ops[0].symmetry().to_string(),
                right: t.symmetry().to_string(),
            });
        }
        for (leg, ix) in os.indices.iter().enumerate() {
            let lname = &spec.labels[ix.label];
            let flow = eff_flow(t.legs()[leg].flow, os.conj);
            if let Some(want) = ix.flow {
                if want != flow {
                    return Err(Error::FlowMismatch {
                        what: format!("index `{lname}` of `{}` (leg {leg})", os.name),
                        left: want,
                        right: flow,
                        hint: " (annotated vs the tensor's leg)".into(),
                    });
                }
            }
            if ix.local && t.legs()[leg].space.kind() != SpaceKind::Local {
                return Err(Error::SpaceMismatch {
                    what: format!("index `{lname}` of `{}` (leg {leg})", os.name),
                    left: "annotated `local`".into(),
                    right: format!("a block space {}", t.legs()[leg].space.describe()),
                });
            }
            match first[ix.label] {
                None => first[ix.label] = Some((i, leg)),
                Some((j, lj)) => {
                    let (a, b) = (&ops[j].legs()[lj], &t.legs()[leg]);
                    if !same_space(&a.space, &b.space) {
                        return Err(Error::SpaceMismatch {
                            what: format!(
                                "contracted index `{lname}` (`{}` vs `{}`)",
                                spec.operands[j].name, os.name
                            ),
                            left: a.space.describe(),
                            right: b.space.describe(),
                        });
                    }
                    let fa = eff_flow(a.flow, spec.operands[j].conj);
                    if fa == flow {
                        return Err(Error::FlowMismatch {
                            what: format!(
                                "contracted index `{lname}` (`{}` vs `{}`)",
                                spec.operands[j].name, os.name
                            ),
                            left: fa,
                            right: flow,
                            hint:
                                "; a contracted pair needs opposite flows (hint: conj() one side)"
                                    .into(),
                        });
                    }
                }
            }
        }
    }
    for ix in &spec.output {
        if let (Some(want), Some((j, leg))) = (ix.flow, first[ix.label]) {
            let f = eff_flow(ops[j].legs()[leg].flow, spec.operands[j].conj);
            if f != want {
                return Err(Error::FlowMismatch {
                    what: format!("output index `{}`", spec.labels[ix.label]),
                    left: want,
                    right: f,
                    hint: format!(
                        " (annotated vs its source `{}` leg {leg})",
                        spec.operands[j].name
                    ),
                });
            }
        }
    }
    Ok(())
}

fn eff_flow(f: Flow, conj: bool) -> Flow {
    if conj {
        f.dual()
    } else {
        f
    }
}

/// The step contracting two partial results by their labels: shared labels are contracted;
/// the output is `root_out` (the last step) or the left's free labels then the right's.
pub(crate) fn step_desc(
    ll: &[usize],
    lc: Conj,
    rl: &[usize],
    rc: Conj,
    root_out: Option<&[usize]>,
    names: &[String],
) -> (StepDesc, Vec<usize>) {
    let mut contracted = Vec::new();
    let mut cnames = Vec::new();
    for (i, la) in ll.iter().enumerate() {
        if let Some(j) = rl.iter().position(|x| x == la) {
            contracted.push((i, j));
            cnames.push(names.get(*la).cloned().unwrap_or_else(|| la.to_string()));
        }
    }
    let out_labels: Vec<usize> = match root_out {
        Some(o) => o.to_vec(),
        None => {
            let mut v: Vec<usize> = ll.iter().filter(|x| !rl.contains(x)).copied().collect();
            v.extend(rl.iter().filter(|x| !ll.contains(x)));
            v
        }
    };
    let src_of = |lab: usize| -> Src {
        match ll.iter().position(|&x| x == lab) {
            Some(i) => Src::A(i),
            None => Src::B(rl.iter().position(|&x| x == lab).expect("label present")),
        }
    };
    let desc = StepDesc {
        contracted,
        out: out_labels.iter().map(|&l| src_of(l)).collect(),
        conj_a: lc,
        conj_b: rc,
        names: cnames,
    };
    (desc, out_labels)
}

/// Contracts with the coalescing planner: the plan comes from `cache` (planned on a miss),
/// then runs on the CPU executor with `threads` threads.
pub fn contract_planned<T: Scalar>(
    spec: &ContractionSpec,
    spec_fp: u64,
    ops: &[&DynTensor<T>],
    alpha: T,
    cache: &PlanCache,
    options: &PlanOptions,
    threads: usize,
) -> Result<(DynTensor<T>, RunStats, Arc<Plan>)> {
    let plan = cache.get_or_plan(spec, spec_fp, ops, options)?;
    let (t, stats, _) = execute(&plan, ops, alpha, threads, None)?;
    Ok((t, stats, plan))
}

struct Partial<'a, T: Clone> {
    t: Cow<'a, DynTensor<T>>,
    labels: Vec<usize>,
    conj: Conj,
}

/// Contracts `ops` as `spec` says, with `alpha` folded into the last step, on a block-sparse executor.
pub fn contract_dyn<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
    exec: Executor,
) -> Result<(DynTensor<T>, RunStats)> {
    if exec == Executor::Planned {
        static CACHE: PlanCache = PlanCache::new();
        let (t, stats, _) = contract_planned(
            spec,
            spec_fingerprint(spec),
            ops,
            alpha,
            &CACHE,
            &PlanOptions::default(),
            1,
        )?;
        return Ok((t, stats));
    }
    spec.validate()?;
    check_operands(spec, ops)?;
    if exec == Executor::Dense {
        let t = super::dense::contract_dense(spec, ops, alpha)?;
        return Ok((t, RunStats::default()));
    }
    let tree = match &spec.tree {
        Some(t) => t.clone(),
        None => Tree::left_to_right(ops.len()).expect("validated: at least one operand"),
    };
    let mut stats = RunStats::default();
    let out_labels: Vec<usize> = spec.output.iter().map(|i| i.label).collect();
    let p = eval(&tree, spec, ops, Some(&out_labels), alpha, exec, &mut stats)?;
    if p.labels == out_labels && p.conj == Conj::No {
        return Ok((p.t.into_owned(), stats));
    }
    // single operand: a permutation (and conjugation, scaling)
    let perm: Vec<usize> = out_labels
        .iter()
        .map(|l| {
            p.labels
                .iter()
                .position(|x| x == l)
                .expect("validated labels")
        })
        .collect();
    Ok((permute(&p.t, &perm, p.conj, alpha), stats))
}

fn eval<'a, T: Scalar>(
    tree: &Tree,
    spec: &ContractionSpec,
    ops: &[&'a DynTensor<T>],
    root_out: Option<&[usize]>,
    alpha: T,
    exec: Executor,
    stats: &mut RunStats,
) -> Result<Partial<'a, T>> {
    let (l, r) = match tree {
        Tree::Leaf(i) => {
            return Ok(Partial {
                t: Cow::Borrowed(ops[*i]),
                labels: spec.operands[*i].indices.iter().map(|x| x.label).collect(),
                conj: Conj::from_bool(spec.operands[*i].conj),
            })
        }
        Tree::Node(l, r) => (l, r),
    };
    let pl = eval(l, spec, ops, None, alpha, exec, stats)?;
    let pr = eval(r, spec, ops, None, alpha, exec, stats)?;
    let (desc, out_labels) = step_desc(
        &pl.labels,
        pl.conj,
        &pr.labels,
        pr.conj,
        root_out,
        &spec.labels,
    );
    let step_alpha = if root_out.is_some() { alpha } else { T::one() };
    let g = geometry(&pl.t, &pr.t, &desc)?;
    let list = enumerate(&pl.t, &pr.t, &g);
    stats.flops += list.pairs.iter().map(|p| p.flops()).sum::<f64>();
    let (t, s) = match exec {
        Executor::Pairwise | Executor::Planned | Executor::Dense => {
            run_pairwise(&pl.t, &pr.t, &g, &list, step_alpha)
        }
    };
    stats.steps.push(s);
    Ok(Partial {
        t: Cow::Owned(t),
        labels: out_labels,
        conj: Conj::No,
    })
}
