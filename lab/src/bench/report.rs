//! The benchmark's outputs for people (tables, a Markdown summary) and machines (JSON).

use super::{Algo, Config, Record, Report};
use comfy_table::{presets, CellAlignment, Table};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use xwarp::device::{BackendKind, Device};
use xwarp::element::ElemKind;

pub(super) fn kinds<S: Serializer>(kinds: &[ElemKind], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(kinds.iter().map(|k| k.name()))
}

pub(super) fn algos<S: Serializer>(algos: &[Algo], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(algos.iter().map(|a| a.name()))
}

pub(super) fn parse_kinds<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ElemKind>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|name| {
            ElemKind::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| D::Error::custom(format!("unknown element type `{name}`")))
        })
        .collect()
}

pub(super) fn parse_algos<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Algo>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|name| {
            Algo::ALL
                .into_iter()
                .find(|a| a.name() == *name)
                .ok_or_else(|| D::Error::custom(format!("unknown algorithm `{name}`")))
        })
        .collect()
}

/// Reads a report [`write_json`] wrote.
pub fn read_json(path: &Path) -> std::io::Result<Report> {
    let file = std::fs::File::open(path)?;
    serde_json::from_reader(std::io::BufReader::new(file)).map_err(std::io::Error::other)
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub(super) fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `2^k` for powers of two, the number otherwise.
pub(super) fn size_name(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

fn us(seconds: f64) -> String {
    let us = seconds * 1e6;
    if us < 100.0 {
        format!("{us:.2}")
    } else if us < 10_000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

/// GB/s with three significant digits (CPU devices run at fractions of one).
fn gbs(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

/// The backends of the report's records, in device order, then `cub`.
fn backends(report: &Report) -> Vec<String> {
    let mut list: Vec<String> = report.devices.iter().map(|d| d.backend.clone()).collect();
    if report.records.iter().any(|r| r.backend == "cub") {
        list.push("cub".into());
    }
    list
}

fn find<'a>(
    report: &'a Report,
    backend: &str,
    algo: &str,
    elem: &str,
    n: usize,
) -> Option<&'a Record> {
    report
        .records
        .iter()
        .find(|r| r.backend == backend && r.algo == algo && r.elem == elem && r.n == n)
}

/// Each (algorithm, type) of the main table that has records, in table order.
fn groups(report: &Report) -> Vec<(Algo, String)> {
    let mut out = Vec::new();
    for algo in Algo::ALL {
        for kind in &report.config.types {
            let elem = kind.name().to_string();
            if report
                .records
                .iter()
                .any(|r| r.backend != "cub" && r.algo == algo.name() && r.elem == elem)
            {
                out.push((algo, elem));
            }
        }
    }
    out
}

/// A terminal table with `header`: the first `left` columns (names) aligned left, the
/// figures right.
pub(super) fn table(header: Vec<String>, left: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_header(header);
    for c in t.column_iter_mut().skip(left) {
        c.set_cell_alignment(CellAlignment::Right);
    }
    t
}

/// The main table: per algorithm and type, a row per size with each backend's median GPU
/// time, GB/s, fraction of its roofline, host wall time per call and ratio to CUB, then
/// CUB's own figures and the Vulkan/CUDA time ratio.
pub fn print_table(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let backends = backends(report);
    let ours: Vec<&String> = backends.iter().filter(|b| *b != "cub").collect();
    let both = ours.iter().any(|b| *b == "vulkan") && ours.iter().any(|b| *b == "cuda");
    for (algo, elem) in groups(report) {
        let cub = algo
            .cub_name()
            .filter(|_| backends.iter().any(|b| b == "cub"));
        // A sort's rate is in keys per second; every other algorithm's in GB/s.
        let rate_head = if algo.is_sort() { "Gkeys/s" } else { "GB/s" };
        let rate = |r: &Record, bytes: u64| {
            if algo.is_sort() {
                format!("{:.2}", r.n as f64 / r.gpu.median / 1e9)
            } else {
                gbs(bytes as f64 / r.gpu.median / 1e9)
            }
        };
        let mut head = vec!["n".to_string()];
        for b in &ours {
            head.extend([
                format!("{b} µs"),
                rate_head.into(),
                "roof".into(),
                "host µs".into(),
                "×CUB".into(),
            ]);
        }
        if cub.is_some() {
            head.extend(["CUB µs".into(), rate_head.into(), "host µs".into()]);
        }
        if both {
            head.push("vk/cuda".into());
        }
        let mut t = table(head, 0);
        for &n in &report.config.sizes {
            let mut row = vec![size_name(n)];
            let mut any = false;
            for b in &ours {
                match find(report, b, &algo.name(), &elem, n) {
                    Some(r) => {
                        any = true;
                        row.extend([
                            us(r.gpu.median),
                            rate(r, r.bytes),
                            opt(r.roof_fraction, |f| format!("{:.0}%", f * 100.0)),
                            us(r.host.median),
                            opt(r.vs_cub, |v| format!("{v:.2}")),
                        ]);
                    }
                    None => row.extend(["-"; 5].map(String::from)),
                }
            }
            if let Some(c) = cub {
                match find(report, "cub", c, &elem, n) {
                    Some(r) => {
                        // CUB moves the same bytes as ours.
                        let bytes = ours
                            .iter()
                            .find_map(|b| find(report, b, &algo.name(), &elem, n))
                            .map_or(r.bytes, |o| o.bytes);
                        row.extend([us(r.gpu.median), rate(r, bytes), us(r.host.median)]);
                    }
                    None => row.extend(["-"; 3].map(String::from)),
                }
            }
            if both {
                let vk = find(report, "vulkan", &algo.name(), &elem, n);
                let cu = find(report, "cuda", &algo.name(), &elem, n);
                let ratio = vk.zip(cu).map(|(v, c)| v.gpu.median / c.gpu.median);
                row.push(opt(ratio, |r| format!("{r:.2}")));
            }
            if any {
                t.add_row(row);
            }
        }
        writeln!(out, "\n{algo} {elem}")?;
        writeln!(out, "{t}")?;
    }
    Ok(())
}

/// The small-problem rows: per algorithm, type and size that timed the forms, the host wall
/// per call of each backend (CUB last) synchronous, queued and replayed (CUB: CUDA Graph), then
/// CUDA's synchronous call over CUB's and Vulkan's over CUDA's. The header and the rows.
fn forms_rows(report: &Report) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let backends = backends(report);
    let mut head = vec!["algorithm".to_string(), "type".into(), "n".into()];
    for b in &backends {
        let replay = if b == "cub" { "graph" } else { "replay" };
        head.extend([
            format!("{b} sync"),
            format!("{b} queued"),
            format!("{b} {replay}"),
        ]);
    }
    head.extend(["cuda/CUB sync".into(), "vulkan/cuda sync".into()]);
    let mut rows = Vec::new();
    for (algo, elem) in groups(report) {
        for &n in &report.config.sizes {
            let ours = find(report, "cuda", &algo.name(), &elem, n)
                .or_else(|| find(report, "vulkan", &algo.name(), &elem, n));
            if ours.and_then(|r| r.forms).is_none() {
                continue;
            }
            let mut row = vec![algo.name(), elem.clone(), size_name(n)];
            let record = |b: &str| {
                let name = if b == "cub" {
                    algo.cub_name().unwrap_or("").to_string()
                } else {
                    algo.name()
                };
                find(report, b, &name, &elem, n)
            };
            for b in &backends {
                match record(b) {
                    Some(r) => row.extend([
                        us(r.host.median),
                        opt(r.forms.map(|f| f.queued.median), us),
                        opt(r.forms.map(|f| f.replay.median), us),
                    ]),
                    None => row.extend(["-"; 3].map(String::from)),
                }
            }
            let sync = |b: &str| record(b).map(|r| r.host.median);
            let ratio = |a: Option<f64>, b: Option<f64>| {
                opt(a.zip(b).map(|(a, b)| a / b), |r| format!("{r:.2}"))
            };
            row.push(ratio(sync("cuda"), sync("cub")));
            row.push(ratio(sync("vulkan"), sync("cuda")));
            rows.push(row);
        }
    }
    (!rows.is_empty()).then_some((head, rows))
}

/// The small-problem table: per algorithm, type and size that timed the forms, each backend's
/// (CUB last) host wall per call synchronous, queued and replayed (CUB: CUDA Graph), in
/// microseconds; nothing when no case timed the forms.
pub fn print_forms(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let Some((head, rows)) = forms_rows(report) else {
        return Ok(());
    };
    let mut t = table(head, 3);
    for row in rows {
        t.add_row(row);
    }
    writeln!(
        out,
        "
small problems: host µs per call (sync: one call and its result; queued: {} calls, one \
         submit and wait; replay: {} recorded calls replayed; CUB: the same, graph = CUDA Graph)",
        super::FORM_CALLS,
        super::FORM_CALLS
    )?;
    writeln!(out, "{t}")
}

/// The ladder table: one row per rung, one column triple (time, speedup over
/// `reduceNeighbored`, GB/s) per backend, then the shared-memory over shuffle reduce ratio.
pub fn print_ladder(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if report.ladder.is_empty() {
        return Ok(());
    }
    let mut labels: Vec<&str> = Vec::new();
    for r in &report.ladder {
        if !labels.contains(&r.backend.as_str()) {
            labels.push(&r.backend);
        }
    }
    let first = &report.ladder[0];
    writeln!(
        out,
        "\nladder: block sums of {} random i32, {} threads per block (GPU time, median)",
        size_name(first.n),
        first.block
    )?;
    let mut head = vec!["kernel".to_string()];
    for l in &labels {
        head.extend([format!("{l} µs"), "speedup".into(), "GB/s".into()]);
    }
    let mut t = table(head, 1);
    let mut kernels: Vec<&str> = Vec::new();
    for r in &report.ladder {
        if !kernels.contains(&r.kernel.as_str()) {
            kernels.push(&r.kernel);
        }
    }
    for k in &kernels {
        let mut row = vec![k.to_string()];
        for l in &labels {
            match report
                .ladder
                .iter()
                .find(|r| r.backend == *l && r.kernel == *k)
            {
                Some(r) => row.extend([us(r.gpu.median), format!("{:.2}x", r.speedup), gbs(r.gbs)]),
                None => row.extend(["-"; 3].map(String::from)),
            }
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")?;
    for l in &labels {
        let t = |k: &str| {
            report
                .ladder
                .iter()
                .find(|r| r.backend == *l && r.kernel == k)
                .map(|r| r.gpu.median)
        };
        if let (Some(smem), Some(shfl)) = (t("reduceSmem"), t("reduceShfl")) {
            writeln!(
                out,
                "{l}: reduceSmem time / reduceShfl time = {:.2} (above 1: the shuffle reduce is faster)",
                smem / shfl
            )?;
        }
    }
    Ok(())
}

/// The throughput table: operations per second of each dependent chain per backend, and the
/// Vulkan/CUDA ratio.
pub fn print_chains(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if report.chains.is_empty() {
        return Ok(());
    }
    let first = &report.chains[0];
    writeln!(
        out,
        "\nsubgroup-op throughput: {} threads x {} dependent ops (GPU time, median)",
        first.threads, first.iters
    )?;
    let mut labels: Vec<&str> = Vec::new();
    for r in &report.chains {
        if !labels.contains(&r.backend.as_str()) {
            labels.push(&r.backend);
        }
    }
    let mut head = vec!["op".to_string()];
    head.extend(labels.iter().map(|l| format!("{l} Gop/s")));
    let both = labels.contains(&"vulkan") && labels.contains(&"cuda");
    if both {
        head.push("vk/cuda".into());
    }
    let mut t = table(head, 1);
    let mut ops: Vec<&str> = Vec::new();
    for r in &report.chains {
        if !ops.contains(&r.op.as_str()) {
            ops.push(&r.op);
        }
    }
    for op in ops {
        let rate = |l: &str| {
            report
                .chains
                .iter()
                .find(|r| r.backend == l && r.op == op)
                .map(|r| r.ops_per_s)
        };
        let mut row = vec![op.to_string()];
        for l in &labels {
            row.push(opt(rate(l), |r| format!("{:.1}", r / 1e9)));
        }
        if both {
            let ratio = rate("vulkan").zip(rate("cuda")).map(|(v, c)| v / c);
            row.push(opt(ratio, |r| format!("{r:.2}")));
        }
        t.add_row(row);
    }
    writeln!(out, "{t}")
}

/// The cliff guard's flags ([`super::guard`]), one line each, reproducible ones first.
pub fn print_flags(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    if report.flags.is_empty() {
        return Ok(());
    }
    writeln!(out, "cliff guard: {} flags", report.flags.len())?;
    for line in flag_lines(report) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// The flags as lines: reproducible first, then not re-timed, then transient.
fn flag_lines(report: &Report) -> Vec<String> {
    use super::guard::{Rule, Verdict};
    let rank = |v: Verdict| match v {
        Verdict::Reproducible => 0,
        Verdict::NotRetimed => 1,
        Verdict::Transient => 2,
    };
    let mut flags: Vec<&super::guard::Flag> = report.flags.iter().collect();
    flags.sort_by_key(|f| rank(f.verdict));
    flags
        .iter()
        .map(|f| {
            let rule = match &f.rule {
                Rule::Doubling { .. } => "slower than at 2n",
                Rule::Twins { .. } => "scan twins differ",
                Rule::Spread => "repetitions spread over 2x",
            };
            let retimes = if f.retimes.is_empty() {
                String::new()
            } else {
                let t: Vec<String> = f.retimes.iter().map(|s| us(*s)).collect();
                format!("; re-timed {} µs", t.join(", "))
            };
            format!(
                "{} {} {} n={}: {rule}: {}{retimes}: {}",
                f.backend,
                f.algo,
                f.elem,
                size_name(f.n),
                f.detail,
                f.verdict
            )
        })
        .collect()
}

/// The launch breakdown of the cases that queue several commands, at the sizes of
/// `launch_sizes`: each command's median GPU time, then the whole call's and the copy kernel's
/// at the same size and backend (the bytes one pass over the input moves).
pub fn print_launches(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let rows = launch_rows(report);
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nwhere the time goes: each command's GPU time (µs, medians), the call, and the copy \
         kernel at the same n"
    )?;
    let mut t = table(
        ["backend", "algo", "type", "n", "commands", "call", "copy"]
            .map(String::from)
            .to_vec(),
        5,
    );
    for r in rows {
        t.add_row(r);
    }
    writeln!(out, "{t}")
}

/// The sizes the launch breakdown shows: 2^16, 2^20, 2^24 and the largest of the run.
fn launch_sizes(report: &Report) -> Vec<usize> {
    let mut sizes: Vec<usize> = report
        .config
        .sizes
        .iter()
        .copied()
        .filter(|&n| [1 << 16, 1 << 20, 1 << 24].contains(&n))
        .collect();
    if let Some(&max) = report.config.sizes.iter().max() {
        if !sizes.contains(&max) {
            sizes.push(max);
        }
    }
    sizes
}

fn launch_rows(report: &Report) -> Vec<Vec<String>> {
    let sizes = launch_sizes(report);
    let mut rows = Vec::new();
    for (algo, elem) in groups(report) {
        for &n in &sizes {
            for b in backends(report) {
                let Some(r) = find(report, &b, &algo.name(), &elem, n) else {
                    continue;
                };
                let Some(launches) = &r.launches else {
                    continue;
                };
                let commands: Vec<String> = launches
                    .iter()
                    .map(|l| format!("{} {}", l.name, us(l.gpu.median)))
                    .collect();
                let copy = find(report, &b, "copy", &elem, n).map(|c| us(c.gpu.median));
                rows.push(vec![
                    b.clone(),
                    algo.name(),
                    elem.clone(),
                    size_name(n),
                    commands.join(", "),
                    us(r.gpu.median),
                    copy.unwrap_or_else(|| "-".into()),
                ]);
            }
        }
    }
    rows
}

/// Writes the report as JSON.
pub fn write_json(report: &Report, path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    serde_json::to_writer_pretty(std::io::BufWriter::new(file), report)
        .map_err(std::io::Error::other)
}

/// A short Markdown summary: devices, then per algorithm (4-byte types) the figures at the
/// largest size, with the roofline fraction, the ratio to CUB and the Vulkan/CUDA ratio.
pub fn summary_markdown(report: &Report) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "Measured on {} (UTC), {:.0} s of wall time; {} cases failed their check.\n",
        report.date,
        report.wall_s,
        report.failures.len()
    )
    .ok();
    if report.flags.is_empty() {
        writeln!(s, "Cliff guard: no case flagged.\n").ok();
    } else {
        writeln!(
            s,
            "Cliff guard ({} flags; re-timed {} times each where the backend ran here):\n",
            report.flags.len(),
            super::guard::RETIMES
        )
        .ok();
        for line in flag_lines(report) {
            writeln!(s, "- {line}").ok();
        }
        writeln!(s).ok();
    }
    for d in &report.devices {
        writeln!(
            s,
            "- {}: {} ({}), subgroup size {}",
            d.backend, d.name, d.driver, d.subgroup_size
        )
        .ok();
    }
    match (&report.cub.available, &report.cub.version) {
        (true, Some(v)) => writeln!(
            s,
            "- CUB {v} (CUDA runtime {}) on {}",
            report.cub.cuda.as_deref().unwrap_or("?"),
            report.cub.device.as_deref().unwrap_or("?")
        ),
        _ => writeln!(
            s,
            "- CUB: not measured ({})",
            report.cub.reason.as_deref().unwrap_or("not asked for")
        ),
    }
    .ok();
    let Some(&n) = report.config.sizes.iter().max() else {
        return s;
    };
    let ours: Vec<String> = backends(report)
        .into_iter()
        .filter(|b| b != "cub")
        .collect();
    writeln!(s, "\nAt n = {}, GPU time medians:\n", size_name(n)).ok();
    let mut head = "| algorithm | type |".to_string();
    let mut rule = "|---|---|".to_string();
    for b in &ours {
        write!(head, " {b} GB/s | {b} roofline | {b} ×CUB |").ok();
        rule.push_str("---:|---:|---:|");
    }
    let both = ours.iter().any(|b| b == "vulkan") && ours.iter().any(|b| b == "cuda");
    if both {
        head.push_str(" Vulkan/CUDA time |");
        rule.push_str("---:|");
    }
    writeln!(s, "{head}\n{rule}").ok();
    for (algo, elem) in groups(report) {
        let mut line = format!("| {algo} | {elem} |");
        let mut any = false;
        for b in &ours {
            match find(report, b, &algo.name(), &elem, n) {
                Some(r) => {
                    any = true;
                    write!(
                        line,
                        " {} | {} | {} |",
                        gbs(r.gbs),
                        opt(r.roof_fraction, |f| format!("{:.0}%", f * 100.0)),
                        opt(r.vs_cub, |v| format!("{v:.2}"))
                    )
                }
                None => write!(line, " - | - | - |"),
            }
            .ok();
        }
        if both {
            let vk = find(report, "vulkan", &algo.name(), &elem, n);
            let cu = find(report, "cuda", &algo.name(), &elem, n);
            let ratio = vk.zip(cu).map(|(v, c)| v.gpu.median / c.gpu.median);
            write!(line, " {} |", opt(ratio, |r| format!("{r:.2}"))).ok();
        }
        if any {
            writeln!(s, "{line}").ok();
        }
    }
    sort_markdown(report, &ours, &mut s);
    let launches = launch_rows(report);
    if !launches.is_empty() {
        writeln!(
            s,
            "\nWhere the time goes: each command of a call (µs, medians of the GPU time from the \
             end of the command before), the whole call, and the copy kernel at the same size:\n"
        )
        .ok();
        writeln!(
            s,
            "| backend | algorithm | type | n | commands | call | copy |"
        )
        .ok();
        writeln!(s, "|---|---|---|---:|---|---:|---:|").ok();
        for row in launches {
            writeln!(s, "| {} |", row.join(" | ")).ok();
        }
    }
    if let Some((head, rows)) = forms_rows(report) {
        writeln!(
            s,
            "\nSmall problems, host wall per call in µs (medians): `sync` is one call and its \
             result on the host from an idle GPU; `queued` {0} calls, one submit and one wait, \
             then the result; `replay` {0} calls recorded once, then one replay and one wait, \
             then the result; CUB's `graph` is its {0} calls captured in a CUDA Graph.\n",
            super::FORM_CALLS
        )
        .ok();
        writeln!(s, "| {} |", head.join(" | ")).ok();
        let rule: Vec<&str> = head
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 3 { "---" } else { "---:" })
            .collect();
        writeln!(s, "|{}|", rule.join("|")).ok();
        for row in rows {
            writeln!(s, "| {} |", row.join(" | ")).ok();
        }
    }
    s
}

