//! One small real fixture per torch version (tests/versions/torch_<version>/: the 3-rank Gloo
//! stall of python/desync_jobs/version_fixture.py, recorded by that torch with
//! scripts/make_version_fixtures.sh): the binary reads each version's pickle dumps, and its JSON
//! dumps where that torch writes them, to the verdict the job was designed to produce. No torch
//! is needed to run this: the dumps are committed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/versions");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn verdict(dumps: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .args(["analyze", "--format", "json"])
        .arg(dumps)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: exit {:?}: {}",
        dumps.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["verdict"].clone()
}

#[test]
fn every_torch_versions_dumps_give_the_designed_verdict() {
    let dirs = fixtures();
    let minors: std::collections::BTreeSet<String> = dirs
        .iter()
        .map(|d| {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            name.trim_start_matches("torch_").rsplit_once('.').unwrap().0.to_owned()
        })
        .collect();
    assert!(minors.len() >= 5, "fixtures from {} torch minor versions: {minors:?}", minors.len());
    let mut failures = Vec::new();
    for dir in &dirs {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let mut formats = vec![dir.join("dumps")];
        if dir.join("json").is_dir() {
            formats.push(dir.join("json"));
        }
        for dumps in formats {
            let v = verdict(&dumps);
            let got = (&v["category"], &v["culprit_ranks"], &v["collective_seq_id"]);
            let want =
                (&expected["category"], &expected["culprit_ranks"], &expected["collective_seq_id"]);
            if got != want {
                failures.push(format!("{}: {got:?} (expected {want:?})", dumps.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
