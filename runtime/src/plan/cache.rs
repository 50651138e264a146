//! Plans cached by (call site, block-structure fingerprint), with hit and miss counters.

use super::{build_plan, Plan, PlanOptions};
use crate::block::DynTensor;
use crate::error::Result;
use crate::hash::Fx;
use crate::scalar::Scalar;
use crate::spec::{ContractionSpec, Tree};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Fingerprint of a contraction spec (labels, operands, conjugation, annotations, order).
pub fn spec_fingerprint(spec: &ContractionSpec) -> u64 {
    let mut h = Fx::default();
    h.write(spec.labels.len() as u64);
    let ix = |h: &mut Fx, i: &crate::spec::IndexSpec| {
        h.write(i.label as u64);
        h.write(i.flow.map_or(0, |f| f.sign() as u64 & 3));
        h.write(i.local as u64);
    };
    for i in &spec.output {
        ix(&mut h, i);
    }
    for o in &spec.operands {
        h.write(o.conj as u64 | (o.indices.len() as u64) << 1);
        for i in &o.indices {
            ix(&mut h, i);
        }
    }
    fn tree(h: &mut Fx, t: &Tree) {
        match t {
            Tree::Leaf(i) => h.write(*i as u64),
            Tree::Node(a, b) => {
                h.write(u64::MAX);
                tree(h, a);
                tree(h, b);
            }
        }
    }
    if let Some(t) = &spec.tree {
        tree(&mut h, t);
    }
    h.finish()
}

/// Fingerprint of (spec, operand structures, options).
pub fn fingerprint<T: Scalar>(spec_fp: u64, ops: &[&DynTensor<T>], options: &PlanOptions) -> u64 {
    let mut h = Fx::default();
    h.write(spec_fp);
    h.write(options.fingerprint());
    for t in ops {
        h.write(t.structure_fingerprint());
    }
    h.finish()
}

/// Plans by fingerprint.
pub struct PlanCache {
    plans: Mutex<BTreeMap<u64, Arc<Plan>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Default for PlanCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PlanCache {
    /// An empty cache (usable in a `static`).
    pub const fn new() -> Self {
        PlanCache {
            plans: Mutex::new(BTreeMap::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }
    /// The cached plan for this structure, or a new one (planned and stored).
    pub fn get_or_plan<T: Scalar>(
        &self,
        spec: &ContractionSpec,
        spec_fp: u64,
        ops: &[&DynTensor<T>],
        options: &PlanOptions,
    ) -> Result<Arc<Plan>> {
        let key = fingerprint(spec_fp, ops, options);
        if let Some(p) = self.lock().get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(p.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let plan = Arc::new(build_plan(spec, ops, options)?);
        self.lock().insert(key, plan.clone());
        Ok(plan)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Plan>>> {
        self.plans.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Lookups that found a plan.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
    /// Lookups that had to plan.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
    /// Plans stored.
    pub fn len(&self) -> usize {
        self.lock().len()
    }
    /// Whether no plan is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Drops every plan (counters kept).
    pub fn clear(&self) {
        self.lock().clear();
    }
}
