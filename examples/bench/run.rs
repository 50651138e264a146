//! Measuring one workload: every executor's repeats interleaved, the peer alternating.

use crate::Args;
use blockcontract::exec::execute;
use blockcontract::plan::cache::spec_fingerprint;
use blockcontract::plan::{PlanOptions, Policy};
use blockcontract::workload::{checksum, Workload};
use blockcontract::{contract_dyn, DType, DynTensor, Error, Executor, PlanCache, Result, Scalar};
use num_complex::Complex64;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// What runs a workload: an executor, with the workload's pairwise order or one chosen by the
/// planner (`planned-auto`, or any executor under `--order auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runner {
    pub exec: Executor,
    pub auto_order: bool,
    /// The planner's coefficient-form policy: by cost and the executor's trial (`planned`),
    /// never (`planned-steps`: the pairwise steps) or forced where it applies (`planned-form`).
    pub form: Option<Policy>,
}

impl Runner {
    /// `planned`, `pairwise`, `dense`, `planned-auto`, `planned-steps` or `planned-form`;
    /// `auto` applies the order everywhere.
    pub fn parse(name: &str, auto: bool) -> Result<Runner> {
        let planned = |auto_order, form| Runner {
            exec: Executor::Planned,
            auto_order,
            form,
        };
        let cost = PlanOptions::default().coefficient_form;
        match name {
            "planned-auto" => Ok(planned(true, cost)),
            "planned-steps" => Ok(planned(auto, None)),
            "planned-form" => Ok(planned(auto, Some(Policy::Always))),
            _ => Ok(Runner {
                exec: Executor::from_name(name).map_err(|_| Error::UnknownExecutor {
                    name: name.into(),
                    expected: "planned, planned-auto, planned-steps, planned-form, pairwise or \
                               dense"
                        .into(),
                })?,
                auto_order: auto,
                form: cost,
            }),
        }
    }
    /// The name printed and looked up.
    pub fn name(&self) -> String {
        match (self.exec, self.auto_order, self.form) {
            (Executor::Planned, _, None) => "planned-steps".into(),
            (Executor::Planned, _, Some(Policy::Always)) => "planned-form".into(),
            (Executor::Planned, true, _) => "planned-auto".into(),
            (e, _, _) => e.name().into(),
        }
    }
    /// The planner's options for this runner.
    pub fn options(&self) -> PlanOptions {
        PlanOptions {
            coefficient_form: self.form,
            ..PlanOptions::default()
        }
    }
}

/// One executor's results on one workload.
pub struct Outcome {
    pub executor: Runner,
    pub blocks: Vec<(String, usize)>,
    pub pair_gemms: usize,
    pub kernel_calls: usize,
    pub steps: usize,
    pub flops: f64,
    pub times_ms: Vec<f64>,
    pub norm: f64,
    pub checksum: f64,
    pub plan_ms: Option<f64>,
    pub cached_us: Option<f64>,
    /// On a structure near this one (`Workload::near`: sector dimensions moved by at most
    /// one): planning from this plan as a template, the first call (that planning and a
    /// run) and a second, cached, call, ms (medians).
    pub near_ms: Option<(f64, f64, f64)>,
    /// The plan's GEMMs alone (each group's shape, or each member's, run by faer on
    /// contiguous row-major buffers, best of three): what the contraction costs with no
    /// packing, scattering or bookkeeping.
    pub gemm_ms: Option<f64>,
    /// The plan's floor on this machine, ms: per step, the larger of its useful flops at the
    /// dense peak and the time to read its two inputs and write its output once (measured
    /// in step order on buffers of their sizes, best of five), summed over the steps. No
    /// code that runs these steps, each result materialized, can be faster.
    pub floor_ms: Option<f64>,
    pub error: Option<String>,
}

impl Outcome {
    pub fn median(&self) -> f64 {
        stats3(&self.times_ms).1
    }
}

/// Everything measured on one workload.
pub struct Measured {
    pub name: String,
    pub outcomes: Vec<Outcome>,
    pub explain: Option<String>,
    pub peer_ms: Option<f64>,
    pub peer_check: Option<(f64, f64)>,
}

impl Measured {
    pub fn get(&self, exec: &str) -> Option<&Outcome> {
        self.outcomes
            .iter()
            .find(|o| o.executor.name() == exec && o.error.is_none())
    }
}

