//! The cost model's constants on this machine: short microbenchmarks of faer, the tiny kernel
//! and packing (each the best of several probes, the whole set repeated and the best kept, so
//! that a busy moment does not move them), stored per machine like FFTW's wisdom and reused.
//!
//! Where the constants come from, decided once per process ([`CostModel::calibrated`]):
//! - `BLOCKCONTRACT_COST_MODEL=default`: the fixed defaults ([`CostModel::default`]);
//! - `BLOCKCONTRACT_COST_MODEL=calibrate`: measured now, and stored;
//! - `BLOCKCONTRACT_COST_MODEL=/some/file.json`: read from that file;
//! - unset: read from the machine's file ([`calibration_path`]), measured and stored there
//!   when it is missing, corrupt or from another machine.
//!
//! A file that cannot be used is reported on stderr with the reason, and the defaults or a
//! fresh measurement are used instead: never a panic.

use super::cost::CostModel;
use crate::error::{Error, Result};
use crate::kernel::{gemm, tiny_gemm, Accum, RawMat, RawMatMut};
use crate::view::MatShape;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

/// The environment variable that chooses where the cost model comes from.
pub const ENV: &str = "BLOCKCONTRACT_COST_MODEL";

/// The format tag of calibration files.
pub const FORMAT: &str = "blockcontract-cost-model/1";

/// Where the process's cost model came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The fixed defaults (asked for, or a file could not be used and measuring was not asked).
    Defaults,
    /// Measured in this process (and stored at the path, if it could be written).
    Measured(Option<PathBuf>),
    /// Read from this file.
    File(PathBuf),
}

/// The file a machine's calibration is stored in: `$BLOCKCONTRACT_CACHE_DIR/cost-model.json`,
/// else `$XDG_CACHE_HOME/blockcontract/cost-model.json`, else
/// `$HOME/.cache/blockcontract/cost-model.json`.
pub fn calibration_path() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var("BLOCKCONTRACT_CACHE_DIR") {
        return Some(d.join("cost-model.json"));
    }
    let base = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("blockcontract").join("cost-model.json"))
}

/// This machine, as a calibration file names it: the CPU model and the number of CPUs.
pub fn machine_id() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("unknown cpu", |(_, v)| v.trim())
        .to_string();
    // the machine's CPUs, not this process's affinity (one per rank under mpirun)
    let cpus = match cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
    {
        0 => std::thread::available_parallelism().map_or(0, |n| n.get()),
        n => n,
    };
    format!("{model} x{cpus} ({})", std::env::consts::ARCH)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    format: String,
    machine: String,
    constants: ConstantsJson,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConstantsJson {
    call_s: f64,
    tiny_call_s: f64,
    tiny_rate: f64,
    peak_rate: f64,
    elem_s: f64,
    pack_elem_s: f64,
    member_s: f64,
}

