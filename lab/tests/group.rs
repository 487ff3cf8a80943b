//! The group ([`xwarp::group`]): reduce, scan and sort of vectors sharded over 1, 2, 3, 4 and 8
//! ranks (in-process exchange, ranks sharing each test device), every type, sizes 0 to
//! 1000003, shards of unequal and zero length, hard floats; every output poisoned first and
//! compared bit for bit with the CPU reference of the group orders, and with the one-device
//! result where the documentation promises its bits. Also: ranks on distinct devices (copies
//! through the host), a rank that fails (no hang, its error returned, outputs of refused calls
//! untouched), every refused argument, and, with the feature `nccl`, the NCCL group.

mod common;

use common::{devices, for_each_device, open_vulkan, seed};
use std::ops::Range;
use std::time::Duration;
use xwarp::cpu;
use xwarp::group::{
    self, Exchange, Group, GroupSorter, GroupVec, InProcess, Piece, Rendezvous, SortPath, TILE,
};
use xwarp::reduce::{device_reduce_host, ReduceOp};
use xwarp::scan::{device_scan_host, ScanKind};
use xwarp::sort::{all_bits, sort_keys_host, SortOrder};
use xwarp::{Device, ElemKind, Element, Error, Rng};
use xwarp_lab::validate::group::{
    check, expected_reduce_scan, group_cases, run_reduce_scan, split, GroupOp, Layout, RANKS,
};
use xwarp_lab::validate::reduce::{comparison, ReduceInput};
use xwarp_lab::validate::{first_mismatch, first_mismatch_nan_as_class, poison_value, CaseReport};
use xwarp_lab::with_elem;

fn large() -> bool {
    std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1")
}

/// Every case of the validator's group family for `elem` (reductions, scans, sorts) on every
/// test device; fails naming every failed case.
fn cases_for(elem: ElemKind, sorts: bool) {
    let devices: Vec<(String, &dyn Device)> = devices()
        .iter()
        .map(|d| (d.label.clone(), &*d.dev))
        .collect();
    let mut rng = Rng::new(seed());
    let cases: Vec<_> = group_cases(false, large())
        .into_iter()
        .filter(|c| c.elem == elem && matches!(c.op, GroupOp::Sort(..)) == sorts)
        .collect();
    assert!(!cases.is_empty());
    let mut failed: Vec<CaseReport> = Vec::new();
    let mut ran = 0;
    for case in &cases {
        if let Some(r) = check(&devices, case, &mut rng) {
            ran += 1;
            if !r.passed() {
                eprintln!("{r}");
                failed.push(r);
            }
        }
    }
    // The validation layer, if installed, must have stayed silent.
    for_each_device(|_| {});
    assert!(
        failed.is_empty(),
        "{} of {ran} group cases failed, first: {}",
        failed.len(),
        failed[0]
    );
    eprintln!("{ran} group cases of {elem} passed");
}

#[test]
fn reduce_and_scan_i32() {
    cases_for(ElemKind::I32, false);
}

#[test]
fn reduce_and_scan_u32() {
    cases_for(ElemKind::U32, false);
}

#[test]
fn reduce_and_scan_f32() {
    cases_for(ElemKind::F32, false);
}

#[test]
fn reduce_and_scan_i64() {
    cases_for(ElemKind::I64, false);
}

#[test]
fn reduce_and_scan_u64() {
    cases_for(ElemKind::U64, false);
}

#[test]
fn reduce_and_scan_f64() {
    cases_for(ElemKind::F64, false);
}

#[test]
fn sort_i32() {
    cases_for(ElemKind::I32, true);
}

#[test]
fn sort_u32() {
    cases_for(ElemKind::U32, true);
}

#[test]
fn sort_f32() {
    cases_for(ElemKind::F32, true);
}

#[test]
fn sort_i64() {
    cases_for(ElemKind::I64, true);
}

#[test]
fn sort_u64() {
    cases_for(ElemKind::U64, true);
}

#[test]
fn sort_f64() {
    cases_for(ElemKind::F64, true);
}

/// Whether every shard boundary inside the vector is a multiple of [`TILE`].
fn aligned(lens: &[usize]) -> bool {
    let total: usize = lens.iter().sum();
    let mut at = 0;
    lens.iter().all(|&n| {
        at += n;
        at % TILE == 0 || at == total
    })
}

