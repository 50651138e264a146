//! A CPU interpreter of the op list with cuBLAS's semantics: the test oracle of the lowering.

use super::{Accum, Buf, GemmOp, Lowered, Op, Trans};
use crate::plan::{Input, Plan};
use crate::scalar::Conj;

/// Runs a lowered plan on the CPU with cuBLAS's semantics (column-major, `op`, leading
/// dimensions, batch strides, alpha/beta): the test oracle of the lowering.
pub fn interpret<T: crate::scalar::Scalar>(
    plan: &Plan,
    lowered: &Lowered,
    ops: &[&crate::block::DynTensor<T>],
    alpha: T,
) -> crate::error::Result<crate::block::DynTensor<T>> {
    plan.check_operands(ops)?;
    let Some(last) = plan.steps.last() else {
        return Err(crate::error::Error::EmptyPlan {
            executor: "device interpreter".into(),
        });
    };
    let mut results: Vec<Vec<T>> = Vec::new();
    for so in &lowered.steps {
        let data = |inp: Input, results: &Vec<Vec<T>>| -> Vec<T> {
            match inp {
                Input::Operand(k) => ops[k].data().to_vec(),
                Input::Step(j) => results[j].clone(),
            }
        };
        let mut bufs: [Vec<T>; 6] = [
            data(so.inputs.0, &results),
            data(so.inputs.1, &results),
            vec![T::zero(); so.out_len],
            vec![T::zero(); so.scratch[0]],
            vec![T::zero(); so.scratch[1]],
            vec![T::zero(); so.scratch[2]],
        ];
        let a = if so.scaled { alpha } else { T::one() };
        for op in &so.ops {
            run_op(op, &mut bufs, a);
        }
        results.push(std::mem::take(&mut bufs[2]));
    }
    let g = &last.plan.geometry;
    Ok(crate::block::DynTensor::from_shared(
        g.out_legs.clone(),
        g.symmetry.clone(),
        g.out_charge.clone(),
        last.plan.out_index.clone(),
        results.pop().expect("one result per step"),
    ))
}

fn slot(b: Buf) -> usize {
    match b {
        Buf::Left => 0,
        Buf::Right => 1,
        Buf::Out => 2,
        Buf::ScratchA => 3,
        Buf::ScratchB => 4,
        Buf::ScratchC => 5,
    }
}

fn run_op<T: crate::scalar::Scalar>(op: &Op, bufs: &mut [Vec<T>; 6], alpha: T) {
    match op {
        Op::Gather {
            src,
            dst,
            segments,
            accum,
            conj,
        } => {
            let s = bufs[slot(*src)].clone();
            let d = &mut bufs[slot(*dst)];
            for seg in segments {
                crate::view::for_each_pair(
                    &seg.dims,
                    &seg.src_strides,
                    &seg.dst_strides,
                    |so, dof, n, ss, ds| {
                        for i in 0..n as isize {
                            let mut v = s[(seg.src as isize + so + i * ss) as usize];
                            if *conj == Conj::Yes {
                                v = v.conj();
                            }
                            let x = &mut d[(seg.dst as isize + dof + i * ds) as usize];
                            *x = if *accum == Accum::Add { *x + v } else { v };
                        }
                    },
                );
            }
        }
        Op::Gemm(g) => gemm_ref(g, bufs, alpha, 0, 0, 0),
        Op::GemmGrouped { gemms } => {
            for g in gemms {
                gemm_ref(g, bufs, alpha, 0, 0, 0);
            }
        }
        Op::GemmStridedBatched {
            gemm,
            batch,
            stride_a,
            stride_b,
            stride_c,
        } => {
            for i in 0..*batch {
                gemm_ref(gemm, bufs, alpha, i * stride_a, i * stride_b, i * stride_c);
            }
        }
    }
}

/// `C = alpha op(A) op(B) + beta C` exactly as cuBLAS defines it (column-major).
fn gemm_ref<T: crate::scalar::Scalar>(
    g: &GemmOp,
    bufs: &mut [Vec<T>; 6],
    alpha: T,
    da: usize,
    db: usize,
    dc: usize,
) {
    let a = bufs[slot(g.a.buf)].clone();
    let b = bufs[slot(g.b.buf)].clone();
    let c = &mut bufs[slot(g.c.buf)];
    let at = |i: usize, p: usize| match g.transa {
        Trans::N => a[g.a.offset + da + i + p * g.lda],
        Trans::T => a[g.a.offset + da + p + i * g.lda],
    };
    let bt = |p: usize, j: usize| match g.transb {
        Trans::N => b[g.b.offset + db + p + j * g.ldb],
        Trans::T => b[g.b.offset + db + j + p * g.ldb],
    };
    for j in 0..g.n {
        for i in 0..g.m {
            let mut acc = T::zero();
            for p in 0..g.k {
                acc += at(i, p) * bt(p, j);
            }
            let x = &mut c[g.c.offset + dc + i + j * g.ldc];
            *x = if g.accum == Accum::Add {
                *x + alpha * acc
            } else {
                alpha * acc
            };
        }
    }
}