/// The summary's sort table: per sort, key type and size, each backend's keys per second and
/// its ratio to CUB, CUB's keys per second, and the Vulkan/CUDA time ratio.
fn sort_markdown(report: &Report, ours: &[String], s: &mut String) {
    let sorts: Vec<(Algo, String)> = groups(report)
        .into_iter()
        .filter(|(a, _)| a.is_sort())
        .collect();
    if sorts.is_empty() {
        return;
    }
    let gkeys = |r: &Record| format!("{:.2}", r.n as f64 / r.gpu.median / 1e9);
    writeln!(
        s,
        "
Sorts (ascending, every bit), G keys per second:
"
    )
    .ok();
    let mut head = "| sort | keys | n |".to_string();
    let mut rule = "|---|---|---:|".to_string();
    for b in ours {
        write!(head, " {b} | {b} ×CUB |").ok();
        rule.push_str("---:|---:|");
    }
    head.push_str(" CUB |");
    rule.push_str("---:|");
    let both = ours.iter().any(|b| b == "vulkan") && ours.iter().any(|b| b == "cuda");
    if both {
        head.push_str(" Vulkan/CUDA time |");
        rule.push_str("---:|");
    }
    writeln!(s, "{head}\n{rule}").ok();
    for (algo, elem) in sorts {
        for &n in &report.config.sizes {
            let mut line = format!("| {algo} | {elem} | {} |", size_name(n));
            let mut any = false;
            for b in ours {
                match find(report, b, &algo.name(), &elem, n) {
                    Some(r) => {
                        any = true;
                        write!(
                            line,
                            " {} | {} |",
                            gkeys(r),
                            opt(r.vs_cub, |v| format!("{v:.2}"))
                        )
                    }
                    None => write!(line, " - | - |"),
                }
                .ok();
            }
            let cub = algo
                .cub_name()
                .and_then(|c| find(report, "cub", c, &elem, n));
            write!(line, " {} |", cub.map_or("-".into(), gkeys)).ok();
            if both {
                let vk = find(report, "vulkan", &algo.name(), &elem, n);
                let cu = find(report, "cuda", &algo.name(), &elem, n);
                let ratio = vk.zip(cu).map(|(v, c)| v.gpu.median / c.gpu.median);
                write!(line, " {} |", opt(ratio, |r| format!("{r:.2}"))).ok();
            }
            if any {
                writeln!(s, "{line}").ok();
            }
        }
    }
}