/// The documented one-device promises, on the CPU (many random inputs and layouts) and on
/// every device: the group reduce is `device_reduce` of the whole vector with tile-aligned
/// boundaries (floats included) and for integers always; the group scan is `device_scan` for
/// integers always, and for float min and max up to NaN payloads; float sums with other
/// boundaries follow the group order, which rounds differently (shown once, so the test would
/// notice if the orders ever coincided by accident).
fn one_device_promises<T: ReduceInput>(rng: &mut Rng) {
    let float = matches!(T::KIND, ElemKind::F32 | ElemKind::F64);
    let ops: Vec<ReduceOp> = ReduceOp::ALL
        .into_iter()
        .filter(|op| !float || op.for_floats())
        .collect();
    let mut differed = false;
    for &op in &ops {
        for n in [0, 1, 33, 4096, 4097, 3 * TILE + 5, 20_001] {
            for &ranks in &RANKS {
                for layout in Layout::ALL {
                    let lens = layout.lens(n, ranks, rng);
                    let data = T::input(op, n, rng);
                    let one = cpu::reduce::device_reduce(op, &data);
                    let got = cpu::group::reduce(op, &split(&data, &lens));
                    let case = format!("{op} {} n={n} {lens:?}", T::KIND);
                    if aligned(&lens) || !float {
                        assert!(
                            first_mismatch(&[one], &[got]).is_none(),
                            "reduce {case}: {one:?} != {got:?}"
                        );
                    } else if op == ReduceOp::Sum && one.to_bits64() != got.to_bits64() {
                        differed = true;
                    }
                    if matches!(op, ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max) {
                        for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                            let one = cpu::scan::device_scan(op, kind, &data);
                            let got = cpu::group::scan(op, kind, &split(&data, &lens));
                            let m = match (float, op) {
                                (false, _) => first_mismatch(&one, &got),
                                (true, ReduceOp::Sum) => continue,
                                (true, _) => first_mismatch_nan_as_class(&one, &got),
                            };
                            assert!(m.is_none(), "scan {kind:?} {case}: {}", m.unwrap());
                        }
                    }
                }
            }
        }
    }
    if float {
        assert!(
            differed,
            "float sums with unaligned boundaries never differed"
        );
    }
    // On the devices: the group against the library's one-device calls, for one length
    // that spans several tiles, every rank count, tile-aligned layouts.
    for_each_device(|d| {
        let dev = &*d.dev;
        for &op in &ops {
            let n = 5 * TILE + 17;
            let data = T::input(op, n, rng);
            let one = device_reduce_host(dev, op, &data).unwrap();
            for &ranks in &RANKS {
                let lens = Layout::Aligned.lens(n, ranks, rng);
                let got = run_reduce_scan(dev, GroupOp::Reduce(op), ranks, &data, &lens, one)
                    .unwrap_or_else(|e| panic!("{}: {e}", d.label));
                let m = comparison(op)(&vec![one; ranks], &got);
                assert!(
                    m.is_none(),
                    "{}: reduce {op} {lens:?}: {}",
                    d.label,
                    m.unwrap()
                );
                if !float && matches!(op, ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max) {
                    let lens = Layout::Random.lens(n, ranks, rng);
                    let one = device_scan_host(dev, op, ScanKind::Inclusive, &data).unwrap();
                    let got = run_reduce_scan(
                        dev,
                        GroupOp::Scan(op, ScanKind::Inclusive),
                        ranks,
                        &data,
                        &lens,
                        T::identity(op),
                    )
                    .unwrap();
                    let m = first_mismatch(&one, &got);
                    assert!(
                        m.is_none(),
                        "{}: scan {op} {lens:?}: {}",
                        d.label,
                        m.unwrap()
                    );
                }
            }
        }
    });
}

#[test]
fn one_device_bits_where_documented() {
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        with_elem!(elem, one_device_promises(&mut rng));
    }
}

#[test]
fn split_even_is_tile_aligned_and_balanced() {
    for n in [0, 1, 4095, 4096, 4097, 1_000_003, 1 << 26] {
        for ranks in 1..=9 {
            let lens = group::split_even(n, ranks);
            assert_eq!(lens.len(), ranks);
            assert_eq!(lens.iter().sum::<usize>(), n, "{n} over {ranks}");
            assert!(aligned(&lens), "{n} over {ranks}: {lens:?}");
            let tiles: Vec<usize> = lens.iter().map(|l| l.div_ceil(TILE)).collect();
            let (lo, hi) = (tiles.iter().min().unwrap(), tiles.iter().max().unwrap());
            assert!(hi - lo <= 1, "{n} over {ranks}: {lens:?}");
        }
    }
}

/// Shards of whole tiles of tile totals (TILE * TILE elements on every rank but the last, the
/// weak-scaling layout of 2^24 elements a rank): float sums, min and max equal the one-device
/// reduce and the CPU's group order, bit for bit, on 2 and 3 ranks (one of them empty, and a
/// short last shard).
#[test]
fn reduce_of_shards_of_whole_second_level_tiles() {
    let big = TILE * TILE;
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev: &dyn Device = &*d.dev;
        for lens in [vec![big, big], vec![big, 0, 4097], vec![big, 5]] {
            let n: usize = lens.iter().sum();
            let data: Vec<f32> = f32::input(ReduceOp::Sum, n, &mut rng);
            let group = Group::in_process(vec![dev; lens.len()]).unwrap();
            let x = GroupVec::from_slice(&group, &data, &lens).unwrap();
            for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
                let one = device_reduce_host(dev, op, &data).unwrap();
                let want = cpu::group::reduce(op, &split(&data, &lens));
                let got = group::reduce_host(&group, op, &x).unwrap();
                assert_eq!(
                    want.to_bits(),
                    one.to_bits(),
                    "{op:?} {lens:?}: CPU group order"
                );
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{}: {op:?} {lens:?}: {got} against {want}",
                    d.label
                );
            }
        }
    });
}

