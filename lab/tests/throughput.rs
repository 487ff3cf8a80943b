//! Subgroup-operation chains: the CPU model against hand-written rules at every subgroup size,
//! every operation and chain length on every backend against the model at the backend's
//! subgroup size, the operation count, and bad input.

mod common;

use common::{devices, for_each_device, seed, TestDevice};
use xwarp::cpu::throughput::{chain as model, initial};
use xwarp::throughput::{chain, ops, ChainOp};
use xwarp::{DeviceVec, Error, Rng};
use xwarp_lab::validate::throughput::{run_chain, ChainCase};
use xwarp_lab::validate::{first_mismatch, poison_value};

/// One link by the rules of the module documentation, thread by thread.
fn one_link_by_hand(op: ChainOp, seed: u32, s: usize, t: usize) -> u32 {
    let v = |u: usize| initial(u, seed);
    let first = t - t % s;
    let lane = t % s;
    let r = match op {
        ChainOp::Broadcast => v(first + 1),
        ChainOp::Up if lane == 0 => v(t),
        ChainOp::Up => v(t - 1),
        ChainOp::Down if lane == s - 1 => v(t),
        ChainOp::Down => v(t + 1),
        ChainOp::Xor => v(t ^ 1),
        ChainOp::Ballot => (0..s.min(32))
            .filter(|&l| v(first + l) & 1 != 0)
            .fold(0, |b, l| b | 1 << l),
    };
    r.wrapping_add(v(t))
}

#[test]
fn model_follows_the_rules_at_every_subgroup_size() {
    let seed = seed() as u32;
    for s in [4usize, 8, 16, 32, 64, 128] {
        let n = 3 * s;
        for op in ChainOp::ALL {
            let start: Vec<u32> = (0..n).map(|t| initial(t, seed)).collect();
            assert_eq!(model(op, 0, seed, s as u32, n), start, "{op} s={s}");
            let want: Vec<u32> = (0..n).map(|t| one_link_by_hand(op, seed, s, t)).collect();
            assert_eq!(model(op, 1, seed, s as u32, n), want, "{op} s={s}");
            // A partial subgroup computes as a whole one.
            let longer = model(op, 5, seed, s as u32, n);
            assert_eq!(model(op, 5, seed, s as u32, n - 3), longer[..n - 3], "{op}");
        }
    }
    // The first value mixes the thread index and the seed.
    assert_eq!(initial(0, 0x1234), 0x1234);
    assert_eq!(initial(1, 0), 0x9e37_79b9);
    assert_eq!(initial(1 << 32, 5), 5);
}

#[test]
fn ballot_takes_lanes_0_to_31_of_wider_subgroups() {
    // Subgroup of 64: both halves add the ballot of lanes 0..31.
    let seed = 7;
    let out = model(ChainOp::Ballot, 1, seed, 64, 64);
    let b = (0..32)
        .filter(|&l| initial(l, seed) & 1 != 0)
        .fold(0u32, |b, l| b | 1 << l);
    for t in [0, 31, 32, 63] {
        assert_eq!(out[t], b.wrapping_add(initial(t, seed)), "t={t}");
    }
}

/// Runs `case` on `d` against the model at the device's subgroup size.
fn check_on(d: &TestDevice, case: &ChainCase, seed: u32) {
    let s = d.dev.info().subgroup_size;
    let want = model(case.op, case.iters, seed, s, case.n);
    let got = run_chain(&*d.dev, case, seed, poison_value(&want))
        .unwrap_or_else(|e| panic!("{}: {case}: {e}", d.label));
    if let Some(m) = first_mismatch(&want, &got) {
        panic!("{} (subgroup {s}): {case} seed={seed}: {m}", d.label);
    }
}

fn check(case: &ChainCase, seed: u32) {
    for_each_device(|d| check_on(d, case, seed));
}

fn every_length_and_chain(op: ChainOp) {
    let mut rng = Rng::new(seed());
    for n in [1, 3, 31, 33, 257] {
        for iters in [0, 1, 7, 8, 9, 16, 17, 100] {
            check(&ChainCase { op, iters, n }, rng.next_u64() as u32);
        }
    }
    for (n, iters) in [((1 << 16) - 1, 3), ((1 << 16) + 1, 12), (1_000_003, 9)] {
        check(&ChainCase { op, iters, n }, rng.next_u64() as u32);
    }
}

#[test]
fn broadcast_chains() {
    every_length_and_chain(ChainOp::Broadcast);
}

#[test]
fn up_chains() {
    every_length_and_chain(ChainOp::Up);
}

#[test]
fn down_chains() {
    every_length_and_chain(ChainOp::Down);
}

#[test]
fn xor_chains() {
    every_length_and_chain(ChainOp::Xor);
}

#[test]
fn ballot_chains() {
    every_length_and_chain(ChainOp::Ballot);
}

/// Outputs longer than one binding run in several launches; thread indices (and so the first
/// values) continue across them. Needs a device whose binding range is small (llvmpipe:
/// 128 MiB); skipped elsewhere.
#[test]
fn outputs_longer_than_one_binding() {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let per_binding = d.dev.info().max_binding_bytes / 4;
        if per_binding > 1 << 26 {
            eprintln!(
                "{}: binding range of {per_binding} words; chunking not tested",
                d.label
            );
            return;
        }
        let n = per_binding as usize + 1003;
        let case = ChainCase {
            op: ChainOp::Up,
            iters: 2,
            n,
        };
        check_on(d, &case, rng.next_u64() as u32);
    });
}

#[test]
fn operation_count_is_links_times_launched_threads() {
    for op in ChainOp::ALL {
        assert_eq!(ops(op, 10, 1), 2560);
        assert_eq!(ops(op, 3, 256), 768);
        assert_eq!(ops(op, 3, 257), 1536);
        assert_eq!(ops(op, 0, 1000), 0);
        assert_eq!(ops(op, u32::MAX, 1 << 30), u32::MAX as u64 * (1 << 30));
    }
}

#[test]
fn empty_output_is_a_typed_error() {
    for_each_device(|d| {
        let mut out = DeviceVec::<u32>::alloc(&*d.dev, 0).unwrap();
        for op in ChainOp::ALL {
            assert!(matches!(
                chain(&*d.dev, op, 8, 1, &mut out),
                Err(Error::EmptyInput { name: "out" })
            ));
        }
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
