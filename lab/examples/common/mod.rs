//! What the tuning examples (`sort_tuning`, `scan_tuning`) share: their lengths' syntax, the
//! order of alternated rounds, medians, and the scrubbed GPU timing of one call.

use std::sync::Arc;
use xwarp::{Device, DeviceVec, ElemKind, Result};

/// Every backend's device, or only `XWARP_BACKEND`'s (`cuda` or `vulkan`, for a profiler);
/// a backend that cannot open is reported and left out.
pub fn devices() -> Vec<(String, Arc<dyn Device>)> {
    let only = std::env::var(xwarp::backend::BACKEND_ENV).unwrap_or_default();
    xwarp::backend::open_each(false)
        .into_iter()
        .filter(|(kind, _)| only.is_empty() || only == "auto" || kind.to_string() == only)
        .filter_map(|(kind, dev)| match dev {
            Ok(d) => Some((kind.to_string(), d)),
            Err(e) => {
                println!("{kind}: skipped: {e}");
                None
            }
        })
        .collect()
}

/// `parse`'s arguments, or the message of its error (exit status 2 for the caller).
pub fn parsed<A>(name: &str, parse: fn() -> std::result::Result<A, String>) -> Option<A> {
    parse().map_err(|e| eprintln!("{name}: {e}")).ok()
}

/// The options every tuning example takes: `--n`, `--reps`, `--alternations`, `--type`.
pub struct Options {
    pub lens: Vec<usize>,
    pub reps: usize,
    pub alternations: usize,
    pub kind: ElemKind,
}

impl Options {
    /// Takes `a` (reading its value through `value`) if it is one of these options: true, or
    /// false for the caller's own.
    pub fn take(
        &mut self,
        a: &str,
        value: &mut dyn FnMut(&str) -> std::result::Result<String, String>,
    ) -> std::result::Result<bool, String> {
        let count = |v: String, name: &str| {
            v.parse::<usize>()
                .map(|c| c.max(1))
                .map_err(|e| format!("{name}: {e}"))
        };
        match a {
            "--n" => self.lens = parse_lens(&value("--n")?)?,
            "--alternations" => self.alternations = count(value("--alternations")?, a)?,
            "--reps" => self.reps = count(value("--reps")?, a)?,
            "--type" => {
                let v = value("--type")?;
                self.kind = ElemKind::ALL
                    .into_iter()
                    .find(|k| k.name() == v)
                    .ok_or(format!("--type {v}: one of u32 i32 f32 u64 i64 f64"))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The tuning a spec names: its `key=value` pairs, comma-separated (`default`: none), each
/// applied to the default by `set`, which returns false for a key it does not know.
pub fn tuning<T: Default>(
    spec: &str,
    set: impl Fn(&mut T, &str, u32) -> bool,
) -> std::result::Result<(String, T), String> {
    let mut t = T::default();
    for kv in spec.split(',').filter(|s| !s.is_empty() && *s != "default") {
        let (k, v) = kv.split_once('=').ok_or(format!("{kv}: key=value"))?;
        let v: u32 = v.parse().map_err(|e| format!("{kv}: {e}"))?;
        if !set(&mut t, k, v) {
            return Err(format!("{k}: unknown tuning key"));
        }
    }
    Ok((spec.to_string(), t))
}

/// The default tuning where the command line named none.
pub fn or_default<T: Default>(tunings: &mut Vec<(String, T)>) {
    if tunings.is_empty() {
        tunings.push(("default".into(), T::default()));
    }
}

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