/// Ranks on distinct devices: three Vulkan devices opened apart (transfers through host
/// memory) and the test devices together; reduce, scan and sort against the CPU.
#[test]
fn ranks_on_distinct_devices() {
    let opened: Vec<_> = (0..3).map(|_| open_vulkan()).collect();
    let mut list: Vec<&dyn Device> = opened.iter().map(|d| &**d as &dyn Device).collect();
    list.extend(devices().iter().map(|d| &*d.dev));
    let group = Group::in_process(list).unwrap();
    let ranks = group.ranks();
    assert!(group.exchange_name().contains("in-process"));
    let mut rng = Rng::new(seed());
    assert_eq!(group.spin(), group::DEFAULT_SPIN);
    // The ranks' threads sleep at once, poll briefly, or poll by default.
    let spins = [
        Duration::ZERO,
        Duration::from_micros(20),
        group::DEFAULT_SPIN,
    ];
    for (n, spin) in [33, 4097, 1_000_003].into_iter().zip(spins) {
        group.set_spin(spin);
        assert_eq!(group.spin(), spin);
        let lens = Layout::Random.lens(n, ranks, &mut rng);
        let data: Vec<f32> = f32::input(ReduceOp::Sum, n, &mut rng);
        let x = GroupVec::from_slice(&group, &data, &lens).unwrap();
        let want = cpu::group::reduce(ReduceOp::Sum, &split(&data, &lens));
        let got = group::reduce_host(&group, ReduceOp::Sum, &x).unwrap();
        assert_eq!(want.to_bits(), got.to_bits(), "reduce n={n} {lens:?}");
        let mut y = GroupVec::<f32>::alloc(&group, &lens).unwrap();
        y.fill(&group, f32::from_bits(0xcdcd_cdcd)).unwrap();
        group::scan(&group, ReduceOp::Sum, ScanKind::Exclusive, &x, &mut y).unwrap();
        let want = expected_reduce_scan(
            GroupOp::Scan(ReduceOp::Sum, ScanKind::Exclusive),
            &data,
            &lens,
        );
        let m = first_mismatch_nan_as_class(&want, &y.to_vec(&group).unwrap());
        assert!(m.is_none(), "scan n={n} {lens:?}: {}", m.unwrap());
        let keys: Vec<u64> = rng.vec(n);
        let out_lens = Layout::Random.lens(n, ranks, &mut rng);
        let k = GroupVec::from_slice(&group, &keys, &lens).unwrap();
        let mut sorted = GroupVec::<u64>::alloc(&group, &out_lens).unwrap();
        GroupSorter::new(&group)
            .sort_keys(
                &group,
                &k,
                &mut sorted,
                SortOrder::Descending,
                all_bits::<u64>(),
            )
            .unwrap();
        let want = cpu::sort::sort_keys(&keys, SortOrder::Descending, all_bits::<u64>());
        assert!(
            want == sorted.to_vec(&group).unwrap(),
            "sort n={n} {lens:?} -> {out_lens:?}"
        );
    }
    for d in &opened {
        assert!(
            d.validation_messages().is_empty(),
            "{:?}",
            d.validation_messages()
        );
    }
}

/// Integer scans over shards of 2^20 elements and more, where the device scans 32-bit integers
/// in its wider tile (32 elements a thread): the leading tile is that tile, and the results
/// are the one-device scan's.
#[test]
fn integer_scans_of_long_shards_take_the_wide_tile() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut rng = Rng::new(seed());
        for (ranks, lens) in [
            (2, vec![(1 << 20) + 5, (1 << 20) + 4096]),
            (3, vec![1 << 20, 33, (1 << 21) - 1]),
        ] {
            let group = Group::in_process(vec![dev; ranks]).unwrap();
            let n: usize = lens.iter().sum();
            let data: Vec<u32> = rng.vec(n);
            let x = GroupVec::from_slice(&group, &data, &lens).unwrap();
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                for op in [ReduceOp::Sum, ReduceOp::Max] {
                    let mut y = GroupVec::<u32>::alloc(&group, &lens).unwrap();
                    y.fill(&group, 0xcdcd_cdcd).unwrap();
                    group::scan(&group, op, kind, &x, &mut y).unwrap();
                    let want = expected_reduce_scan(GroupOp::Scan(op, kind), &data, &lens);
                    let got = y.to_vec(&group).unwrap();
                    let m = first_mismatch(&want, &got);
                    assert!(
                        m.is_none(),
                        "{}: {op} {kind:?} {lens:?}: {}",
                        d.label,
                        m.unwrap()
                    );
                }
            }
        }
    });
}

/// The group sort equals the one-device sort (on each test device), reusing its storage over
/// calls of several lengths.
#[test]
fn sort_equals_one_device_and_reuses_storage() {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let group = Group::in_process(vec![dev; 3]).unwrap();
        let mut sorter = GroupSorter::<f32>::new(&group);
        for n in [100_000, 4097, 0, 1, 250_000] {
            let keys: Vec<f32> = (0..n)
                .map(|_| xwarp::Element::random_hard(&mut rng, xwarp::HardValues::ALL))
                .collect();
            let one = sort_keys_host(dev, &keys, SortOrder::Ascending, all_bits::<f32>()).unwrap();
            let lens = Layout::Random.lens(n, 3, &mut rng);
            let x = GroupVec::from_slice(&group, &keys, &lens).unwrap();
            let mut y = GroupVec::<f32>::alloc(&group, &group::split_even(n, 3)).unwrap();
            sorter
                .sort_keys(&group, &x, &mut y, SortOrder::Ascending, all_bits::<f32>())
                .unwrap();
            let m = first_mismatch(&one, &y.to_vec(&group).unwrap());
            assert!(m.is_none(), "{}: n={n} {lens:?}: {}", d.label, m.unwrap());
        }
    });
}

/// How a case of the group sort's two ways makes its keys: the bits of the mapped key
/// ([`cpu::sort::mapped_key`], ascending) inside the bit range, those outside it random.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyPattern {
    /// Every bit random.
    Uniform,
    /// 64 distinct values in the range (spread over the top digit, so no bucket of it holds
    /// more than about 1/64 of the keys): long runs of keys equal in the range, which only a
    /// stable sort keeps in input order.
    FewDistinct,
    /// The range's top digit alike in every key, the rest random: the top active digit is the
    /// one below.
    TopAlike,
    /// The range's top digit alike in all but every 500th key (one bucket holds nearly
    /// everything), few distinct values below it.
    OneBucket,
}

/// `mapped` (a mapped key, ascending) as the key of type `K` it maps from.
fn unmapped<K: Element>(mapped: u64) -> K {
    let width = K::KIND.size() as u32 * 8;
    let all = u64::MAX >> (64 - width);
    let sign = 1u64 << (width - 1);
    let mapped = mapped & all;
    let bits = match K::KIND {
        ElemKind::U32 | ElemKind::U64 => mapped,
        ElemKind::I32 | ElemKind::I64 => mapped ^ sign,
        ElemKind::F32 | ElemKind::F64 if mapped & sign != 0 => mapped ^ sign,
        ElemKind::F32 | ElemKind::F64 => !mapped & all,
    };
    let key = common::float_from_bits::<K>(bits);
    assert_eq!(
        cpu::sort::mapped_key(K::KIND, key.to_bits64(), SortOrder::Ascending),
        mapped
    );
    key
}

