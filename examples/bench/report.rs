//! The Markdown table and the SVG plot of a bench run.

use crate::run::Measured;
use crate::Args;
use blockcontract::{Error, Result};
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
    std::fs::write(&p, svg(rows)).map_err(|e| io(&p, e))?;
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
        "| workload | pair GEMMs | kernel calls | pairwise ms | planned ms | planned / pairwise | TeNPy ms | planned / TeNPy | GFLOP/s | efficiency |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let (mut vs_pair, mut vs_peer) = (Vec::new(), Vec::new());
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
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.1} | {:.2} |",
            m.name,
            p.pair_gemms,
            p.kernel_calls,
            qm,
            pm,
            pm / qm,
            peer,
            ratio,
            gf,
            gf / peak
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Geometric mean planned / pairwise: {:.3}",
        geomean(&vs_pair)
    );
    if !vs_peer.is_empty() {
        let g = geomean(&vs_peer);
        let _ = writeln!(
            s,
            "Geometric mean planned / TeNPy: {:.3} (speed-up {:.2}x)",
            g,
            1.0 / g
        );
    }
    s
}

fn svg(rows: &[Measured]) -> String {
    let series: [(&str, &str); 3] = [
        ("pairwise", "#999999"),
        ("planned", "#1f77b4"),
        ("TeNPy", "#d62728"),
    ];
    let bar = 9.0;
    let row_h = bar * 3.0 + 8.0;
    let left = 200.0;
    let width = 900.0;
    let plot_w = width - left - 40.0;
    let top = 50.0;
    let height = top + row_h * rows.len() as f64 + 40.0;
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
    let lo = all
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let hi = all
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .log10()
        .ceil()
        .max(lo + 1.0);
    let x = |t: f64| left + (t.log10() - lo) / (hi - lo) * plot_w;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="20" font-size="14">time per contraction (ms, log scale, lower is better)</text>"#
    );
    for (i, (name, color)) in series.iter().enumerate() {
        let lx = left + i as f64 * 110.0;
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="30" width="10" height="10" fill="{color}"/><text x="{}" y="39">{name}</text>"#,
            lx + 14.0
        );
    }
    let mut d = lo;
    while d <= hi {
        let gx = x(10f64.powf(d));
        let _ = writeln!(
            s,
            r##"<line x1="{gx}" y1="{top}" x2="{gx}" y2="{}" stroke="#ddd"/><text x="{gx}" y="{}" text-anchor="middle">{}</text>"##,
            height - 30.0,
            height - 15.0,
            10f64.powf(d)
        );
        d += 1.0;
    }
    for (r, (m, ts)) in rows.iter().zip(&times).enumerate() {
        let y0 = top + r as f64 * row_h;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y0 + row_h / 2.0,
            m.name
        );
        for (i, t) in ts.iter().enumerate() {
            if let Some(t) = t.filter(|t| *t > 0.0) {
                let _ = writeln!(
                    s,
                    r#"<rect x="{left}" y="{}" width="{:.1}" height="{bar}" fill="{}"><title>{} {:.3} ms</title></rect>"#,
                    y0 + i as f64 * bar,
                    (x(t) - left).max(1.0),
                    series[i].1,
                    series[i].0,
                    t
                );
            }
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}
