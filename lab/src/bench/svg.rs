//! SVG plots of a benchmark run: GB/s against n, one line per backend and one for CUB, a plot
//! per algorithm and type.

use super::report::size_name;
use super::{Algo, Report};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 130.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 48.0;
const COLOURS: [(&str, &str); 5] = [
    ("vulkan", "#c0392b"),
    ("cuda", "#27ae60"),
    ("cub", "#2c3e50"),
    ("vulkan roofline", "#e8a59e"),
    ("cuda roofline", "#98d8b0"),
];

/// One line of a plot: a label and its (n, GB/s) points.
struct Series {
    label: String,
    colour: &'static str,
    dashed: bool,
    points: Vec<(usize, f64)>,
}

/// Writes `DIR/ALGO_TYPE.svg` for every algorithm and type with records; returns the paths.
pub fn write_plots(report: &Report, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for algo in Algo::ALL {
        for kind in &report.config.types {
            let elem = kind.name();
            let mut series = Vec::new();
            for d in &report.devices {
                series.push(series_of(
                    report,
                    &d.backend,
                    &algo.name(),
                    elem,
                    &d.backend,
                ));
                if algo.roof() != algo {
                    let roof = algo.roof().name();
                    let mut s = series_of(report, &d.backend, &roof, elem, &d.backend);
                    s.label = format!("{} {roof}", d.backend);
                    s.dashed = true;
                    s.colour = colour(&format!("{} roofline", d.backend));
                    series.push(s);
                }
            }
            if let Some(c) = algo.cub_name() {
                // CUB's GB/s over the same bytes as ours.
                let mut s = series_of(report, "cub", c, elem, "cub");
                for (n, gbs) in &mut s.points {
                    let ours = report.records.iter().find(|r| {
                        r.backend != "cub" && r.algo == algo.name() && r.elem == elem && r.n == *n
                    });
                    let cub = report
                        .records
                        .iter()
                        .find(|r| r.backend == "cub" && r.algo == c && r.elem == elem && r.n == *n);
                    if let (Some(o), Some(r)) = (ours, cub) {
                        *gbs = o.bytes as f64 / r.gpu.median / 1e9;
                    }
                }
                s.label = "CUB".into();
                series.push(s);
            }
            series.retain(|s| !s.points.is_empty());
            if series.iter().all(|s| s.dashed || s.label == "CUB") {
                continue;
            }
            let path = dir.join(format!("{}_{elem}.svg", algo.name()));
            std::fs::write(&path, plot(&format!("{algo} {elem}"), &series))?;
            written.push(path);
        }
    }
    Ok(written)
}

fn colour(label: &str) -> &'static str {
    COLOURS
        .iter()
        .find(|(l, _)| *l == label)
        .map_or("#8e44ad", |(_, c)| c)
}

fn series_of(report: &Report, backend: &str, algo: &str, elem: &str, label: &str) -> Series {
    let mut points: Vec<(usize, f64)> = report
        .records
        .iter()
        .filter(|r| r.backend == backend && r.algo == algo && r.elem == elem)
        .map(|r| (r.n, r.gbs))
        .collect();
    points.sort_by_key(|p| p.0);
    Series {
        label: label.into(),
        colour: colour(label),
        dashed: false,
        points,
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A plot with a log2 x axis (n) and a linear y axis (GB/s) from 0.
fn plot(title: &str, series: &[Series]) -> String {
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| (p.0 as f64).log2()));
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x1 > x0 {
        (x0, x1)
    } else {
        (x0 - 1.0, x0 + 1.0)
    };
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let step = nice_step(ymax.max(1e-9) / 5.0);
    let y1 = (ymax / step).ceil().max(1.0) * step;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - y / y1 * (H - TOP - BOTTOM);
    let mut s = String::new();
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    )
    .ok();
    writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#).ok();
    writeln!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        escape(title)
    )
    .ok();
    // Grid and y ticks.
    let ticks = (y1 / step).round() as usize;
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    for i in 0..=ticks {
        let y = i as f64 * step;
        writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#e0e0e0"/><text x="{2}" y="{3:.1}" text-anchor="end">{y:.decimals$}</text>"##,
            py(y),
            W - RIGHT,
            LEFT - 6.0,
            py(y) + 4.0,
            y = y,
        )
        .ok();
    }
    // x ticks at every even power of two (every one when few).
    let every = if x1 - x0 > 10.0 { 2 } else { 1 };
    for k in (x0.ceil() as i64)..=(x1.floor() as i64) {
        if k % every != 0 {
            continue;
        }
        let x = px(k as f64);
        writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{0}" x2="{x:.1}" y2="{1}" stroke="#e0e0e0"/><text x="{x:.1}" y="{2}" text-anchor="middle">{3}</text>"##,
            TOP,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            size_name(1usize << k)
        )
        .ok();
    }
    writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">n (elements)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 10.0
    )
    .ok();
    writeln!(
        s,
        r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">GB/s</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0
    )
    .ok();
    for (i, se) in series.iter().enumerate() {
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|&(n, g)| format!("{:.1},{:.1}", px((n as f64).log2()), py(g)))
            .collect();
        let dash = if se.dashed {
            r#" stroke-dasharray="5,4""#
        } else {
            ""
        };
        writeln!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
            se.colour,
            pts.join(" ")
        )
        .ok();
        let ly = TOP + 14.0 + i as f64 * 18.0;
        writeln!(
            s,
            r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{2}" stroke-width="2"{dash}/><text x="{3}" y="{4}">{5}</text>"#,
            W - RIGHT + 10.0,
            W - RIGHT + 34.0,
            se.colour,
            W - RIGHT + 40.0,
            ly + 4.0,
            escape(&se.label)
        )
        .ok();
    }
    s.push_str("</svg>\n");
    s
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(730.0), 1000.0);
        assert_eq!(nice_step(0.012), 0.02);
    }

    #[test]
    fn plot_is_an_svg_with_one_polyline_per_series() {
        let series = [
            Series {
                label: "vulkan".into(),
                colour: colour("vulkan"),
                dashed: false,
                points: vec![(1 << 10, 1.0), (1 << 20, 900.0), (1 << 28, 3000.0)],
            },
            Series {
                label: "a<b".into(),
                colour: colour("cub"),
                dashed: true,
                points: vec![(1 << 10, 2.0)],
            },
        ];
        let svg = plot("reduce_sum i32", &series);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b"));
        assert!(svg.contains(">2^20<"));
    }
}
