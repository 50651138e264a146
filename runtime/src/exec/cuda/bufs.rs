//! The buffers of one step on the device, and views of them for one op.

use crate::error::{CudaError, Error, Result};
use crate::exec::device::{Buf, GemmOp};
use cudarc::driver::{CudaSlice, DeviceRepr};

pub(super) struct Bufs<'a, T> {
    pub(super) left: &'a CudaSlice<T>,
    pub(super) right: &'a CudaSlice<T>,
    pub(super) out: &'a mut CudaSlice<T>,
    pub(super) sa: &'a mut CudaSlice<T>,
    pub(super) sb: &'a mut CudaSlice<T>,
    pub(super) sc: &'a mut CudaSlice<T>,
}

type View<'b, T> = cudarc::driver::CudaView<'b, T>;
type ViewMut<'b, T> = cudarc::driver::CudaViewMut<'b, T>;

impl<T: DeviceRepr> Bufs<'_, T> {
    pub(super) fn get(&self, b: Buf) -> &CudaSlice<T> {
        match b {
            Buf::Left => self.left,
            Buf::Right => self.right,
            Buf::Out => self.out,
            Buf::ScratchA => self.sa,
            Buf::ScratchB => self.sb,
            Buf::ScratchC => self.sc,
        }
    }
    pub(super) fn pair(&mut self, src: Buf, dst: Buf) -> Result<(View<'_, T>, ViewMut<'_, T>)> {
        let (s, d): (&CudaSlice<T>, &mut CudaSlice<T>) = match (src, dst) {
            (Buf::Left, Buf::ScratchA) => (self.left, self.sa),
            (Buf::Right, Buf::ScratchB) => (self.right, self.sb),
            (Buf::ScratchC, Buf::Out) => (self.sc, self.out),
            _ => return Err(lowering(format!("unexpected gather {src:?} -> {dst:?}"))),
        };
        Ok((s.as_view(), d.as_view_mut()))
    }
    pub(super) fn gemm_views(
        &mut self,
        g: &GemmOp,
    ) -> Result<(View<'_, T>, View<'_, T>, ViewMut<'_, T>)> {
        let bad = |w: &str| lowering(format!("GEMM {w} outside its buffer"));
        let (c_buf, rest): (&mut CudaSlice<T>, [&CudaSlice<T>; 5]) = match g.c.buf {
            Buf::Out => (self.out, [self.left, self.right, self.sa, self.sb, self.sc]),
            Buf::ScratchC => (self.sc, [self.left, self.right, self.sa, self.sb, self.out]),
            other => return Err(lowering(format!("GEMM output in {other:?}"))),
        };
        let find = |b: Buf| -> Result<&CudaSlice<T>> {
            Ok(match b {
                Buf::Left => rest[0],
                Buf::Right => rest[1],
                Buf::ScratchA => rest[2],
                Buf::ScratchB => rest[3],
                _ => return Err(lowering(format!("GEMM operand in {b:?}"))),
            })
        };
        let a = find(g.a.buf)?
            .try_slice(g.a.offset..)
            .ok_or_else(|| bad("A"))?;
        let b = find(g.b.buf)?
            .try_slice(g.b.offset..)
            .ok_or_else(|| bad("B"))?;
        let c = c_buf.try_slice_mut(g.c.offset..).ok_or_else(|| bad("C"))?;
        Ok((a, b, c))
    }
}

fn lowering(what: String) -> Error {
    Error::Cuda {
        op: "device buffers".into(),
        source: CudaError::Lowering(what),
    }
}
