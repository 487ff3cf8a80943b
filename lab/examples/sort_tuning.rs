//! Times the radix sort under several tunings on every backend, each result checked first:
//! the experiments behind the sort's defaults (NOTES.md).
//!
//! ```text
//! cargo run --release -p xwarp-lab --example sort_tuning -- [--n N[,N...]] [--reps R]
//!     [--alternations A] [--type u32|i32|f32|u64|i64|f64] [--pairs] [--wide-values]
//!     [TUNING ...]
//! ```
//! A tuning is `key=value` pairs separated by commas: `items`, `items_wide`, `block`,
//! `min_blocks`, `rounds` (staging rounds of keys), `match_any`, `groups` (histogram
//! workgroups), `parts` (histogram counter copies), `spin`; missing keys keep the
//! defaults (`default` is the defaults), and no tuning at all times the defaults. Pairs carry `u32` values (`--wide-values`: `u64`; the input
//! indices). Every tuning's output is compared bit for bit with the CPU's stable sort before
//! it is timed; the times are GPU medians over the repetitions, each after a cache scrub.
//! Several lengths (`--n 2^12,2^16`) share one opening of each device (and its compiled
//! kernels); `--alternations A` times the tunings A times in turn, every other round in
//! reverse order, so a drift of the GPU's clock shows as a spread between rounds.
//! Afterwards the compiler's statistics of each digit-pass variant are printed.
//! `XWARP_BACKEND=cuda` (or `vulkan`) times that backend only.

mod common;

use std::process::ExitCode;
use xwarp::sort::{all_bits, SortOrder, Sorter, Tuning};
use xwarp::{Device, DeviceVec, ElemKind, Element, Rng};

struct Args {
    o: common::Options,
    pairs: bool,
    wide_values: bool,
    tunings: Vec<(String, Tuning)>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        o: common::Options {
            lens: vec![1 << 24],
            reps: 11,
            alternations: 1,
            kind: ElemKind::U32,
        },
        pairs: false,
        wide_values: false,
        tunings: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name}: missing value"));
        if args.o.take(&a, &mut value)? {
            continue;
        }
        match a.as_str() {
            "--pairs" => args.pairs = true,
            "--wide-values" => args.wide_values = true,
            spec => args
                .tunings
                .push(common::tuning(spec, |t: &mut Tuning, k, v| {
                    match k {
                        "items" => t.items = v,
                        "items_wide" => t.items_wide = v,
                        "block" => t.block = Some(v),
                        "min_blocks" => t.min_blocks = v,
                        "rounds" => t.stage_rounds = v,
                        "match_any" => t.match_any = v != 0,
                        "groups" => t.histogram_groups = v,
                        "parts" => t.histogram_parts = Some(v),
                        "spin" => t.spin = v,
                        _ => return false,
                    }
                    true
                })?),
        }
    }
    common::or_default(&mut args.tunings);
    Ok(args)
}

fn main() -> ExitCode {
    let Some(args) = common::parsed("sort_tuning", parse) else {
        return ExitCode::from(2);
    };
    macro_rules! go {
        ($t:ty) => {
            if args.wide_values {
                run::<$t, u64>(&args)
            } else {
                run::<$t, u32>(&args)
            }
        };
    }
    let ok = match args.o.kind {
        ElemKind::U32 => go!(u32),
        ElemKind::I32 => go!(i32),
        ElemKind::F32 => go!(f32),
        ElemKind::U64 => go!(u64),
        ElemKind::I64 => go!(i64),
        ElemKind::F64 => go!(f64),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Sorts once per length, tuning and backend (checked against the CPU), then times; false
/// when any result was wrong.
fn run<K: Element, V: Element + From<u32> + PartialEq>(args: &Args) -> bool {
    let order = SortOrder::Ascending;
    let mut ok = true;
    println!(
        "sort_tuning: {} keys{}, lengths {:?}, {} repetitions, {} alternations",
        K::KIND,
        if args.pairs {
            format!(" with {} values", V::KIND)
        } else {
            String::new()
        },
        args.o.lens,
        args.o.reps,
        args.o.alternations
    );
    for (kind, dev) in common::devices() {
        let dev: &dyn Device = &*dev;
        let scrub = common::Scrub::new(dev).expect("alloc");
        for &n in &args.o.lens {
            let input: Vec<K> = Rng::new(2024).vec(n);
            let indices: Vec<V> = (0..n as u32).map(V::from).collect();
            let (want_keys, want_values) =
                xwarp::cpu::sort::sort_pairs(&input, &indices, order, all_bits::<K>());
            let keys_in = DeviceVec::from_slice(dev, &input).expect("upload");
            let values_in = DeviceVec::from_slice(dev, &indices).expect("upload");
            let mut keys_out = DeviceVec::<K>::alloc(dev, n).expect("alloc");
            let mut values_out = DeviceVec::<V>::alloc(dev, n).expect("alloc");
            let mut sorters: Vec<Option<Sorter<K>>> = args
                .tunings
                .iter()
                .map(|(_, t)| Some(Sorter::<K>::with_tuning(*t)))
                .collect();
            let pairs = args.pairs;
            let call = |sorter: &mut Sorter<K>,
                        keys_out: &mut DeviceVec<K>,
                        values_out: &mut DeviceVec<V>| {
                if pairs {
                    sorter.sort_pairs(
                        dev,
                        &keys_in,
                        keys_out,
                        &values_in,
                        values_out,
                        order,
                        all_bits::<K>(),
                    )
                } else {
                    sorter.sort_keys(dev, &keys_in, keys_out, order, all_bits::<K>())
                }
            };
            for round in 0..args.o.alternations {
                for i in common::turn(round, args.tunings.len()) {
                    let name = &args.tunings[i].0;
                    let Some(sorter) = sorters[i].as_mut() else {
                        continue;
                    };
                    if round == 0 {
                        keys_out.fill(dev, K::zeroed()).expect("fill");
                        values_out.fill(dev, V::from(u32::MAX)).expect("fill");
                        if let Err(e) = call(sorter, &mut keys_out, &mut values_out) {
                            println!("{kind} n={n} {name}: {e}");
                            sorters[i] = None;
                            continue;
                        }
                        let keys = keys_out.to_vec(dev).expect("download");
                        let same = |a: &[K], b: &[K]| {
                            a.iter().zip(b).all(|(x, y)| x.to_bits64() == y.to_bits64())
                        };
                        let right = same(&keys, &want_keys)
                            && (!pairs || values_out.to_vec(dev).expect("download") == want_values);
                        if !right {
                            println!("{kind} n={n} {name}: WRONG RESULT");
                            ok = false;
                            sorters[i] = None;
                            continue;
                        }
                    }
                    let (t, launches) = scrub
                        .time(dev, args.o.reps, &mut || {
                            call(sorter, &mut keys_out, &mut values_out)
                        })
                        .expect("timed sort");
                    let parts: Vec<String> = launches.iter().map(|l| format!("{l:.1}")).collect();
                    println!(
                        "{kind} n={n} round {round} {name}: {:.1} µs, {:.2} G keys/s; launches µs: {}",
                        t * 1e6,
                        n as f64 / t / 1e9,
                        parts.join(" ")
                    );
                }
            }
        }
        common::print_stats(dev, &kind, "sort_");
    }
    ok
}
