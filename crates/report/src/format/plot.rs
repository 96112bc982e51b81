//! Drawing one plot of the HTML report: an inline SVG and an HTML legend.
//!
//! Plots are drawn with `plotters`' SVG backend built without font features
//! (its "naive" text layout; the browser renders `<text>` with its own
//! fonts), so the crate builds on machines without fontconfig. What every
//! plot shares, so that the page reads as one:
//!
//! * **One colour per run** ([`run_color`]): a run has the same colour in
//!   every plot, and the header's key shows it.
//! * **SI ticks** ([`si`]): `6 M`, not `6000000.0`.
//! * **Log axes where tails matter**: either axis may be logarithmic
//!   ([`Axis::log`]); distributions are drawn as CCDFs on a log y axis so
//!   that Max-99 and Max are visible.
//! * **Legends in HTML**, under the plot, not over the data: they wrap
//!   instead of being clipped, and carry the full label on hover (`title`).
//! * **Markers** where points are few (sweeps), dashes to tell kswapd from
//!   direct reclaim.
//!
//! Every plot is a `<figure class="plot">` whose `data-points` attribute says
//! how many points it draws: the browser test fails on an empty one.

use std::fmt::Write as _;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::html::esc;

/// Colours of runs, in run order (matplotlib's tab10), repeated past ten.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of the run (or line) at `index`, the same in every plot.
pub(crate) fn run_color(index: usize) -> RGBColor {
    COLORS[index % COLORS.len()]
}

/// `#rrggbb` of a colour, for the HTML legends and key.
pub(crate) fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A number with an SI suffix and at most three significant digits, for
/// ticks and summaries: `6 M`, `2.5 k`, `120`, `0.25`.
pub(crate) fn si(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    let (d, suffix) = if a >= 1e12 {
        (1e12, " T")
    } else if a >= 1e9 {
        (1e9, " G")
    } else if a >= 1e6 {
        (1e6, " M")
    } else if a >= 1e4 {
        (1e3, " k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    let ax = x.abs();
    let digits = if ax >= 100.0 || ax == 0.0 {
        0
    } else if ax >= 10.0 {
        1
    } else if ax >= 1.0 {
        2
    } else {
        // Small values: three significant digits.
        (2 - ax.log10().floor() as i32).clamp(2, 9) as usize
    };
    let mut s = format!("{x:.digits$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if s == "-0" {
        s = "0".into();
    }
    s + suffix
}

/// One axis: its label, range, and whether it is logarithmic.
pub(crate) struct Axis {
    /// The label (`latency, ms`).
    pub desc: String,
    /// From, to (both > 0 on a log axis).
    pub range: (f64, f64),
    /// Logarithmic.
    pub log: bool,
}

/// How a line is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// A solid line.
    Solid,
    /// A dashed line.
    Dashed,
    /// A solid line with a dot at every point (sweeps).
    Markers,
}

/// One line of a plot.
pub(crate) struct Line {
    /// Legend label (short).
    pub name: String,
    /// The full label, shown on hover, where it differs from `name`.
    pub full: Option<String>,
    /// Its colour (the run's, see [`run_color`]).
    pub color: RGBColor,
    /// Solid, dashed, or with markers.
    pub style: Style,
    /// The points, in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// The finite bounds (xmin, xmax, ymin, ymax) of all the lines' points.
pub(crate) fn bounds(lines: &[Line]) -> Option<(f64, f64, f64, f64)> {
    let mut it = lines
        .iter()
        .flat_map(|l| l.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let first = it.next()?;
    let mut b = (first.0, first.0, first.1, first.1);
    for p in it {
        b.0 = b.0.min(p.0);
        b.1 = b.1.max(p.0);
        b.2 = b.2.min(p.1);
        b.3 = b.3.max(p.1);
    }
    Some(b)
}

/// A range that plotters can draw: widened when empty, positive when log.
fn usable(a: &Axis) -> (f64, f64) {
    let (mut lo, mut hi) = a.range;
    if a.log {
        if hi <= 0.0 {
            hi = 1.0;
        }
        if lo <= 0.0 || lo >= hi {
            lo = hi / 10.0;
        }
    } else if hi <= lo {
        hi = lo + lo.abs().max(1.0);
    }
    (lo, hi)
}

fn draw_svg<X, Y>(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x: X,
    y: Y,
    lines: &[Line],
) -> Result<String, String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut svg = String::new();
    let res = (|| -> Result<(), Box<dyn std::error::Error + '_>> {
        let root = SVGBackend::with_string(&mut svg, (560, 330)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| si(*v))
            .y_label_formatter(&|v| si(*v))
            .light_line_style(RGBColor(238, 238, 238))
            .max_light_lines(4)
            .draw()?;
        // Earlier lines wider, so that a line drawn over an identical one
        // (two runs with the same results) leaves its edges visible.
        let n = lines.len();
        for (i, l) in lines.iter().enumerate() {
            let c = l.color;
            let w = if n > 1 {
                2 + 2 * (n - 1 - i).min(3) / 2
            } else {
                2
            };
            let style = if l.points.len() <= 2 {
                Style::Markers
            } else {
                l.style
            };
            let pts = l
                .points
                .iter()
                .copied()
                .filter(|p| p.0.is_finite() && p.1.is_finite());
            match style {
                Style::Solid => {
                    chart.draw_series(LineSeries::new(pts, c.stroke_width(w as u32)))?;
                }
                Style::Dashed => {
                    chart.draw_series(DashedLineSeries::new(
                        pts,
                        6,
                        4,
                        c.stroke_width(w as u32),
                    ))?;
                }
                Style::Markers => {
                    chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(w as u32)))?;
                    chart.draw_series(pts.map(|p| Circle::new(p, 3 + w as u32 / 2, c.filled())))?;
                }
            }
        }
        root.present()?;
        Ok(())
    })();
    res.map_err(|e| e.to_string())?;
    Ok(svg)
}

