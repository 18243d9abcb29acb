//! The run drawn as one SVG with `plotters`: for each workload, messages
//! written and read per second by target, and the end-to-end latency
//! percentiles by target. Drawn from the results JSON, so a committed run
//! can be drawn again without running it.

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;

/// One (workload, target) result, as drawn.
struct Row {
    workload: String,
    target: String,
    written: f64,
    read: f64,
    p50: f64,
    p95: f64,
    p99: f64,
}

fn rows(report: &Value) -> Result<Vec<Row>> {
    let results = report["results"]
        .as_array()
        .context("no \"results\" array in the report")?;
    let number = |r: &Value, path: &[&str]| -> Result<f64> {
        let mut v = r;
        for key in path {
            v = &v[*key];
        }
        v.as_f64()
            .with_context(|| format!("no number at {}", path.join(".")))
    };
    results
        .iter()
        .map(|r| {
            Ok(Row {
                workload: r["workload"].as_str().unwrap_or("?").to_owned(),
                target: r["target"].as_str().unwrap_or("?").to_owned(),
                written: number(r, &["written_per_s"])?,
                read: number(r, &["read_per_s"])?,
                p50: number(r, &["e2e_latency", "p50_ms"])?,
                p95: number(r, &["e2e_latency", "p95_ms"])?,
                p99: number(r, &["e2e_latency", "p99_ms"])?,
            })
        })
        .collect()
}

/// The SVG of a report (its JSON form).
pub fn svg(report: &Value) -> Result<String> {
    let rows = rows(report)?;
    // Results come target by target: each workload once, in first-seen order.
    let mut workloads: Vec<&str> = Vec::new();
    for row in &rows {
        if !workloads.contains(&row.workload.as_str()) {
            workloads.push(&row.workload);
        }
    }
    let mut out = String::new();
    {
        let height = 360 * u32::try_from(workloads.len().max(1)).unwrap_or(1);
        let root = SVGBackend::with_string(&mut out, (1100, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let bands = root.split_evenly((workloads.len().max(1), 2));
        for (w, workload) in workloads.iter().enumerate() {
            let of: Vec<&Row> = rows.iter().filter(|r| r.workload == *workload).collect();
            let targets: Vec<String> = of.iter().map(|r| r.target.clone()).collect();
            bars(
                &bands[2 * w],
                &format!("{workload}: messages per second"),
                &targets,
                &[
                    ("written", of.iter().map(|r| r.written).collect()),
                    ("read", of.iter().map(|r| r.read).collect()),
                ],
            )?;
            bars(
                &bands[2 * w + 1],
                &format!("{workload}: end-to-end latency, ms"),
                &targets,
                &[
                    ("p50", of.iter().map(|r| r.p50).collect()),
                    ("p95", of.iter().map(|r| r.p95).collect()),
                    ("p99", of.iter().map(|r| r.p99).collect()),
                ],
            )?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(out)
}

fn plot_error(err: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the chart: {err}")
}

/// Grouped bars: one group per target, one bar per series.
fn bars(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    caption: &str,
    targets: &[String],
    series: &[(&str, Vec<f64>)],
) -> Result<()> {
    let groups = targets.len().max(1);
    let top = series
        .iter()
        .flat_map(|(_, values)| values.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..groups as f64, 0f64..top)
        .map_err(plot_error)?;
    let label = |x: &f64| {
        let i = x.floor();
        match targets.get(i as usize) {
            Some(name) if (x - i - 0.5).abs() < 1e-6 => name.clone(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_labels(groups * 2 + 1)
        .x_label_formatter(&label)
        .draw()
        .map_err(plot_error)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (k, (name, values)) in series.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        chart
            .draw_series(values.iter().enumerate().map(|(i, value)| {
                let left = i as f64 + 0.1 + k as f64 * width;
                Rectangle::new([(left, 0.0), (left + width, *value)], color.filled())
            }))
            .map_err(plot_error)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()
        .map_err(plot_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_run_is_drawn() {
        let text = include_str!("../../results/messaging-2core.json");
        let report: Value = serde_json::from_str(text).unwrap();
        let svg = svg(&report).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for word in ["shards4", "pubsub: messages per second", "p99", "queue"] {
            assert!(svg.contains(word), "{word}");
        }
        assert!(svg.matches("<rect").count() > 20);
        // Two workloads: two bands of 360 pixels.
        assert!(svg.contains("height=\"720\""), "{}", &svg[..100]);
    }

    #[test]
    fn a_report_without_results_is_an_error() {
        assert!(svg(&serde_json::json!({})).is_err());
    }
}
