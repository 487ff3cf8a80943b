//! A vector sharded over four ranks: its sum, its prefix sums and its sorted keys, computed by
//! the group (here four ranks sharing the default device through the in-process exchange;
//! `Group::nccl` takes the GPUs of a host with the feature `nccl`), checked against the CPU.
//!
//! ```sh
//! cargo run --example group
//! ```

use std::process::ExitCode;
use xwarp::group::{self, Group, GroupSorter, GroupVec};
use xwarp::reduce::ReduceOp;
use xwarp::scan::ScanKind;
use xwarp::sort::{all_bits, SortOrder};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> xwarp::Result<bool> {
    let dev = xwarp::backend::open_default()?;
    let group = Group::in_process(vec![&*dev; 4])?;
    println!(
        "{} ranks on {}: {}",
        group.ranks(),
        dev.info(),
        group.exchange_name()
    );
    let data: Vec<u32> = (0..1_000_003u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    // Shards of whole 4096-element tiles, as even as that allows.
    let lens = group::split_even(data.len(), group.ranks());
    let x = GroupVec::from_slice(&group, &data, &lens)?;

    let total = group::reduce_host(&group, ReduceOp::Sum, &x)?;
    let mut prefix = GroupVec::<u32>::alloc(&group, &lens)?;
    group::scan(&group, ReduceOp::Sum, ScanKind::Exclusive, &x, &mut prefix)?;
    // The sorted keys in another layout: everything on the last rank.
    let mut sorted = GroupVec::<u32>::alloc(&group, &[0, 0, 0, data.len()])?;
    GroupSorter::new(&group).sort_keys(
        &group,
        &x,
        &mut sorted,
        SortOrder::Ascending,
        all_bits::<u32>(),
    )?;

    let want_total = data.iter().fold(0u32, |a, &v| a.wrapping_add(v));
    let want_prefix: Vec<u32> = data
        .iter()
        .scan(0u32, |run, &v| {
            let before = *run;
            *run = run.wrapping_add(v);
            Some(before)
        })
        .collect();
    let mut want_sorted = data.clone();
    want_sorted.sort_unstable();
    let ok = [
        ("sum", total == want_total),
        ("exclusive scan", prefix.to_vec(&group)? == want_prefix),
        ("sort", sorted.to_vec(&group)? == want_sorted),
    ];
    for (what, good) in ok {
        println!("{what}: {}", if good { "equals the CPU" } else { "WRONG" });
    }
    Ok(ok.iter().all(|(_, good)| *good))
}
