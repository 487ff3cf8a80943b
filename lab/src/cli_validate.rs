//! `xwarp validate`'s output: progress while the families run, then a summary per family,
//! every failed case in full and the closing count.

use comfy_table::{presets, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::RefCell;
use std::io::IsTerminal;
use std::time::{Duration, Instant};
use xwarp::Device;
use xwarp_lab::validate::{self, CaseReport, Outcome};

/// What one family's cases came to.
struct FamilySummary {
    name: String,
    cases: usize,
    failed: usize,
    /// Labels of the devices its cases ran on, in order of first appearance.
    devices: Vec<String>,
    took: Duration,
}

/// The run so far.
struct State {
    summaries: Vec<FamilySummary>,
    /// When the current family started.
    started: Instant,
    /// Each failure as the text it is printed with at the end.
    failures: Vec<String>,
    /// Cases done in all.
    cases: usize,
}

impl State {
    /// Ends the current family, if any: its time, and progress.
    fn close_family(&mut self, progress: &Progress) {
        let index = self.summaries.len();
        if let Some(done) = self.summaries.last_mut() {
            done.took = self.started.elapsed();
            progress.family_done(done, index, self.cases);
        }
    }
}

/// Runs `families` on `devices` and prints what they came to: a table per family and every
/// failed case in full; `verbose` prints every case as it completes, too. Returns the tally.
pub(crate) fn run(
    devices: &[(String, &dyn Device)],
    families: &[&str],
    (quick, large): (bool, bool),
    seed: u64,
    verbose: bool,
) -> validate::Tally {
    let progress = Progress::new(families.len());
    // Both callbacks below update it, one at a time.
    let state = RefCell::new(State {
        summaries: Vec::new(),
        started: Instant::now(),
        failures: Vec::new(),
        cases: 0,
    });
    let tally = validate::run_families_observed(
        devices,
        families,
        quick,
        large,
        seed,
        &mut |name| {
            let mut st = state.borrow_mut();
            st.close_family(&progress);
            st.started = Instant::now();
            st.summaries.push(FamilySummary {
                name: name.to_string(),
                cases: 0,
                failed: 0,
                devices: Vec::new(),
                took: Duration::ZERO,
            });
            progress.family_started(name, st.cases);
        },
        &mut |r| {
            let mut st = state.borrow_mut();
            let st = &mut *st;
            st.cases += 1;
            // `run_families_observed` names a family before its first case.
            let family = st.summaries.last_mut().expect("a family has started");
            family.cases += 1;
            for (label, _) in &r.outcomes {
                if !family.devices.contains(label) {
                    family.devices.push(label.clone());
                }
            }
            if !r.passed() {
                family.failed += 1;
                st.failures.push(failure_text(&family.name, r));
            }
            if verbose {
                progress.bar.suspend(|| println!("{r}"));
            }
            progress.case_done(&family.name, st.cases, st.failures.len());
        },
    );
    let mut st = state.into_inner();
    st.close_family(&progress);
    progress.bar.finish_and_clear();
    println!("{}", summary_table(&st.summaries));
    for f in &st.failures {
        println!("{f}");
    }
    tally
}

/// The progress bar on stderr where it is a terminal; elsewhere (CI logs, files) a line on
/// stderr per family, so that a log shows how far a run got without a line per case.
struct Progress {
    bar: ProgressBar,
    lines: bool,
    families: usize,
}

impl Progress {
    fn new(families: usize) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            ProgressBar::new(families as u64)
        } else {
            ProgressBar::hidden()
        };
        // Which cases run is known only as they run, so the bar counts families and the
        // message counts cases.
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:20}] {pos}/{len} families · {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        if tty {
            // Redraws the spinner and the elapsed time while one large case runs for long.
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress {
            bar,
            lines: !tty,
            families,
        }
    }

    fn family_started(&self, name: &str, cases: usize) {
        self.bar.set_message(format!("{name} · {cases} cases done"));
    }

    fn case_done(&self, family: &str, cases: usize, failed: usize) {
        let failed = if failed > 0 {
            format!(", {failed} FAILED")
        } else {
            String::new()
        };
        self.bar
            .set_message(format!("{family} · {cases} cases done{failed}"));
    }

    fn family_done(&self, s: &FamilySummary, index: usize, cases: usize) {
        self.bar.inc(1);
        if self.lines {
            eprintln!(
                "validate: {index}/{} {}: {} cases, {} failed, {} ({cases} cases so far)",
                self.families,
                s.name,
                s.cases,
                s.failed,
                seconds(s.took)
            );
        }
    }
}

