//! Top-k: a worked example, randomized cases against the CPU reference on every backend for
//! every key type, both orders, keys only, values and indices, k of 1, a few, half and n, on
//! uniform, all-equal, few-distinct (ties across the k-th place) and hard keys (NaN payloads,
//! ±∞, ±0, subnormals), the same result call after call, and every bad parameter refused with
//! the outputs untouched.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::sort::SortOrder;
use xwarp::top_k::{top_k, top_k_host, top_k_indices, top_k_pairs, FILTER_MIN_BYTES};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::sort::Pattern;
use xwarp_lab::validate::top_k::{
    expected, run_top_k, top_k_case_on, top_k_cases, KChoice, TopKOp, TOP_K_LENGTHS, TOP_K_PATTERNS,
};

#[test]
fn three_largest_and_smallest() {
    let keys = [5u32, 1, 9, 7, 9, 3];
    assert_eq!(
        cpu::top_k::top_k(&keys, 3, SortOrder::Descending),
        [9, 9, 7]
    );
    // Ties across the k-th place: the lower index is taken.
    assert_eq!(
        cpu::top_k::top_k_indices(&[4i32, 2, 4, 4, 1], 2, SortOrder::Descending),
        [0, 2]
    );
    let floats = [0.0f32, -0.0, f32::NAN, -f32::NAN, 1.0];
    for_each_device(|d| {
        let dev = &*d.dev;
        assert_eq!(
            top_k_host(dev, &keys, 3, SortOrder::Descending).unwrap(),
            [9, 9, 7]
        );
        assert_eq!(
            top_k_host(dev, &keys, 2, SortOrder::Ascending).unwrap(),
            [1, 3]
        );
        // totalOrder: -NaN < -0.0 < +0.0 < 1.0 < +NaN.
        let got = top_k_host(dev, &floats, 3, SortOrder::Ascending).unwrap();
        let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
        assert_eq!(bits, [(-f32::NAN).to_bits(), 0x8000_0000, 0], "{}", d.label);
    });
}

fn cases_of(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<_> = top_k_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for n in TOP_K_LENGTHS {
        assert!(cases.iter().any(|c| c.n == n && c.k == KChoice::Few));
    }
    for k in KChoice::ALL {
        assert!(cases.iter().any(|c| c.n == 4097 && c.k == k));
    }
    for p in TOP_K_PATTERNS {
        assert!(cases.iter().any(|c| c.pattern == p && c.op == TopKOp::Keys));
    }
    let devs: Vec<(String, &dyn xwarp::Device)> = devices()
        .iter()
        .map(|d| (d.label.clone(), &*d.dev))
        .collect();
    for case in &cases {
        let r = top_k_case_on(&devs, case, &mut rng);
        assert!(r.passed(), "{r}");
    }
    for_each_device(|_| {});
}

#[test]
fn keys_i32() {
    cases_of(ElemKind::I32);
}

#[test]
fn keys_u32() {
    cases_of(ElemKind::U32);
}

#[test]
fn keys_f32() {
    cases_of(ElemKind::F32);
}

#[test]
fn keys_i64() {
    cases_of(ElemKind::I64);
}

#[test]
fn keys_u64() {
    cases_of(ElemKind::U64);
}

#[test]
fn keys_f64() {
    cases_of(ElemKind::F64);
}

/// A key of `K` from the low bytes of `bits`.
fn from_bits<K: xwarp::Element>(bits: u64) -> K {
    bytemuck::pod_read_unaligned(&bits.to_le_bytes()[..std::mem::size_of::<K>()])
}

/// Keys whose `fixed` top bits are `prefix`'s, the rest random.
fn prefixed<K: xwarp::Element>(n: usize, fixed: u32, prefix: u64, rng: &mut Rng) -> Vec<K> {
    let width = 8 * std::mem::size_of::<K>() as u32;
    let low = if fixed == 0 {
        u64::MAX
    } else {
        (1u64 << (width - fixed)) - 1
    };
    let top = if fixed == 0 {
        0
    } else {
        (prefix << (width - fixed)) & !low
    };
    (0..n)
        .map(|_| from_bits::<K>(top | (rng.next_u64() & low)))
        .collect()
}

