//! The distributed executor's placement, without MPI: on the shipped workloads' plans, for 1
//! to 4 ranks, every block a rank's work reads is owned by it or arrives in exactly one
//! message; one message per (operand, sender, receiver); each output block on the rank that
//! wrote it; and fewer messages than blocks on the Hubbard effective Hamiltonians.

use blockcontract::dist::{place_step, MessageCost, OwnerMap, StepPlacement};
use blockcontract::plan::{Input, StepPlan};
use blockcontract::workload::Workload;
use blockcontract::{build_plan, PlanOptions};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

fn check_step(sp: &StepPlan, owners: [&[u32]; 2], ranks: usize, pl: &StepPlacement) {
    assert_eq!(pl.comp_rank.len(), sp.components.len());
    assert!(pl.comp_rank.iter().all(|&r| (r as usize) < ranks));
    // what each rank reads
    let mut reads: BTreeSet<(usize, u32, u32)> = BTreeSet::new(); // (side, block, rank)
    for (c, comp) in sp.components.iter().enumerate() {
        let r = pl.comp_rank[c];
        for &gi in comp {
            for &pi in &sp.groups[gi as usize].pairs {
                let p = &sp.pairs[pi as usize];
                reads.insert((0, p.a, r));
                reads.insert((1, p.b, r));
                assert_eq!(pl.out_owner[p.c as usize], r, "output block on its writer");
            }
        }
    }
    let mut carried: HashSet<(usize, u32, u32)> = HashSet::new();
    let mut routes: HashSet<(usize, u32, u32)> = HashSet::new();
    for m in &pl.messages {
        let s = m.side.index();
        assert_ne!(m.from, m.to);
        assert!(
            routes.insert((s, m.from, m.to)),
            "one message per (operand, sender, receiver)"
        );
        assert!(!m.blocks.is_empty());
        for &b in &m.blocks {
            assert_eq!(owners[s][b as usize], m.from, "sent by its owner");
            assert!(carried.insert((s, b, m.to)), "a block sent to a rank once");
            assert!(
                reads.contains(&(s, b, m.to)),
                "only blocks the receiver reads"
            );
        }
    }
    for &(s, b, r) in &reads {
        let own = owners[s][b as usize] == r;
        assert!(
            own || carried.contains(&(s, b, r)),
            "block {b} of side {s} reaches rank {r}"
        );
        assert!(
            !(own && carried.contains(&(s, b, r))),
            "no message for an owned block"
        );
    }
    if ranks == 1 {
        assert!(pl.messages.is_empty());
    }
}

#[test]
fn placements_deliver_every_block_once_in_one_message_per_route() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut hubbard_msgs = 0;
    let mut hubbard_blocks = 0;
    for name in [
        "heisenberg_u1_m128_heff2",
        "heisenberg_u1_m512_heff1",
        "hubbard_u1u1_m64_heff2",
        "hubbard_u1u1_m256_heff1",
        "hubbard_u1u1_m512_heff2",
        "hubbard_u1u1_m128_gemm",
    ] {
        let w = Workload::load(dir.join(format!("{name}.json"))).unwrap();
        let ops = w.build_operands::<f64>().unwrap();
        let refs: Vec<_> = ops.iter().collect();
        let plan = build_plan(&w.contraction, &refs, &PlanOptions::default()).unwrap();
        for ranks in 1..=4 {
            let op_owners: Vec<Vec<u32>> = ops
                .iter()
                .map(|t| OwnerMap::BySector.owners(t.blocks(), ranks).unwrap())
                .collect();
            let mut step_owners: Vec<Vec<u32>> = Vec::new();
            for st in &plan.steps {
                let own = |i: Input| match i {
                    Input::Operand(k) => op_owners[k].clone(),
                    Input::Step(j) => step_owners[j].clone(),
                };
                let (oa, ob) = (own(st.left), own(st.right));
                let pl = place_step(&st.plan, [&oa, &ob], 8, ranks, &MessageCost::default());
                check_step(&st.plan, [&oa, &ob], ranks, &pl);
                // the same inputs place the same way (every rank computes it alone)
                let again = place_step(&st.plan, [&oa, &ob], 8, ranks, &MessageCost::default());
                assert_eq!(pl, again);
                if name.starts_with("hubbard") && name.contains("heff") && ranks == 2 {
                    hubbard_msgs += pl.messages.len();
                    hubbard_blocks += pl.blocks_transferred();
                }
                step_owners.push(pl.out_owner);
            }
        }
    }
    assert!(
        hubbard_msgs * 4 < hubbard_blocks,
        "{hubbard_msgs} messages for {hubbard_blocks} blocks"
    );
}

#[test]
fn work_spreads_over_the_ranks_when_communication_is_free() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let w = Workload::load(dir.join("hubbard_u1u1_m512_heff2.json")).unwrap();
    let ops = w.build_operands::<f64>().unwrap();
    let refs: Vec<_> = ops.iter().collect();
    let plan = build_plan(&w.contraction, &refs, &PlanOptions::default()).unwrap();
    let st = &plan.steps[0];
    let owners: Vec<Vec<u32>> = ops
        .iter()
        .map(|t| OwnerMap::On(0).owners(t.blocks(), 2).unwrap())
        .collect();
    let free = MessageCost {
        latency_s: 0.0,
        s_per_byte: 0.0,
    };
    let own = |i: Input| match i {
        Input::Operand(k) => owners[k].clone(),
        Input::Step(_) => unreachable!("step 0 reads operands"),
    };
    let (oa, ob) = (own(st.left), own(st.right));
    let pl = place_step(&st.plan, [&oa, &ob], 8, 2, &free);
    let (c0, c1) = (pl.compute_s[0], pl.compute_s[1]);
    assert!(
        c1 > 0.0 && (c0 - c1).abs() < 0.5 * (c0 + c1),
        "{c0} vs {c1}"
    );
    // and when messages cost a lot, the work stays where the data is
    let dear = MessageCost {
        latency_s: 1.0,
        s_per_byte: 1.0,
    };
    let pl = place_step(&st.plan, [&oa, &ob], 8, 2, &dear);
    assert!(pl.messages.is_empty(), "{} messages", pl.messages.len());
}
