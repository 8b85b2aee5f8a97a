//! The repository's real `PyTorch` jobs (`tests/scenarios/*/src/train.py`): each one whose
//! designed verdict names a branch line (`expected.json`) is flagged on that line, and the
//! healthy job is not flagged at all.

use std::path::{Path, PathBuf};

use desync_lint::{Finding, Options, lint_source};

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios")
}

fn lint(path: &Path) -> Vec<Finding> {
    let source = std::fs::read_to_string(path).unwrap();
    lint_source(path, &source, &Options::default())
}

fn show(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("  {}:{} {} {}", f.line, f.column, f.rule, f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_designed_branch_line_is_flagged() {
    let mut checked = Vec::new();
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(scenarios()).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for dir in entries {
        let (expected, train) = (dir.join("expected.json"), dir.join("src/train.py"));
        if !expected.is_file() || !train.is_file() {
            continue;
        }
        let expected: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&expected).unwrap()).unwrap();
        let branch = &expected["branch"];
        if branch.is_null() {
            continue;
        }
        assert_eq!(branch["file"], "train.py");
        let line = u32::try_from(branch["line"].as_u64().unwrap()).unwrap();
        let findings = lint(&train);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            findings.iter().any(|f| f.line == line),
            "{name}: nothing flagged at line {line} ({}); findings:\n{}",
            branch["construct"],
            show(&findings)
        );
        checked.push(name);
    }
    // early_stop, early_stop_8, extra_collective, except_skip, ragged_allgather,
    // dtype_mismatch, pg_order — and any scenario added later.
    assert!(checked.len() >= 7, "only {checked:?}");
}

#[test]
fn the_healthy_job_is_quiet() {
    let findings = lint(&scenarios().join("healthy/src/train.py"));
    assert!(findings.is_empty(), "healthy job flagged:\n{}", show(&findings));
}
