//! The front page names no stale path: every repository path in `README.md` and the docs it
//! links to (in backticks, from the repository root; or as a Markdown link, from the file's
//! folder) exists, and a glob matches at least one file.

use std::path::{Path, PathBuf};

/// The documents checked.
const DOCS: [&str; 4] = [
    "README.md",
    "docs/bench.md",
    "docs/layout.md",
    "docs/history.md",
];

/// Whether `w` reads as a path inside the repository (`a/b`, `dir/`, `x/*.json`).
fn is_repo_path(w: &str) -> bool {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_.-/*".contains(c);
    w.contains('/')
        && w.chars().all(ok)
        && w.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !w.contains("//")
        && !w.starts_with("target/")
}

/// The paths named in `text`: backticked words (from the root) and link targets (from `dir`).
fn named_paths(text: &str, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 1 && !span.contains('\n') {
            for w in span.split_whitespace() {
                let w = w.trim_end_matches([',', ';', ')']);
                if is_repo_path(w) {
                    out.push((w.to_string(), PathBuf::from(w)));
                }
            }
        }
    }
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") {
            out.push((target.to_string(), dir.join(target)));
        }
    }
    out
}

/// Whether `p` (relative to `root`) exists; a final `*` component matches by suffix.
fn exists(root: &Path, p: &Path) -> bool {
    let s = p.to_string_lossy();
    match s.rsplit_once('/') {
        Some((d, pat)) if pat.contains('*') => {
            let (pre, suf) = pat.split_once('*').unwrap_or((pat, ""));
            std::fs::read_dir(root.join(d)).is_ok_and(|rd| {
                rd.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(pre) && n.ends_with(suf.trim_start_matches('*'))
                })
            })
        }
        _ => root.join(p).exists(),
    }
}

#[test]
fn every_path_the_front_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in DOCS {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let dir = Path::new(doc).parent().unwrap_or(Path::new(""));
        for (shown, p) in named_paths(&text, dir) {
            checked += 1;
            if !exists(root, &p) {
                missing.push(format!("{doc}: `{shown}`"));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} paths found: the scan is broken"
    );
    assert!(missing.is_empty(), "stale paths:\n{}", missing.join("\n"));
}

#[test]
fn the_scan_finds_paths_and_misses_are_reported() {
    let text = "see `examples/dmrg` and `runtime/src/nowhere.rs ARGS`, `Plan::explain()`, \
                `/ 2.0`, [the guide](guide.md#top) and `workloads/*.json`";
    let found: Vec<String> = named_paths(text, Path::new("docs"))
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        found,
        [
            "examples/dmrg",
            "runtime/src/nowhere.rs",
            "workloads/*.json",
            "guide.md"
        ]
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(exists(root, Path::new("workloads/*.json")));
    assert!(!exists(root, Path::new("workloads/*.nothing")));
    assert!(!exists(root, Path::new("runtime/src/nowhere.rs")));
    assert!(exists(root, Path::new("docs/guide.md")));
}
