//! The MPI side (feature `mpi`): a communicator with its measured message cost, distributed
//! tensors (distribute, scatter, gather) and the distributed contraction. Every collective
//! call is made by every rank in the same order; a failure on one rank is agreed on before
//! anything else is sent, so every rank returns the same error and none waits forever.

use super::owner::OwnerMap;
use super::place::{place_step, MessageCost, StepPlacement};
use super::transfer::{elems, owned, pack, unpack};
use crate::block::{zeroed_buffer, DynTensor};
use crate::error::{Error, Result};
use crate::exec::cpu::run_components;
use crate::exec::intermediate_buffer;
use crate::hash::Fx;
use crate::kernel::Accum;
use crate::plan::cache::spec_fingerprint;
use crate::plan::{CostModel, Input, Plan, PlanCache, PlanOptions};
use crate::scalar::{Conj, Scalar};
use crate::spec::ContractionSpec;
use ::mpi::collective::SystemOperation;
use ::mpi::datatype::Equivalence;
use ::mpi::topology::SimpleCommunicator;
use ::mpi::traits::*;
use num_complex::Complex64;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

/// An element type MPI can send as is.
pub trait DistScalar: Scalar + Equivalence {}
impl DistScalar for f64 {}
impl DistScalar for f32 {}
impl DistScalar for Complex64 {}

/// Tags: a step's two operands, then gathers and scatters.
const TAG_GATHER: i32 = 1;
const TAG_SCATTER: i32 = 2;
const TAG_PING: i32 = 3;
pub(super) fn step_tag(step: usize, side: usize) -> i32 {
    16 + 2 * step as i32 + side as i32
}

/// A communicator for distributed contractions: a duplicate of the caller's (the library's
/// messages never match the caller's), the message cost measured between ranks 0 and 1, rank
/// 0's cost model (so every rank makes the same plan) and a plan cache.
pub struct Dist {
    pub(super) comm: SimpleCommunicator,
    cost: MessageCost,
    options: PlanOptions,
    plans: PlanCache,
}

/// A block-sparse tensor whose blocks are owned by ranks: every rank holds the whole
/// structure and the values of the blocks it owns (the others are zero there).
#[derive(Debug, Clone)]
pub struct DistTensor<T> {
    pub(super) full: DynTensor<T>,
    pub(super) owners: Vec<u32>,
}

impl<T: Scalar> DistTensor<T> {
    /// The tensor's structure, with this rank's blocks' values (the others zero).
    pub fn local(&self) -> &DynTensor<T> {
        &self.full
    }
    /// The owner of each block (positions as in `local().blocks()`).
    pub fn owners(&self) -> &[u32] {
        &self.owners
    }
    /// Blocks this rank owns.
    pub fn owned(&self, rank: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.owners.len()).filter(move |&b| self.owners[b] as usize == rank)
    }
}

/// What a distributed contraction did, the same on every rank.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DistStats {
    /// Messages the placements call for, over all ranks and steps.
    pub messages: usize,
    /// Messages actually posted, counted at the MPI calls and summed over the ranks (equal to
    /// `messages`).
    pub sent: usize,
    /// Bytes those messages carried.
    pub bytes: usize,
    /// Blocks that crossed ranks (what one message per block would have sent).
    pub blocks_transferred: usize,
    /// Each step's placement.
    pub steps: Vec<StepPlacement>,
}

/// A hash of an owner list.
fn owners_hash(owners: &[u32]) -> u64 {
    let mut h = Fx::default();
    h.write(owners.len() as u64);
    for &o in owners {
        h.write(o as u64);
    }
    h.finish()
}

impl Dist {
    /// Wraps (a duplicate of) `comm`, measures the message cost between ranks 0 and 1 and
    /// takes rank 0's cost model. Collective: every rank calls it.
    pub fn new(comm: &impl Communicator) -> Result<Self> {
        let mut d = Self::with_cost(comm, MessageCost::default())?;
        d.cost = d.measure_cost();
        Ok(d)
    }