/// The compiler's statistics of every kernel variant each of `devices` (label, device) has
/// compiled so far ([`Device::kernel_stats`]), as text: a line naming what `cfg` runs, then a
/// section per device, a heading per kernel variant, and each executable's statistics.
pub fn kernel_stats_text(cfg: &Config, devices: &[(String, &dyn Device)]) -> String {
    let mut s = String::new();
    let mut run: Vec<String> = cfg.algos.iter().map(|a| a.name()).collect();
    if cfg.ladder {
        run.push("ladder".into());
    }
    if cfg.chain {
        run.push("chain".into());
    }
    let types: Vec<&str> = cfg.types.iter().map(|k| k.name()).collect();
    let sizes: Vec<String> = cfg.sizes.iter().map(|n| n.to_string()).collect();
    writeln!(
        s,
        "Compiler statistics of every kernel variant each device compiled for xwarp bench \
         ({}; types {}; sizes {}), as its driver reports them.",
        run.join(", "),
        types.join(", "),
        sizes.join(", ")
    )
    .ok();
    for (label, dev) in devices {
        let info = dev.info();
        writeln!(s, "\n== {label}: {} ({}) ==", info.name, info.driver).ok();
        let stats = dev.kernel_stats();
        if stats.is_empty() {
            let why = match info.backend {
                BackendKind::Vulkan => {
                    "none: the device does not offer VK_KHR_pipeline_executable_properties \
                     with pipelineExecutableInfo"
                }
                BackendKind::Cuda => "none: no kernel was loaded",
            };
            writeln!(s, "{why}").ok();
            continue;
        }
        let mut kernel = None;
        for k in &stats {
            if kernel != Some(&k.kernel) {
                writeln!(s, "\n{}", k.kernel).ok();
                kernel = Some(&k.kernel);
            }
            let indent = if k.executable.is_empty() {
                "  "
            } else {
                writeln!(s, "  [{}]", k.executable).ok();
                "    "
            };
            let width = k.stats.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
            for (name, value) in &k.stats {
                writeln!(s, "{indent}{name:<width$}  {value}").ok();
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use xwarp::device::RawBuffer;
    use xwarp::device::{DeviceId, DeviceInfo, DeviceType, KernelStats, Launch, SubgroupFeatures};
    use xwarp::error::{Error, Result};

    /// A device that only has facts and canned statistics.
    struct Canned(DeviceInfo, Vec<KernelStats>);

    impl Device for Canned {
        fn info(&self) -> &DeviceInfo {
            &self.0
        }
        fn id(&self) -> DeviceId {
            DeviceId::fresh()
        }
        fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
            Err(Error::invalid("bytes", bytes, "nothing: a canned device"))
        }
        fn write(&self, _: &RawBuffer, _: u64, _: &[u8]) -> Result<()> {
            Ok(())
        }
        fn copy(&self, _: &RawBuffer, _: u64, _: &RawBuffer, _: u64, _: u64) -> Result<()> {
            Ok(())
        }
        fn read(&self, _: &RawBuffer, _: u64, _: &mut [u8]) -> Result<()> {
            Ok(())
        }
        fn launch(&self, _: &Launch<'_>) -> Result<()> {
            Ok(())
        }
        fn synchronize(&self) -> Result<()> {
            Ok(())
        }
        fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
            work().map(|()| Duration::ZERO)
        }
        fn kernel_stats(&self) -> Vec<KernelStats> {
            self.1.clone()
        }
    }

    fn info(backend: BackendKind, name: &str) -> DeviceInfo {
        DeviceInfo {
            backend,
            index: 0,
            name: name.into(),
            vendor_id: 0,
            device_type: DeviceType::Other,
            driver: "driver 1".into(),
            subgroup_size: 32,
            min_subgroup_size: 32,
            max_subgroup_size: 32,
            subgroup_size_pinned: true,
            subgroup_features: SubgroupFeatures::BASIC,
            max_binding_bytes: 1,
            binding_alignment: 4,
            max_groups: [1; 3],
            shared_memory_bytes: 0,
            max_shared_memory_bytes: 0,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: false,
            float64: false,
            int64_atomics: false,
            workgroup_coherence: false,
            subnormals_f32: xwarp::device::Subnormals::Guaranteed,
            subnormals_f64: xwarp::device::Subnormals::Guaranteed,
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// A section per device, a heading per kernel, executables under it, and why a device
    /// reports nothing.
    #[test]
    fn kernel_stats_are_grouped_by_device_and_kernel() {
        let kernel = "reduce f32 block=256 OP=0";
        let vk = Canned(
            info(BackendKind::Vulkan, "gpu"),
            vec![
                KernelStats {
                    kernel: kernel.into(),
                    executable: "Compute Shader".into(),
                    stats: pairs(&[("Instructions", "120"), ("Spills", "0")]),
                },
                KernelStats {
                    kernel: kernel.into(),
                    executable: "Second".into(),
                    stats: pairs(&[("Instructions", "7")]),
                },
            ],
        );
        let cuda = Canned(
            info(BackendKind::Cuda, "nv"),
            vec![KernelStats {
                kernel: kernel.into(),
                executable: String::new(),
                stats: pairs(&[("NUM_REGS", "32")]),
            }],
        );
        let bare = Canned(info(BackendKind::Vulkan, "cpu"), Vec::new());
        let devices: Vec<(String, &dyn Device)> = vec![
            ("vulkan".into(), &vk),
            ("cuda".into(), &cuda),
            ("vulkan".into(), &bare),
        ];
        let mut cfg = Config::quick(1);
        cfg.algos = vec![Algo::Reduce(xwarp::reduce::ReduceOp::Sum)];
        cfg.ladder = false;
        cfg.chain = false;
        cfg.sizes = vec![1024];
        let text = kernel_stats_text(&cfg, &devices);
        let want = "for xwarp bench (reduce_sum; types i32, u32, f32; sizes 1024)";
        assert!(text.contains(want), "{text}");
        let sections: Vec<&str> = text.split("\n== ").skip(1).collect();
        assert_eq!(sections.len(), 3, "{text}");
        assert!(
            sections[0].starts_with("vulkan: gpu (driver 1) =="),
            "{text}"
        );
        assert_eq!(
            sections[0].matches(kernel).count(),
            1,
            "one heading: {text}"
        );
        assert!(
            sections[0]
                .contains("  [Compute Shader]\n    Instructions  120\n    Spills        0\n"),
            "{text}"
        );
        assert!(
            sections[0].contains("  [Second]\n    Instructions  7\n"),
            "{text}"
        );
        assert!(
            sections[1].contains(&format!("{kernel}\n  NUM_REGS  32\n")),
            "{text}"
        );
        assert!(
            sections[2].contains("none: the device does not offer"),
            "{text}"
        );
    }
}
