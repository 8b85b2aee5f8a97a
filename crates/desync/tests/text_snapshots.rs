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
    // Unwrapped, as piped output is: a COLUMNS in the environment must not change the text.
    cmd.env_remove("COLUMNS");
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

/// With `COLUMNS` set, every line of every scenario's report fits; nothing is lost in the
/// wrapping (the words are the same as in the unwrapped report).
#[test]
fn text_reports_wrap_to_columns_without_losing_words() {
    for name in ["crash", "dtype_mismatch", "except_skip", "pg_order", "json_extra_collective"] {
        let dir = format!("tests/scenarios/{name}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
        cmd.current_dir(repo()).env("COLUMNS", "72").args([
            "analyze",
            &format!("{dir}/dumps"),
            "--color",
            "never",
        ]);
        if repo().join(&dir).join("src").is_dir() {
            cmd.args(["--source-root", &format!("{dir}/src")]);
        }
        let wrapped = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        let long: Vec<&str> = wrapped.lines().filter(|l| l.chars().count() > 72).collect();
        assert!(long.is_empty(), "{name}: lines over 72 columns: {long:#?}");
        let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>().join(" ");
        let whole = render(name);
        // Words longer than the line are cut, so compare with the spaces taken out.
        let squeeze = |t: &str| words(t).replace(' ', "");
        assert_eq!(squeeze(&wrapped), squeeze(&whole), "{name}: wrapping changed the text");
    }
}

/// What differs is on the row: a dtype mismatch shows both dtypes, a rank without a dump gets
/// one row for the whole run of seqs it never issued, and groups that would print the same say
/// how they differ. The code section never says what a rank without a dump did.
#[test]
fn text_rows_say_what_differs() {
    let dtype = render("dtype_mismatch");
    let row = dtype.lines().find(|l| l.contains(" dtype ") && l.contains("seq")).unwrap();
    assert!(row.contains("Float") && row.contains("BFloat16"), "{row}");

    let crash = render("crash");
    let rows: Vec<&str> = crash.lines().filter(|l| l.contains(" missing ")).collect();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert!(rows[0].contains("seq 1–9") && rows[0].contains("(no dump)"), "{}", rows[0]);
    let groups: Vec<&str> = crash.lines().filter(|l| l.contains("wait in all_reduce")).collect();
    assert_eq!(groups.len(), 2);
    assert_ne!(
        groups[0].split_once("  wait").unwrap().1,
        groups[1].split_once("  wait").unwrap().1
    );
    assert!(!crash.contains("rank(s) 1 call"), "{crash}");
    assert!(crash.contains("left no dump, so where they stopped is not known"), "{crash}");
}
