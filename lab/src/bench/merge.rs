//! Reports of several runs: merged into one (`xwarp bench --load A.json B.json`), and one
//! compared with another (`--compare OLD.json`).

use super::{Algo, Record, Report, Stats};
use std::io::Write;

/// One report of `reports` (at least one), in order: a case measured by several keeps the
/// last one's figures; devices, ladder rungs and chains likewise by backend and name; skipped
/// cases, failures and flags are all kept (once each); sizes, types and algorithms of the
/// configuration are the union; wall times and phases add up. Ratios are filled anew.
pub fn merge(mut reports: Vec<Report>) -> Option<Report> {
    if reports.is_empty() {
        return None;
    }
    let mut out = reports.remove(0);
    for r in reports {
        for rec in r.records {
            let same = |x: &Record| {
                x.backend == rec.backend && x.algo == rec.algo && x.elem == rec.elem && x.n == rec.n
            };
            out.records.retain(|x| !same(x));
            out.records.push(rec);
        }
        for d in r.devices {
            out.devices.retain(|x| x.backend != d.backend);
            out.devices.push(d);
        }
        for l in r.ladder {
            out.ladder
                .retain(|x| !(x.backend == l.backend && x.kernel == l.kernel));
            out.ladder.push(l);
        }
        for c in r.chains {
            out.chains
                .retain(|x| !(x.backend == c.backend && x.op == c.op));
            out.chains.push(c);
        }
        for (list, more) in [
            (&mut out.skipped, r.skipped),
            (&mut out.failures, r.failures),
            (&mut out.unavailable, r.unavailable),
        ] {
            for m in more {
                if !list.contains(&m) {
                    list.push(m);
                }
            }
        }
        for f in r.flags {
            if !out.flags.contains(&f) {
                out.flags.push(f);
            }
        }
        if !out.cub.available && r.cub.available {
            out.cub = r.cub;
        }
        for n in r.config.sizes {
            if !out.config.sizes.contains(&n) {
                out.config.sizes.push(n);
            }
        }
        out.config.sizes.sort_unstable();
        for t in r.config.types {
            if !out.config.types.contains(&t) {
                out.config.types.push(t);
            }
        }
        for a in r.config.algos {
            if !out.config.algos.contains(&a) {
                out.config.algos.push(a);
            }
        }
        out.config.ladder |= r.config.ladder;
        out.config.chain |= r.config.chain;
        out.config.launches |= r.config.launches;
        out.wall_s += r.wall_s;
        for (k, v) in r.phases {
            *out.phases.entry(k).or_default() += v;
        }
        if r.date > out.date {
            out.date = r.date;
        }
    }
    out.records.sort_by_key(|r| {
        (
            Algo::ALL.iter().position(|a| a.name() == r.algo),
            r.elem.clone(),
            r.n,
            r.backend.clone(),
        )
    });
    super::fill_ratios(&mut out);
    Some(out)
}

/// One case of two reports: its time in each and their ratio.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// Backend, algorithm, element type, size.
    pub backend: String,
    /// Algorithm.
    pub algo: String,
    /// Element type.
    pub elem: String,
    /// Size.
    pub n: usize,
    /// The old report's GPU time.
    pub old: Stats,
    /// The new report's GPU time.
    pub new: Stats,
    /// New median over old median: below 1, faster now.
    pub ratio: f64,
    /// Whether the change lies beyond both runs' own spread: each median outside the other
    /// run's range from fastest to slowest repetition.
    pub beyond_spread: bool,
}

/// Every case in both reports, in the new report's order, with `new / old`.
pub fn compare(new: &Report, old: &Report) -> Vec<Change> {
    new.records
        .iter()
        .filter_map(|n| {
            let o = old.records.iter().find(|o| {
                o.backend == n.backend && o.algo == n.algo && o.elem == n.elem && o.n == n.n
            })?;
            let outside = |a: &Stats, b: &Stats| a.median < b.min || a.median > b.max;
            Some(Change {
                backend: n.backend.clone(),
                algo: n.algo.clone(),
                elem: n.elem.clone(),
                n: n.n,
                old: o.gpu,
                new: n.gpu,
                ratio: n.gpu.median / o.gpu.median,
                beyond_spread: outside(&n.gpu, &o.gpu) && outside(&o.gpu, &n.gpu),
            })
        })
        .collect()
}

