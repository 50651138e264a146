//! Where each step's work runs and what moves: the cost model places each component (the
//! groups that share output blocks) on a rank, and every block a rank's groups read but do not
//! own travels in one message per (operand, sender, receiver). Pure: computed identically on
//! every rank from the plan and the owners, and tested without MPI.

use crate::plan::StepPlan;
use crate::step::Side;
use std::collections::BTreeMap;

/// What a message costs: `latency + bytes / bandwidth`, measured at start-up (see
/// `Dist::new`) or given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageCost {
    /// Seconds per message.
    pub latency_s: f64,
    /// Seconds per byte.
    pub s_per_byte: f64,
}

impl Default for MessageCost {
    /// Shared-memory transport on one node: 2 us per message, 5 GB/s.
    fn default() -> Self {
        MessageCost {
            latency_s: 2e-6,
            s_per_byte: 0.2e-9,
        }
    }
}

impl MessageCost {
    /// The predicted time of one message of `bytes`.
    pub fn seconds(&self, bytes: usize) -> f64 {
        self.latency_s + bytes as f64 * self.s_per_byte
    }
}

/// One message: every block of one operand that one rank's groups need from another, packed
/// contiguously in block order (the receiver's coalesced region).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Which operand of the step.
    pub side: Side,
    /// The sending rank (the blocks' owner).
    pub from: u32,
    /// The receiving rank.
    pub to: u32,
    /// The blocks (positions in that operand), ascending.
    pub blocks: Vec<u32>,
    /// Elements carried.
    pub elems: usize,
}

/// One step's placement.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlacement {
    /// The rank of each component (`StepPlan::components`).
    pub comp_rank: Vec<u32>,
    /// The owner of each output block: the rank of the component that writes it (rank 0 for
    /// a block no group writes: it is zero everywhere).
    pub out_owner: Vec<u32>,
    /// The messages, ordered by (side, from, to).
    pub messages: Vec<Message>,
    /// Predicted compute seconds per rank.
    pub compute_s: Vec<f64>,
    /// Predicted communication seconds per receiving rank.
    pub comm_s: Vec<f64>,
}

impl StepPlacement {
    /// Blocks that cross ranks (what one message per block would send).
    pub fn blocks_transferred(&self) -> usize {
        self.messages.iter().map(|m| m.blocks.len()).sum()
    }
    /// Elements that cross ranks.
    pub fn elems_transferred(&self) -> usize {
        self.messages.iter().map(|m| m.elems).sum()
    }
}

/// What one component reads and its predicted time.
struct Need {
    blocks: [Vec<u32>; 2],
    seconds: f64,
}

/// Elements of each block of each operand, as the step's pairs read them.
fn block_elems(sp: &StepPlan, lens: [usize; 2]) -> [Vec<usize>; 2] {
    let mut e = [vec![0usize; lens[0]], vec![0usize; lens[1]]];
    for p in &sp.pairs {
        e[0][p.a as usize] = p.m * p.k;
        e[1][p.b as usize] = p.k * p.n;
    }
    e
}

fn needs(sp: &StepPlan) -> Vec<Need> {
    sp.components
        .iter()
        .map(|comp| {
            let mut blocks = [Vec::new(), Vec::new()];
            let mut seconds = 0.0;
            for &gi in comp {
                let g = &sp.groups[gi as usize];
                seconds += g.predicted_s;
                for &pi in &g.pairs {
                    let p = &sp.pairs[pi as usize];
                    blocks[0].push(p.a);
                    blocks[1].push(p.b);
                }
            }
            for b in &mut blocks {
                b.sort_unstable();
                b.dedup();
            }
            Need { blocks, seconds }
        })
        .collect()
}

/// Places a step: components in decreasing predicted time, each on the rank where it would
/// finish first (its load so far, its compute, and the messages for the blocks it reads that
/// the rank does not own); ties go to the rank missing fewer bytes, then the lower rank.
/// `owners[side][block]` is the rank owning each block of each operand.
pub fn place_step(
    sp: &StepPlan,
    owners: [&[u32]; 2],
    elem_bytes: usize,
    ranks: usize,
    cost: &MessageCost,
) -> StepPlacement {
    let ranks = ranks.max(1);
    let elems = block_elems(sp, [owners[0].len(), owners[1].len()]);
    let needs = needs(sp);
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by(|&x, &y| {
        needs[y]
            .seconds
            .total_cmp(&needs[x].seconds)
            .then(x.cmp(&y))
    });
    let mut busy = vec![0.0f64; ranks];
    let mut comp_rank = vec![0u32; needs.len()];
    for c in order {
        let n = &needs[c];
        let mut best = (f64::INFINITY, usize::MAX, 0usize);
        for (r, &load) in busy.iter().enumerate() {
            let (mut bytes, mut senders) = (0usize, Vec::new());
            for s in 0..2 {
                for &b in &n.blocks[s] {
                    let o = owners[s][b as usize] as usize;
                    if o != r {
                        bytes += elems[s][b as usize] * elem_bytes;
                        senders.push(o);
                    }
                }
            }
            senders.sort_unstable();
            senders.dedup();
            let comm = senders.len() as f64 * cost.latency_s + bytes as f64 * cost.s_per_byte;
            let finish = load + n.seconds + comm;
            if (finish, bytes) < (best.0, best.1) {
                best = (finish, bytes, r);
            }
        }
        busy[best.2] = best.0;
        comp_rank[c] = best.2 as u32;
    }
    let mut out_owner = vec![0u32; sp.out_keys.len()];
    for (c, comp) in sp.components.iter().enumerate() {
        for &gi in comp {
            for &pi in &sp.groups[gi as usize].pairs {
                out_owner[sp.pairs[pi as usize].c as usize] = comp_rank[c];
            }
        }
    }
    let messages = messages(&needs, &comp_rank, owners, &elems);
    let mut compute_s = vec![0.0; ranks];
    for (c, n) in needs.iter().enumerate() {
        compute_s[comp_rank[c] as usize] += n.seconds;
    }
    let mut comm_s = vec![0.0; ranks];
    for m in &messages {
        comm_s[m.to as usize] += cost.seconds(m.elems * elem_bytes);
    }
    StepPlacement {
        comp_rank,
        out_owner,
        messages,
        compute_s,
        comm_s,
    }
}

/// The messages a placement implies: for each receiving rank and operand, the blocks its
/// components read that it does not own, one message per owner.
fn messages(
    needs: &[Need],
    comp_rank: &[u32],
    owners: [&[u32]; 2],
    elems: &[Vec<usize>; 2],
) -> Vec<Message> {
    // (side, from, to) -> blocks
    let mut wanted: BTreeMap<(usize, u32, u32), Vec<u32>> = BTreeMap::new();
    for (c, n) in needs.iter().enumerate() {
        let to = comp_rank[c];
        for (s, blocks) in n.blocks.iter().enumerate() {
            for &b in blocks {
                let from = owners[s][b as usize];
                if from != to {
                    wanted.entry((s, from, to)).or_default().push(b);
                }
            }
        }
    }
    wanted
        .into_iter()
        .map(|((s, from, to), mut blocks)| {
            blocks.sort_unstable();
            blocks.dedup();
            let elems = blocks.iter().map(|&b| elems[s][b as usize]).sum();
            Message {
                side: Side::BOTH[s],
                from,
                to,
                blocks,
                elems,
            }
        })
        .collect()
}