/// One row per family and a row of totals.
fn summary_table(summaries: &[FamilySummary]) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::UTF8_FULL_CONDENSED).set_header([
        "family",
        "cases",
        "passed",
        "failed",
        "devices compared",
        "time",
    ]);
    let row = |name: &str, cases: usize, failed: usize, devices: String, took: Duration| {
        [
            name.to_string(),
            cases.to_string(),
            (cases - failed).to_string(),
            failed.to_string(),
            devices,
            seconds(took),
        ]
    };
    let mut all_devices: Vec<String> = Vec::new();
    for s in summaries {
        for d in &s.devices {
            if !all_devices.contains(d) {
                all_devices.push(d.clone());
            }
        }
        table.add_row(row(
            &s.name,
            s.cases,
            s.failed,
            devices_compared(&s.devices),
            s.took,
        ));
    }
    if summaries.len() > 1 {
        table.add_row(row(
            "all",
            summaries.iter().map(|s| s.cases).sum(),
            summaries.iter().map(|s| s.failed).sum(),
            devices_compared(&all_devices),
            summaries.iter().map(|s| s.took).sum(),
        ));
    }
    for i in [1, 2, 3, 5] {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// Two decimals below ten seconds, so that the shortest families do not read as no time.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Every device is compared with the CPU reference, and with two or more, with each other.
fn devices_compared(devices: &[String]) -> String {
    match devices.len() {
        0 => "-".to_string(),
        1 => format!("{} vs cpu", devices[0]),
        _ => format!("{} vs cpu and each other", devices.join(", ")),
    }
}

/// A failed case in full: its name (operation, type, length, parameters), then each device's
/// outcome, then whether the devices agreed.
fn failure_text(family: &str, r: &CaseReport) -> String {
    let mut s = format!("FAIL [{family}] {}", r.case);
    for (label, o) in &r.outcomes {
        let line = match o {
            Outcome::Match => "matches the CPU reference".to_string(),
            Outcome::Mismatch(m) => format!(
                "differs from the CPU reference: first wrong index {}: expected {}, got {} \
                 ({} wrong)",
                m.index, m.expected, m.actual, m.wrong
            ),
            Outcome::Error(e) => format!("error: {e}"),
        };
        s.push_str(&format!("\n    {label}: {line}"));
    }
    match r.devices_agree {
        Some(true) => s.push_str("\n    the devices agree bit for bit"),
        Some(false) => s.push_str("\n    the devices DIFFER from each other"),
        None => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use xwarp_lab::validate::Mismatch;

    #[test]
    fn a_failure_names_the_case_each_device_and_the_first_wrong_element() {
        let r = CaseReport {
            case: "reduce sum i32 n=1000".into(),
            outcomes: vec![
                (
                    "vulkan".into(),
                    Outcome::Mismatch(Mismatch {
                        index: 3,
                        expected: "7".into(),
                        actual: "8".into(),
                        wrong: 2,
                    }),
                ),
                ("cuda".into(), Outcome::Match),
            ],
            devices_agree: Some(false),
        };
        assert_eq!(
            failure_text("reduce", &r),
            "FAIL [reduce] reduce sum i32 n=1000\n    \
             vulkan: differs from the CPU reference: first wrong index 3: expected 7, got 8 \
             (2 wrong)\n    \
             cuda: matches the CPU reference\n    \
             the devices DIFFER from each other"
        );
    }

    #[test]
    fn the_summary_has_a_row_per_family_and_totals() {
        let family = |name: &str, cases, failed, devices: &[&str]| FamilySummary {
            name: name.into(),
            cases,
            failed,
            devices: devices.iter().map(|d| d.to_string()).collect(),
            took: Duration::from_millis(1500),
        };
        let table = summary_table(&[
            family("shfl", 300, 0, &["vulkan"]),
            family("reduce", 20, 2, &["vulkan", "cuda"]),
        ])
        .to_string();
        let rows: Vec<Vec<&str>> = table
            .lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| {
                l.trim_matches('│')
                    .split('┆')
                    .map(str::trim)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            rows,
            [
                vec![
                    "family",
                    "cases",
                    "passed",
                    "failed",
                    "devices compared",
                    "time"
                ],
                vec!["shfl", "300", "300", "0", "vulkan vs cpu", "1.50 s"],
                vec![
                    "reduce",
                    "20",
                    "18",
                    "2",
                    "vulkan, cuda vs cpu and each other",
                    "1.50 s"
                ],
                vec![
                    "all",
                    "320",
                    "318",
                    "2",
                    "vulkan, cuda vs cpu and each other",
                    "3.00 s"
                ],
            ],
            "{table}"
        );
    }
}