/// Prints [`compare`]'s table: every case, `*` marking changes beyond the spread, then a count
/// of faster and slower ones.
pub fn print_compare(changes: &[Change], out: &mut dyn Write) -> std::io::Result<()> {
    if changes.is_empty() {
        return writeln!(out, "compare: no case in both reports");
    }
    writeln!(
        out,
        "compare: new / old GPU time (median), * beyond both runs' spread"
    )?;
    let mut t = super::report::table(
        [
            "backend", "algo", "type", "n", "old µs", "new µs", "new/old", "",
        ]
        .map(String::from)
        .to_vec(),
        4,
    );
    for c in changes {
        t.add_row(vec![
            c.backend.clone(),
            c.algo.clone(),
            c.elem.clone(),
            super::report::size_name(c.n),
            format!("{:.2}", c.old.median * 1e6),
            format!("{:.2}", c.new.median * 1e6),
            format!("{:.3}", c.ratio),
            if c.beyond_spread { "*" } else { "" }.into(),
        ]);
    }
    writeln!(out, "{t}")?;
    let faster = changes
        .iter()
        .filter(|c| c.beyond_spread && c.ratio < 1.0)
        .count();
    let slower = changes
        .iter()
        .filter(|c| c.beyond_spread && c.ratio > 1.0)
        .count();
    writeln!(
        out,
        "compare: {} cases, {faster} faster and {slower} slower beyond the spread",
        changes.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(backend: &str, n: usize, median: f64, min: f64, max: f64) -> Record {
        super::super::test_record(backend, "copy", n, Stats { median, min, max })
    }

    fn report(records: Vec<Record>, wall_s: f64) -> Report {
        Report {
            records,
            skipped: vec!["x".into()],
            wall_s,
            ..Report::empty(super::super::Config::quick(1), Vec::new())
        }
    }

    #[test]
    fn merged_reports_keep_every_case_once_and_the_later_figures() {
        let a = report(
            vec![
                rec("cuda", 1024, 2.0, 1.0, 3.0),
                rec("cuda", 2048, 4.0, 3.0, 5.0),
            ],
            10.0,
        );
        let b = report(
            vec![
                rec("cuda", 2048, 5.0, 4.0, 6.0),
                rec("vulkan", 2048, 6.0, 5.0, 7.0),
            ],
            5.0,
        );
        let m = merge(vec![a, b]).unwrap();
        assert_eq!(m.records.len(), 3);
        let at_2048: Vec<f64> = m
            .records
            .iter()
            .filter(|r| r.backend == "cuda" && r.n == 2048)
            .map(|r| r.gpu.median)
            .collect();
        assert_eq!(at_2048, vec![5.0]);
        assert_eq!(m.wall_s, 15.0);
        assert_eq!(m.skipped, vec!["x".to_string()]);
        assert!(merge(Vec::new()).is_none());
    }

    #[test]
    fn changes_beyond_the_spread_are_marked() {
        let old = report(
            vec![
                rec("cuda", 1024, 10.0, 9.0, 11.0),
                rec("cuda", 2048, 10.0, 9.0, 11.0),
            ],
            1.0,
        );
        let new = report(
            vec![
                rec("cuda", 1024, 10.5, 9.5, 12.0),
                rec("cuda", 2048, 7.0, 6.5, 8.0),
            ],
            1.0,
        );
        let c = compare(&new, &old);
        assert_eq!(c.len(), 2);
        assert!(!c[0].beyond_spread);
        assert!(c[1].beyond_spread);
        assert!((c[1].ratio - 0.7).abs() < 1e-12);
        let mut text = Vec::new();
        print_compare(&c, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("1 faster and 0 slower"), "{text}");
    }
}
