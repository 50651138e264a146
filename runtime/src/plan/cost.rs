//! The cost model: predicted time = calls x call overhead + flops / rate(shape) plus
//! packed elements x pack cost. Constants are measured on this machine and stored per
//! machine ([`CostModel::calibrated`], see `calibrate`), with defaults.

use crate::kernel::tiny_wins;

/// Calibrated constants of the CPU cost model (seconds, flops/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostModel {
    /// Fixed cost of one faer GEMM call.
    pub call_s: f64,
    /// Fixed cost of one member of a batched group run by the tiny-GEMM kernel.
    pub tiny_call_s: f64,
    /// Rate of the tiny-GEMM kernel, flops/s.
    pub tiny_rate: f64,
    /// Dense GEMM rate at large sizes, flops/s.
    pub peak_rate: f64,
    /// Cost per operand element a GEMM streams (thin-GEMM memory term).
    pub elem_s: f64,
    /// Cost per element gathered into or scattered from a packed buffer.
    pub pack_elem_s: f64,
    /// Fixed cost of one member of a grouped call (a GEMM call per member on a CPU).
    pub member_s: f64,
}

impl Default for CostModel {
    /// Defaults measured on the project's 2-core AVX-512 machine (see ENGINEERING-NOTES).
    fn default() -> Self {
        CostModel {
            call_s: 60e-9,
            tiny_call_s: 8e-9,
            tiny_rate: 4e9,
            peak_rate: 100e9,
            elem_s: 0.15e-9,
            pack_elem_s: 0.5e-9,
            member_s: 60e-9,
        }
    }
}

impl CostModel {
    /// The constants in one fixed order (call, tiny call, tiny rate, peak rate, stream, pack,
    /// grouped member): the order they are hashed, checked and sent between ranks in.
    pub fn to_array(&self) -> [f64; 7] {
        [
            self.call_s,
            self.tiny_call_s,
            self.tiny_rate,
            self.peak_rate,
            self.elem_s,
            self.pack_elem_s,
            self.member_s,
        ]
    }
    /// The model whose [`Self::to_array`] is `v`.
    pub fn from_array(v: [f64; 7]) -> Self {
        let [call_s, tiny_call_s, tiny_rate, peak_rate, elem_s, pack_elem_s, member_s] = v;
        CostModel {
            call_s,
            tiny_call_s,
            tiny_rate,
            peak_rate,
            elem_s,
            pack_elem_s,
            member_s,
        }
    }
    /// GPU constants before calibration on a device: a 5 us launch, f64 GEMM at 50 TFLOP/s,
    /// 3 TB/s memory (what `CudaDevice::cost_model` measures replaces them).
    pub fn gpu_default() -> CostModel {
        CostModel {
            call_s: 5e-6,
            tiny_call_s: 0.1e-6,
            tiny_rate: 2.5e12,
            peak_rate: 50e12,
            elem_s: 8.0 / 3.0e12,
            pack_elem_s: 16.0 / 3.0e12,
            member_s: 0.1e-6,
        }
    }
}

impl CostModel {
    /// Predicted time of one faer GEMM of shape m x k times k x n.
    pub fn gemm_s(&self, m: usize, n: usize, k: usize) -> f64 {
        let flops = 2.0 * m as f64 * n as f64 * k as f64;
        self.call_s
            + flops / self.peak_rate
            + (m as f64 * k as f64 + k as f64 * n as f64 + 2.0 * m as f64 * n as f64) * self.elem_s
    }
    /// The fixed cost of a grouped call beyond its members' (each member costs a GEMM with
    /// `member_s` for the call's overhead): on a device, one launch instead of one per member,
    /// so the launch less one member's share; on a CPU, where a grouped call is a loop of
    /// GEMM calls (`member_s` = `call_s`), nothing, so that grouping ties with running the
    /// members as singles, and the tie goes to fewer calls.
    pub fn grouped_call_s(&self) -> f64 {
        (self.call_s - self.member_s).max(0.0)
    }
    /// Predicted time of one member of a batched group (tiny kernel when small, faer otherwise).
    pub fn batched_member_s(&self, m: usize, n: usize, k: usize) -> f64 {
        if tiny_wins(m, n, k) {
            self.tiny_call_s + 2.0 * m as f64 * n as f64 * k as f64 / self.tiny_rate
        } else {
            self.gemm_s(m, n, k)
        }
    }
    /// Predicted time of one sub-GEMM of a member that reads a block in place as strided
    /// sub-matrices: a kernel call of its own (dispatch, strides, operands reloaded), so a
    /// faer call's overhead even where the tiny kernel runs it (measured so on the Hubbard
    /// MPO steps: about 22 ns per sub-GEMM of 1 x 8 x 2).
    pub fn split_sub_s(&self, m: usize, n: usize, k: usize) -> f64 {
        if tiny_wins(m, n, k) {
            self.call_s + 2.0 * m as f64 * n as f64 * k as f64 / self.tiny_rate
        } else {
            self.gemm_s(m, n, k)
        }
    }
    /// Predicted time to gather or scatter `elems` elements.
    pub fn pack_s(&self, elems: usize) -> f64 {
        elems as f64 * self.pack_elem_s
    }
}

impl std::fmt::Display for CostModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "call {:.1} ns, tiny call {:.1} ns, tiny rate {:.2} GFLOP/s, peak {:.1} GFLOP/s, stream {:.3} ns/elem, pack {:.3} ns/elem, grouped member {:.1} ns",
            self.call_s * 1e9,
            self.tiny_call_s * 1e9,
            self.tiny_rate / 1e9,
            self.peak_rate / 1e9,
            self.elem_s * 1e9,
            self.pack_elem_s * 1e9,
            self.member_s * 1e9
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constants_round_trip_through_their_array_in_field_order() {
        let m = CostModel {
            call_s: 1.0,
            tiny_call_s: 2.0,
            tiny_rate: 3.0,
            peak_rate: 4.0,
            elem_s: 5.0,
            pack_elem_s: 6.0,
            member_s: 7.0,
        };
        assert_eq!(m.to_array(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        assert_eq!(CostModel::from_array(m.to_array()), m);
    }
}
