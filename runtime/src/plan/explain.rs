//! `Plan::explain`: which GEMMs a contraction issues, how they were grouped, and why.

use super::kernel_choice::{coefficient_kernel, member_kernel, Kernel};
use super::{GroupKind, Plan};
use std::fmt::Write;

impl Plan {
    /// The plan as text: per step and group, kind, members, shape, flops, wasted flops, packed
    /// bytes, predicted time, the kernel its GEMMs run on and the cost model's reason; a
    /// summary line.
    pub fn explain(&self) -> String {
        self.explain_with(None, 8)
    }

    /// Like [`Self::explain`], with each group's measured time (`measured[step][group]`, seconds)
    /// and elem_bytes for packed bytes; at most `max_groups` groups printed per step.
    pub fn explain_with(&self, measured: Option<&[Vec<f64>]>, max_groups: usize) -> String {
        let mut s = String::new();
        let m = &self.options.model;
        let _ = writeln!(
            s,
            "plan: {} pair GEMMs -> {} kernel calls in {} steps; {:.3} GFLOP; order {} ({})",
            self.pair_gemms(),
            self.kernel_calls(),
            self.steps.len(),
            self.flops() / 1e9,
            self.steps.last().map_or("-".into(), |st| st.name.clone()),
            if self.order_given {
                "given"
            } else {
                "chosen from sector sizes"
            }
        );
        let _ = writeln!(s, "cost model: {m}");
        if let Some(cf) = &self.coefficient {
            explain_coefficient(&mut s, cf, self);
        }
        for (si, st) in self.steps.iter().enumerate() {
            let times = measured.and_then(|ms| ms.get(si)).map(|v| v.as_slice());
            explain_step(&mut s, si, st, times, max_groups);
        }
        s
    }
}

/// The coefficient form's lines: what runs instead of the steps, and why.
fn explain_coefficient(s: &mut String, cf: &super::CoefficientPlan, plan: &Plan) {
    let name = |i: usize| format!("operand {i}");
    let _ = writeln!(
        s,
        "coefficient form (CPU executor; the steps below are what the other executors run): \
         {} applied as coefficients, chain {} * {} * {} {}",
        name(cf.coef),
        name(cf.chain[0]),
        name(cf.chain[1]),
        name(cf.chain[2]),
        if cf.left_first {
            "(left-first: the written chain transposed)"
        } else {
            "(right-first)"
        }
    );
    let _ = writeln!(
        s,
        "  {} terms ({} around a marked identity); {} first-stage GEMMs (T = M2*M3), {} axpys \
         into Q and {} into the output streaming {} elements, {} last-stage GEMMs \
         (Y += M1*Q); {:.3} GFLOP",
        cf.axpys.len() + cf.direct.len(),
        cf.identity_terms,
        cf.firsts.len(),
        cf.axpys.len(),
        cf.direct.len(),
        cf.axpy_elems,
        cf.seconds.len(),
        cf.flops / 1e9
    );
    let (first, second) = tiny_gemms(cf);
    let _ = writeln!(
        s,
        "  kernels: first stage {first} tiny, {} faer; last stage {second} tiny, {} faer",
        cf.firsts.len() - first,
        cf.seconds.len() - second
    );
    let _ = writeln!(
        s,
        "  predicted {:.1} us; the other direction {:.1} us; the pairwise steps {:.1} us \
         ({:.3} GFLOP)",
        cf.predicted_s * 1e6,
        cf.other_direction_s * 1e6,
        cf.pairwise_s * 1e6,
        plan.flops() / 1e9
    );
}

/// How many of the coefficient form's first- and last-stage GEMMs run on the tiny kernel.
fn tiny_gemms(cf: &super::CoefficientPlan) -> (usize, usize) {
    let tiny = |m: usize, n: usize, k: usize| coefficient_kernel(m, n, k) == Kernel::Tiny;
    let first = cf
        .firsts
        .iter()
        .filter(|f| tiny(f.a_shape.m, f.b_shape.n, f.a_shape.n))
        .count();
    let second = cf
        .seconds
        .iter()
        .filter(|g| tiny(g.out_shape.m, g.out_shape.n, g.m1_shape.n))
        .count();
    (first, second)
}

/// One step's lines of [`Plan::explain_with`]: its summary, then its costliest groups (by
/// `times`, the measured seconds per group, when given), at most `max_groups`.
fn explain_step(
    s: &mut String,
    si: usize,
    st: &super::PlannedStep,
    times: Option<&[f64]>,
    max_groups: usize,
) {
    let p = &st.plan;
    let kinds = kind_counts(&p.groups);
    let _ = writeln!(
        s,
        "step {si} {}: {} pairs -> {} calls ({}); predicted {:.2} us; {} independent sets",
        st.name,
        p.pairs.len(),
        p.kernel_calls(),
        kinds,
        p.predicted_s() * 1e6,
        p.components.len()
    );
    let mut order: Vec<usize> = (0..p.groups.len()).collect();
    // the costliest groups first: by measured time when given, else by predicted time
    let key = |g: usize| -> f64 {
        times
            .and_then(|v| v.get(g))
            .copied()
            .unwrap_or(p.groups[g].predicted_s)
    };
    order.sort_by(|&x, &y| key(y).total_cmp(&key(x)));
    for &gi in order.iter().take(max_groups) {
        let g = &p.groups[gi];
        let meas = times
            .and_then(|v| v.get(gi))
            .map_or(String::new(), |t| format!(", measured {:.2} us", t * 1e6));
        let _ = writeln!(
            s,
            "  {:<16} {:>4} pairs  {}x{}x{}  {:.3} MFLOP  wasted {:.0}  packed {} elems  predicted {:.2} us{}  kernel {}: {}",
            g.kind.name(),
            g.pairs.len(),
            g.m,
            g.n,
            g.k,
            g.flops / 1e6,
            g.wasted_flops,
            g.packed_elems,
            g.predicted_s * 1e6,
            meas,
            member_kernel(g.kind, g.m, g.n, g.k).name(),
            g.reason()
        );
    }
    if p.groups.len() > max_groups {
        let _ = writeln!(s, "  ... {} more groups", p.groups.len() - max_groups);
    }
}

/// `15 batched, 14 free-axis`: how many groups of each kind, in the kinds' order.
fn kind_counts(groups: &[super::Group]) -> String {
    let mut by = [0usize; GroupKind::ALL.len()];
    for g in groups {
        by[g.kind as usize] += 1;
    }
    let kinds: Vec<String> = GroupKind::ALL
        .iter()
        .filter(|k| by[**k as usize] > 0)
        .map(|k| format!("{} {}", by[*k as usize], k))
        .collect();
    kinds.join(", ")
}
