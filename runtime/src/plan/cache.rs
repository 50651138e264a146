//! Plans cached by (call site, block-structure fingerprint), with hit and miss counters.

use super::{Plan, PlanOptions};
use crate::block::DynTensor;
use crate::error::Result;
use crate::hash::Fx;
use crate::scalar::Scalar;
use crate::spec::{ContractionSpec, Tree};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// Fingerprint of (spec, operand sectors and blocks, options), sector dimensions left out:
/// structures that share it can plan from each other's plan.
fn near_fingerprint<T: Scalar>(spec_fp: u64, ops: &[&DynTensor<T>], options: &PlanOptions) -> u64 {
    let mut h = Fx::default();
    h.write(spec_fp ^ 0x5ec7_0b5f_0000_0001);
    h.write(options.fingerprint());
    for t in ops {
        h.write(t.sector_fingerprint());
    }
    h.finish()
}

/// The default capacity of a plan cache, in bytes of plans (see [`PlanCache::set_capacity`]).
pub const DEFAULT_CAPACITY: usize = 256 << 20;

/// Plans by structure fingerprint, least recently used evicted beyond a capacity in bytes;
/// hit, miss and eviction counters. Usable in a `static`.
pub struct PlanCache {
    inner: Mutex<Lru>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    templated: AtomicU64,
    capacity: AtomicUsize,
    plan_nanos: AtomicU64,
}

/// Entries with their last use; a plan that cannot be made in place is cached as `None`.
struct Lru {
    map: Option<HashMap<u64, Entry>>,
    /// Per sectors-and-blocks fingerprint, the key of the latest plan made for it.
    near: Option<HashMap<u64, u64>>,
    tick: u64,
    bytes: usize,
}

struct Entry {
    plan: Option<Arc<Plan>>,
    bytes: usize,
    last: u64,
}

/// A snapshot of a cache's counters and size.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CacheStats {
    /// Lookups that found a plan.
    pub hits: u64,
    /// Lookups that had to plan.
    pub misses: u64,
    /// Plans dropped to stay under the capacity.
    pub evictions: u64,
    /// Misses planned from a cached plan whose operands differed only in sector dimensions
    /// (its order and grouping kept; sizes, layouts and prices recomputed).
    pub templated: u64,
    /// Plans stored.
    pub plans: usize,
    /// Their approximate size in bytes.
    pub bytes: usize,
    /// The capacity in bytes.
    pub capacity: usize,
    /// Seconds spent planning (the misses).
    pub plan_seconds: f64,
}

impl CacheStats {
    /// Adds another cache's counters.
    pub fn add(&mut self, o: &CacheStats) {
        self.hits += o.hits;
        self.misses += o.misses;
        self.evictions += o.evictions;
        self.templated += o.templated;
        self.plans += o.plans;
        self.bytes += o.bytes;
        self.capacity += o.capacity;
        self.plan_seconds += o.plan_seconds;
    }
}

