//! What the tuning examples (`sort_tuning`, `scan_tuning`) share: their lengths' syntax, the
//! order of alternated rounds, medians, and the scrubbed GPU timing of one call.

use xwarp::{Device, DeviceVec, Result};

/// Lengths from `2^k` or plain numbers, comma-separated (`2^12,100003`).
pub fn parse_lens(list: &str) -> std::result::Result<Vec<usize>, String> {
    list.split(',')
        .map(|v| match v.strip_prefix("2^") {
            Some(k) => k
                .parse::<u32>()
                .ok()
                .filter(|&k| k < 31)
                .map(|k| 1usize << k)
                .ok_or(format!("--n {v}: 2^k with k below 31")),
            None => v.parse().map_err(|e| format!("--n {v}: {e}")),
        })
        .collect()
}

/// The tunings' order in `round`: as given, every other round reversed, so that a drift of
/// the GPU's clock shows as a spread between rounds rather than between tunings.
pub fn turn(round: usize, tunings: usize) -> Vec<usize> {
    let mut turn: Vec<usize> = (0..tunings).collect();
    if round % 2 == 1 {
        turn.reverse();
    }
    turn
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Buffers copied into each other before every timed call, so that no call finds its
/// input in the GPU's caches.
pub struct Scrub {
    a: DeviceVec<u32>,
    b: DeviceVec<u32>,
}

impl Scrub {
    pub fn new(dev: &dyn Device) -> Result<Scrub> {
        Ok(Scrub {
            a: DeviceVec::alloc(dev, 64 << 20)?,
            b: DeviceVec::alloc(dev, 64 << 20)?,
        })
    }

    /// `reps` GPU timings of `call`, each after a scrub: the whole call's median (seconds)
    /// and each command's median (µs).
    pub fn time(
        &self,
        dev: &dyn Device,
        reps: usize,
        call: &mut dyn FnMut() -> Result<()>,
    ) -> Result<(f64, Vec<f64>)> {
        let mut times = Vec::with_capacity(reps);
        let mut launches: Vec<Vec<f64>> = Vec::new();
        for rep in 0..reps {
            dev.copy(self.a.raw(), 0, self.b.raw(), 0, self.a.len() as u64 * 4)?;
            let t = dev.time_launches(call)?;
            times.push(t.total.as_secs_f64());
            if rep == 0 {
                launches = vec![Vec::new(); t.commands.len()];
            }
            for (l, c) in launches.iter_mut().zip(&t.commands) {
                l.push(c.gpu.as_secs_f64());
            }
        }
        let per_launch = launches.into_iter().map(|l| median(l) * 1e6).collect();
        Ok((median(times), per_launch))
    }
}

/// The compiler's statistics of `dev`'s kernels whose names start with `prefix`: registers,
/// shared memory, spills and occupancy, a line each.
pub fn print_stats(dev: &dyn Device, kind: &str, prefix: &str) {
    for s in dev.kernel_stats() {
        if s.kernel.starts_with(prefix) {
            let stats: Vec<String> = s
                .stats
                .iter()
                .filter(|(k, _)| {
                    let k = k.to_lowercase();
                    k.contains("register")
                        || k.contains("occupancy")
                        || k.contains("spill")
                        || k.contains("shared")
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            println!(
                "{kind} stats {} {}: {}",
                s.kernel,
                s.executable,
                stats.join(" ")
            );
        }
    }
}
