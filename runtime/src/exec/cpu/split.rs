//! How a step uses its threads: its components side by side, its large GEMMs cut into
//! panels, or one thread, decided from the cost model's predicted times.

use crate::plan::StepPlan;

/// How a step uses its threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Split {
    /// One thread.
    Sequential,
    /// Hazard-free components on the pool's threads.
    Components,
    /// Groups in order, each large GEMM cut into output panels over the threads.
    Gemms(usize),
}

/// The predicted time a step must save before its components run on several threads (and
/// the least a step must take before its large GEMMs are split). The calling thread starts on
/// the components at once and the pool's threads join when they wake ([`share_out`]), so a
/// step gains about its saving less a wake-up (tens of microseconds on the 2-vCPU machines
/// this was measured on). `examples/threads_ratio` (2 threads over 1, alternating in one
/// process), three runs per value on the shipped workloads: from 600 us only the m = 512
/// rows went parallel (Hubbard m = 512 heff1 stayed at 1.00); at 300 us the Hubbard m = 256
/// heff2 and m = 512 heff1 ran at 0.60-0.84 and no row above 1.02; at 150 us the Hubbard
/// m = 128 heff2 ran at 1.05-1.07. (Before the caller took part, when a step waited for a
/// pool thread to wake, 600 us was needed and the Heisenberg m = 512 gemm still ran at
/// 1.0-1.25.)
const PARALLEL_MIN_GAIN_S: f64 = 300e-6;

/// How the CPU executor runs step `sp` on `threads` threads, and why, in one line (the cost
/// model's predicted times): for `explain`.
pub fn threads_of(sp: &StepPlan, threads: usize) -> String {
    let total: f64 = sp.groups.iter().map(|g| g.predicted_s).sum();
    let us = |s: f64| format!("{:.0} us", s * 1e6);
    let min = us(PARALLEL_MIN_GAIN_S);
    let spread = match sp.components.len() {
        1 => "one component, nothing to spread".to_string(),
        c => format!(
            "spreading the {c} components would save {}, under {min}",
            us(total - makespan(sp, threads))
        ),
    };
    match split(sp, threads) {
        _ if threads < 2 => "one thread".into(),
        Split::Components => format!(
            "{} components side by side on {threads} threads: predicted {} -> {}",
            sp.components.len(),
            us(total),
            us(makespan(sp, threads))
        ),
        Split::Gemms(n) => {
            format!("groups in order, large GEMMs cut into output panels on {n} threads ({spread})")
        }
        Split::Sequential if total < PARALLEL_MIN_GAIN_S => {
            format!(
                "one thread: predicted {}, under the {min} a step must save",
                us(total)
            )
        }
        Split::Sequential => {
            format!("one thread: {spread}, and no GEMM is large on every side")
        }
    }
}

/// Threads pay only on enough work: across components when spreading them saves enough
/// predicted time ([`makespan`]), else inside the large GEMMs (cut into output panels: only
/// GEMMs large on every side gain, [`big_gemm`]).
pub(super) fn split(sp: &StepPlan, threads: usize) -> Split {
    let total: f64 = sp.groups.iter().map(|g| g.predicted_s).sum();
    if threads < 2 || total < PARALLEL_MIN_GAIN_S {
        return Split::Sequential;
    }
    if sp.components.len() > 1 && total - makespan(sp, threads) >= PARALLEL_MIN_GAIN_S {
        Split::Components
    } else if sp.groups.iter().any(|g| big_gemm(g.m, g.n, g.k)) {
        Split::Gemms(threads)
    } else {
        Split::Sequential
    }
}

/// A component's predicted time.
fn component_s(sp: &StepPlan, c: &[u32]) -> f64 {
    c.iter().map(|&g| sp.groups[g as usize].predicted_s).sum()
}