/// `n` keys of `pattern` for the bit range `bits`.
fn pattern_keys<K: Element>(
    pattern: KeyPattern,
    n: usize,
    bits: &Range<u32>,
    rng: &mut Rng,
) -> Vec<K> {
    // The range's top digit: 8 bits (or fewer) from `begin_bit` in steps of 8.
    let top = bits.start + 8 * ((bits.end - bits.start - 1) / 8);
    // `v`'s low bits in bits `at .. end`.
    let field = |v: u64, at: u32, end: u32| match end - at {
        0 => 0,
        w => (v & (u64::MAX >> (64 - w))) << at,
    };
    let range = field(u64::MAX, bits.start, bits.end);
    (0..n)
        .map(|i| {
            let x = rng.next_u64();
            let inside = match pattern {
                KeyPattern::Uniform => x,
                KeyPattern::FewDistinct => {
                    let v = x % 64;
                    // The value's 6 bits at the top of the top digit, and at the range's start.
                    field(v, bits.end.saturating_sub(6).max(top), bits.end)
                        | field(v, bits.start, top)
                }
                KeyPattern::TopAlike => field(0xa5, top, bits.end) | field(x, bits.start, top),
                KeyPattern::OneBucket if i % 500 == 499 => x,
                KeyPattern::OneBucket => {
                    field(0x5a, top, bits.end) | field(x % 16, bits.start, top)
                }
            };
            let outside = rng.next_u64();
            unmapped((inside & range) | (outside & !range))
        })
        .collect()
}

/// One case of the group sort's two ways.
#[derive(Clone, Debug)]
struct WayCase {
    elem: ElemKind,
    pattern: KeyPattern,
    order: SortOrder,
    bits: Range<u32>,
    pairs: bool,
    lens: Vec<usize>,
    out_lens: Vec<usize>,
    /// The most keys one rank's sort takes ([`GroupSorter::set_chunk_limit`]).
    chunk: Option<usize>,
    /// The fewest keys of a piece of the overlapped exchange
    /// ([`GroupSorter::set_pipeline_min`]; `None`: the default).
    pieces: Option<usize>,
}

/// Runs `case` on ranks sharing `dev`, every output poisoned first, and checks every output
/// bit against the CPU sort; returns the way the sort took.
fn way_case<K: Element>(dev: &dyn Device, case: &WayCase, rng: &mut Rng) -> SortPath {
    let group = Group::in_process(vec![dev; case.lens.len()]).unwrap();
    let n: usize = case.lens.iter().sum();
    let keys: Vec<K> = pattern_keys(case.pattern, n, &case.bits, rng);
    let values: Vec<u32> = (0..n as u32).collect();
    let keys_in = GroupVec::from_slice(&group, &keys, &case.lens).unwrap();
    let mut keys_out = GroupVec::<K>::alloc(&group, &case.out_lens).unwrap();
    keys_out.fill(&group, poison_value(&keys)).unwrap();
    let mut sorter = GroupSorter::<K>::new(&group);
    sorter.set_chunk_limit(case.chunk);
    if let Some(keys) = case.pieces {
        sorter.set_pipeline_min(keys);
    }
    let (bits, order) = (case.bits.clone(), case.order);
    let (want_keys, want_values) = cpu::sort::sort_pairs(&keys, &values, order, bits.clone());
    let what = format!("{case:?} on {}", dev.info().name);
    if case.pairs {
        let values_in = GroupVec::from_slice(&group, &values, &case.lens).unwrap();
        let mut values_out = GroupVec::<u32>::alloc(&group, &case.out_lens).unwrap();
        values_out.fill(&group, 0xcdcd_cdcd).unwrap();
        sorter
            .sort_pairs(
                &group,
                &keys_in,
                &mut keys_out,
                &values_in,
                &mut values_out,
                order,
                bits,
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = values_out.to_vec(&group).unwrap();
        let m = first_mismatch(&want_values, &got);
        assert!(m.is_none(), "{what}: values: {}", m.unwrap());
    } else {
        sorter
            .sort_keys(&group, &keys_in, &mut keys_out, order, bits)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    let want: Vec<u64> = want_keys.iter().map(|k| k.to_bits64()).collect();
    let got: Vec<u64> = keys_out
        .to_vec(&group)
        .unwrap()
        .iter()
        .map(|k| k.to_bits64())
        .collect();
    let m = first_mismatch(&want, &got);
    assert!(m.is_none(), "{what}: keys: {}", m.unwrap());
    sorter.last_path().expect("a call that ran")
}

/// `n` elements over `ranks` ranks: [`group::split_even`] over the even ranks, nothing on the
/// odd ones.
fn even_ranks_only(n: usize, ranks: usize) -> Vec<usize> {
    let even = group::split_even(n, ranks.div_ceil(2));
    (0..ranks)
        .map(|r| if r % 2 == 0 { even[r / 2] } else { 0 })
        .collect()
}

/// Checks every case on every test device, each taking `way`.
fn ways(cases: &[WayCase], way: SortPath) {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        for case in cases {
            let took = with_elem!(case.elem, way_case(&*d.dev, case, &mut rng));
            assert_eq!(took, way, "{}: {case:?}", d.label);
        }
    });
}

/// One case of keys `(elem, pattern, order, bits, pairs)` in three layouts of `n` keys over
/// `ranks` ranks: random input shards into [`group::split_even`]'s, everything on the last rank
/// into the even ranks only, and back.
fn in_three_layouts(
    (elem, pattern, order, bits, pairs): (ElemKind, KeyPattern, SortOrder, Range<u32>, bool),
    (n, ranks): (usize, usize),
    chunk: Option<usize>,
    rng: &mut Rng,
) -> Vec<WayCase> {
    let layouts = [
        (
            Layout::Random.lens(n, ranks, rng),
            group::split_even(n, ranks),
        ),
        (Layout::Last.lens(n, ranks, rng), even_ranks_only(n, ranks)),
        (even_ranks_only(n, ranks), Layout::Last.lens(n, ranks, rng)),
    ];
    layouts
        .into_iter()
        .map(|(lens, out_lens)| WayCase {
            elem,
            pattern,
            order,
            bits: bits.clone(),
            pairs,
            lens,
            out_lens,
            chunk,
            pieces: None,
        })
        .collect()
}

