//! Executors: run a contraction's pairwise steps. The planned CPU executor runs a [`Plan`]'s
//! groups (`cpu`); the reference runs one GEMM per block pair (`reference`); the dense oracle
//! (`dense`); the device op list and its CPU interpreter (`device`); CUDA behind the `cuda`
//! feature (`cuda`, or a stand-in that says it is not compiled in).

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda_stub.rs"]
pub mod cuda;
pub mod dense;
pub mod device;
pub(crate) mod pool;

pub use pool::release_buffers;
pub mod reference;

pub use cpu::{run_step, threads_of};

use crate::block::{zeroed_buffer, DynTensor};
use crate::error::{Error, Result};
use crate::kernel::Accum;
use crate::plan::cache::spec_fingerprint;
use crate::plan::{CoefficientPlan, Input, KernelCounts, Plan, PlanCache, PlanOptions};
use crate::scalar::{monomorphic, Scalar};
use crate::spec::ContractionSpec;
use crate::step::check_operands;
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
            _ => Err(Error::UnknownExecutor {
                name: s.to_string(),
                expected: "pairwise, planned or dense".into(),
            }),
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

/// Counters of one step's execution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepStats {
    /// Block-pair GEMMs the step comprises.
    pub pair_gemms: usize,
    /// GEMM kernel calls actually issued.
    pub kernel_calls: usize,
    /// Operand blocks copied because their strides did not fit a GEMM.
    pub transposes: usize,
}

/// The entry points of this module, instantiated in this crate per element type (see
/// [`monomorphic!`](crate::scalar::monomorphic)): the public generic functions are thin
/// calls through this table.
// a table of function pointers spells out each signature
#[allow(clippy::type_complexity)]
struct Entry<T: Scalar> {
    contract_planned: Planned<T>,
    contract_dyn: Dyn<T>,
    execute: Execute<T>,
    execute_into: ExecuteInto<T>,
}

type Planned<T> = fn(
    &ContractionSpec,
    u64,
    &[&DynTensor<T>],
    T,
    &PlanCache,
    &PlanOptions,
    usize,
) -> Result<(DynTensor<T>, RunStats, Arc<Plan>)>;
type Dyn<T> =
    fn(&ContractionSpec, &[&DynTensor<T>], T, Executor) -> Result<(DynTensor<T>, RunStats)>;
type Execute<T> = fn(
    &Plan,
    &[&DynTensor<T>],
    T,
    usize,
    Option<&mut Vec<Vec<f64>>>,
) -> Result<(DynTensor<T>, RunStats, KernelCounts)>;
type ExecuteInto<T> = fn(
    &Plan,
    &[&DynTensor<T>],
    T,
    usize,
    &mut DynTensor<T>,
    Accum,
) -> Result<(RunStats, KernelCounts)>;

impl<T: Scalar> Entry<T> {
    const NEW: Self = Entry {
        contract_planned: contract_planned_here::<T>,
        contract_dyn: contract_dyn_here::<T>,
        execute: execute_here::<T>,
        execute_into: execute_into_here::<T>,
    };
}

fn entry<T: Scalar>() -> Result<&'static Entry<T>> {
    monomorphic!(T, Entry)
}

/// Contracts with the coalescing planner: the plan comes from `cache` (planned on a miss),
/// then runs on the CPU executor with `threads` threads. Partial traces are done first.
pub fn contract_planned<T: Scalar>(
    spec: &ContractionSpec,
    spec_fp: u64,
    ops: &[&DynTensor<T>],
    alpha: T,
    cache: &PlanCache,
    options: &PlanOptions,
    threads: usize,
) -> Result<(DynTensor<T>, RunStats, Arc<Plan>)> {
    (entry::<T>()?.contract_planned)(spec, spec_fp, ops, alpha, cache, options, threads)
}

/// Contracts `ops` as `spec` says, with `alpha` folded into the last step, on a block-sparse
/// executor. Partial traces are done first, block by block.
pub fn contract_dyn<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
    exec: Executor,
) -> Result<(DynTensor<T>, RunStats)> {
    (entry::<T>()?.contract_dyn)(spec, ops, alpha, exec)
}

/// Runs a plan on operands of the structure it was planned for (checked: anything else is an
/// error) into a new tensor. `times`, when given, receives each group's wall time per step
/// (sequential execution).
pub fn execute<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    times: Option<&mut Vec<Vec<f64>>>,
) -> Result<(DynTensor<T>, RunStats, KernelCounts)> {
    (entry::<T>()?.execute)(plan, ops, alpha, threads, times)
}

/// Runs a plan made by [`crate::plan::build_plan_into`] for `target`'s structure, writing in
/// place: `target = alpha * result` (`Accum::Replace`) or `target += alpha * result`
/// (`Accum::Add`). No buffer is allocated for the result.
pub fn execute_into<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    target: &mut DynTensor<T>,
    accum: Accum,
) -> Result<(RunStats, KernelCounts)> {
    (entry::<T>()?.execute_into)(plan, ops, alpha, threads, target, accum)
}

