//! Operands against a spec: count, ranks, annotations, and every contracted index's spaces
//! and flows.

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::scalar::{Conj, Scalar};
use crate::spec::{ContractionSpec, IndexSpec, OperandSpec};
use crate::symmetry::{check_contractible, Flow, Leg, SpaceKind};

/// Checks operands against the spec: count, ranks, annotations, and every contracted index's
/// spaces and flows. Errors name the operand, index and leg.
pub fn check_operands<T: Scalar>(spec: &ContractionSpec, ops: &[&DynTensor<T>]) -> Result<()> {
    if ops.len() != spec.operands.len() {
        return Err(Error::OperandCount {
            expected: spec.operands.len(),
            found: ops.len(),
        });
    }
    // (operand, leg) of the first occurrence of each label
    let mut first: Vec<Option<(usize, usize)>> = vec![None; spec.labels.len()];
    for (i, (os, t)) in spec.operands.iter().zip(ops).enumerate() {
        check_operand_shape(os, t, ops[0])?;
        for (leg, ix) in os.indices.iter().enumerate() {
            check_annotations(spec, os, ix, leg, &t.legs()[leg])?;
            match first[ix.label] {
                None => first[ix.label] = Some((i, leg)),
                Some((j, lj)) => {
                    let oj = &spec.operands[j];
                    let a = ops[j].legs()[lj].as_used(oj.conj);
                    let b = t.legs()[leg].as_used(os.conj);
                    let lname = &spec.labels[ix.label];
                    check_contractible(
                        &a,
                        &b,
                        || {
                            format!(
                                "contracted index `{lname}` (`{}` leg {lj} vs `{}` leg {leg})",
                                oj.name, os.name
                            )
                        },
                        || {
                            flow_hint(
                                (oj, lj, ops[j].legs()[lj].flow),
                                (os, leg, t.legs()[leg].flow),
                            )
                        },
                    )?;
                }
            }
        }
    }
    for ix in &spec.output {
        if let (Some(want), Some((j, leg))) = (ix.flow, first[ix.label]) {
            let f = ops[j].legs()[leg].flow.as_used(spec.operands[j].conj);
            if f != want {
                return Err(Error::FlowMismatch {
                    what: format!("output index `{}`", spec.labels[ix.label]),
                    left: want,
                    right: f,
                    hint: format!(
                        "annotated `{}` but its source `{}` leg {leg} flows {f:?}; an output leg keeps its source's flow",
                        flow_word(want),
                        spec.operands[j].name
                    ),
                });
            }
        }
    }
    Ok(())
}

fn flow_word(f: Flow) -> &'static str {
    match f {
        Flow::Out => "out",
        Flow::In => "in",
    }
}

/// What to do about a contracted pair whose legs flow the same way, from the legs' stored
/// flows and the operands' conjugation.
fn flow_hint(a: (&OperandSpec, usize, Flow), b: (&OperandSpec, usize, Flow)) -> String {
    let ((oa, la, fa), (ob, lb, fb)) = (a, b);
    let conj_of = |o: &OperandSpec| o.conj == Conj::Yes;
    match (conj_of(oa), conj_of(ob)) {
        (true, true) => format!(
            "both `{}` and `{}` are conjugated, which reversed both legs; conjugate at most one of them",
            oa.name, ob.name
        ),
        (true, false) | (false, true) => {
            let (c, lc, fc) = if conj_of(oa) { (oa, la, fa) } else { (ob, lb, fb) };
            format!(
                "`{}` is conjugated, which reversed its leg {lc} from {fc:?} to {:?}; drop the conj() or store that leg with the other flow",
                c.name,
                fc.dual()
            )
        }
        (false, false) => format!(
            "`{}` leg {la} and `{}` leg {lb} are both stored {fa:?}; a contracted pair joins an `Out` leg with an `In` leg: store one with the other flow, or write the operand whose legs all run the other way (a bra) as conj(..)",
            oa.name, ob.name
        ),
    }
}

fn check_operand_shape<T: Scalar>(
    os: &OperandSpec,
    t: &DynTensor<T>,
    first: &DynTensor<T>,
) -> Result<()> {
    if os.indices.len() != t.rank() {
        return Err(Error::RankMismatch {
            what: format!("operand `{}`", os.name),
            expected: os.indices.len(),
            found: t.rank(),
        });
    }
    if t.symmetry() != first.symmetry() {
        return Err(Error::SymmetryMismatch {
            what: format!("operand `{}`", os.name),
            left: first.symmetry().to_string(),
            right: t.symmetry().to_string(),
        });
    }
    Ok(())
}

fn check_annotations(
    spec: &ContractionSpec,
    os: &OperandSpec,
    ix: &IndexSpec,
    leg: usize,
    l: &Leg,
) -> Result<()> {
    let lname = &spec.labels[ix.label];
    let flow = l.flow.as_used(os.conj);
    if let Some(want) = ix.flow {
        if want != flow {
            return Err(Error::FlowMismatch {
                what: format!("index `{lname}` of `{}` (leg {leg})", os.name),
                left: want,
                right: flow,
                hint: format!(
                    "annotated `{}` but the tensor's leg flows {flow:?}{}",
                    flow_word(want),
                    if os.conj == Conj::Yes {
                        " as used (conj() reverses it)"
                    } else {
                        ""
                    }
                ),
            });
        }
    }
    if ix.local && l.space.kind() != SpaceKind::Local {
        return Err(Error::SpaceMismatch {
            what: format!("index `{lname}` of `{}` (leg {leg})", os.name),
            left: "annotated `local`".into(),
            right: format!("a block space {}", l.space.describe()),
        });
    }
    Ok(())
}