/// The default way of two or more ranks (one digit pass, one bulk exchange, one local sort, the
/// rebalancing exchange), taken for certain: keys spread over the top active digit's values
/// (no bucket above about 1/64 of the keys) and output parts of at least a tile but the last.
/// Every key type, keys and pairs, both orders, the whole and partial bit ranges, input and
/// output layouts that differ, zero-length shards; every output bit against the CPU sort.
/// Every other case cuts the exchange into pieces of at least 700 keys (up to eight a rank,
/// each sorted on its own, those in the rank's output part straight into it), the others
/// into one piece a rank.
#[test]
fn group_sort_takes_one_bulk_exchange() {
    use KeyPattern::*;
    use SortOrder::*;
    let n = 60_000;
    let mut rng = Rng::new(seed());
    let mut cases = Vec::new();
    let specs = [
        (ElemKind::U32, Uniform, Ascending, 0..32, false, 2),
        (ElemKind::U32, FewDistinct, Descending, 4..27, true, 4),
        (ElemKind::I32, FewDistinct, Ascending, 0..32, true, 3),
        (ElemKind::I32, TopAlike, Descending, 0..32, true, 8),
        (ElemKind::F32, TopAlike, Ascending, 0..32, true, 4),
        (ElemKind::F32, Uniform, Descending, 3..30, false, 3),
        (ElemKind::U64, Uniform, Descending, 0..64, true, 8),
        (ElemKind::U64, FewDistinct, Ascending, 4..27, true, 2),
        (ElemKind::I64, FewDistinct, Descending, 0..64, false, 4),
        (ElemKind::I64, TopAlike, Ascending, 12..50, true, 3),
        (ElemKind::F64, Uniform, Ascending, 0..64, true, 4),
        (ElemKind::F64, FewDistinct, Descending, 0..64, true, 8),
    ];
    for (elem, pattern, order, bits, pairs, ranks) in specs {
        cases.extend(in_three_layouts(
            (elem, pattern, order, bits, pairs),
            (n, ranks),
            None,
            &mut rng,
        ));
    }
    for (i, case) in cases.iter_mut().enumerate() {
        if i % 2 == 1 {
            case.pieces = Some(700);
        }
    }
    ways(&cases, SortPath::OneExchange);
}

/// The fallback, taken for certain: one bucket of the top active digit holds all but every
/// 500th key, so one rank would receive nearly the whole vector, more than twice its largest
/// shard (three or more ranks, no shard above about a third): the distributed LSD sort. Every
/// key type, keys and pairs, both orders, partial bit ranges, zero-length shards.
#[test]
fn group_sort_falls_back_to_lsd_on_skewed_keys() {
    use SortOrder::*;
    let n = 30_000;
    let mut cases = Vec::new();
    let thirds = |first: bool| {
        let t = n / 3;
        if first {
            vec![t, t, 0, n - 2 * t]
        } else {
            vec![0, t, t, n - 2 * t]
        }
    };
    let specs = [
        (ElemKind::U32, Ascending, 0..32, true, 3),
        (ElemKind::U32, Descending, 4..27, true, 4),
        (ElemKind::I32, Descending, 0..32, false, 8),
        (ElemKind::F32, Ascending, 2..31, true, 4),
        (ElemKind::U64, Descending, 0..64, true, 3),
        (ElemKind::I64, Ascending, 4..27, true, 4),
        (ElemKind::F64, Descending, 0..64, true, 8),
        (ElemKind::F64, Ascending, 9..40, false, 3),
    ];
    for (elem, order, bits, pairs, ranks) in specs {
        let (lens, out_lens) = if ranks == 4 {
            (thirds(true), thirds(false))
        } else {
            (group::split_even(n, ranks), group::split_even(n, ranks))
        };
        cases.push(WayCase {
            elem,
            pattern: KeyPattern::OneBucket,
            order,
            bits,
            pairs,
            lens,
            out_lens,
            chunk: None,
            pieces: None,
        });
    }
    ways(&cases, SortPath::Lsd);
}

/// Shards and received ranges larger than one sort takes (a chunk of 4096 keys here, the
/// device's own limit on a GPU): each rank counts and sorts its part chunk by chunk, and sorts
/// what it receives in groups of buckets, through windows of its buffers. One rank whose part
/// exceeds a chunk takes the group's way too. Spread keys and keys of 64 values take the bulk
/// exchange; keys of one bucket (too large for a group) the LSD fallback, chunk by chunk.
/// Keys and pairs of 32- and 64-bit keys, both orders, zero-length shards, layouts that
/// differ; every output bit against the CPU sort.
#[test]
fn group_sort_in_chunks_past_one_sort() {
    use KeyPattern::*;
    use SortOrder::*;
    let mut rng = Rng::new(seed());
    let chunk = Some(4096);
    let mut bulk = Vec::new();
    let specs = [
        (ElemKind::U32, Uniform, Ascending, 0..32, true, 1, 20_000),
        (ElemKind::U32, Uniform, Descending, 0..32, false, 2, 50_001),
        (
            ElemKind::F32,
            FewDistinct,
            Ascending,
            0..32,
            true,
            3,
            60_000,
        ),
        (ElemKind::U64, Uniform, Descending, 0..64, true, 4, 70_003),
        (
            ElemKind::I64,
            FewDistinct,
            Ascending,
            4..40,
            false,
            2,
            33_333,
        ),
    ];
    for (elem, pattern, order, bits, pairs, ranks, n) in specs {
        bulk.extend(in_three_layouts(
            (elem, pattern, order, bits, pairs),
            (n, ranks),
            chunk,
            &mut rng,
        ));
    }
    // Groups cut into pieces as well, in every other case.
    for (i, case) in bulk.iter_mut().enumerate() {
        if i % 2 == 0 {
            case.pieces = Some(1500);
        }
    }
    ways(&bulk, SortPath::OneExchange);
    let n = 30_000;
    let lsd: Vec<WayCase> = [
        (ElemKind::U32, Ascending, 0..32, true, 3),
        (ElemKind::F64, Descending, 0..64, true, 2),
        (ElemKind::I32, Descending, 4..27, false, 4),
    ]
    .into_iter()
    .map(|(elem, order, bits, pairs, ranks)| WayCase {
        elem,
        pattern: OneBucket,
        order,
        bits,
        pairs,
        lens: group::split_even(n, ranks),
        out_lens: Layout::Last.lens(n, ranks, &mut rng),
        chunk,
        pieces: None,
    })
    .collect();
    ways(&lsd, SortPath::Lsd);
}

