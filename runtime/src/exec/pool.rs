//! Buffers for intermediates and packing scratch, shared by every plan in the process: the
//! first call of a new plan reuses the buffers of earlier ones (no fresh, page-faulted and
//! zeroed memory per structure), and what is kept does not grow with the number of plans
//! cached.

use crate::scalar::Scalar;
use std::any::Any;
use std::sync::Mutex;

/// Buffers kept at most; beyond it the smallest is dropped.
const KEEP: usize = 12;

/// Spare buffers of every element type.
static SPARE: Mutex<Vec<Spare>> = Mutex::new(Vec::new());

struct Spare {
    buf: Box<dyn Any + Send>,
    bytes: usize,
}

/// A buffer of capacity at least `len` (its old values kept, its length anything): the
/// smallest spare that fits, or a new one.
pub(crate) fn take<T: Scalar>(len: usize) -> Vec<T> {
    let mut g = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    let best = g
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s.buf
                .downcast_ref::<Vec<T>>()
                .is_some_and(|v| v.capacity() >= len)
        })
        .min_by_key(|(_, s)| s.bytes)
        .map(|(i, _)| i);
    // the filter checked the type: the downcast succeeds
    best.and_then(|i| g.swap_remove(i).buf.downcast::<Vec<T>>().ok())
        .map_or_else(Vec::new, |b| *b)
}

/// Returns a buffer for later calls (the smallest spare is dropped beyond [`KEEP`]).
pub(crate) fn give<T: Scalar>(v: Vec<T>) {
    if v.capacity() == 0 {
        return;
    }
    let bytes = v.capacity() * std::mem::size_of::<T>();
    let mut g = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    g.push(Spare {
        buf: Box::new(v),
        bytes,
    });
    if g.len() > KEEP {
        if let Some(i) = g
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.bytes)
            .map(|(i, _)| i)
        {
            g.swap_remove(i);
        }
    }
}

/// Drops every spare buffer (memory returned to the allocator).
pub fn release_buffers() {
    SPARE.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_for_a_request_it_fits_and_keeps_its_type() {
        let mut v: Vec<f64> = Vec::with_capacity(1000);
        v.extend([1.0, 2.0]);
        let p = v.as_ptr();
        give(v);
        let w: Vec<f32> = take(10);
        assert_ne!(
            w.as_ptr() as *const f64,
            p,
            "an f64 buffer served an f32 request"
        );
        let x: Vec<f64> = take(900);
        // another test may have taken it first; when it is ours, its values are kept
        if x.as_ptr() == p {
            assert_eq!(&x[..], &[1.0, 2.0]);
        }
        give(x);
        give(w);
    }
}