/// Characters of a plot's title that fit the SVG's width.
const SVG_TITLE_CHARS: usize = 80;

/// Draws a plot: a `<figure>` with the SVG and an HTML legend. A plot with
/// no point says so instead of drawing empty axes.
pub(crate) fn figure(title: &str, x: &Axis, y: &Axis, lines: &[Line]) -> String {
    let points: usize = lines.iter().map(|l| l.points.len()).sum();
    if points == 0 {
        let title = super::text::fit_to(title, super::text::MAX_CELL);
        return format!("<p class=\"note\">{}: nothing to plot.</p>\n", esc(&title));
    }
    // The SVG's caption is 560 px wide: a title from input (a stall reason,
    // a metric name) is cut there; the figure keeps it whole in `data-title`.
    let full_title = title;
    let title = &*super::text::fit_to(title, SVG_TITLE_CHARS);
    let (xr, yr) = (usable(x), usable(y));
    let (xd, yd) = (x.desc.as_str(), y.desc.as_str());
    let svg = match (x.log, y.log) {
        (false, false) => draw_svg(title, xd, yd, xr.0..xr.1, yr.0..yr.1, lines),
        (true, false) => draw_svg(title, xd, yd, (xr.0..xr.1).log_scale(), yr.0..yr.1, lines),
        (false, true) => draw_svg(title, xd, yd, xr.0..xr.1, (yr.0..yr.1).log_scale(), lines),
        (true, true) => draw_svg(
            title,
            xd,
            yd,
            (xr.0..xr.1).log_scale(),
            (yr.0..yr.1).log_scale(),
            lines,
        ),
    };
    let svg = match svg {
        Ok(s) => s,
        Err(e) => {
            return format!(
                "<p class=\"note\">plot {} could not be drawn: {}</p>\n",
                esc(title),
                esc(&e)
            )
        }
    };
    let mut out = format!(
        "<figure class=\"plot\" data-points=\"{points}\" data-title=\"{}\">{svg}<figcaption class=\"legend\">",
        esc(full_title)
    );
    for l in lines {
        let class = match l.style {
            Style::Dashed => "sw dashed",
            Style::Markers => "sw dot",
            Style::Solid => "sw",
        };
        let _ = write!(
            out,
            "<span title=\"{}\"><i class=\"{class}\" style=\"border-color:{c};background:{bg}\"></i>{}</span> ",
            esc(l.full.as_deref().unwrap_or(&l.name)),
            esc(&l.name),
            c = hex(l.color),
            bg = if l.style == Style::Dashed { "transparent".to_string() } else { hex(l.color) },
        );
    }
    out.push_str("</figcaption></figure>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_ticks() {
        assert_eq!(si(6_000_000.0), "6 M");
        assert_eq!(si(6_500_000.0), "6.5 M");
        assert_eq!(si(10_000.0), "10 k");
        assert_eq!(si(2_130_000_000.0), "2.13 G");
        assert_eq!(si(1000.0), "1000");
        assert_eq!(si(120.0), "120");
        assert_eq!(si(0.25), "0.25");
        assert_eq!(si(0.001), "0.001");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(-4_000_000.0), "-4 M");
    }

    #[test]
    fn empty_plots_are_not_drawn_and_others_count_their_points() {
        let ax = |log| Axis {
            desc: "x".into(),
            range: (1.0, 100.0),
            log,
        };
        assert!(figure("t", &ax(false), &ax(false), &[]).contains("nothing to plot"));
        let l = Line {
            name: "v5.15".into(),
            full: None,
            color: run_color(0),
            style: Style::Markers,
            points: vec![(1.0, 1.0), (10.0, 50.0), (100.0, 2.0)],
        };
        let f = figure("t", &ax(true), &ax(true), &[l]);
        assert!(f.contains("data-points=\"3\""), "{f}");
        assert!(f.contains("<circle"), "{f}");
        assert!(f.contains("#1f77b4"), "{f}");
    }
}