/// An in-process exchange whose rank `failing` fails its `round`-th round.
struct Failing<'d> {
    inner: InProcess<'d>,
    failing: usize,
    round: usize,
    rounds: std::sync::Mutex<usize>,
}

impl Exchange for Failing<'_> {
    fn name(&self) -> String {
        "failing".into()
    }
    fn ranks(&self) -> usize {
        self.inner.ranks()
    }
    fn device(&self, rank: usize) -> &dyn Device {
        self.inner.device(rank)
    }
    fn rendezvous(&self) -> &Rendezvous {
        self.inner.rendezvous()
    }
    fn begin(&self) {
        self.inner.begin();
    }
    fn exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> xwarp::Result<()> {
        if rank == self.failing {
            let mut r = self.rounds.lock().unwrap();
            *r += 1;
            if *r == self.round {
                return Err(Error::invalid("test", "a failing rank", "nothing"));
            }
        }
        self.inner.exchange(rank, sends, recvs)
    }
}

/// A rank that fails mid-operation: every other rank returns, the call returns the failing
/// rank's error, and the group works again for the next call. Spread keys take the bulk
/// exchange (two rounds); keys of one top digit but every 1000th, the LSD fallback (a round
/// per digit).
#[test]
fn a_failing_rank_stops_the_others() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let cases = [
            (0, 1, SortPath::OneExchange),
            (2, 1, SortPath::OneExchange),
            (3, 2, SortPath::OneExchange),
            (1, 3, SortPath::Lsd),
            (3, 4, SortPath::Lsd),
        ];
        for (i, (failing, round, way)) in cases.into_iter().enumerate() {
            let group = Group::with_exchange(Box::new(Failing {
                inner: InProcess::new(vec![dev; 4]).unwrap(),
                failing,
                round,
                rounds: Default::default(),
            }));
            // Rank 0 runs on the caller's thread; the others wait for it sleeping or polling.
            group.set_spin([Duration::ZERO, group::DEFAULT_SPIN][i % 2]);
            let keys: Vec<u32> = (0..20_000u32)
                .map(|i| {
                    let k = i.wrapping_mul(2_654_435_761);
                    match way {
                        SortPath::Lsd if i % 1000 != 0 => 0x7700_0000 | (k >> 8),
                        _ => k,
                    }
                })
                .collect();
            let lens = [5000, 0, 7000, 8000];
            let x = GroupVec::from_slice(&group, &keys, &lens).unwrap();
            let mut y = GroupVec::<u32>::alloc(&group, &lens).unwrap();
            let mut sorter = GroupSorter::new(&group);
            let r = sorter.sort_keys(&group, &x, &mut y, SortOrder::Ascending, 0..32);
            match r {
                Err(Error::InvalidParameter { name: "test", .. }) => {}
                other => panic!("rank {failing} failing round {round}: {other:?}"),
            }
            // The failure was the exchange's only one: the next call succeeds.
            sorter
                .sort_keys(&group, &x, &mut y, SortOrder::Ascending, 0..32)
                .unwrap();
            assert_eq!(
                sorter.last_path(),
                Some(way),
                "rank {failing} round {round}"
            );
            let mut want = keys.clone();
            want.sort_unstable();
            assert_eq!(y.to_vec(&group).unwrap(), want);
            let r = group::reduce_host(&group, ReduceOp::Sum, &x).unwrap();
            assert_eq!(r, keys.iter().fold(0u32, |a, &k| a.wrapping_add(k)));
        }
    });
}

