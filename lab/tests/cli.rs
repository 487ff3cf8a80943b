//! The `xwarp` binary: `bench --quick` on the default Vulkan device prints its tables, reports
//! every missing backend and CUB with a reason, checks every case, and writes JSON and plots.

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
    // CUB's absence always comes with its reason; CUDA's where this machine has none.
    assert!(stdout.contains("cub: unavailable: "), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = report["records"].as_array().unwrap();
    // 3 sizes x (copy, read, reduce_sum, scan_exclusive, 2 compactions, 2 sorts) x (i32, u32,
    // f32), plus the f32 stencil at 3 sizes.
    assert_eq!(records.len(), 3 * 8 * 3 + 3, "{report}");
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
