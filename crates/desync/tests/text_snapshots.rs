//! The terminal report of every scenario, compared with a committed snapshot
//! (`tests/scenarios/<name>/report.txt`). Run with `DESYNC_BLESS=1` to rewrite the snapshots
//! after an intended change, then review the diff like code. Paths are relative to the
//! repository root so snapshots do not depend on the checkout's location.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn render(name: &str) -> String {
    let dir = format!("tests/scenarios/{name}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.current_dir(repo()).args(["analyze", &format!("{dir}/dumps"), "--color", "never"]);
    if repo().join(&dir).join("src").is_dir() {
        cmd.args(["--source-root", &format!("{dir}/src")]);
    }
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn text_reports_match_snapshots() {
    let bless = std::env::var_os("DESYNC_BLESS").is_some();
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| repo().join("tests/scenarios").join(n).join("expected.json").is_file())
        .collect();
    names.sort();
    let mut stale = Vec::new();
    for name in &names {
        let text = render(name);
        let snapshot = repo().join("tests/scenarios").join(name).join("report.txt");
        if bless {
            std::fs::write(&snapshot, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&snapshot).unwrap_or_default();
        if want != text {
            let first = want.lines().zip(text.lines()).position(|(a, b)| a != b).unwrap_or(0);
            stale.push(format!(
                "{name}: first difference at line {}\n  snapshot: {:?}\n  now:      {:?}",
                first + 1,
                want.lines().nth(first).unwrap_or(""),
                text.lines().nth(first).unwrap_or("")
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "text reports changed (DESYNC_BLESS=1 to accept):\n{}",
        stale.join("\n")
    );
}