    /// Like [`Self::new`] with a given message cost (nothing measured).
    pub fn with_cost(comm: &impl Communicator, cost: MessageCost) -> Result<Self> {
        let comm = comm.duplicate();
        // rank 0 calibrates (or reads its stored constants); the others take them
        let m = if comm.rank() == 0 {
            CostModel::calibrated()
        } else {
            CostModel::default()
        };
        let mut v = m.to_array();
        comm.process_at_rank(0).broadcast_into(&mut v[..]);
        let model = CostModel::from_array(v);
        Ok(Dist {
            comm,
            cost,
            options: PlanOptions {
                model,
                ..PlanOptions::default()
            },
            plans: PlanCache::new(),
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.comm.rank() as usize
    }
    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.comm.size() as usize
    }
    /// The message cost placement uses.
    pub fn message_cost(&self) -> MessageCost {
        self.cost
    }
    /// The plan cache (the same plans on every rank).
    pub fn plans(&self) -> &PlanCache {
        &self.plans
    }

    /// Ping-pong between ranks 0 and 1 (8 bytes and 1 MiB, best of several), broadcast from
    /// rank 0; the default on one rank.
    fn measure_cost(&self) -> MessageCost {
        let mut v = [self.cost.latency_s, self.cost.s_per_byte];
        if self.size() >= 2 && self.rank() < 2 {
            let other = self.comm.process_at_rank(1 - self.rank() as i32);
            let mut best = [f64::INFINITY; 2];
            for (i, n) in [1usize, 1 << 17].into_iter().enumerate() {
                let mut buf = vec![0.0f64; n];
                for _ in 0..if n == 1 { 50 } else { 5 } {
                    let t0 = Instant::now();
                    if self.rank() == 0 {
                        other.send_with_tag(&buf[..], TAG_PING);
                        other.receive_into_with_tag(&mut buf[..], TAG_PING);
                    } else {
                        other.receive_into_with_tag(&mut buf[..], TAG_PING);
                        other.send_with_tag(&buf[..], TAG_PING);
                    }
                    best[i] = best[i].min(t0.elapsed().as_secs_f64() / 2.0);
                }
            }
            let latency = best[0].max(1e-8);
            let per_byte = ((best[1] - latency) / (8 << 17) as f64).max(1e-13);
            v = [latency, per_byte];
        }
        self.comm.process_at_rank(0).broadcast_into(&mut v[..]);
        MessageCost {
            latency_s: v[0],
            s_per_byte: v[1],
        }
    }

    /// Every rank's `local` outcome agreed on: Ok everywhere, or on every rank the error of the
    /// lowest rank that failed.
    pub(super) fn agree<X>(&self, local: Result<X>) -> Result<X> {
        let size = self.size() as i32;
        let mine = if local.is_err() {
            self.rank() as i32
        } else {
            size
        };
        let mut first = size;
        self.comm
            .all_reduce_into(&mine, &mut first, SystemOperation::min());
        if first == size {
            return local;
        }
        let text = match &local {
            Err(e) if first == mine => e.to_string(),
            _ => String::new(),
        };
        let mut len = text.len() as u64;
        let root = self.comm.process_at_rank(first);
        root.broadcast_into(&mut len);
        let mut bytes = text.into_bytes();
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
        Err(Error::Distributed {
            rank: first as usize,
            ranks: size as usize,
            reason: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// An error on every rank unless every rank passed the same `value` for `what`.
    fn check_same(&self, what: &str, value: u64) -> Result<()> {
        let mut all = vec![0u64; self.size()];
        self.comm.all_gather_into(&value, &mut all[..]);
        match all.iter().position(|&v| v != all[0]) {
            None => Ok(()),
            Some(r) => Err(Error::Distributed {
                rank: r,
                ranks: self.size(),
                reason: format!("rank {r} disagrees with rank 0 on {what}"),
            }),
        }
    }

    /// Distributes a tensor every rank holds in full (built the same everywhere, from a seed
    /// for example): each rank keeps its blocks' values and zeroes the others. Collective.
    pub fn distribute<T: DistScalar>(
        &self,
        mut t: DynTensor<T>,
        map: &OwnerMap,
    ) -> Result<DistTensor<T>> {
        let owners = self.agree(map.owners(t.blocks(), self.size()))?;
        self.same_layout(&t, &owners)?;
        let me = self.rank() as u32;
        let foreign: Vec<u32> = (0..owners.len() as u32)
            .filter(|&b| owners[b as usize] != me)
            .collect();
        let zeros = vec![
            T::zero();
            foreign
                .iter()
                .map(|&b| elems(&t.blocks()[b as usize]))
                .sum()
        ];
        unpack(&mut t, &foreign, &zeros);
        Ok(DistTensor { full: t, owners })
    }

    /// Every rank holds the same structure and owner map (an error on every rank otherwise).
    fn same_layout<T: Scalar>(&self, t: &DynTensor<T>, owners: &[u32]) -> Result<()> {
        let mut h = Fx::default();
        h.write(t.structure_fingerprint());
        h.write(owners_hash(owners));
        self.check_same("the tensor's structure and owner map", h.finish())
    }

    /// Scatters `t` from `root`: every rank passes a tensor of the same structure (only
    /// `root`'s values are read) and gets its blocks' values from `root`, one message per
    /// rank. Collective.
    pub fn scatter<T: DistScalar>(
        &self,
        root: usize,
        t: &DynTensor<T>,
        map: &OwnerMap,
    ) -> Result<DistTensor<T>> {
        self.check_root(root)?;
        let owners = self.agree(map.owners(t.blocks(), self.size()))?;
        self.same_layout(t, &owners)?;
        let mut full = t.clone();
        let me = self.rank();
        let mine: Vec<u32> = owned(&owners, me);
        if me == root {
            for r in (0..self.size()).filter(|&r| r != root) {
                let buf = pack(t, &owned(&owners, r));
                self.comm
                    .process_at_rank(r as i32)
                    .send_with_tag(&buf[..], TAG_SCATTER);
            }
        } else {
            let n = mine.iter().map(|&b| elems(&t.blocks()[b as usize])).sum();
            let mut buf = vec![T::zero(); n];
            self.comm
                .process_at_rank(root as i32)
                .receive_into_with_tag(&mut buf[..], TAG_SCATTER);
            unpack(&mut full, &mine, &buf);
        }
        let foreign: Vec<u32> = (0..owners.len() as u32)
            .filter(|&b| owners[b as usize] as usize != me)
            .collect();
        let zeros = vec![
            T::zero();
            foreign
                .iter()
                .map(|&b| elems(&full.blocks()[b as usize]))
                .sum()
        ];
        unpack(&mut full, &foreign, &zeros);
        Ok(DistTensor { full, owners })
    }

    /// Gathers a distributed tensor on `root` (one message per other rank): `Some(tensor)` on
    /// `root`, `None` elsewhere. Collective.
    pub fn gather<T: DistScalar>(
        &self,
        root: usize,
        t: &DistTensor<T>,
    ) -> Result<Option<DynTensor<T>>> {
        self.check_root(root)?;
        self.same_layout(&t.full, &t.owners)?;
        let me = self.rank();
        if me != root {
            let buf = pack(&t.full, &owned(&t.owners, me));
            self.comm
                .process_at_rank(root as i32)
                .send_with_tag(&buf[..], TAG_GATHER);
            return Ok(None);
        }
        let mut full = t.full.clone();
        for r in (0..self.size()).filter(|&r| r != root) {
            let blocks = owned(&t.owners, r);
            let n = blocks
                .iter()
                .map(|&b| elems(&full.blocks()[b as usize]))
                .sum();
            let mut buf = vec![T::zero(); n];
            self.comm
                .process_at_rank(r as i32)
                .receive_into_with_tag(&mut buf[..], TAG_GATHER);
            unpack(&mut full, &blocks, &buf);
        }
        Ok(Some(full))
    }

    fn check_root(&self, root: usize) -> Result<()> {
        if root >= self.size() {
            return Err(Error::InvalidArgument {
                name: "root".into(),
                reason: format!("rank {root}, but there are {} ranks", self.size()),
            });
        }
        Ok(())
    }

    /// The plan every rank makes for `spec` on these operands (after checking that every
    /// rank passed the same contraction, structures and owner maps).
    pub fn plan<T: DistScalar>(
        &self,
        spec: &ContractionSpec,
        ops: &[&DistTensor<T>],
    ) -> Result<Arc<Plan>> {
        let mut h = Fx::default();
        let fp = spec_fingerprint(spec);
        h.write(fp);
        for d in ops {
            h.write(d.full.structure_fingerprint());
            h.write(owners_hash(&d.owners));
        }
        self.check_same(
            "the contraction, its operands' structures and owner maps",
            h.finish(),
        )?;
        let fulls: Vec<&DynTensor<T>> = ops.iter().map(|d| &d.full).collect();
        self.agree(self.plans.get_or_plan(spec, fp, &fulls, &self.options))
    }

    /// A single operand permuted, conjugated and scaled; each block stays with its owner.
    fn rearranged<T: DistScalar>(
        &self,
        op: &DistTensor<T>,
        perm: &[usize],
        conj: Conj,
        alpha: T,
    ) -> Result<DistTensor<T>> {
        let t = &op.full;
        let full = self.agree(t.permuted(perm, conj, alpha))?;
        let owners = full
            .blocks()
            .iter()
            .map(|b| {
                let key: Vec<u32> = perm.iter().map(|&p| b.key[p]).collect();
                t.find_block(&key).map_or(0, |i| op.owners[i])
            })
            .collect();
        Ok(DistTensor { full, owners })
    }

    /// Contracts distributed operands as `spec` says (`alpha` folded in): each step's
    /// components run where [`place_step`] puts them, the blocks they read from other ranks
    /// arrive in one message per (operand, sender, receiver), all posted before any is waited
    /// on; the result's blocks stay on the ranks that computed them. Collective.
    pub fn contract<T: DistScalar>(
        &self,
        spec: &ContractionSpec,
        ops: &[&DistTensor<T>],
        alpha: T,
    ) -> Result<(DistTensor<T>, DistStats)> {
        let plan = self.plan(spec, ops)?;
        if let Some((perm, conj)) = &plan.finish {
            let t = self.rearranged(ops[0], perm, *conj, alpha)?;
            return Ok((t, DistStats::default()));
        }
        let mut results: Vec<Option<DistTensor<T>>> = vec![None; plan.steps.len()];
        let mut stats = DistStats::default();
        let last = plan.steps.len() - 1;
        for (i, st) in plan.steps.iter().enumerate() {
            // an intermediate is read once: taken, so that what arrives is written into it
            let mut input = |inp: Input| -> Result<Cow<'_, DistTensor<T>>> {
                match inp {
                    Input::Operand(k) => Ok(Cow::Borrowed(ops[k])),
                    Input::Step(j) => {
                        results[j]
                            .take()
                            .map(Cow::Owned)
                            .ok_or_else(|| Error::InvalidSpec {
                                reason: format!("step {i} reads step {j}'s result twice"),
                            })
                    }
                }
            };
            let a = self.agree(input(st.left))?;
            let b = self.agree(input(st.right))?;
            let pl = place_step(
                &st.plan,
                [&a.owners, &b.owners],
                std::mem::size_of::<T>(),
                self.size(),
                &self.cost,
            );
            let ([a, b], sent) = self.exchange(i, &pl, [a, b])?;
            stats.sent += sent;
            let scale = if i == last { alpha } else { T::one() };
            let full = self.run_share(&plan, i, &pl, [a, b], scale)?;
            stats.messages += pl.messages.len();
            stats.bytes += pl.elems_transferred() * std::mem::size_of::<T>();
            stats.blocks_transferred += pl.blocks_transferred();
            results[i] = Some(DistTensor {
                full,
                owners: pl.out_owner.clone(),
            });
            stats.steps.push(pl);
        }
        let result = results.pop().flatten().ok_or_else(|| Error::EmptyPlan {
            executor: "distributed (MPI)".into(),
        })?;
        let mut total = 0u64;
        self.comm
            .all_reduce_into(&(stats.sent as u64), &mut total, SystemOperation::sum());
        stats.sent = total as usize;
        Ok((result, stats))
    }

    /// This rank's share of step `i` (the components placed on it) into the step's result:
    /// zeroed when it is the last (its foreign blocks read as zero), else a pooled buffer
    /// (only the blocks this rank computes are ever read). Operands it owned go back to the
    /// pool.
    fn run_share<T: DistScalar>(
        &self,
        plan: &Plan,
        i: usize,
        pl: &StepPlacement,
        [a, b]: [Cow<'_, DistTensor<T>>; 2],
        scale: T,
    ) -> Result<DynTensor<T>> {
        let st = &plan.steps[i];
        let out = if i + 1 == plan.steps.len() {
            zeroed_buffer::<T>(st.plan.out_len, || {
                format!("the result of step {i} ({})", st.name)
            })
        } else {
            intermediate_buffer::<T>(plan, i)
        };
        let mut out = self.agree(out)?;
        let keep: Vec<bool> = pl
            .comp_rank
            .iter()
            .map(|&r| r as usize == self.rank())
            .collect();
        run_components(
            &st.plan,
            &a.full,
            &b.full,
            scale,
            &mut out,
            Accum::Replace,
            &keep,
        );
        for t in [a, b] {
            if let Cow::Owned(t) = t {
                crate::exec::pool::give(t.full.into_data());
            }
        }
        let g = &st.plan.geometry;
        Ok(DynTensor::from_shared(
            g.out_legs.clone(),
            g.symmetry.clone(),
            g.out_charge.clone(),
            st.plan.out_index.clone(),
            out,
        ))
    }

    /// The plan with, per step, each rank's predicted compute and communication and the
    /// messages (count, bytes) next to the blocks they carry (what one message per block
    /// would send). Collective.
    pub fn explain<T: DistScalar>(
        &self,
        spec: &ContractionSpec,
        ops: &[&DistTensor<T>],
    ) -> Result<String> {
        let plan = self.plan(spec, ops)?;
        let mut text = plan.explain();
        let mut step_owners: Vec<Vec<u32>> = Vec::new();
        for (i, st) in plan.steps.iter().enumerate() {
            let own = |inp: Input| -> &[u32] {
                match inp {
                    Input::Operand(k) => &ops[k].owners,
                    Input::Step(j) => &step_owners[j],
                }
            };
            let pl = place_step(
                &st.plan,
                [own(st.left), own(st.right)],
                std::mem::size_of::<T>(),
                self.size(),
                &self.cost,
            );
            text.push_str(&describe_placement(
                i,
                &st.name,
                &pl,
                std::mem::size_of::<T>(),
            ));
            step_owners.push(pl.out_owner);
        }
        Ok(text)
    }
}

/// One step's placement in words.
fn describe_placement(i: usize, name: &str, pl: &StepPlacement, elem_bytes: usize) -> String {
    let mut s = format!(
        "placement of step {i} ({name}): components per rank {:?}; predicted compute {} us, \
         communication {} us per rank\n",
        (0..pl.compute_s.len())
            .map(|r| pl.comp_rank.iter().filter(|&&x| x as usize == r).count())
            .collect::<Vec<_>>(),
        fmt_us(&pl.compute_s),
        fmt_us(&pl.comm_s),
    );
    s.push_str(&format!(
        "  {} messages, {} bytes, carrying {} blocks (one message per block: {} messages)\n",
        pl.messages.len(),
        pl.elems_transferred() * elem_bytes,
        pl.blocks_transferred(),
        pl.blocks_transferred()
    ));
    for m in &pl.messages {
        s.push_str(&format!(
            "  rank {} -> {}: operand {:?}, {} blocks, {} bytes\n",
            m.from,
            m.to,
            m.side,
            m.blocks.len(),
            m.elems * elem_bytes
        ));
    }
    s
}

fn fmt_us(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{:.1}", x * 1e6)).collect();
    format!("[{}]", parts.join(", "))
}
