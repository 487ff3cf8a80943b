//! Stream compaction: keep the elements that pass a predicate, on the GPU, and check the result
//! against a CPU filter.
//!
//! ```sh
//! cargo run --example compact
//! ```

use std::process::ExitCode;
use xwarp::compact::{compact, Order};
use xwarp::vote::Predicate;
use xwarp::DeviceVec;

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
    println!("device: {}", dev.info());

    let mut rng = xwarp::Rng::new(42);
    let data: Vec<u32> = (0..200_000).map(|_| rng.below(1000) as u32).collect();
    let input = DeviceVec::from_slice(&*dev, &data)?;

    // The output must have room for every element; the count lands in a one-element vector on
    // the device, so a next kernel could read it without a trip to the host.
    let mut kept = DeviceVec::<u32>::alloc(&*dev, data.len())?;
    let mut count = DeviceVec::<u64>::alloc(&*dev, 1)?;
    let keep = Predicate::Greater(900);
    let want: Vec<u32> = data.iter().copied().filter(|&v| v > 900).collect();
    let mut ok = true;

    // Stable keeps input order; Unordered appends each warp's survivors with one atomic per
    // warp, in whatever order the warps finish (same elements, any order).
    for order in [Order::Stable, Order::Unordered] {
        compact(&*dev, order, keep, &input, &mut kept, &mut count)?;
        let n = count.to_vec(&*dev)?[0] as usize;
        let mut got = kept.to_vec(&*dev)?;
        got.truncate(n);
        let matches = if order == Order::Stable {
            got == want
        } else {
            let (mut a, mut b) = (got.clone(), want.clone());
            a.sort_unstable();
            b.sort_unstable();
            a == b
        };
        println!(
            "{order}: kept {n} of {} (CPU: {}) {}",
            data.len(),
            want.len(),
            if matches { "OK" } else { "MISMATCH" }
        );
        ok &= matches;
    }
    Ok(ok)
}