/// The operands with their partial traces done (blockwise), and the spec without them; None
/// when the spec traces nothing.
pub fn untrace<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
) -> Result<Option<(ContractionSpec, Vec<DynTensor<T>>)>> {
    let Some(reduced) = spec.without_traces() else {
        return Ok(None);
    };
    spec.validate()?;
    check_operands(spec, ops)?;
    let traces = spec.traces();
    let mut traced = Vec::with_capacity(ops.len());
    for ((t, pairs), o) in ops.iter().zip(&traces).zip(&spec.operands) {
        let names: Vec<String> = pairs
            .iter()
            .map(|&(a, _)| spec.labels[o.indices[a].label].clone())
            .collect();
        traced.push(if pairs.is_empty() {
            (*t).clone()
        } else {
            t.partial_trace(pairs, &names)?
        });
    }
    Ok(Some((reduced, traced)))
}

/// [`contract_planned`], instantiated per element type.
fn contract_planned_here<T: Scalar>(
    spec: &ContractionSpec,
    spec_fp: u64,
    ops: &[&DynTensor<T>],
    alpha: T,
    cache: &PlanCache,
    options: &PlanOptions,
    threads: usize,
) -> Result<(DynTensor<T>, RunStats, Arc<Plan>)> {
    if let Some((reduced, traced)) = untrace(spec, ops)? {
        let refs: Vec<&DynTensor<T>> = traced.iter().collect();
        let fp = spec_fingerprint(&reduced);
        return contract_planned(&reduced, fp, &refs, alpha, cache, options, threads);
    }
    let plan = cache.get_or_plan(spec, spec_fp, ops, options)?;
    let (t, stats, _) = execute(&plan, ops, alpha, threads, None)?;
    Ok((t, stats, plan))
}

/// [`contract_dyn`], instantiated per element type.
fn contract_dyn_here<T: Scalar>(
    spec: &ContractionSpec,
    ops: &[&DynTensor<T>],
    alpha: T,
    exec: Executor,
) -> Result<(DynTensor<T>, RunStats)> {
    if let Some((reduced, traced)) = untrace(spec, ops)? {
        let refs: Vec<&DynTensor<T>> = traced.iter().collect();
        return contract_dyn(&reduced, &refs, alpha, exec);
    }
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
        let t = dense::contract_dense(spec, ops, alpha)?;
        return Ok((t, RunStats::default()));
    }
    reference::contract_pairwise(spec, ops, alpha)
}

/// [`execute`], instantiated per element type.
fn execute_here<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    times: Option<&mut Vec<Vec<f64>>>,
) -> Result<(DynTensor<T>, RunStats, KernelCounts)> {
    plan.check_operands(ops)?;
    if let Some((perm, conj)) = &plan.finish {
        return Ok((
            ops[0].permuted(perm, *conj, alpha)?,
            RunStats::default(),
            KernelCounts::default(),
        ));
    }
    let last = plan.steps.len() - 1;
    // zeroed allocation: fresh pages come zeroed from the OS, so this costs no memset
    let st = &plan.steps[last];
    let mut out = zeroed_buffer(st.plan.out_len, || format!("the result {}", st.name))?;
    let (stats, counts) = run_steps(plan, ops, alpha, threads, &mut out, Accum::Replace, times)?;
    let g = &plan.steps[last].plan.geometry;
    let t = DynTensor::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        plan.steps[last].plan.out_index.clone(),
        out,
    );
    Ok((t, stats, counts))
}

/// [`execute_into`], instantiated per element type.
fn execute_into_here<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    target: &mut DynTensor<T>,
    accum: Accum,
) -> Result<(RunStats, KernelCounts)> {
    plan.check_operands(ops)?;
    if plan.output_fp != Some(target.structure_fingerprint()) || plan.steps.is_empty() {
        return Err(Error::PlanMismatch { operand: ops.len() });
    }
    let mut data = target.take_data();
    let r = run_steps(plan, ops, alpha, threads, &mut data, accum, None);
    target.restore_data(data);
    r
}

/// A buffer for step `i`'s result from the process's spare buffers, of its size: a reused
/// buffer keeps its old values (the step overwrites what it reads). For the distributed
/// executor, whose buffers travel whole.
#[cfg(feature = "mpi")]
pub(crate) fn intermediate_buffer<T: Scalar>(plan: &Plan, i: usize) -> Result<Vec<T>> {
    let mut buf = step_buffer(plan, i)?;
    buf.truncate(plan.steps[i].plan.out_len);
    Ok(buf)
}

/// A buffer for step `i`'s result inside [`run_steps`]: at least its size and not cut to it,
/// so that the spare keeps the length it was filled to. Cut, the Hubbard m = 128 `heff2`'s
/// largest intermediate came back shorter after serving a shorter step and was zero-filled
/// again (158 KB) at every call.
fn step_buffer<T: Scalar>(plan: &Plan, i: usize) -> Result<Vec<T>> {
    let st = &plan.steps[i];
    spare_at_least(st.plan.out_len, || format!("the intermediate {}", st.name))
}

