//! The cliff guard: cases whose time does not fit the rest of the run, found by three rules,
//! then re-timed to tell a reproducible cliff from a transient stall.
//!
//! The rules, each over one backend, algorithm and element type:
//! - **doubling**: a case takes more than [`DOUBLING`] times its own time at twice the size
//!   (more work taking less time is a cliff below, or a stall);
//! - **twins**: the inclusive and exclusive scans of one size differ by more than [`TWINS`]
//!   (the same kernel with one more or one less element per output);
//! - **spread**: the slowest repetition took more than [`SPREAD`] times the fastest.
//!
//! Every flagged case of the run's own backends is timed again [`RETIMES`] times ([`Retimed`]
//! records each re-timing's statistics), and the rule is evaluated again on each re-timing
//! (with the re-timed figures of the other case it compares with, where that case was
//! re-timed too): a flag that holds in at least two of the three is *reproducible*, one that
//! does not is *transient*. A transient case's record takes the middle re-timing's figures (the
//! flag keeps the first ones). CUB's cases are flagged by the same rules but not re-timed.

use super::{Record, Report, Stats};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The doubling rule's limit: time at `n` over time at `2n`.
pub const DOUBLING: f64 = 1.10;
/// The twins rule's limit: the slower scan's time over the faster's.
pub const TWINS: f64 = 1.25;
/// The spread rule's limit: the slowest repetition over the fastest.
pub const SPREAD: f64 = 2.0;
/// How many times a flagged case is timed again.
pub const RETIMES: usize = 3;

/// Which rule flagged a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum Rule {
    /// Slower than the same case at `other_n` = 2n.
    Doubling {
        /// The size it is compared with.
        other_n: usize,
    },
    /// Slower than its scan twin by more than [`TWINS`].
    Twins {
        /// The twin's algorithm.
        twin: String,
    },
    /// Slowest repetition over fastest above [`SPREAD`].
    Spread,
}

/// What re-timing said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The rule held in at least two of the re-timings.
    Reproducible,
    /// It held in at most one.
    Transient,
    /// Not re-timed (CUB's cases, or a backend this run did not open).
    NotRetimed,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reproducible => "reproducible",
            Verdict::Transient => "transient",
            Verdict::NotRetimed => "not re-timed",
        })
    }
}

/// One flagged case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    /// Backend of the case.
    pub backend: String,
    /// Algorithm.
    pub algo: String,
    /// Element type.
    pub elem: String,
    /// Size.
    pub n: usize,
    /// The rule.
    #[serde(flatten)]
    pub rule: Rule,
    /// The figures that broke it, in words.
    pub detail: String,
    /// What re-timing said.
    pub verdict: Verdict,
    /// The median of each re-timing of the case, seconds.
    #[serde(default)]
    pub retimes: Vec<f64>,
}

/// A case's identity: backend, algorithm, element type, size.
pub type CaseKey = (String, String, String, usize);

fn key(r: &Record) -> CaseKey {
    (r.backend.clone(), r.algo.clone(), r.elem.clone(), r.n)
}

fn us(s: f64) -> String {
    format!("{:.1} µs", s * 1e6)
}

/// The scan whose twin `algo` is.
fn twin_of(algo: &str) -> Option<&'static str> {
    match algo {
        "scan_inclusive" => Some("scan_exclusive"),
        "scan_exclusive" => Some("scan_inclusive"),
        _ => None,
    }
}

/// Whether `rule` holds for the case `k` when each case's statistics come from `stats`.
fn holds(rule: &Rule, k: &CaseKey, stats: &dyn Fn(&CaseKey) -> Option<Stats>) -> Option<bool> {
    let me = stats(k)?;
    Some(match rule {
        Rule::Doubling { other_n } => {
            let other = stats(&(k.0.clone(), k.1.clone(), k.2.clone(), *other_n))?;
            me.median > DOUBLING * other.median
        }
        Rule::Twins { twin } => {
            let other = stats(&(k.0.clone(), twin.clone(), k.2.clone(), k.3))?;
            me.median > TWINS * other.median
        }
        Rule::Spread => me.min > 0.0 && me.max / me.min > SPREAD,
    })
}