/// Every refused argument is a typed error naming it, before anything runs: outputs keep
/// their poison.
#[test]
fn refused_arguments_are_typed_errors_and_write_nothing() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let group = Group::in_process(vec![dev; 3]).unwrap();
        let other = Group::in_process(vec![dev; 2]).unwrap();
        let data: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let lens = [40, 0, 60];
        let x = GroupVec::from_slice(&group, &data, &lens).unwrap();
        let poison = f32::from_bits(0xcdcd_cdcd);
        let fresh = |lens: &[usize]| {
            let mut v = GroupVec::<f32>::alloc(&group, lens).unwrap();
            v.fill(&group, poison).unwrap();
            v
        };
        let untouched = |v: &GroupVec<f32>| {
            assert!(v
                .to_vec(&group)
                .unwrap()
                .iter()
                .all(|x| x.to_bits() == 0xcdcd_cdcd))
        };
        // Layouts.
        assert!(matches!(
            GroupVec::from_slice(&group, &data, &[40, 60]),
            Err(Error::LengthMismatch { name: "lens", .. })
        ));
        assert!(matches!(
            GroupVec::from_slice(&group, &data, &[40, 1, 60]),
            Err(Error::LengthMismatch { name: "lens", .. })
        ));
        assert!(matches!(
            Group::in_process(vec![]),
            Err(Error::InvalidParameter { .. })
        ));
        // Reduce: a bitwise operator on floats, outputs of two elements, another group.
        let mut out = fresh(&[1, 1, 1]);
        assert!(matches!(
            group::reduce(&group, ReduceOp::Xor, &x, &mut out),
            Err(Error::InvalidParameter { name: "op", .. })
        ));
        let mut wide = fresh(&[1, 2, 1]);
        assert!(matches!(
            group::reduce(&group, ReduceOp::Sum, &x, &mut wide),
            Err(Error::InvalidParameter { name: "output", .. })
        ));
        untouched(&wide);
        assert!(matches!(
            group::reduce(&other, ReduceOp::Sum, &x, &mut out),
            Err(Error::LengthMismatch { name: "input", .. })
        ));
        untouched(&out);
        // Scan: a product, another layout, the input's own buffer.
        let mut y = fresh(&lens);
        assert!(matches!(
            group::scan(&group, ReduceOp::Product, ScanKind::Inclusive, &x, &mut y),
            Err(Error::InvalidParameter { name: "op", .. })
        ));
        let mut moved = fresh(&[41, 0, 59]);
        assert!(matches!(
            group::scan(&group, ReduceOp::Sum, ScanKind::Inclusive, &x, &mut moved),
            Err(Error::InvalidParameter { name: "output", .. })
        ));
        untouched(&moved);
        let shards = x.into_shards().into_iter().collect::<Vec<_>>();
        let alias: Vec<_> = shards
            .iter()
            .map(|s| xwarp::DeviceVec::from_raw(s.raw().clone(), s.len()).unwrap())
            .collect();
        let x = GroupVec::from_shards(&group, shards).unwrap();
        let mut alias = GroupVec::from_shards(&group, alias).unwrap();
        assert!(matches!(
            group::scan(&group, ReduceOp::Sum, ScanKind::Inclusive, &x, &mut alias),
            Err(Error::InvalidParameter { name: "output", .. })
        ));
        assert_eq!(alias.to_vec(&group).unwrap(), data);
        // Sort: a bad bit range, another total, a sorter of another group, values of another
        // layout.
        let mut sorter = GroupSorter::<f32>::new(&group);
        let mut s = fresh(&[50, 50, 0]);
        assert!(matches!(
            sorter.sort_keys(&group, &x, &mut s, SortOrder::Ascending, 0..33),
            Err(Error::InvalidParameter {
                name: "end_bit",
                ..
            })
        ));
        let mut short = fresh(&[50, 49, 0]);
        assert!(matches!(
            sorter.sort_keys(&group, &x, &mut short, SortOrder::Ascending, 0..32),
            Err(Error::LengthMismatch {
                name: "keys_out",
                ..
            })
        ));
        let mut two = GroupSorter::<f32>::new(&other);
        assert!(matches!(
            two.sort_keys(&group, &x, &mut s, SortOrder::Ascending, 0..32),
            Err(Error::InvalidParameter { name: "group", .. })
        ));
        let v = GroupVec::from_slice(&group, &vec![7u32; 100], &[50, 50, 0]).unwrap();
        let mut vout = GroupVec::<u32>::alloc(&group, &[50, 50, 0]).unwrap();
        assert!(matches!(
            sorter.sort_pairs(
                &group,
                &x,
                &mut s,
                &v,
                &mut vout,
                SortOrder::Ascending,
                0..32
            ),
            Err(Error::InvalidParameter {
                name: "values_in",
                ..
            })
        ));
        untouched(&s);
        // A shard on another device than its rank's (ranks on distinct devices).
        let vk = open_vulkan();
        let mixed = Group::in_process(vec![dev, &*vk]).unwrap();
        let foreign = GroupVec::from_shards(
            &mixed,
            vec![
                xwarp::DeviceVec::<f32>::alloc(dev, 1).unwrap(),
                xwarp::DeviceVec::<f32>::alloc(dev, 1).unwrap(),
            ],
        );
        assert!(
            matches!(foreign, Err(Error::ForeignBuffer { .. })),
            "{foreign:?}"
        );
    });
}