pub fn stats3(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

/// The dense-GEMM peak of this machine, one thread (faer, 768^3, best of several).
pub fn peak_gflops() -> f64 {
    blockcontract::plan::calibrate::dense_gemm_gflops(768)
}

/// Runs the peer harness once: (median ms, norm, checksum).
fn run_peer(peer: &Path, file: &Path, threads: usize) -> Result<(f64, f64, f64)> {
    let out = Command::new("bash")
        .arg(peer)
        .arg(file)
        .arg(threads.to_string())
        .arg("3")
        .output()
        .map_err(|e| Error::Io {
            path: peer.display().to_string(),
            reason: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let bad = |why: &str| Error::Io {
        path: peer.display().to_string(),
        reason: format!(
            "{why}: {}{}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
    };
    if !out.status.success() {
        return Err(bad("peer failed"));
    }
    let line = text.lines().last().ok_or_else(|| bad("no output"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .ok_or_else(|| bad("unexpected output"))
    };
    Ok((num(1)?, num(2)?, num(3)?))
}

/// `peak`: the dense GEMM peak measured in this run (GFLOP/s), for the plan's floor.
pub fn measure(
    w: &Workload,
    file: &Path,
    execs: &[Runner],
    args: &Args,
    peak: Option<f64>,
) -> Result<Measured> {
    match w.dtype {
        DType::F64 => measure_typed::<f64>(w, file, execs, args, peak),
        DType::F32 => measure_typed::<f32>(w, file, execs, args, peak),
        DType::C64 => measure_typed::<Complex64>(w, file, execs, args, peak),
    }
}

fn measure_typed<T: Scalar>(
    w: &Workload,
    file: &Path,
    execs: &[Runner],
    args: &Args,
    peak: Option<f64>,
) -> Result<Measured> {
    let ops = w.build_operands::<T>()?;
    let refs: Vec<&DynTensor<T>> = ops.iter().collect();
    let blocks: Vec<(String, usize)> = w
        .contraction
        .operands
        .iter()
        .zip(&ops)
        .map(|(o, t)| (o.name.clone(), t.num_blocks()))
        .collect();
    let cache = PlanCache::new();
    let opts = PlanOptions::default();
    let given = w.contraction.clone();
    let mut auto = w.contraction.clone();
    auto.tree = None;
    let spec_of = |r: Runner| if r.auto_order { &auto } else { &given };
    let threads = args.threads.max(1);
    // one call of an executor: (result, pair GEMMs, kernel calls, steps, flops)
    let call = |r: Runner| -> Result<(DynTensor<T>, usize, usize, usize, f64)> {
        let spec = spec_of(r);
        match r.exec {
            Executor::Planned => {
                let plan = cache.get_or_plan(spec, spec_fingerprint(spec), &refs, &r.options())?;
                let (t, s, c) = execute(&plan, &refs, T::one(), threads, None)?;
                Ok((t, s.pair_gemms(), c.total(), s.steps.len(), s.flops))
            }
            e => {
                let (t, s) = contract_dyn(spec, &refs, T::one(), e)?;
                Ok((t, s.pair_gemms(), s.kernel_calls(), s.steps.len(), s.flops))
            }
        }
    };
    let mut outs: Vec<Outcome> = Vec::new();
    for &e in execs {
        let mut o = Outcome {
            executor: e,
            blocks: blocks.clone(),
            pair_gemms: 0,
            kernel_calls: 0,
            steps: 0,
            flops: 0.0,
            times_ms: Vec::new(),
            norm: f64::NAN,
            checksum: f64::NAN,
            plan_ms: None,
            cached_us: None,
            near_ms: None,
            gemm_ms: None,
            floor_ms: None,
            error: None,
        };
        if e.exec == Executor::Planned {
            let (spec, fp) = (spec_of(e), spec_fingerprint(spec_of(e)));
            let t0 = Instant::now();
            let eo = e.options();
            let plan = cache.get_or_plan(spec, fp, &refs, &eo)?;
            o.plan_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
            let n = 2000;
            let t0 = Instant::now();
            for _ in 0..n {
                std::hint::black_box(cache.get_or_plan(spec, fp, &refs, &eo)?);
            }
            o.cached_us = Some(t0.elapsed().as_secs_f64() * 1e6 / n as f64);
            o.gemm_ms = Some(gemms_alone_ms::<T>(&plan));
            o.floor_ms = peak.map(|p| floor_ms(&plan, &refs, p));
            o.near_ms = Some(near_call_ms::<T>(w, spec, &refs, threads)?);
        }
        // warm-up, and the result that is checked
        match call(e) {
            Ok((t, p, k, s, f)) => {
                o.norm = t.norm();
                o.checksum = checksum(&t);
                (o.pair_gemms, o.kernel_calls, o.steps, o.flops) = (p, k, s, f);
            }
            Err(err) => o.error = Some(err.to_string()),
        }
        outs.push(o);
    }
    // timed repeats, interleaved across executors; the peer alternates with our halves
    let mut peer: Vec<(f64, f64, f64)> = Vec::new();
    for r in 0..args.repeat {
        if r == args.repeat / 2 {
            if let Some(p) = &args.peer {
                peer.push(run_peer(p, file, threads)?);
            }
        }
        for o in outs.iter_mut().filter(|o| o.error.is_none()) {
            let t0 = Instant::now();
            let res = call(o.executor)?;
            o.times_ms.push(t0.elapsed().as_secs_f64() * 1e3);
            drop(res);
        }
    }
    if let Some(p) = &args.peer {
        peer.push(run_peer(p, file, threads)?);
    }
    let explain = if args.explain && execs.iter().any(|r| r.exec == Executor::Planned) {
        let plan = cache.get_or_plan(&given, spec_fingerprint(&given), &refs, &opts)?;
        let mut times = Vec::new();
        execute(&plan, &refs, T::one(), 1, Some(&mut times))?;
        Some(plan.explain_with(Some(&times), 6))
    } else {
        None
    };
    let peer_ms =
        (!peer.is_empty()).then(|| stats3(&peer.iter().map(|p| p.0).collect::<Vec<_>>()).0);
    let peer_check = peer.first().map(|p| (p.1, p.2));
    Ok(Measured {
        name: w.name.clone(),
        outcomes: outs,
        explain,
        peer_ms,
        peer_check,
    })
}

/// A structure near the workload's, called twice in a fresh cache holding the workload's
/// plan: the first call plans from that plan and runs, the second finds its plan cached.
/// Medians of five of (planning, first call, second call), ms.
fn near_call_ms<T: Scalar>(
    w: &Workload,
    spec: &blockcontract::ContractionSpec,
    refs: &[&DynTensor<T>],
    threads: usize,
) -> Result<(f64, f64, f64)> {
    let near = w.near(0x6e65_6172)?;
    let ops = near.build_operands::<T>()?;
    let nrefs: Vec<&DynTensor<T>> = ops.iter().collect();
    let (opts, fp) = (PlanOptions::default(), spec_fingerprint(spec));
    let mut ms = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..5 {
        let cache = PlanCache::new();
        cache.get_or_plan(spec, fp, refs, &opts)?;
        for call in 0..2 {
            let t0 = Instant::now();
            let plan = cache.get_or_plan(spec, fp, &nrefs, &opts)?;
            let planned = t0.elapsed().as_secs_f64() * 1e3;
            std::hint::black_box(execute(&plan, &nrefs, T::one(), threads, None)?);
            if call == 0 {
                ms[0].push(planned);
            }
            ms[call + 1].push(t0.elapsed().as_secs_f64() * 1e3);
        }
        if cache.stats().templated != 1 {
            return Err(Error::InvalidSpec {
                reason: format!(
                    "{}: the near structure was not planned from a template",
                    w.name
                ),
            });
        }
    }
    let [plan, first, cached] = ms.map(|v| stats3(&v).1);
    Ok((plan, first, cached))
}

pub fn print(w: &Workload, o: &Outcome, agrees: Option<bool>, json: bool) {
    let (min, med, max) = stats3(&o.times_ms);
    if let Some(e) = &o.error {
        eprintln!("{}: {}: {e}", w.name, o.executor.name());
        return;
    }
    if json {
        let blocks: serde_json::Map<String, serde_json::Value> = o
            .blocks
            .iter()
            .map(|(n, b)| (n.clone(), (*b).into()))
            .collect();
        let line = serde_json::json!({
            "name": w.name, "executor": o.executor.name(), "blocks": blocks,
            "pair_gemms": o.pair_gemms, "kernel_calls": o.kernel_calls, "steps": o.steps,
            "flops": o.flops, "gflops": o.flops / (med * 1e-3) / 1e9,
            "time_ms": {"min": min, "median": med, "max": max},
            "plan_ms": o.plan_ms, "cached_overhead_us": o.cached_us,
            "near_plan_ms": o.near_ms.map(|x| x.0), "near_first_call_ms": o.near_ms.map(|x| x.1),
            "near_cached_call_ms": o.near_ms.map(|x| x.2),
            "norm": o.norm, "checksum": o.checksum, "matches_expected": agrees,
        });
        println!("{line}");
    } else {
        let plan = match (o.plan_ms, o.cached_us, o.near_ms) {
            (Some(p), Some(c), Some((np, first, cached))) => format!(
                "  plan {p:.2} ms, cached {c:.2} us ({:.2} us/step), near structure: plan {np:.2} ms, first call / cached {:.2}",
                c / o.steps.max(1) as f64,
                first / cached
            ),
            _ => String::new(),
        };
        println!(
            "{:<28} {:<9} pairs {:>5} calls {:>5} {:>8.3} ms (min {:.3}, max {:.3}) {:>6.1} GFLOP/s  norm {:.10e} checksum {:.10e} {}{}",
            w.name,
            o.executor.name(),
            o.pair_gemms,
            o.kernel_calls,
            med,
            min,
            max,
            o.flops / (med * 1e-3) / 1e9,
            o.norm,
            o.checksum,
            match agrees {
                Some(true) => "ok",
                Some(false) => "MISMATCH",
                None => "(no expected)",
            },
            plan
        );
    }
}

/// The time of a plan's GEMMs alone, on contiguous buffers of their shapes (best of three
/// per shape), in ms.
pub fn gemms_alone_ms<T: Scalar>(plan: &blockcontract::Plan) -> f64 {
    use blockcontract::kernel::{gemm, Accum, RawMat, RawMatMut};
    use blockcontract::view::MatShape;
    let mut shapes: Vec<(usize, usize, usize)> = Vec::new();
    for st in &plan.steps {
        for g in &st.plan.groups {
            if g.is_members() {
                shapes.extend(g.pairs.iter().map(|&p| {
                    let x = st.plan.pairs[p as usize];
                    (x.m, x.n, x.k)
                }));
            } else {
                shapes.push((g.m, g.n, g.k));
            }
        }
    }
    let mut total = 0.0;
    let mut memo: std::collections::HashMap<(usize, usize, usize), f64> = Default::default();
    for s in shapes {
        let t = *memo.entry(s).or_insert_with(|| {
            let (m, n, k) = s;
            let a = vec![T::from_f64(0.5); m * k];
            let b = vec![T::from_f64(0.25); k * n];
            let mut c = vec![T::zero(); m * n];
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let t0 = Instant::now();
                // SAFETY: the buffers hold exactly the row-major matrices described.
                unsafe {
                    gemm(
                        RawMatMut::new(c.as_mut_ptr(), MatShape::row_major(m, n)),
                        Accum::Replace,
                        RawMat::new(a.as_ptr(), MatShape::row_major(m, k)),
                        RawMat::new(b.as_ptr(), MatShape::row_major(k, n)),
                        T::one(),
                    )
                };
                std::hint::black_box(&mut c);
                best = best.min(t0.elapsed().as_secs_f64());
            }
            best
        });
        total += t;
    }
    total * 1e3
}

/// The floor of a plan on this machine ([`Outcome::floor_ms`]), in ms; `peak_gflops`: the
/// dense GEMM peak measured in the same run.
pub fn floor_ms<T: Scalar>(
    plan: &blockcontract::Plan,
    ops: &[&DynTensor<T>],
    peak_gflops: f64,
) -> f64 {
    use blockcontract::plan::Input;
    // the steps' outputs, written by the probe as the executor writes them, in step order
    let mut outs: Vec<Vec<T>> = plan
        .steps
        .iter()
        .map(|st| vec![T::one(); st.plan.out_len])
        .collect();
    let mut best = vec![f64::INFINITY; plan.steps.len()];
    for _ in 0..5 {
        for (i, st) in plan.steps.iter().enumerate() {
            let t0 = Instant::now();
            let mut acc = 0u64;
            for input in [&st.left, &st.right] {
                let data: &[T] = match *input {
                    Input::Operand(o) => ops[o].data(),
                    Input::Step(j) => &outs[j],
                };
                acc = acc.wrapping_add(read_all(data));
            }
            std::hint::black_box(acc);
            outs[i].fill(T::zero());
            std::hint::black_box(&mut outs[i]);
            best[i] = best[i].min(t0.elapsed().as_secs_f64());
        }
    }
    plan.steps
        .iter()
        .zip(&best)
        .map(|(st, &touch)| (st.plan.flops / (peak_gflops * 1e9)).max(touch))
        .sum::<f64>()
        * 1e3
}

/// Reads every byte of `data` once (summed as 64-bit words, which vectorizes).
fn read_all<T>(data: &[T]) -> u64 {
    // SAFETY: any initialized memory may be read as bytes.
    let bytes = unsafe {
        std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data))
    };
    let (words, tail) = bytes.split_at(bytes.len() / 8 * 8);
    let w = words
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .fold(0u64, u64::wrapping_add);
    tail.iter().fold(w, |a, &b| a.wrapping_add(b as u64))
}
