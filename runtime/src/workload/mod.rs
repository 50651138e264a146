//! Workload files (`blocksparse-workload/1`): structure, the seeded value generator,
//! result summaries (`norm`, `checksum`) and the peer's expected values.

mod notation;
mod parse;

use crate::block::DynTensor;
use crate::error::{Error, Result};
use crate::exec::{contract_dyn, Executor, RunStats};
use crate::scalar::{DType, Scalar};
use crate::spec::ContractionSpec;
use crate::symmetry::{Charge, Flow, Leg, Space, Symmetry};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// One tensor of a workload.
#[derive(Debug, Clone)]
pub struct TensorDesc {
    /// Its name in the contraction.
    pub name: String,
    /// Generator seed.
    pub seed: u64,
    /// Total charge.
    pub charge: Charge,
    /// Legs: the space's name and the flow.
    pub legs: Vec<(String, Flow)>,
    /// Stored blocks, or all allowed when `None`.
    pub blocks: Option<Vec<Vec<usize>>>,
}

/// A parsed workload file.
#[derive(Debug, Clone)]
pub struct Workload {
    /// `name`.
    pub name: String,
    /// `source`.
    pub source: String,
    /// `symmetry`.
    pub symmetry: Symmetry,
    /// `dtype`.
    pub dtype: DType,
    /// `spaces`, by name.
    pub spaces: HashMap<String, Arc<Space>>,
    /// `tensors`, in file order.
    pub tensors: Vec<TensorDesc>,
    /// `contraction` (with `order` as its tree, if given).
    pub contraction: ContractionSpec,
    /// `contraction` as written.
    pub contraction_text: String,
}

impl Workload {
    /// Reads and validates a workload file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates workload JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self> {
        parse::parse(text, file)
    }

    /// The contraction as the file wrote it.
    pub fn contraction_text(&self) -> &str {
        &self.contraction_text
    }

    /// Builds the tensor named `name` with the generator's values.
    pub fn build_tensor<T: Scalar>(&self, name: &str) -> Result<DynTensor<T>> {
        let d = self
            .tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| Error::Workload {
                file: self.name.clone(),
                field: "contraction".into(),
                reason: format!("operand `{name}` is not in `tensors`"),
            })?;
        let legs: Vec<Leg> = d
            .legs
            .iter()
            .map(|(s, f)| Leg::new(&self.spaces[s], *f))
            .collect();
        let shape: Vec<usize> = legs.iter().map(|l| l.space.dim()).collect();
        let strides = dense_strides(&shape);
        let seed = d.seed;
        DynTensor::from_fn(legs, d.charge.clone(), d.blocks.as_deref(), |idx| {
            let i: u64 = idx.iter().zip(&strides).map(|(&x, &s)| x as u64 * s).sum();
            T::from_parts(generate(seed, i), generate(seed, i ^ (1u64 << 63)))
        })
        .map_err(|e| Error::Workload {
            file: self.name.clone(),
            field: format!("tensors.{name}"),
            reason: e.to_string(),
        })
    }

    /// The operands of the contraction, in its order, built with the generator.
    pub fn build_operands<T: Scalar>(&self) -> Result<Vec<DynTensor<T>>> {
        if T::DTYPE != self.dtype {
            return Err(Error::DtypeMismatch {
                what: format!("workload {}", self.name),
                expected: self.dtype.to_string(),
                found: T::DTYPE.to_string(),
            });
        }
        self.contraction
            .operands
            .iter()
            .map(|o| self.build_tensor(&o.name))
            .collect()
    }

    /// The same workload on a structure near this one, as truncation leaves it in a DMRG: the
    /// same sectors and blocks, each block-leg sector's dimension moved by -1, 0 or +1 (at
    /// least 1; local legs unchanged), chosen by `seed`. A plan cache plans it from this
    /// workload's plan (see [`crate::plan::CacheStats::templated`]).
    pub fn near(&self, seed: u64) -> Result<Workload> {
        let mut w = self.clone();
        let mut names: Vec<&String> = self.spaces.keys().collect();
        names.sort();
        let mut k = seed;
        for name in names {
            let sp = &self.spaces[name];
            if sp.kind() == crate::symmetry::SpaceKind::Local {
                continue;
            }
            let sectors: Vec<(Vec<i64>, usize)> = sp
                .sectors()
                .iter()
                .map(|s| {
                    k = splitmix64(k);
                    let d = (s.dim as i64 + (k % 3) as i64 - 1).max(1) as usize;
                    (s.charge.values().to_vec(), d)
                })
                .collect();
            let near = Space::block(sp.symmetry(), &sectors).map_err(|e| Error::Workload {
                file: self.name.clone(),
                field: format!("spaces.{name}"),
                reason: e.to_string(),
            })?;
            w.spaces.insert(name.clone(), Arc::new(near));
        }
        Ok(w)
    }

    /// Builds the operands and contracts them on `exec`.
    pub fn run<T: Scalar>(&self, exec: Executor) -> Result<(DynTensor<T>, RunStats)> {
        let ops = self.build_operands::<T>()?;
        let refs: Vec<&DynTensor<T>> = ops.iter().collect();
        contract_dyn(&self.contraction, &refs, T::one(), exec)
    }
}

fn dense_strides(shape: &[usize]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1] as u64;
    }
    s
}

pub use crate::hash::{generate, splitmix64};

/// The checksum seed of FORMAT.md.
pub const CHECKSUM_SEED: u64 = 0x5EED;

/// Sum over stored elements of `Re(value) * generate(0x5EED, dense index)`.
pub fn checksum<T: Scalar>(t: &DynTensor<T>) -> f64 {
    let strides = dense_strides(&t.dense_shape());
    let mut s = 0.0;
    t.for_each_element(|idx, v| {
        let i: u64 = idx
            .iter()
            .zip(&strides)
            .map(|(&x, &st)| x as u64 * st)
            .sum();
        s += v.re() * generate(CHECKSUM_SEED, i);
    });
    s
}

/// The peer's result for one workload (`expected.json`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expected {
    /// Frobenius norm.
    pub norm: f64,
    /// Checksum.
    pub checksum: f64,
    /// The peer's median time with one thread, for orientation.
    pub tenpy_ms_1thread: Option<f64>,
}

impl Expected {
    /// Whether `(norm, checksum)` agrees within `rel * norm` (FORMAT.md uses 1e-10).
    pub fn agrees(&self, norm: f64, checksum: f64, rel: f64) -> bool {
        let tol = rel * self.norm.abs().max(f64::MIN_POSITIVE);
        (norm - self.norm).abs() <= tol && (checksum - self.checksum).abs() <= tol
    }
}

/// Reads `expected.json`: workload name -> expected values.
pub fn load_expected(path: impl AsRef<Path>) -> Result<HashMap<String, Expected>> {
    parse::load_expected(path.as_ref())
}