fn bad(path: &Path, reason: impl Into<String>) -> Error {
    Error::Calibration {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

impl CostModel {
    /// This process's constants, decided once (see the module documentation): the stored
    /// calibration of this machine, measured and stored on first use.
    pub fn calibrated() -> CostModel {
        process_model().0
    }

    /// Where [`Self::calibrated`]'s constants came from.
    pub fn source() -> Source {
        process_model().1.clone()
    }

    /// Measures this machine's constants now (about a second): each probe is the best of
    /// several runs, and the whole set is repeated three times, keeping the fastest.
    pub fn measure() -> CostModel {
        let mut best = measure_once();
        for _ in 0..2 {
            let m = measure_once();
            best = CostModel {
                call_s: best.call_s.min(m.call_s),
                tiny_call_s: best.tiny_call_s.min(m.tiny_call_s),
                tiny_rate: best.tiny_rate.max(m.tiny_rate),
                peak_rate: best.peak_rate.max(m.peak_rate),
                elem_s: best.elem_s.min(m.elem_s),
                pack_elem_s: best.pack_elem_s.min(m.pack_elem_s),
                member_s: best.member_s.min(m.member_s),
            };
        }
        best
    }

    /// Reads a calibration file written by [`Self::save`]; a corrupt file, one of another
    /// format or one measured on another machine is an error naming the file and the reason.
    pub fn load(path: &Path) -> Result<CostModel> {
        let text = std::fs::read_to_string(path).map_err(|e| bad(path, e.to_string()))?;
        let f: FileJson = serde_json::from_str(&text).map_err(|e| bad(path, e.to_string()))?;
        if f.format != FORMAT {
            return Err(bad(
                path,
                format!("format {:?}, expected {FORMAT:?}", f.format),
            ));
        }
        let here = machine_id();
        if f.machine != here {
            return Err(bad(
                path,
                format!("measured on `{}`, this machine is `{here}`", f.machine),
            ));
        }
        let c = f.constants;
        let m = CostModel {
            call_s: c.call_s,
            tiny_call_s: c.tiny_call_s,
            tiny_rate: c.tiny_rate,
            peak_rate: c.peak_rate,
            elem_s: c.elem_s,
            pack_elem_s: c.pack_elem_s,
            member_s: c.member_s,
        };
        if m.to_array().iter().any(|x| !x.is_finite() || *x < 0.0) || m.peak_rate <= 0.0 {
            return Err(bad(path, "a constant is negative or not finite"));
        }
        Ok(m)
    }

    /// Writes the constants to `path` for this machine (directories created; written to a
    /// temporary file and renamed, so a reader never sees half a file).
    pub fn save(&self, path: &Path) -> Result<()> {
        let f = FileJson {
            format: FORMAT.into(),
            machine: machine_id(),
            constants: ConstantsJson {
                call_s: self.call_s,
                tiny_call_s: self.tiny_call_s,
                tiny_rate: self.tiny_rate,
                peak_rate: self.peak_rate,
                elem_s: self.elem_s,
                pack_elem_s: self.pack_elem_s,
                member_s: self.member_s,
            },
        };
        let io = |e: std::io::Error| Error::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(&f).map_err(|e| bad(path, e.to_string()))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

fn process_model() -> &'static (CostModel, Source) {
    static MODEL: OnceLock<(CostModel, Source)> = OnceLock::new();
    MODEL.get_or_init(resolve)
}

/// Measures, stores at `path` when given (a failure to store is reported, not fatal).
fn measure_and_store(path: Option<PathBuf>) -> (CostModel, Source) {
    let m = CostModel::measure();
    let stored = path.filter(|p| match m.save(p) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("blockcontract: cannot store the calibration: {e}");
            false
        }
    });
    (m, Source::Measured(stored))
}

fn resolve() -> (CostModel, Source) {
    match std::env::var(ENV).ok().as_deref().map(str::trim) {
        Some("default") => (CostModel::default(), Source::Defaults),
        Some("calibrate") => measure_and_store(calibration_path()),
        Some(p) if !p.is_empty() => {
            let path = PathBuf::from(p);
            match CostModel::load(&path) {
                Ok(m) => (m, Source::File(path)),
                Err(e) => {
                    eprintln!("blockcontract: {e}; using the default constants");
                    (CostModel::default(), Source::Defaults)
                }
            }
        }
        _ => match calibration_path() {
            Some(path) if path.exists() => match CostModel::load(&path) {
                Ok(m) => (m, Source::File(path)),
                Err(e) => {
                    eprintln!("blockcontract: {e}; measuring again");
                    measure_and_store(Some(path))
                }
            },
            path => measure_and_store(path),
        },
    }
}

fn time_per_call(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t0 = Instant::now();
        for _ in 0..reps {
            f();
        }
        best = best.min(t0.elapsed().as_secs_f64() / reps as f64);
    }
    best
}

fn faer_gemm_s(m: usize, n: usize, k: usize, reps: usize) -> f64 {
    let a = vec![0.5f64; m * k];
    let b = vec![0.25f64; k * n];
    let mut c = vec![0.0f64; m * n];
    let sh = MatShape::row_major;
    time_per_call(reps, || {
        // SAFETY: the buffers hold exactly the row-major matrices described.
        unsafe {
            gemm(
                RawMatMut::new(c.as_mut_ptr(), sh(m, n)),
                Accum::Add,
                RawMat::new(a.as_ptr(), sh(m, k)),
                RawMat::new(b.as_ptr(), sh(k, n)),
                1.0,
            );
        }
        std::hint::black_box(&mut c);
    })
}

/// The dense GEMM rate of this machine with one thread: faer on an `n x n x n` f64 product,
/// best of five, in GFLOP/s (the bench's peak probe).
pub fn dense_gemm_gflops(n: usize) -> f64 {
    let t = faer_gemm_s(n, n, n, 1);
    2.0 * (n * n * n) as f64 / t / 1e9
}

fn tiny_s() -> f64 {
    let a = [0.5f64; 16];
    let b = [0.25f64; 16];
    let mut c = [0.0f64; 16];
    let sh = MatShape::row_major(4, 4);
    time_per_call(20000, || {
        // SAFETY: 4x4 row-major buffers.
        unsafe {
            tiny_gemm(
                RawMatMut::new(c.as_mut_ptr(), sh),
                Accum::Add,
                RawMat::new(std::hint::black_box(a.as_ptr()), sh),
                RawMat::new(std::hint::black_box(b.as_ptr()), sh),
                std::hint::black_box(1.0),
            )
        };
        std::hint::black_box(&mut c);
    })
}