/// A buffer of `len` elements from the process's spare buffers (old values kept);
/// `TooLarge` naming `what` when it cannot be allocated.
#[cfg(feature = "mpi")]
pub(crate) fn intermediate_buffer_of<T: Scalar>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut buf = spare_at_least(len, || what.to_string())?;
    buf.truncate(len);
    Ok(buf)
}

/// A spare buffer at least `len` long, as long as it was last filled when longer (old values
/// kept; only the elements past that length are zero-filled); `TooLarge` naming `what()`
/// when it cannot be allocated.
pub(crate) fn spare_at_least<T: Scalar>(
    len: usize,
    what: impl FnOnce() -> String,
) -> Result<Vec<T>> {
    let mut buf = pool::take::<T>(len);
    if buf.len() < len {
        buf.try_reserve(len - buf.len())
            .map_err(|_| Error::TooLarge {
                what: what(),
                reason: format!("cannot allocate {len} elements"),
            })?;
        buf.resize(len, T::zero());
    }
    Ok(buf)
}

/// The steps of a plan; the last writes into `out` with `accum`.
/// Step `i` of `plan` (not the last) into a buffer of its own: its result as a tensor.
fn run_intermediate<T: Scalar>(
    plan: &Plan,
    i: usize,
    (a, b): (&DynTensor<T>, &DynTensor<T>),
    threads: usize,
    timing: Option<&mut Vec<f64>>,
) -> Result<(DynTensor<T>, KernelCounts)> {
    let st = &plan.steps[i];
    let mut buf = step_buffer(plan, i)?;
    let c = run_step(
        &st.plan,
        a,
        b,
        T::one(),
        threads,
        &mut buf,
        Accum::Replace,
        timing,
    );
    let g = &st.plan.geometry;
    let t = DynTensor::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        st.plan.out_index.clone(),
        buf,
    );
    Ok((t, c))
}

/// The coefficient form of a plan, run on the CPU: its statistics as one step's.
fn run_coefficient_form<T: Scalar>(
    cf: &CoefficientPlan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    out: &mut [T],
    accum: Accum,
) -> (RunStats, KernelCounts) {
    let counts = cpu::coefficient::run_coefficient(cf, ops, alpha, threads, out, accum);
    let stats = RunStats {
        flops: cf.flops,
        steps: vec![StepStats {
            pair_gemms: cf.axpys.len(),
            kernel_calls: counts.total(),
            transposes: 0,
        }],
    };
    (stats, counts)
}

fn run_steps<T: Scalar>(
    plan: &Plan,
    ops: &[&DynTensor<T>],
    alpha: T,
    threads: usize,
    out: &mut [T],
    accum: Accum,
    mut times: Option<&mut Vec<Vec<f64>>>,
) -> Result<(RunStats, KernelCounts)> {
    // timed runs (explain's measured column) time the pairwise steps
    if let (Some(cf), None) = (&plan.coefficient, &times) {
        return Ok(run_coefficient_form(cf, ops, alpha, threads, out, accum));
    }
    let mut results: Vec<Option<DynTensor<T>>> = (0..plan.steps.len()).map(|_| None).collect();
    let mut stats = RunStats::default();
    let mut counts = KernelCounts::default();
    let last = plan.steps.len() - 1;
    for (i, st) in plan.steps.iter().enumerate() {
        let mut owned = [st.left, st.right].map(|inp| match inp {
            Input::Step(j) => results[j].take(),
            Input::Operand(_) => None,
        });
        let pick = |inp: Input, owned: &Option<DynTensor<T>>| -> Result<*const DynTensor<T>> {
            match (inp, owned) {
                (Input::Operand(k), _) => Ok(ops[k] as *const DynTensor<T>),
                (Input::Step(_), Some(t)) => Ok(t as *const DynTensor<T>),
                (Input::Step(j), None) => Err(Error::InvalidSpec {
                    reason: format!("step {i} uses step {j}'s result twice"),
                }),
            }
        };
        let (pa, pb) = (pick(st.left, &owned[0])?, pick(st.right, &owned[1])?);
        // SAFETY: the pointers refer to `ops` or to `owned`, which live until after the step.
        let (a, b) = unsafe { (&*pa, &*pb) };
        let mut t = Vec::new();
        let timing = times.is_some().then_some(&mut t);
        let c = if i == last {
            run_step(&st.plan, a, b, alpha, threads, out, accum, timing)
        } else {
            let (t, c) = run_intermediate(plan, i, (a, b), threads, timing)?;
            results[i] = Some(t);
            c
        };
        for o in owned.iter_mut().filter_map(Option::take) {
            pool::give(o.into_data());
        }
        if let Some(ts) = times.as_deref_mut() {
            ts.push(t);
        }
        stats.flops += st.plan.flops;
        stats.steps.push(StepStats {
            pair_gemms: st.plan.pairs.len(),
            kernel_calls: c.total(),
            transposes: 0,
        });
        counts.add(&c);
    }
    Ok((stats, counts))
}
