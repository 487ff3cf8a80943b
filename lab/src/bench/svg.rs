//! SVG plots of a benchmark run: GB/s against n, one line per backend and one for CUB, a plot
//! per algorithm and type, drawn with plotters' SVG backend. Its text is written as SVG text
//! for the viewer to set, so drawing loads no font.

use super::report::size_name;
use super::{Algo, Report};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::{Path, PathBuf};

const W: u32 = 640;
const H: u32 = 400;
/// Width of the legend, right of the plot.
const LEGEND: u32 = 130;
const COLOURS: [(&str, RGBColor); 5] = [
    ("vulkan", RGBColor(0xc0, 0x39, 0x2b)),
    ("cuda", RGBColor(0x27, 0xae, 0x60)),
    ("cub", RGBColor(0x2c, 0x3e, 0x50)),
    ("vulkan roofline", RGBColor(0xe8, 0xa5, 0x9e)),
    ("cuda roofline", RGBColor(0x98, 0xd8, 0xb0)),
];
const GRID: RGBColor = RGBColor(0xe0, 0xe0, 0xe0);

/// One line of a plot: a label and its (n, GB/s) points.
struct Series {
    label: String,
    colour: RGBColor,
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
            let svg = plot(&format!("{algo} {elem}"), &series).map_err(std::io::Error::other)?;
            std::fs::write(&path, svg)?;
            written.push(path);
        }
    }
    Ok(written)
}

fn colour(label: &str) -> RGBColor {
    COLOURS
        .iter()
        .find(|(l, _)| *l == label)
        .map_or(RGBColor(0x8e, 0x44, 0xad), |(_, c)| *c)
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

/// A plot with a log2 x axis (n) and a linear y axis (GB/s) from 0, the legend on the right.
fn plot(title: &str, series: &[Series]) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (area, legend) = root.split_horizontally(W - LEGEND);
        draw_chart(&area, title, series).map_err(|e| e.to_string())?;
        draw_legend(&legend, series).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn<'a> = Result<(), DrawingAreaErrorKind<<SVGBackend<'a> as DrawingBackend>::ErrorType>>;

fn draw_chart<'a>(area: &Area<'a>, title: &str, series: &[Series]) -> Drawn<'a> {
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
    // Ticks at every even power of two (every one when few), labelled 2^k.
    let every = if x1 - x0 > 10.0 { 2 } else { 1 };
    let x_ticks: Vec<f64> = ((x0.ceil() as i64)..=(x1.floor() as i64))
        .filter(|k| k % every == 0)
        .map(|k| k as f64)
        .collect();
    // The y axis from 0 to a round number, ticks a round step apart.
    let ymax = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let step = nice_step(ymax.max(1e-9) / 5.0);
    let ticks = (ymax / step).ceil().max(1.0) as usize;
    let y1 = ticks as f64 * step;
    let y_ticks: Vec<f64> = (0..=ticks).map(|i| i as f64 * step).collect();
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let x_label = |x: &f64| size_name(1usize << x.round() as u32);
    let y_label = |y: &f64| format!("{y:.decimals$}");
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 17))
        .margin_top(8)
        .margin_right(12)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(
            Ticked {
                range: x0..x1,
                ticks: x_ticks,
            },
            Ticked {
                range: 0.0..y1,
                ticks: y_ticks,
            },
        )?;
    chart
        .configure_mesh()
        .bold_line_style(GRID)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 15))
        .x_desc("n (elements)")
        .y_desc("GB/s")
        .draw()?;
    for se in series {
        draw_series(&mut chart, se)?;
    }
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'b, SVGBackend<'a>, Cartesian2d<Ticked, Ticked>>;

/// A linear axis with grid lines and labels at given values only: plotters' own choice of
/// ticks may fall between powers of two, whose labels (2^k) need whole k.
struct Ticked {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    // The labels come from the chart's formatters.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let Range { start, end } = self.range;
        let f = (value - start) / (end - start);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Only bold grid lines, at the ticks; no light lines between them.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A series' line (dashed for a roofline), with a mark at each measured size on solid ones.
fn draw_series<'a>(chart: &mut Chart<'a, '_>, se: &Series) -> Drawn<'a> {
    let points: Vec<(f64, f64)> = se
        .points
        .iter()
        .map(|&(n, g)| ((n as f64).log2(), g))
        .collect();
    let style = se.colour.stroke_width(2);
    if se.dashed {
        chart.draw_series(DashedLineSeries::new(points, 5, 4, style))?;
    } else {
        chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
        chart.draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, 2, se.colour.filled())),
        )?;
    }
    Ok(())
}

/// A line sample and the label of each series, top down.
fn draw_legend<'a>(area: &Area<'a>, series: &[Series]) -> Drawn<'a> {
    let text = ("sans-serif", 15)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, se) in series.iter().enumerate() {
        let y = 50 + i as i32 * 18;
        let line = vec![(10, y), (34, y)];
        let style = se.colour.stroke_width(2);
        if se.dashed {
            area.draw(&DashedPathElement::new(line, 5, 4, style))?;
        } else {
            area.draw(&PathElement::new(line, style))?;
        }
        area.draw(&Text::new(se.label.as_str(), (40, y), text.clone()))?;
    }
    Ok(())
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
    fn plot_is_an_svg_with_a_line_per_series_axes_and_legend() {
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
                points: vec![(1 << 10, 2.0), (1 << 28, 2900.0)],
            },
        ];
        let svg = plot("reduce_sum i32", &series).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim())
            .collect();
        for want in ["reduce_sum i32", "n (elements)", "GB/s", "vulkan", "a&lt;b"] {
            assert!(texts.contains(&want), "no text `{want}` in {texts:?}");
        }
        // x ticks at even powers of two from 2^10 to 2^28; y from 0 in steps of 1000.
        for k in (10..=28).step_by(2) {
            assert!(texts.contains(&format!("2^{k}").as_str()), "{texts:?}");
        }
        assert!(!texts.contains(&"2^11"), "{texts:?}");
        for y in ["0", "1000", "2000", "3000"] {
            assert!(texts.contains(&y), "{texts:?}");
        }
        // The solid series is one polyline through its three points, each marked; the dashed
        // one and its legend sample are dashes in the roofline's colour.
        let vulkan = format!("stroke=\"#{:02X}{:02X}{:02X}\"", 0xc0, 0x39, 0x2b);
        let solid: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(&vulkan))
            .collect();
        // The plotted line and the legend's sample.
        assert_eq!(solid.len(), 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3, "{svg}");
        let cub = format!("stroke=\"#{:02X}{:02X}{:02X}\"", 0x2c, 0x3e, 0x50);
        assert!(svg.matches(&cub).count() > 10, "dashes: {svg}");
    }
}
