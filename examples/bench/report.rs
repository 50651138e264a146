//! The Markdown table and the SVG plot of a bench run.

use crate::run::Measured;
use crate::Args;
use blockcontract::{Error, Result};
use plotters::prelude::*;
use std::fmt::Write;
use std::path::Path;

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn geomean(v: &[f64]) -> f64 {
    let v: Vec<f64> = v
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

pub fn write(dir: &Path, rows: &[Measured], peak: f64, args: &Args) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let md = markdown(rows, peak, args);
    let p = dir.join("report.md");
    std::fs::write(&p, md).map_err(|e| io(&p, e))?;
    let p = dir.join("report.svg");
    let plot = svg(rows).map_err(|reason| Error::Io {
        path: p.display().to_string(),
        reason,
    })?;
    std::fs::write(&p, plot).map_err(|e| io(&p, e))?;
    Ok(())
}

fn markdown(rows: &[Measured], peak: f64, args: &Args) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Median of {} interleaved repeats, {} thread(s); dense GEMM peak in the same run: {:.1} GFLOP/s (faer, 1 thread).",
        args.repeat, args.threads, peak
    );
    if args.peer.is_some() {
        let _ = writeln!(
            s,
            "TeNPy timed by its harness in the same run, alternating with ours (its median)."
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| workload | pair GEMMs | kernel calls | pairwise ms | planned ms | planned / pairwise | TeNPy ms | planned / TeNPy | floor ms | planned / floor | TeNPy / floor | GFLOP/s | efficiency | efficiency ceiling | GEMMs alone ms | planned / GEMMs | auto order ms | auto / given | plan ms | first call / cached | near first call / cached |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let (mut vs_pair, mut vs_peer, mut vs_given) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_vs_cached = Vec::new();
    let mut near_vs_cached = Vec::new();
    // rows where even a run at the dense peak would stay under 1.5x TeNPy
    let mut capped = Vec::new();
    for m in rows {
        let (Some(p), Some(q)) = (m.get("planned"), m.get("pairwise")) else {
            continue;
        };
        let (pm, qm) = (p.median(), q.median());
        let gf = p.flops / (pm * 1e-3) / 1e9;
        vs_pair.push(pm / qm);
        // the peer's own result must agree with ours, or its time means nothing
        let peer_ok = m.peer_check.is_none_or(|(n, c)| {
            let tol = 1e-10 * p.norm.abs();
            (n - p.norm).abs() <= tol && (c - p.checksum).abs() <= tol
        });
        let peer = m.peer_ms.map_or("-".to_string(), |t| {
            if peer_ok {
                format!("{t:.3}")
            } else {
                format!("{t:.3} (result differs!)")
            }
        });
        let ratio = m.peer_ms.map_or("-".to_string(), |t| {
            vs_peer.push(pm / t);
            format!("{:.3}", pm / t)
        });
        // the plan's floor on this machine (flops at the dense peak, or one read of each
        // step's inputs and one write of its output, per step): TeNPy's time over it is the
        // largest speed-up any code running these steps could reach
        let floor = p.floor_ms.map_or("- | - | -".to_string(), |f| {
            let over_peer = m.peer_ms.map_or("-".to_string(), |t| {
                if t / f < 1.5 {
                    capped.push(format!("{} ({:.2}x)", m.name, t / f));
                }
                format!("{:.2}", t / f)
            });
            format!("{f:.3} | {:.2} | {over_peer}", pm / f)
        });
        let ceiling = p.floor_ms.map_or("-".to_string(), |f| {
            format!("{:.2}", p.flops / (peak * 1e9) * 1e3 / f)
        });
        let gemms = p
            .gemm_ms
            .map_or("- | -".to_string(), |g| format!("{g:.3} | {:.3}", pm / g));
        let auto = m.get("planned-auto").map_or("- | -".to_string(), |a| {
            vs_given.push(a.median() / pm);
            format!("{:.3} | {:.3}", a.median(), a.median() / pm)
        });
        // a call on a structure not seen before: planning, then the run
        let first = p.plan_ms.map_or("- | -".to_string(), |t| {
            first_vs_cached.push((t + pm) / pm);
            format!("{t:.3} | {:.2}", (t + pm) / pm)
        });
        // a structure near a cached one: the first call (planning from its plan, then the
        // run) over the second
        let near = p.near_ms.map_or("-".to_string(), |(_, first, cached)| {
            near_vs_cached.push(first / cached);
            format!("{:.2}", first / cached)
        });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {:.1} | {:.2} | {} | {} | {} | {} | {} |",
            m.name,
            p.pair_gemms,
            p.kernel_calls,
            qm,
            pm,
            pm / qm,
            peer,
            ratio,
            floor,
            gf,
            gf / peak,
            ceiling,
            gemms,
            auto,
            first,
            near
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Geometric mean planned / pairwise: {:.3}",
        geomean(&vs_pair)
    );
    if !vs_given.is_empty() {
        let _ = writeln!(
            s,
            "Geometric mean planner's order / given order: {:.3}",
            geomean(&vs_given)
        );
    }
    if !first_vs_cached.is_empty() {
        let _ = writeln!(
            s,
            "First call on a new structure (planning + run) / cached call: geometric mean {:.2}, worst {:.2}",
            geomean(&first_vs_cached),
            first_vs_cached.iter().copied().fold(0.0, f64::max)
        );
    }
    if !near_vs_cached.is_empty() {
        let _ = writeln!(
            s,
            "First call on a structure near a cached one (sector dimensions moved by at most one; planned from its plan, then run) / its second call: geometric mean {:.2}, worst {:.2}",
            geomean(&near_vs_cached),
            near_vs_cached.iter().copied().fold(0.0, f64::max)
        );
    }
    if !vs_peer.is_empty() {
        let g = geomean(&vs_peer);
        let _ = writeln!(
            s,
            "Geometric mean planned / TeNPy: {:.3} (speed-up {:.2}x)",
            g,
            1.0 / g
        );
        let _ = writeln!(
            s,
            "Floor: per step, the larger of its useful flops at the dense GEMM peak above and one read of its inputs plus one write of its output (measured in step order, best of five), summed; efficiency ceiling = useful flops at the peak / floor. TeNPy / floor is the largest speed-up over TeNPy any code running these steps could reach on this machine; under 1.5x on: {}",
            if capped.is_empty() {
                "none".to_string()
            } else {
                capped.join(", ")
            }
        );
    }
    s
}

/// Horizontal bars per workload (pairwise, planned, TeNPy), log time axis, drawn by plotters.
fn svg(rows: &[Measured]) -> std::result::Result<String, String> {
    let series: [(&str, RGBColor); 3] = [
        ("pairwise", RGBColor(0x99, 0x99, 0x99)),
        ("planned", RGBColor(0x1f, 0x77, 0xb4)),
        ("TeNPy", RGBColor(0xd6, 0x27, 0x28)),
    ];
    let times: Vec<[Option<f64>; 3]> = rows
        .iter()
        .map(|m| {
            [
                m.get("pairwise").map(|o| o.median()),
                m.get("planned").map(|o| o.median()),
                m.peer_ms,
            ]
        })
        .collect();
    let all: Vec<f64> = times
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|x| *x > 0.0)
        .collect();
    let lo = 10f64.powf(
        all.iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .log10()
            .floor(),
    );
    let hi = 10f64.powf(
        all.iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            .log10()
            .ceil(),
    );
    // room on the right for the legend
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo, hi * 4.0)
    } else {
        (0.001, 1000.0)
    };
    let n = rows.len().max(1);
    let mut out = String::new();
    {
        let height = 90 + 36 * n as u32;
        let root = SVGBackend::with_string(&mut out, (900, height)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| e.to_string();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "time per contraction (ms, log scale, lower is better)",
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d((lo..hi).log_scale(), (0..3 * n).into_segmented())
            .map_err(|x| e(&x))?;
        // one segment per bar, the first workload on top; its name beside its middle bar
        let name = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) if i % 3 == 1 => rows
                .get(n - 1 - i / 3)
                .map_or(String::new(), |m| m.name.clone()),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .y_labels(3 * n)
            .y_label_formatter(&name)
            .disable_y_mesh()
            .x_desc("ms")
            .draw()
            .map_err(|x| e(&x))?;
        for (i, (label, color)) in series.iter().enumerate() {
            let color = *color;
            let bars = times.iter().enumerate().filter_map(|(r, ts)| {
                let t = ts[i].filter(|t| *t > 0.0)?;
                let y = 3 * (n - 1 - r) + 2 - i;
                Some(Rectangle::new(
                    [
                        (lo, SegmentValue::Exact(y)),
                        (t, SegmentValue::Exact(y + 1)),
                    ],
                    color.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(|x| e(&x))?
                .label(*label)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(out)
}
