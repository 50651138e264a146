//! Pricing a group once layouts are known, and the reason `explain` prints.

use super::cost::CostModel;
use super::group::{Access, Group, GroupKind, Place};
use super::layout::matrix_access;
use super::step::StepPlan;
use crate::view::MatShape;

pub(super) fn single_cost(sp: &StepPlan, p: u32, model: &CostModel) -> f64 {
    let pr = &sp.pairs[p as usize];
    let mut extra = 0;
    if sp.a_mats[pr.a as usize].is_none() {
        extra += pr.m * pr.k;
    }
    if sp.b_mats[pr.b as usize].is_none() {
        extra += pr.k * pr.n;
    }
    model.gemm_s(pr.m, pr.n, pr.k) + model.pack_s(extra)
}

/// Decides each operand's access from the final layouts; prices the group; writes its reason.
pub(super) fn finalize(sp: &StepPlan, gr: &mut Group, model: &CostModel) {
    let uncoalesced: f64 = gr.pairs.iter().map(|&p| single_cost(sp, p, model)).sum();
    gr.uncoalesced_s = uncoalesced;
    match gr.kind {
        GroupKind::Grouped => {
            let mut packed = 0;
            let mut member = 0.0;
            for &p in &gr.pairs {
                let pr = sp.pairs[p as usize];
                packed += if sp.a_mats[pr.a as usize].is_none() {
                    pr.m * pr.k
                } else {
                    0
                };
                packed += if sp.b_mats[pr.b as usize].is_none() {
                    pr.k * pr.n
                } else {
                    0
                };
                packed += if sp.c_mats[pr.c as usize].is_none() {
                    2 * pr.m * pr.n
                } else {
                    0
                };
                member += model.gemm_s(pr.m, pr.n, pr.k) - model.call_s + model.member_s;
            }
            gr.packed_elems = packed;
            gr.predicted_s = model.call_s + member + model.pack_s(packed);
            gr.reason = format!(
                "{} pairs of different shapes, each output block once: one grouped call predicted {:.2} us vs {:.2} us as {} GEMMs",
                gr.pairs.len(),
                gr.predicted_s * 1e6,
                uncoalesced * 1e6,
                gr.pairs.len()
            );
        }
        GroupKind::Single | GroupKind::Batched => {
            let mut packed = 0;
            for ((pa, pb), pc) in gr.a.iter().zip(&gr.b).zip(&gr.c) {
                let pr = (gr.m, gr.n, gr.k);
                packed += if sp.a_mats[pa.block as usize].is_none() {
                    pr.0 * pr.2
                } else {
                    0
                };
                packed += if sp.b_mats[pb.block as usize].is_none() {
                    pr.2 * pr.1
                } else {
                    0
                };
                packed += if sp.c_mats[pc.block as usize].is_none() {
                    2 * pr.0 * pr.1
                } else {
                    0
                };
            }
            let all = |mats: &[Option<MatShape>], ps: &[Place]| {
                ps.iter().all(|p| mats[p.block as usize].is_some())
            };
            gr.a_access = if all(&sp.a_mats, &gr.a) {
                Access::Direct(sp.a_mats[gr.a[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.b_access = if all(&sp.b_mats, &gr.b) {
                Access::Direct(sp.b_mats[gr.b[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.c_access = if all(&sp.c_mats, &gr.c) {
                Access::Direct(sp.c_mats[gr.c[0].block as usize].expect("all"), 0)
            } else {
                Access::Packed
            };
            gr.packed_elems = packed;
            let n = gr.pairs.len();
            gr.predicted_s = if gr.kind == GroupKind::Single {
                model.gemm_s(gr.m, gr.n, gr.k) + model.pack_s(packed)
            } else {
                model.call_s
                    + n as f64 * model.batched_member_s(gr.m, gr.n, gr.k)
                    + model.pack_s(packed)
            };
            gr.reason = if gr.kind == GroupKind::Single {
                "no coalescing candidate predicted faster than one GEMM".into()
            } else {
                format!(
                    "{n} pairs of shape {}x{}x{}: one batched call predicted {:.2} us vs {:.2} us as {n} GEMMs",
                    gr.m,
                    gr.n,
                    gr.k,
                    gr.predicted_s * 1e6,
                    uncoalesced * 1e6
                )
            };
        }
        _ => {
            gr.a_access = matrix_access(&gr.a, &sp.a_mats, &sp.a_offsets);
            gr.b_access = matrix_access(&gr.b, &sp.b_mats, &sp.b_offsets);
            let c_off: Vec<usize> = sp.out_layouts.iter().map(|l| l.offset).collect();
            gr.c_access = matrix_access(&gr.c, &sp.c_mats, &c_off);
            let mut packed = 0;
            if gr.a_access.is_packed() {
                packed += gr.m * gr.k;
            }
            if gr.b_access.is_packed() {
                packed += gr.k * gr.n;
            }
            if gr.c_access.is_packed() {
                packed += 2 * gr.m * gr.n;
            }
            gr.packed_elems = packed;
            gr.predicted_s = model.gemm_s(gr.m, gr.n, gr.k) + model.pack_s(packed);
            let what = match gr.kind {
                GroupKind::FreeAxis => format!("one contracted block shared: {} A blocks stacked as rows, {} B blocks as columns", gr.a.len(), gr.b.len()),
                GroupKind::ContractionAxis => format!("one output block: {} contributions concatenated along k", gr.pairs.len()),
                _ => format!(
                    "coupled sector fully populated ({} A x {} B blocks, every pair present)",
                    gr.a.len(),
                    gr.b.len()
                ),
            };
            gr.reason = format!(
                "{what}; one {}x{}x{} GEMM predicted {:.2} us vs {:.2} us as {} GEMMs; A {}, B {}, C {}",
                gr.m,
                gr.n,
                gr.k,
                gr.predicted_s * 1e6,
                uncoalesced * 1e6,
                gr.pairs.len(),
                access_word(&gr.a_access),
                access_word(&gr.b_access),
                access_word(&gr.c_access)
            );
        }
    }
}

fn access_word(a: &Access) -> &'static str {
    match a {
        Access::Direct(..) => "zero-copy",
        Access::Packed => "packed",
    }
}
