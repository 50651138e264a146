//! Operands against a spec: count, ranks, annotations, and every contracted index's spaces
//! and flows.

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::Scalar;
use crate::spec::ContractionSpec;
use crate::symmetry::{same_space, Flow, SpaceKind};

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