/// The cases of `report` that break a rule (not yet re-timed), in record order.
pub fn flags(report: &Report) -> Vec<Flag> {
    let find = |k: &CaseKey| report.records.iter().find(|r| key(r) == *k).map(|r| r.gpu);
    let mut out = Vec::new();
    for r in &report.records {
        let k = key(r);
        let mut rules = vec![Rule::Doubling { other_n: r.n * 2 }, Rule::Spread];
        if let Some(twin) = twin_of(&r.algo) {
            rules.push(Rule::Twins { twin: twin.into() });
        }
        for rule in rules {
            if holds(&rule, &k, &find) != Some(true) {
                continue;
            }
            let detail = match &rule {
                Rule::Doubling { other_n } => format!(
                    "{} at n = {}, {} at n = {other_n}",
                    us(r.gpu.median),
                    r.n,
                    us(find(&(k.0.clone(), k.1.clone(), k.2.clone(), *other_n))
                        .map_or(0.0, |s| s.median))
                ),
                Rule::Twins { twin } => format!(
                    "{}, {twin} {}",
                    us(r.gpu.median),
                    us(find(&(k.0.clone(), twin.clone(), k.2.clone(), k.3))
                        .map_or(0.0, |s| s.median))
                ),
                Rule::Spread => format!(
                    "median {}, fastest {}, slowest {}",
                    us(r.gpu.median),
                    us(r.gpu.min),
                    us(r.gpu.max)
                ),
            };
            out.push(Flag {
                backend: r.backend.clone(),
                algo: r.algo.clone(),
                elem: r.elem.clone(),
                n: r.n,
                rule,
                detail,
                verdict: Verdict::NotRetimed,
                retimes: Vec::new(),
            });
        }
    }
    out
}

/// The cases a flag's re-timing needs: the flagged case and the case its rule compares with.
pub fn cases_to_retime(flag: &Flag) -> Vec<CaseKey> {
    let me = (
        flag.backend.clone(),
        flag.algo.clone(),
        flag.elem.clone(),
        flag.n,
    );
    let mut cases = vec![me.clone()];
    match &flag.rule {
        Rule::Doubling { other_n } => cases.push((me.0, me.1, me.2, *other_n)),
        Rule::Twins { twin } => cases.push((me.0, twin.clone(), me.2, me.3)),
        Rule::Spread => {}
    }
    cases
}

/// The re-timings of the cases re-timed: [`RETIMES`] statistics each.
pub type Retimed = Vec<(CaseKey, Vec<Stats>)>;

