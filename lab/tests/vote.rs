//! The warp vote family: a worked example, randomized cases against the CPU reference on every
//! backend for every type, predicate and awkward length, float even/odd edge values, and every
//! bad parameter.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::cpu;
use xwarp::vote::{vote, vote_host, Predicate, PredicateElement, WarpVote, RECORD_WORDS};
use xwarp::{DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::first_mismatch;
use xwarp_lab::validate::poison_value;
use xwarp_lab::validate::vote::{
    case_input, run_vote, vote_cases, PredSpec, VoteCase, VOTE_LENGTHS,
};
use xwarp_lab::with_elem;

#[test]
fn greater_than_4_on_0_to_39() {
    let input: Vec<i32> = (0..40).collect();
    let pred = Predicate::Greater(4);
    let full = WarpVote {
        ballot: 0xffff_ffe0,
        any: 1,
        all: 0,
        active_mask: u32::MAX,
        popc: 27,
        ffs: 6,
        leader: 0,
        active_lanes: 32,
    };
    // The last warp holds 32..39 in lanes 0..7: all of its 8 active lanes pass.
    let tail = WarpVote {
        ballot: 0xff,
        any: 1,
        all: 1,
        active_mask: 0xff,
        popc: 8,
        ffs: 1,
        leader: 0,
        active_lanes: 8,
    };
    let mut ranks: Vec<u32> = (0..32).map(|l: u32| l.saturating_sub(5)).collect();
    ranks.extend(0..8);
    let expected = cpu::vote::vote(pred, &input);
    assert_eq!(expected.warps, [full, tail]);
    assert_eq!(expected.ranks, ranks);
    for_each_device(|d| {
        let got = vote_host(&*d.dev, pred, &input).unwrap();
        assert_eq!(got, expected, "{}", d.label);
    });
}

#[test]
fn no_lane_passes_gives_ffs_0_and_all_false() {
    let input = vec![1u32; 33];
    let out = cpu::vote::vote(Predicate::Even, &input);
    assert_eq!(out.warps[0].ffs, 0);
    assert_eq!(out.warps[0].any, 0);
    assert_eq!(out.warps[1].all, 0);
    for_each_device(|d| {
        assert_eq!(
            vote_host(&*d.dev, Predicate::Even, &input).unwrap(),
            out,
            "{}",
            d.label
        );
    });
}

fn check_cases<T: PredicateElement>(cases: &[VoteCase], rng: &mut Rng) {
    for case in cases {
        let (input, pred) = case_input::<T>(case.spec, case.n, rng);
        let expected = cpu::vote::vote(pred, &input).to_words();
        let poison = poison_value(&expected);
        let mut outputs = Vec::new();
        for_each_device(|d| {
            let got = run_vote(&*d.dev, pred, &input, poison)
                .unwrap_or_else(|e| panic!("{}: {case} ({pred}): {e}", d.label));
            if let Some(m) = first_mismatch(&expected, &got) {
                let records = xwarp::vote::warps(case.n) * RECORD_WORDS;
                let place = if m.index < records {
                    format!(
                        "warp {} word {} (ballot, any, all, activemask, popc, ffs, leader, \
                         active lanes)",
                        m.index / RECORD_WORDS,
                        m.index % RECORD_WORDS
                    )
                } else {
                    format!("rank of element {}", m.index - records)
                };
                panic!("{}: {case} ({pred}): {m}: {place}", d.label);
            }
            outputs.push(got);
        });
        for w in outputs.windows(2) {
            assert!(
                first_mismatch(&w[0], &w[1]).is_none(),
                "{case}: backends differ"
            );
        }
    }
}

fn random_cases_for(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let cases: Vec<VoteCase> = vote_cases(false)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for n in VOTE_LENGTHS {
        for spec in PredSpec::ALL {
            assert!(cases.iter().any(|c| c.n == n && c.spec == spec));
        }
    }
    with_elem!(elem, check_cases(&cases, &mut rng));
}

#[test]
fn random_i32_every_predicate_and_length() {
    random_cases_for(ElemKind::I32);
}

#[test]
fn random_u32_every_predicate_and_length() {
    random_cases_for(ElemKind::U32);
}

#[test]
fn random_f32_every_predicate_and_length() {
    random_cases_for(ElemKind::F32);
}

#[test]
fn random_i64_every_predicate_and_length() {
    random_cases_for(ElemKind::I64);
}

#[test]
fn random_u64_every_predicate_and_length() {
    random_cases_for(ElemKind::U64);
}

#[test]
fn random_f64_every_predicate_and_length() {
    random_cases_for(ElemKind::F64);
}

#[test]
fn predicates_split_inputs_about_in_half() {
    // The random cases are only worth something if their predicates really split the lanes.
    let mut rng = Rng::new(seed());
    for spec in PredSpec::ALL {
        let (input, pred) = case_input::<f32>(spec, 10_000, &mut rng);
        let passing = input.iter().filter(|&&v| pred.eval(v)).count();
        let range = match spec {
            PredSpec::AllPass => 10_000..=10_000,
            PredSpec::NonePass => 0..=0,
            _ => 2_500..=7_500,
        };
        assert!(range.contains(&passing), "{spec}: {passing} of 10000 pass");
    }
}

#[test]
fn float_even_and_odd_mean_integer_and_even_or_odd() {
    let cases: [(f64, bool, bool); 12] = [
        (0.0, true, false),
        (-0.0, true, false),
        (1.0, false, true),
        (-1.0, false, true),
        (2.0, true, false),
        (-3.0, false, true),
        (2.5, false, false),
        (0.5, false, false),
        (1e30, true, false),
        (f64::INFINITY, false, false),
        (f64::NEG_INFINITY, false, false),
        (f64::NAN, false, false),
    ];
    for (v, even, odd) in cases {
        assert_eq!((v.is_even(), v.is_odd()), (even, odd), "f64 {v}");
        let f = v as f32;
        assert_eq!((f.is_even(), f.is_odd()), (even, odd), "f32 {f}");
    }
    assert!(16_777_216f32.is_even() && 9_007_199_254_740_993f64.is_even());
    let f64s: Vec<f64> = cases.iter().map(|c| c.0).cycle().take(45).collect();
    let f32s: Vec<f32> = f64s.iter().map(|&v| v as f32).collect();
    for_each_device(|d| {
        for pred in [Predicate::Even, Predicate::Odd, Predicate::NonZero] {
            let expected = cpu::vote::vote(pred, &f64s);
            assert_eq!(
                vote_host(&*d.dev, pred, &f64s).unwrap(),
                expected,
                "{} f64 {pred}",
                d.label
            );
        }
        for pred in [
            Predicate::Even,
            Predicate::Odd,
            Predicate::NonZero,
            Predicate::Less(1.0),
        ] {
            let expected = cpu::vote::vote(pred, &f32s);
            assert_eq!(
                vote_host(&*d.dev, pred, &f32s).unwrap(),
                expected,
                "{} f32 {pred}",
                d.label
            );
        }
    });
}

/// Even and odd are decided from the bits on every device: powers of two from 2^-1074 to
/// 2^1023 with their neighbours, halves, subnormals, NaN payloads, infinities and zeros.
#[test]
fn float_parity_from_bits_at_every_magnitude() {
    fn run<T: PredicateElement>(input: &[T]) {
        for_each_device(|d| {
            for pred in [Predicate::Even, Predicate::Odd] {
                let want = cpu::vote::vote(pred, input);
                let got = vote_host(&*d.dev, pred, input).unwrap();
                for (w, (a, b)) in want.warps.iter().zip(&got.warps).enumerate() {
                    assert_eq!(
                        a,
                        b,
                        "{} {} {pred}: warp {w} (inputs {:?})",
                        d.label,
                        T::KIND,
                        &input[w * 32..(w * 32 + 32).min(input.len())]
                    );
                }
                assert_eq!(got, want, "{} {} {pred}", d.label, T::KIND);
            }
        });
    }
    run(&common::float_edges());
    run(&common::float_edges_f32());
}

#[test]
fn sixty_four_bit_thresholds_use_both_words() {
    // Values that differ only in the high word, and only in the low word.
    let input: Vec<i64> = vec![
        -(1 << 40),
        1 << 40,
        (1 << 40) + 1,
        (1 << 32) - 1,
        1 << 32,
        -1,
        i64::MIN,
        i64::MAX,
    ];
    let preds = [
        Predicate::Greater(1 << 40),
        Predicate::Less(-(1 << 32)),
        Predicate::InRange {
            lo: (1 << 32) - 1,
            hi: 1 << 40,
        },
    ];
    for_each_device(|d| {
        for pred in preds {
            let expected = cpu::vote::vote(pred, &input);
            assert_eq!(
                vote_host(&*d.dev, pred, &input).unwrap(),
                expected,
                "{} {pred}",
                d.label
            );
        }
        let u: Vec<u64> = input.iter().map(|&v| v as u64).collect();
        let pred = Predicate::Greater(u64::MAX - 1);
        let got = vote_host(&*d.dev, pred, &u).unwrap();
        assert_eq!(got.warps[0].ballot, 1 << 5, "{} u64 {pred}", d.label);
    });
}

#[test]
fn empty_input_votes_on_nothing() {
    for_each_device(|d| {
        let out = vote_host::<u32>(&*d.dev, Predicate::Even, &[]).unwrap();
        assert!(out.warps.is_empty() && out.ranks.is_empty(), "{}", d.label);
    });
}

#[test]
fn bad_ranges_and_buffers_are_typed_errors() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for pred in [
            Predicate::InRange { lo: 5, hi: 4 },
            Predicate::InRange {
                lo: i32::MAX,
                hi: i32::MIN,
            },
        ] {
            match vote_host(dev, pred, &[1, 2, 3]) {
                Err(Error::InvalidParameter { name, allowed, .. }) => {
                    assert_eq!(name, "lo");
                    assert!(allowed.contains("hi"));
                }
                other => panic!("expected InvalidParameter(lo), got {other:?}"),
            }
        }
        let nan = Predicate::InRange {
            lo: f32::NAN,
            hi: 1.0,
        };
        assert!(matches!(
            vote_host(dev, nan, &[1.0f32]),
            Err(Error::InvalidParameter { name: "lo", .. })
        ));
        let src = DeviceVec::from_slice(dev, &[1u32; 40]).unwrap();
        let mut small = DeviceVec::<u32>::alloc(dev, RECORD_WORDS).unwrap();
        let mut ranks = DeviceVec::<u32>::alloc(dev, 40).unwrap();
        small.fill(dev, 7).unwrap();
        match vote(dev, Predicate::Odd, &src, &mut small, &mut ranks) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("records", 16, 8)),
            other => panic!("expected LengthMismatch(records), got {other:?}"),
        }
        let mut records = DeviceVec::<u32>::alloc(dev, 2 * RECORD_WORDS).unwrap();
        let mut short = DeviceVec::<u32>::alloc(dev, 39).unwrap();
        assert!(matches!(
            vote(dev, Predicate::Odd, &src, &mut records, &mut short),
            Err(Error::LengthMismatch { name: "ranks", .. })
        ));
        // Nothing was written, and the device keeps working.
        assert_eq!(small.to_vec(dev).unwrap(), vec![7; RECORD_WORDS]);
        vote(dev, Predicate::Odd, &src, &mut records, &mut ranks).unwrap();
        let words = records.to_vec(dev).unwrap();
        assert_eq!(words[..3], [u32::MAX, 1, 1], "{}", d.label);
        assert_eq!(words[8..11], [0xff, 1, 1], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