/// The selection's paths from [`FILTER_MIN_BYTES`] of keys on, where it filters the candidates
/// into a buffer after the first or second digit whose keys fit it, or keeps reading every
/// key: keys spread over every bit (filtered after the first digit), with a constant top byte
/// (after the second), with two constant top bytes (not filtered), a first digit's bucket of
/// exactly the buffer's size, of one key more and of five keys (keys below the bucket of the
/// k-th key), a cluster beside spread keys, and a constant top byte with five keys on either
/// side of it (filtered after the second digit, with keys below the first digit's bucket: more
/// than five keys wanted) (the first `sets_kept` of these); both orders, a few keys and (once) a
/// third of them, with keys, values and indices.
fn filter_paths_of<K: xwarp::Element>(sets_kept: usize) {
    let mut rng = Rng::new(seed());
    let n: usize = FILTER_MIN_BYTES / std::mem::size_of::<K>() + 3;
    let cap = n.div_ceil(16);
    let width = 8 * std::mem::size_of::<K>() as u32;
    let ops = [
        TopKOp::Keys,
        TopKOp::Pairs(ElemKind::U64),
        TopKOp::Indices(ElemKind::U32),
        TopKOp::Indices(ElemKind::U64),
        TopKOp::Pairs(ElemKind::U32),
    ];
    // (name, keys, the fewest keys to ask for)
    let mut sets: Vec<(String, Vec<K>, usize)> = Vec::new();
    for fixed in [0, 8, 16] {
        let prefix = rng.next_u64();
        sets.push((
            format!("top {fixed} bits fixed"),
            prefixed(n, fixed, prefix, &mut rng),
            2,
        ));
    }
    // The top byte 0x7f for m keys, 0x7e for the others (positive in every key type): the
    // k-th largest key's first-digit bucket holds m keys, the k-th smallest's n - m.
    for m in [cap, cap + 1, 5] {
        let mut keys: Vec<K> = prefixed(m, 8, 0x7f, &mut rng);
        keys.extend(prefixed::<K>(n - m, 8, 0x7e, &mut rng));
        shuffle(&mut keys, &mut rng);
        sets.push((format!("a top byte of {m} keys"), keys, 2));
    }
    let mut cluster: Vec<K> = prefixed(n / 2, 12, rng.next_u64(), &mut rng);
    cluster.extend(prefixed::<K>(n - n / 2, 0, 0, &mut rng));
    shuffle(&mut cluster, &mut rng);
    sets.push(("half the keys in one cluster".into(), cluster, 2));
    let mut sides: Vec<K> = prefixed(5, 8, 0x10, &mut rng);
    sides.extend(prefixed::<K>(5, 8, 0x30, &mut rng));
    sides.extend(prefixed::<K>(n - 10, 8, 0x20, &mut rng));
    shuffle(&mut sides, &mut rng);
    sets.push(("five keys on either side of a top byte".into(), sides, 6));
    sets.truncate(sets_kept);
    let mut case = 0usize;
    for (name, keys, fewest) in &sets {
        for order in [SortOrder::Descending, SortOrder::Ascending] {
            let few = fewest + rng.below(40) as usize;
            let ks: &[usize] = if case == 0 {
                &[few, n / 3 + rng.below(100) as usize]
            } else {
                &[few]
            };
            for &k in ks {
                let op = ops[case % ops.len()];
                case += 1;
                let what = format!(
                    "{op} {} {order} {name} (width {width}) n={n} k={k}",
                    K::KIND
                );
                let want = expected(op, keys, k, order);
                for_each_device(|d| {
                    let got = run_top_k(&*d.dev, op, keys, k, order).unwrap();
                    assert!(got == want, "{}: {what}: differs from the CPU", d.label);
                });
            }
        }
    }
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

#[test]
fn filter_paths_32_bit_keys() {
    filter_paths_of::<u32>(usize::MAX);
    filter_paths_of::<f32>(2);
    filter_paths_of::<i32>(1);
}

#[test]
fn filter_paths_64_bit_keys() {
    filter_paths_of::<u64>(usize::MAX);
    filter_paths_of::<f64>(2);
    filter_paths_of::<i64>(1);
}

/// Many ties across the k-th place, the same result on every call.
#[test]
fn ties_give_the_same_result_every_call() {
    let mut rng = Rng::new(seed());
    let keys: Vec<u64> = Pattern::FewDistinct.keys(300_001, SortOrder::Descending, &mut rng);
    let want = cpu::top_k::top_k_indices(&keys, 777, SortOrder::Descending);
    for_each_device(|d| {
        let dev = &*d.dev;
        let input = DeviceVec::from_slice(dev, &keys).unwrap();
        let mut out = DeviceVec::<u64>::alloc(dev, 777).unwrap();
        let mut idx = DeviceVec::<u32>::alloc(dev, 777).unwrap();
        for rep in 0..4 {
            top_k_indices(dev, &input, 777, SortOrder::Descending, &mut out, &mut idx).unwrap();
            let got: Vec<usize> = idx
                .to_vec(dev)
                .unwrap()
                .iter()
                .map(|&i| i as usize)
                .collect();
            assert_eq!(got, want, "{}: rep {rep}", d.label);
        }
    });
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = DeviceVec::from_slice(dev, &[3.0f64, 1.0, 2.0]).unwrap();
        let mut out = DeviceVec::from_slice(dev, &[7.0f64; 2]).unwrap();
        for k in [0, 4] {
            match top_k(dev, &keys, k, SortOrder::Descending, &mut out) {
                Err(Error::InvalidParameter { name, allowed, .. }) => {
                    assert_eq!(name, "k");
                    assert!(allowed.contains("1..=3"), "{allowed}");
                }
                other => panic!("{}: k = {k}: got {other:?}", d.label),
            }
        }
        assert!(matches!(
            top_k(dev, &keys, 3, SortOrder::Descending, &mut out),
            Err(Error::LengthMismatch {
                name: "keys_out",
                ..
            })
        ));
        let values = DeviceVec::from_slice(dev, &[1u32, 2]).unwrap();
        let mut values_out = DeviceVec::from_slice(dev, &[8u32; 2]).unwrap();
        assert!(matches!(
            top_k_pairs(
                dev,
                &keys,
                &values,
                2,
                SortOrder::Ascending,
                &mut out,
                &mut values_out
            ),
            Err(Error::LengthMismatch { name: "values", .. })
        ));
        let mut alias = DeviceVec::<f64>::from_raw(keys.raw().clone(), 2).unwrap();
        assert!(matches!(
            top_k(dev, &keys, 2, SortOrder::Descending, &mut alias),
            Err(Error::InvalidParameter {
                name: "keys_out",
                ..
            })
        ));
        let mut idx_alias = DeviceVec::<u32>::from_raw(out.raw().clone(), 2).unwrap();
        assert!(matches!(
            top_k_indices(
                dev,
                &keys,
                2,
                SortOrder::Descending,
                &mut out,
                &mut idx_alias
            ),
            Err(Error::InvalidParameter {
                name: "indices_out",
                ..
            })
        ));
        assert_eq!(out.to_vec(dev).unwrap(), [7.0; 2], "{}", d.label);
        assert_eq!(values_out.to_vec(dev).unwrap(), [8; 2], "{}", d.label);
        top_k(dev, &keys, 2, SortOrder::Descending, &mut out).unwrap();
        assert_eq!(out.to_vec(dev).unwrap(), [3.0, 2.0], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