/// Gathering blocks' rows (32 contiguous elements each) into a matrix of wider rows: seconds
/// per element.
fn pack_elem_s() -> f64 {
    let n = 1 << 18;
    let src = vec![1.0f64; n];
    let mut dst = vec![0.0f64; 2 * n];
    let t = time_per_call(5, || {
        // SAFETY: src holds 8192 rows of 32; dst holds 8192 rows of 64.
        unsafe {
            crate::view::strided_copy(
                &[8192, 32],
                src.as_ptr(),
                &[32, 1],
                dst.as_mut_ptr(),
                &[64, 1],
                crate::view::CopyMode::Set,
            );
        }
        std::hint::black_box(&mut dst);
    });
    t / n as f64
}

fn measure_once() -> CostModel {
    let d = CostModel::default();
    let call_s = faer_gemm_s(1, 1, 1, 2000);
    let big = 192;
    let t_big = faer_gemm_s(big, big, big, 3);
    let peak_rate = 2.0 * (big * big * big) as f64 / t_big;
    // thin GEMM: memory-bound; what the flops do not explain is the element term
    let (tm, tn, tk) = (2048, 4, 4);
    let t_thin = faer_gemm_s(tm, tn, tk, 50);
    let elems = (tm * tk + tk * tn + 2 * tm * tn) as f64;
    let elem_s = ((t_thin - call_s - 2.0 * (tm * tn * tk) as f64 / peak_rate) / elems).max(0.0);
    let t_tiny = tiny_s();
    let tiny_rate = 2.0 * 64.0 / (t_tiny * 0.8).max(1e-12);
    let tiny_call_s = t_tiny * 0.2;
    let finite = |x: f64, dflt: f64| if x.is_finite() && x > 0.0 { x } else { dflt };
    CostModel {
        call_s: finite(call_s, d.call_s),
        tiny_call_s: finite(tiny_call_s, d.tiny_call_s),
        tiny_rate: finite(tiny_rate, d.tiny_rate),
        peak_rate: finite(peak_rate, d.peak_rate),
        elem_s: if elem_s.is_finite() { elem_s } else { d.elem_s },
        pack_elem_s: finite(pack_elem_s(), d.pack_elem_s),
        member_s: finite(call_s, d.call_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("bc-cal-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_calibration_file_round_trips() {
        let p = tmp("round/cost-model.json");
        let m = CostModel {
            call_s: 1.5e-8,
            ..CostModel::default()
        };
        m.save(&p).unwrap();
        assert_eq!(CostModel::load(&p).unwrap(), m);
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn corrupt_foreign_and_odd_files_are_rejected_by_name() {
        let cases = [
            ("corrupt", "{not json".to_string()),
            (
                "format",
                format!(
                    r#"{{"format": "other/1", "machine": "{}", "constants": {{"call_s": 1, "tiny_call_s": 1, "tiny_rate": 1, "peak_rate": 1, "elem_s": 1, "pack_elem_s": 1, "member_s": 1}}}}"#,
                    machine_id()
                ),
            ),
            (
                "foreign",
                format!(
                    r#"{{"format": "{FORMAT}", "machine": "a PDP-11", "constants": {{"call_s": 1, "tiny_call_s": 1, "tiny_rate": 1, "peak_rate": 1, "elem_s": 1, "pack_elem_s": 1, "member_s": 1}}}}"#
                ),
            ),
            (
                "negative",
                format!(
                    r#"{{"format": "{FORMAT}", "machine": "{}", "constants": {{"call_s": -1, "tiny_call_s": 1, "tiny_rate": 1, "peak_rate": 1, "elem_s": 1, "pack_elem_s": 1, "member_s": 1}}}}"#,
                    machine_id()
                ),
            ),
            ("missing", "{}".to_string()),
        ];
        for (name, text) in cases {
            let p = tmp(name);
            std::fs::write(&p, text).unwrap();
            match CostModel::load(&p) {
                Err(Error::Calibration { path, reason }) => {
                    assert!(path.contains(name), "{path}");
                    assert!(!reason.is_empty());
                }
                other => panic!("{name}: {other:?}"),
            }
            let _ = std::fs::remove_file(&p);
        }
        assert!(matches!(
            CostModel::load(&tmp("absent")),
            Err(Error::Calibration { .. })
        ));
    }

    #[test]
    fn measuring_gives_usable_constants() {
        let m = CostModel::measure();
        assert!(
            m.peak_rate > 1e8 && m.call_s > 0.0 && m.pack_elem_s > 0.0,
            "{m}"
        );
    }
}