/// Gives each flag of a re-timed case its verdict and re-timed medians, and a transient
/// case's record the middle re-timing's figures. Cases that were not re-timed keep
/// [`Verdict::NotRetimed`].
pub fn judge(report: &mut Report, flags: &mut [Flag], retimed: &Retimed) {
    let retimes_of = |k: &CaseKey| retimed.iter().find(|(c, _)| c == k).map(|(_, s)| s);
    for flag in flags.iter_mut() {
        let k = (
            flag.backend.clone(),
            flag.algo.clone(),
            flag.elem.clone(),
            flag.n,
        );
        let Some(mine) = retimes_of(&k) else { continue };
        let held = (0..mine.len())
            .filter(|&t| {
                let stats = |c: &CaseKey| {
                    retimes_of(c)
                        .and_then(|s| s.get(t).copied())
                        .or_else(|| report.records.iter().find(|r| key(r) == *c).map(|r| r.gpu))
                };
                holds(&flag.rule, &k, &stats) == Some(true)
            })
            .count();
        flag.retimes = mine.iter().map(|s| s.median).collect();
        flag.verdict = if held * 2 > mine.len() {
            Verdict::Reproducible
        } else {
            Verdict::Transient
        };
        if flag.verdict == Verdict::Transient {
            let mut sorted = mine.clone();
            sorted.sort_by(|a, b| a.median.total_cmp(&b.median));
            if let Some(r) = report.records.iter_mut().find(|r| key(r) == k) {
                let middle = sorted[sorted.len() / 2];
                r.gbs = r.bytes as f64 / middle.median / 1e9;
                if r.keys_per_s.is_some() {
                    r.keys_per_s = Some(r.n as f64 / middle.median);
                }
                r.gpu = middle;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Config;

    fn record(
        backend: &str,
        algo: &str,
        n: usize,
        median_us: f64,
        min_us: f64,
        max_us: f64,
    ) -> Record {
        let gpu = Stats {
            median: median_us * 1e-6,
            min: min_us * 1e-6,
            max: max_us * 1e-6,
        };
        crate::bench::test_record(backend, algo, n, gpu)
    }

    fn report(records: Vec<Record>) -> Report {
        Report {
            records,
            ..Report::empty(Config::quick(1), Vec::new())
        }
    }

    /// The H100 run of build c97bc5d: the CUDA exclusive `i32` scan at 2^20 took 174 µs
    /// (median of 11, fastest 136) against its inclusive twin's 14 µs and 21.8 µs at 2^21.
    fn todays_cliff() -> Report {
        report(vec![
            record("cuda", "scan_inclusive", 1 << 20, 14.0, 13.6, 15.1),
            record("cuda", "scan_exclusive", 1 << 20, 174.0, 136.0, 231.0),
            record("cuda", "scan_inclusive", 1 << 21, 21.5, 21.0, 22.4),
            record("cuda", "scan_exclusive", 1 << 21, 21.8, 21.2, 22.9),
            record("cub", "scan_exclusive", 1 << 20, 12.0, 11.8, 12.4),
        ])
    }

    #[test]
    fn todays_2_20_scan_is_flagged_by_the_doubling_and_twin_rules() {
        let f = flags(&todays_cliff());
        let at = |rule: &Rule| {
            f.iter().any(|x| {
                x.backend == "cuda"
                    && x.algo == "scan_exclusive"
                    && x.n == 1 << 20
                    && x.rule == *rule
            })
        };
        assert!(at(&Rule::Doubling { other_n: 1 << 21 }), "{f:?}");
        assert!(
            at(&Rule::Twins {
                twin: "scan_inclusive".into()
            }),
            "{f:?}"
        );
        // Nothing else breaks a rule: the inclusive scan, 2^21 and CUB are in line.
        assert_eq!(f.len(), 2, "{f:?}");
    }

    #[test]
    fn a_spread_above_two_is_flagged() {
        let r = report(vec![record("vulkan", "copy", 1 << 10, 6.7, 6.5, 14.0)]);
        let f = flags(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].rule, Rule::Spread);
    }

    #[test]
    fn retimes_tell_a_transient_stall_from_a_reproducible_cliff() {
        let stats = |m: f64| Stats {
            median: m * 1e-6,
            min: m * 1e-6,
            max: m * 1e-6,
        };
        let k = |algo: &str, n: usize| ("cuda".to_string(), algo.to_string(), "i32".to_string(), n);
        // Transient: re-timed near the twin and below the 2^21 case.
        let mut r = todays_cliff();
        let mut f = flags(&r);
        let retimed: Retimed = vec![
            (
                k("scan_exclusive", 1 << 20),
                vec![stats(13.9), stats(14.1), stats(13.8)],
            ),
            (
                k("scan_inclusive", 1 << 20),
                vec![stats(14.0), stats(13.9), stats(14.0)],
            ),
            (
                k("scan_exclusive", 1 << 21),
                vec![stats(21.7), stats(21.9), stats(21.8)],
            ),
        ];
        judge(&mut r, &mut f, &retimed);
        assert!(f.iter().all(|x| x.verdict == Verdict::Transient), "{f:?}");
        assert_eq!(f[0].retimes.len(), RETIMES);
        let fixed = r
            .records
            .iter()
            .find(|x| x.algo == "scan_exclusive" && x.n == 1 << 20 && x.backend == "cuda")
            .unwrap();
        assert!((fixed.gpu.median - 13.9e-6).abs() < 1e-9);
        // Reproducible: the re-timings keep it slow.
        let mut r = todays_cliff();
        let mut f = flags(&r);
        let retimed: Retimed = vec![
            (
                k("scan_exclusive", 1 << 20),
                vec![stats(170.0), stats(14.0), stats(168.0)],
            ),
            (
                k("scan_inclusive", 1 << 20),
                vec![stats(14.0), stats(13.9), stats(14.0)],
            ),
            (
                k("scan_exclusive", 1 << 21),
                vec![stats(21.7), stats(21.9), stats(21.8)],
            ),
        ];
        judge(&mut r, &mut f, &retimed);
        assert!(
            f.iter().all(|x| x.verdict == Verdict::Reproducible),
            "{f:?}"
        );
    }
}