/// NCCL: where libnccl is missing (or CUDA is), a typed error; with NCCL and CUDA, the group
/// of every GPU of the host against the CPU.
#[cfg(feature = "nccl")]
#[test]
fn nccl_group_or_a_typed_error() {
    use std::sync::Arc;
    use xwarp::cuda::CudaDevice;
    let count = match xwarp::cuda::available() {
        Ok(n) => n,
        Err(e) => {
            assert!(matches!(e, Error::BackendUnavailable { .. }), "{e}");
            eprintln!("NCCL not tested: {e}");
            return;
        }
    };
    let gpus: Vec<Arc<CudaDevice>> = (0..count)
        .map(|i| Arc::new(CudaDevice::new(i).unwrap()))
        .collect();
    let group = match Group::nccl(gpus) {
        Ok(g) => g,
        Err(Error::MissingFeature { missing, .. }) => {
            assert!(missing.contains("NCCL"), "{missing}");
            eprintln!("NCCL not tested: {missing}");
            return;
        }
        Err(e) => panic!("NCCL group: {e}"),
    };
    eprintln!("{} over {} GPUs", group.exchange_name(), group.ranks());
    let mut rng = Rng::new(seed());
    let ranks = group.ranks();
    for n in [0, 1, 33, 4097, 1_000_003, 1 << 24] {
        for layout in Layout::ALL {
            let lens = layout.lens(n, ranks, &mut rng);
            let data: Vec<f32> = f32::input(ReduceOp::Sum, n, &mut rng);
            let x = GroupVec::from_slice(&group, &data, &lens).unwrap();
            let want = cpu::group::reduce(ReduceOp::Sum, &split(&data, &lens));
            let got = group::reduce_host(&group, ReduceOp::Sum, &x).unwrap();
            assert_eq!(want.to_bits(), got.to_bits(), "reduce n={n} {lens:?}");
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                let mut y = GroupVec::<f32>::alloc(&group, &lens).unwrap();
                y.fill(&group, f32::from_bits(0xcdcd_cdcd)).unwrap();
                group::scan(&group, ReduceOp::Sum, kind, &x, &mut y).unwrap();
                let want = expected_reduce_scan(GroupOp::Scan(ReduceOp::Sum, kind), &data, &lens);
                let m = first_mismatch_nan_as_class(&want, &y.to_vec(&group).unwrap());
                assert!(m.is_none(), "scan {kind:?} n={n} {lens:?}: {}", m.unwrap());
            }
            let keys: Vec<u32> = rng.vec(n);
            let values: Vec<u32> = (0..n as u32).collect();
            let out_lens = Layout::Random.lens(n, ranks, &mut rng);
            let k = GroupVec::from_slice(&group, &keys, &lens).unwrap();
            let v = GroupVec::from_slice(&group, &values, &lens).unwrap();
            let mut ks = GroupVec::<u32>::alloc(&group, &out_lens).unwrap();
            let mut vs = GroupVec::<u32>::alloc(&group, &out_lens).unwrap();
            let mut sorter = GroupSorter::new(&group);
            // Odd lengths: pieces of at least 4096 keys (up to eight a rank); 2^24: the
            // default (two a rank on two GPUs).
            if n % 2 == 1 {
                sorter.set_pipeline_min(4096);
            }
            sorter
                .sort_pairs(
                    &group,
                    &k,
                    &mut ks,
                    &v,
                    &mut vs,
                    SortOrder::Ascending,
                    0..32,
                )
                .unwrap();
            let (wk, wv) = cpu::sort::sort_pairs(&keys, &values, SortOrder::Ascending, 0..32);
            assert!(wk == ks.to_vec(&group).unwrap(), "sort keys n={n} {lens:?}");
            assert!(
                wv == vs.to_vec(&group).unwrap(),
                "sort values n={n} {lens:?}"
            );
        }
    }
}

/// A device that forwards everything but windows, as a backend without them would.
struct NoWindows<'d>(&'d dyn Device);

impl Device for NoWindows<'_> {
    fn info(&self) -> &xwarp::DeviceInfo {
        self.0.info()
    }
    fn id(&self) -> xwarp::device::DeviceId {
        self.0.id()
    }
    fn alloc(&self, bytes: u64) -> xwarp::Result<xwarp::device::RawBuffer> {
        self.0.alloc(bytes)
    }
    fn write(&self, dst: &xwarp::device::RawBuffer, offset: u64, src: &[u8]) -> xwarp::Result<()> {
        self.0.write(dst, offset, src)
    }
    fn copy(
        &self,
        src: &xwarp::device::RawBuffer,
        src_offset: u64,
        dst: &xwarp::device::RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> xwarp::Result<()> {
        self.0.copy(src, src_offset, dst, dst_offset, bytes)
    }
    fn read(
        &self,
        src: &xwarp::device::RawBuffer,
        offset: u64,
        dst: &mut [u8],
    ) -> xwarp::Result<()> {
        self.0.read(src, offset, dst)
    }
    fn launch(&self, launch: &xwarp::device::Launch<'_>) -> xwarp::Result<()> {
        self.0.launch(launch)
    }
    fn synchronize(&self) -> xwarp::Result<()> {
        self.0.synchronize()
    }
    fn time(
        &self,
        work: &mut dyn FnMut() -> xwarp::Result<()>,
    ) -> xwarp::Result<std::time::Duration> {
        self.0.time(work)
    }
}

/// A sort whose parts exceed a chunk needs windows: on a device without them it is refused
/// before anything runs (a typed error, the output untouched); without chunks the same device
/// sorts.
#[test]
fn chunked_sort_without_windows_is_refused_before_running() {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = NoWindows(&*d.dev);
        let group = Group::in_process(vec![&dev as &dyn Device; 2]).unwrap();
        let n = 20_000;
        let keys: Vec<u32> = rng.vec(n);
        let lens = group::split_even(n, 2);
        let x = GroupVec::from_slice(&group, &keys, &lens).unwrap();
        let mut y = GroupVec::<u32>::alloc(&group, &lens).unwrap();
        y.fill(&group, 0xcdcd_cdcd).unwrap();
        let mut sorter = GroupSorter::<u32>::new(&group);
        sorter.set_chunk_limit(Some(4096));
        let e = sorter
            .sort_keys(&group, &x, &mut y, SortOrder::Ascending, 0..32)
            .unwrap_err();
        assert!(
            matches!(e, Error::MissingFeature { .. }),
            "{}: {e}",
            d.label
        );
        let untouched = y.to_vec(&group).unwrap();
        assert!(untouched.iter().all(|&k| k == 0xcdcd_cdcd), "{}", d.label);
        sorter.set_chunk_limit(None);
        sorter
            .sort_keys(&group, &x, &mut y, SortOrder::Ascending, 0..32)
            .unwrap();
        let want = cpu::sort::sort_keys(&keys, SortOrder::Ascending, 0..32);
        assert!(y.to_vec(&group).unwrap() == want, "{}", d.label);
        // Without windows, within one sort's size, in pieces too: a rank whose range starts
        // inside its output part at an aligned place (some of these inputs) sorts it whole.
        sorter.set_pipeline_min(1000);
        for _ in 0..12 {
            let keys: Vec<u32> = rng.vec(n);
            let x = GroupVec::from_slice(&group, &keys, &lens).unwrap();
            y.fill(&group, 0xcdcd_cdcd).unwrap();
            sorter
                .sort_keys(&group, &x, &mut y, SortOrder::Ascending, 0..32)
                .unwrap_or_else(|e| panic!("{}: {e}", d.label));
            let want = cpu::sort::sort_keys(&keys, SortOrder::Ascending, 0..32);
            assert!(y.to_vec(&group).unwrap() == want, "{}", d.label);
        }
    });
}