/// The step's components by predicted time, longest first.
pub(super) fn longest_first(sp: &StepPlan) -> Vec<usize> {
    let times: Vec<f64> = sp.components.iter().map(|c| component_s(sp, c)).collect();
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&x, &y| times[y].total_cmp(&times[x]));
    order
}

/// The predicted time of the step's components over `threads`, taken longest first, each
/// by the least loaded thread (how [`run_step`](super::run_step) runs them).
fn makespan(sp: &StepPlan, threads: usize) -> f64 {
    let mut loads = vec![0.0f64; threads.max(1)];
    for c in longest_first(sp) {
        if let Some(least) = loads.iter_mut().min_by(|x, y| x.total_cmp(y)) {
            *least += component_s(sp, &sp.components[c]);
        }
    }
    loads.into_iter().fold(0.0, f64::max)
}

/// The bounds of the panels a GEMM's output is cut into along a side of `len` for `threads`
/// threads: two per thread where each keeps at least [`PANEL_MIN`] (a thread that starts
/// late then finds work left), else one per thread; bounds on multiples of 8.
pub(super) fn panels(len: usize, threads: usize) -> Vec<usize> {
    let count = (2 * threads).min(len / PANEL_MIN).max(threads);
    let mut b: Vec<usize> = (0..count).map(|i| (len * i / count) & !7).collect();
    b.push(len);
    b.dedup();
    b
}

/// The shortest side a GEMM panel keeps (as [`big_gemm`]'s).
const PANEL_MIN: usize = 96;

/// A GEMM that runs faster cut into panels over several threads (measured: not a thin or
/// small one).
pub(super) fn big_gemm(m: usize, n: usize, k: usize) -> bool {
    m.min(n).min(k) >= PANEL_MIN && (m as f64) * (n as f64) * (k as f64) >= (1u64 << 21) as f64
}

#[cfg(test)]
mod tests {
    use super::super::tests::shipped;
    use super::*;

    /// `threads_of` names each decision with its numbers: one thread below the threshold,
    /// components side by side, GEMMs in panels (the shipped m = 512 `heff2`, the TFI `gemm`
    /// and a small Heisenberg workload, planned with the fixed default constants).
    #[test]
    fn threads_of_says_what_runs_where_and_why() {
        let mut seen = Vec::new();
        for name in [
            "heisenberg_u1_m64_heff1",
            "hubbard_u1u1_m512_heff2",
            "other/tfi_m380_gemm",
        ] {
            let (_, plan) = shipped(name);
            for st in &plan.steps {
                let line = threads_of(&st.plan, 2);
                let want = match split(&st.plan, 2) {
                    Split::Components => "components side by side on 2 threads: predicted",
                    Split::Gemms(_) => "large GEMMs cut into output panels on 2 threads",
                    Split::Sequential => "one thread: ",
                };
                assert!(line.contains(want), "{name}: {line}");
                // the predicted times behind a decision (a step of one component has none)
                if st.plan.components.len() > 1 {
                    assert!(line.contains(" us"), "{name}: {line}");
                }
                assert_eq!(threads_of(&st.plan, 1), "one thread");
                seen.push(split(&st.plan, 2));
            }
        }
        assert!(seen.contains(&Split::Sequential));
        assert!(seen.contains(&Split::Components));
        assert!(seen.contains(&Split::Gemms(2)));
    }

    /// Panel bounds cover the side in increasing steps on multiples of 8, two per thread
    /// when each keeps [`PANEL_MIN`], else one per thread.
    #[test]
    fn panels_cover_the_side() {
        for (len, threads, count) in [
            (96, 2, 2),
            (229, 2, 2),
            (364, 2, 3),
            (1024, 2, 4),
            (1024, 3, 6),
        ] {
            let b = panels(len, threads);
            assert_eq!(b.len() - 1, count, "{len} on {threads}");
            assert_eq!((b[0], b[count]), (0, len));
            assert!(b.windows(2).all(|w| w[0] < w[1]));
            assert!(b[..count].iter().all(|x| x % 8 == 0));
        }
    }
}