impl Default for PlanCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PlanCache {
    /// An empty cache of the default capacity (usable in a `static`).
    pub const fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
    /// An empty cache holding at most about `bytes` of plans.
    pub const fn with_capacity(bytes: usize) -> Self {
        PlanCache {
            inner: Mutex::new(Lru {
                map: None,
                near: None,
                tick: 0,
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            templated: AtomicU64::new(0),
            capacity: AtomicUsize::new(bytes),
            plan_nanos: AtomicU64::new(0),
        }
    }
    /// Changes the capacity (evicting at the next insertion if over it).
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Ordering::Relaxed);
        let mut g = self.lock();
        self.evict(&mut g, 0);
    }
    /// The cached plan for this structure, or a new one (planned and stored).
    pub fn get_or_plan<T: Scalar>(
        &self,
        spec: &ContractionSpec,
        spec_fp: u64,
        ops: &[&DynTensor<T>],
        options: &PlanOptions,
    ) -> Result<Arc<Plan>> {
        (super::entry::<T>()?.get_or_plan)(self, spec, spec_fp, ops, options)
    }
    /// The cached plan writing in place into a target of `target`'s structure (`=`, `+=`), or
    /// a new one; None (also cached) when the contraction cannot be written in place there.
    pub fn get_or_plan_into<T: Scalar>(
        &self,
        spec: &ContractionSpec,
        spec_fp: u64,
        ops: &[&DynTensor<T>],
        target: &DynTensor<T>,
        options: &PlanOptions,
    ) -> Result<Option<Arc<Plan>>> {
        (super::entry::<T>()?.get_or_plan_into)(self, spec, spec_fp, ops, target, options)
    }
    /// The plan under `key`; on a miss, `plan` makes it, given the cached plan of the latest
    /// structure with the same `near` fingerprint as a template when there is one. `near` is
    /// computed on a miss only: it hashes every sector and block key (computed at every hit,
    /// it took about 1% of a Hubbard DMRG's time).
    fn lookup(
        &self,
        key: u64,
        near: impl FnOnce() -> u64,
        plan: impl FnOnce(Option<&Plan>) -> Result<Option<Plan>>,
    ) -> Result<Option<Arc<Plan>>> {
        let (template, near) = {
            let mut g = self.lock();
            g.tick += 1;
            let tick = g.tick;
            if let Some(e) = g.map.get_or_insert_with(HashMap::new).get_mut(&key) {
                e.last = tick;
                self.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(e.plan.clone());
            }
            let near = near();
            let like = g.near.as_ref().and_then(|n| n.get(&near)).copied();
            let template = like
                .and_then(|k| g.map.as_ref().and_then(|m| m.get(&k)))
                .and_then(|e| e.plan.clone());
            (template, near)
        };
        self.misses.fetch_add(1, Ordering::Relaxed);
        if template.is_some() {
            self.templated.fetch_add(1, Ordering::Relaxed);
        }
        let t0 = std::time::Instant::now();
        let plan = plan(template.as_deref())?.map(Arc::new);
        self.plan_nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let bytes = plan.as_ref().map_or(64, |p| p.approx_bytes());
        let mut g = self.lock();
        self.evict(&mut g, bytes);
        let last = g.tick;
        g.bytes += bytes;
        let old = g.map.get_or_insert_with(HashMap::new).insert(
            key,
            Entry {
                plan: plan.clone(),
                bytes,
                last,
            },
        );
        if let Some(o) = old {
            g.bytes -= o.bytes;
        }
        g.near.get_or_insert_with(HashMap::new).insert(near, key);
        Self::prune_near(&mut g);
        Ok(plan)
    }
    /// Forgets templates whose plans were evicted, once they outnumber the plans held.
    fn prune_near(g: &mut Lru) {
        let held = g.map.as_ref().map_or(0, HashMap::len);
        let Lru { map, near, .. } = g;
        if let (Some(map), Some(near)) = (map.as_ref(), near.as_mut()) {
            if near.len() > 2 * held + 64 {
                near.retain(|_, k| map.contains_key(k));
            }
        }
    }
    /// Drops least recently used plans until `incoming` more bytes fit the capacity.
    fn evict(&self, g: &mut Lru, incoming: usize) {
        let cap = self.capacity.load(Ordering::Relaxed);
        while g.bytes + incoming > cap {
            let Some(map) = g.map.as_mut() else { return };
            let Some((&k, _)) = map.iter().min_by_key(|(_, e)| e.last) else {
                return;
            };
            if let Some(e) = map.remove(&k) {
                g.bytes -= e.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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
        self.lock().map.as_ref().map_or(0, HashMap::len)
    }
    /// Whether no plan is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Approximate bytes of the plans stored.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
    /// Counters and size at once.
    pub fn stats(&self) -> CacheStats {
        let g = self.lock();
        CacheStats {
            hits: self.hits(),
            misses: self.misses(),
            evictions: self.evictions.load(Ordering::Relaxed),
            templated: self.templated.load(Ordering::Relaxed),
            plans: g.map.as_ref().map_or(0, HashMap::len),
            bytes: g.bytes,
            capacity: self.capacity.load(Ordering::Relaxed),
            plan_seconds: self.plan_nanos.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }
    /// Drops every plan (counters kept).
    pub fn clear(&self) {
        let mut g = self.lock();
        g.map = None;
        g.near = None;
        g.bytes = 0;
    }
}

/// [`PlanCache::get_or_plan`], instantiated per element type.
pub(super) fn get_or_plan_here<T: Scalar>(
    cache: &PlanCache,
    spec: &ContractionSpec,
    spec_fp: u64,
    ops: &[&DynTensor<T>],
    options: &PlanOptions,
) -> Result<Arc<Plan>> {
    let key = fingerprint(spec_fp, ops, options);
    let near = || near_fingerprint(spec_fp, ops, options);
    let plan = cache.lookup(key, near, |like| {
        super::build(spec, ops, options, None, like)
    })?;
    plan.ok_or_else(|| crate::error::Error::InvalidSpec {
        reason: "a plan without a fixed output has no output".into(),
    })
}

/// [`PlanCache::get_or_plan_into`], instantiated per element type.
pub(super) fn get_or_plan_into_here<T: Scalar>(
    cache: &PlanCache,
    spec: &ContractionSpec,
    spec_fp: u64,
    ops: &[&DynTensor<T>],
    target: &DynTensor<T>,
    options: &PlanOptions,
) -> Result<Option<Arc<Plan>>> {
    let mut h = Fx::default();
    h.write(fingerprint(spec_fp, ops, options));
    h.write(0x1a7e_7a26_e700_0001);
    h.write(target.structure_fingerprint());
    let near = || {
        let mut n = Fx::default();
        n.write(near_fingerprint(spec_fp, ops, options));
        n.write(0x1a7e_7a26_e700_0001);
        n.write(target.sector_fingerprint());
        n.finish()
    };
    cache.lookup(h.finish(), near, |like| {
        super::build(spec, ops, options, Some(target), like)
    })
}
