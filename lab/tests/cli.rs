//! The `xwarp` binary: `bench --quick` on the default Vulkan device prints its tables, reports
//! every missing backend and CUB with a reason, checks every case, and writes JSON and plots;
//! `validate` sums up per family (every case with `--verbose`); `info` tabulates the devices.

use std::process::Command;

fn xwarp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xwarp"))
        .args(args)
        .env("XWARP_BACKEND", "")
        .output()
        .expect("the xwarp binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The cells of each row of the tables in `text` (the lines between `│` borders).
fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('│'))
        .map(|l| {
            l.trim_matches('│')
                .split('┆')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// `N passed, N failed` of the last line of `stdout`.
fn closing_counts(stdout: &str) -> (usize, usize) {
    let last = stdout.lines().last().unwrap_or_default();
    let counts: Vec<usize> = last
        .strip_suffix(" failed")
        .and_then(|l| l.split_once(" passed, "))
        .map(|(p, f)| vec![p.parse().unwrap(), f.parse().unwrap()])
        .unwrap_or_else(|| panic!("the last line is not `N passed, N failed`: {stdout}"));
    (counts[0], counts[1])
}

#[test]
fn validate_sums_up_per_family() {
    let (ok, stdout, stderr) = xwarp(&[
        "--backend",
        "vulkan",
        "validate",
        "--quick",
        "--seed",
        "7",
        "--family",
        "stencil",
        "--family",
        "shfl",
    ]);
    assert!(ok, "validate failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("\nseed 7\n"), "{stdout}");
    // No line per case without --verbose.
    assert!(
        !stdout
            .lines()
            .any(|l| l.starts_with("ok ") || l.starts_with("FAIL")),
        "{stdout}"
    );
    let rows = table_rows(&stdout);
    assert_eq!(
        rows[0],
        [
            "family",
            "cases",
            "passed",
            "failed",
            "devices compared",
            "time"
        ],
        "{stdout}"
    );
    // The families in the order they run, whatever the order asked for, then their totals.
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["shfl", "stencil", "all"], "{stdout}");
    let mut sum = 0;
    for r in &rows[1..3] {
        let cases: usize = r[1].parse().unwrap();
        assert!(cases > 0, "{stdout}");
        assert_eq!(r[2], r[1], "every case passed: {stdout}");
        assert_eq!(r[3], "0", "{stdout}");
        assert_eq!(r[4], "vulkan vs cpu", "{stdout}");
        assert!(r[5].ends_with(" s"), "{stdout}");
        sum += cases;
    }
    assert_eq!(rows[3][1], sum.to_string(), "{stdout}");
    assert_eq!(closing_counts(&stdout), (sum, 0));
    // stderr is not a terminal here: a progress line per family instead of the bar.
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("validate: "))
        .collect();
    assert_eq!(progress.len(), 2, "{stderr}");
    assert!(
        progress[0].starts_with(&format!(
            "validate: 1/2 shfl: {} cases, 0 failed, ",
            rows[1][1]
        )),
        "{stderr}"
    );
    assert!(
        progress[1].starts_with("validate: 2/2 stencil: ")
            && progress[1].ends_with(&format!("({sum} cases so far)")),
        "{stderr}"
    );
}

#[test]
fn validate_verbose_prints_every_case() {
    let (ok, stdout, stderr) = xwarp(&[
        "--backend",
        "vulkan",
        "validate",
        "--quick",
        "--family",
        "stencil",
        "--verbose",
    ]);
    assert!(ok, "validate failed:\n{stdout}\n{stderr}");
    let cases: Vec<&str> = stdout.lines().filter(|l| l.starts_with("ok   ")).collect();
    let (passed, failed) = closing_counts(&stdout);
    assert_eq!((cases.len(), failed), (passed, 0), "{stdout}");
    assert!(
        cases
            .iter()
            .all(|c| c.contains("stencil") && c.ends_with(": vulkan=cpu")),
        "{stdout}"
    );
    // The summary follows the cases, with a single family and so no totals row.
    let rows = table_rows(&stdout);
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(
        rows[1][..4],
        ["stencil", &passed.to_string(), &passed.to_string(), "0"]
    );
}

#[test]
fn info_tabulates_each_device() {
    let (ok, stdout, stderr) = xwarp(&["info"]);
    assert!(ok, "info failed:\n{stdout}\n{stderr}");
    let rows = table_rows(&stdout);
    assert_eq!(rows[0][0], "device", "{stdout}");
    assert!(rows[0][1..].iter().any(|d| d == "vulkan:0"), "{stdout}");
    let facts: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        facts,
        [
            "name",
            "vendor, type",
            "driver",
            "subgroup size",
            "subgroup ops",
            "max binding",
            "shared memory",
            "compute units",
            "workgroup coherence",
            "opened",
            "self-test",
            "float controls",
            "subnormals f32",
            "subnormals f64",
        ],
        "{stdout}"
    );
    let column = rows[0].iter().position(|d| d == "vulkan:0").unwrap();
    let fact = |name: &str| &rows[1..].iter().find(|r| r[0] == name).unwrap()[column];
    assert_eq!(fact("opened"), "yes", "{stdout}");
    assert!(
        fact("self-test").starts_with("passed (subgroups of "),
        "{stdout}"
    );
    assert!(fact("max binding").ends_with(" bytes"), "{stdout}");
    // A number where the driver reports one, else "unknown" (llvmpipe reports none).
    let units = fact("compute units");
    assert!(
        units == "unknown" || units.parse::<u32>().is_ok_and(|u| u > 0),
        "{stdout}"
    );
    // Each backend is counted or says why it is unavailable, and the choice is named.
    for kind in ["vulkan", "cuda"] {
        assert!(
            stdout.contains(&format!("\n{kind}: ")) || stdout.starts_with(&format!("{kind}: ")),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("Auto selects: [vulkan:0]") || stdout.contains("Auto selects: [cuda:0]"),
        "{stdout}"
    );
}

#[test]
fn bench_quick_prints_tables_and_reasons() {
    let dir = std::env::temp_dir().join(format!("xwarp-cli-{}", std::process::id()));
    let json = dir.join("bench.json");
    let svg = dir.join("plots");
    std::fs::create_dir_all(&dir).unwrap();
    let (ok, stdout, stderr) = xwarp(&[
        "--backend",
        "vulkan",
        "bench",
        "--quick",
        "--algo",
        "roofline,reduce_sum,scan_exclusive,compact,stencil_shuffle,sort,ladder,chain",
        "--sizes",
        "1,33,2^12+1",
        "--ladder-n",
        "2^12+3",
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(ok, "bench failed:\n{stdout}\n{stderr}");
    for want in [
        "reduce_sum i32",
        "scan_exclusive f32",
        "compact_unordered i32",
        "stencil_shuffle f32",
        "sort_pairs u32",
        "ladder: block sums of 4099 random i32",
        "reduceShfl",
        "subgroup-op throughput",
        "0 failed the check",
    ] {
        assert!(stdout.contains(want), "missing `{want}` in:\n{stdout}");
    }
    // Under its title, each table has a row per size, the figures of every backend measured.
    let after = stdout.split("\nreduce_sum i32\n").nth(1).unwrap();
    let table = after.split("\n\n").next().unwrap();
    let rows = table_rows(table);
    assert_eq!(
        rows[0][..6],
        ["n", "vulkan µs", "GB/s", "roof", "host µs", "×CUB"],
        "{table}"
    );
    let sizes: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(sizes, ["2^0", "33", "4097"], "{table}");
    for r in &rows[1..] {
        assert_eq!(r.len(), rows[0].len(), "{table}");
        let us: f64 = r[1].parse().unwrap();
        let gbs: f64 = r[2].parse().unwrap();
        // A few bytes in tens of µs on a CPU device round to 0.00 GB/s.
        assert!(us > 0.0 && gbs >= 0.0 && r[3].ends_with('%'), "{table}");
    }
    // CUB's line names its version where nvcc built it, else the reason it is absent.
    let cub = stdout
        .lines()
        .find(|l| l.starts_with("cub: "))
        .unwrap_or_else(|| panic!("no `cub:` line in:\n{stdout}"));
    assert!(
        cub.starts_with("cub: unavailable: ") || cub.starts_with("cub: CUB "),
        "{cub}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (cub_records, records): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = report
        ["records"]
        .as_array()
        .unwrap()
        .iter()
        .partition(|r| r["backend"] == "cub");
    // 3 sizes x (copy, read, reduce_sum, scan_exclusive, 2 compactions, 2 sorts) x (i32, u32,
    // f32), plus the f32 stencil at 3 sizes.
    assert_eq!(records.len(), 3 * 8 * 3 + 3, "{report}");
    // Where CUB ran: 3 sizes x (reduce_sum, scan_exclusive, select_if, 2 sorts) x 3 types, each
    // timed; else none.
    let cub_ran = report["cub"]["available"] == true;
    assert_eq!(
        cub_records.len(),
        if cub_ran { 3 * 5 * 3 } else { 0 },
        "{report}"
    );
    for r in &cub_records {
        assert!(r["gpu"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    for r in records {
        let g = &r["gpu"];
        let (min, med, max) = (
            g["min"].as_f64().unwrap(),
            g["median"].as_f64().unwrap(),
            g["max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= max, "{r}");
        assert!(r["host"]["median"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["gbs"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["roof_fraction"].as_f64().unwrap() > 0.0, "{r}");
        let sort = r["algo"].as_str().unwrap().starts_with("sort_");
        assert_eq!(
            r["keys_per_s"].as_f64().is_some_and(|k| k > 0.0),
            sort,
            "{r}"
        );
    }
    assert_eq!(report["ladder"].as_array().unwrap().len(), 11);
    assert_eq!(report["chains"].as_array().unwrap().len(), 5);
    let plots = std::fs::read_dir(&svg).unwrap().count();
    assert_eq!(plots, 8 * 3 + 1, "one plot per algorithm and type");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_refuses_bad_options_with_the_parameter_named() {
    for (args, name) in [
        (&["bench", "--sizes", "0"][..], "`sizes`"),
        (&["bench", "--sizes", "2^9..2^3"][..], "`sizes`"),
        (&["bench", "--types", "i16"][..], "`types`"),
        (&["bench", "--algo", "mergesort"][..], "`algo`"),
        (&["bench", "--reps", "0"][..], "`reps`"),
    ] {
        let (ok, stdout, stderr) = xwarp(args);
        assert!(!ok, "{args:?} succeeded:\n{stdout}");
        assert!(stderr.contains(name), "{args:?}: {stderr}");
    }
}

#[test]
fn bench_writes_kernel_stats() {
    let dir = std::env::temp_dir().join(format!("xwarp-cli-stats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kernel-stats.txt");
    let (ok, stdout, stderr) = xwarp(&[
        "bench",
        "--quick",
        "--algo",
        "reduce_sum",
        "--sizes",
        "2^10",
        "--kernel-stats",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "bench failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("kernel stats: "), "{stdout}");
    let text = std::fs::read_to_string(&file).expect("--kernel-stats wrote its file");
    assert!(text.contains("reduce"), "{text}");
    // A section per device; each names the reduce kernel with its statistics, or says why it
    // has none.
    let sections: Vec<&str> = text.split("\n== ").skip(1).collect();
    assert!(!sections.is_empty(), "{text}");
    for section in sections {
        assert!(
            section.contains("\nreduce i32 block=") || section.contains("\nnone: "),
            "{section}"
        );
    }
    println!("{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn kernel_stats_need_a_measuring_run() {
    let (ok, stdout, stderr) = xwarp(&["bench", "--load", "x.json", "--kernel-stats", "y.txt"]);
    assert!(!ok, "{stdout}");
    assert!(stderr.contains("--kernel-stats"), "{stderr}");
}

#[test]
fn bench_gpus_times_the_group_beside_one_device() {
    let dir = std::env::temp_dir().join(format!("xwarp-group-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("group.json");
    let (ok, stdout, stderr) = xwarp(&[
        "--backend",
        "vulkan",
        "bench",
        "--gpus",
        "3",
        "--quick",
        "--sizes",
        "2^12",
        "--algo",
        "reduce,scan_exclusive,sort_pairs",
        "--types",
        "f32",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "bench --gpus failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("group: 3 ranks, exchange in-process"),
        "{stdout}"
    );
    assert!(stdout.contains("every rank runs on one device"), "{stdout}");
    let rows = table_rows(&stdout);
    for algo in ["reduce_sum", "scan_exclusive", "sort_pairs"] {
        let row = rows
            .iter()
            .find(|r| r[0] == algo)
            .unwrap_or_else(|| panic!("no row {algo}:\n{stdout}"));
        assert_eq!(row[1..4], ["f32", "4096", "12288"], "{row:?}");
        let scaling: f64 = row[8].parse().unwrap();
        assert!(scaling > 0.0, "{row:?}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["ranks"], 3);
    assert_eq!(report["records"].as_array().unwrap().len(), 3);
    assert!(report["failures"].as_array().unwrap().is_empty());
    // Each case's steps: the ranks' start first, the call's total last, every time positive.
    assert!(stdout.contains("steps (one more call"), "{stdout}");
    for record in report["records"].as_array().unwrap() {
        let steps = record["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s[0].as_str().unwrap()).collect();
        assert_eq!(names.first(), Some(&"start"), "{record}");
        assert_eq!(names.last(), Some(&"total"), "{record}");
        assert!(names.len() >= 4, "{record}");
        assert!(
            steps.iter().all(|s| s[1].as_f64().unwrap() > 0.0),
            "{record}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_gpus_refuses_bad_options_with_the_parameter_named() {
    for (args, name) in [
        (&["bench", "--gpus", "0"][..], "`gpus`"),
        (
            &["bench", "--gpus", "2", "--exchange", "mpi"][..],
            "`exchange`",
        ),
        (&["bench", "--gpus", "2", "--algo", "compact"][..], "`algo`"),
        (&["bench", "--gpus", "2", "--reps", "0"][..], "`reps`"),
    ] {
        let (ok, stdout, stderr) = xwarp(args);
        assert!(!ok, "{args:?} succeeded:\n{stdout}");
        assert!(stderr.contains(name), "{args:?}: {stderr}");
    }
}
