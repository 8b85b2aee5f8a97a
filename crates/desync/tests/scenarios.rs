//! Every scenario under tests/scenarios/ (real dumps from real `PyTorch` jobs, plus the real
//! H100 NCCL dumps) is analysed through the real binary and checked against the outcome the
//! job was designed to produce (`expected.json`, written from the job's design, not from
//! desync's output). Then the verdict must not depend on file names, load order, or an
//! extra healthy rank.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/scenarios"))
        .expect("tests/scenarios exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn analyze(dumps: &Path, source_root: Option<&Path>) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.arg("analyze").arg(dumps).args(["--format", "json"]);
    if let Some(root) = source_root {
        cmd.arg("--source-root").arg(root);
    }
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{}: exit {code}\n{}",
        dumps.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{}: bad JSON ({e}): {}", dumps.display(), String::from_utf8_lossy(&out.stdout))
    });
    (code, json)
}

fn verdict(json: &Value) -> (String, Vec<u64>) {
    let v = &json["verdict"];
    let culprits =
        v["culprit_ranks"].as_array().unwrap().iter().map(|r| r.as_u64().unwrap()).collect();
    (v["category"].as_str().unwrap().to_owned(), culprits)
}

#[test]
fn every_scenario_gets_its_designed_verdict() {
    let mut failures = Vec::new();
    let all = scenarios();
    assert!(all.len() >= 10, "expected the committed scenarios, found {}", all.len());
    for dir in all {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let src = dir.join("src");
        let (code, json) = analyze(&dir.join("dumps"), src.is_dir().then_some(src.as_path()));
        let (category, culprits) = verdict(&json);
        let want_category = expected["category"].as_str().unwrap();
        let want_culprits: Vec<u64> = expected["culprit_ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap())
            .collect();
        let mut problems = Vec::new();
        if category != want_category {
            problems.push(format!("category {category}, want {want_category}"));
        }
        if culprits != want_culprits {
            problems.push(format!("culprits {culprits:?}, want {want_culprits:?}"));
        }
        if code != i32::from(want_category != "healthy") {
            problems.push(format!("exit code {code}"));
        }
        if let Some(seq) = expected["collective_seq_id"].as_u64()
            && json["verdict"]["collective_seq_id"].as_u64() != Some(seq)
        {
            problems.push(format!("seq {}, want {seq}", json["verdict"]["collective_seq_id"]));
        }
        if let Some(branch) = expected.get("branch").filter(|b| !b.is_null()) {
            let got = &json["code"]["branch"];
            if got["line"].as_u64() != branch["line"].as_u64() {
                problems.push(format!("branch line {}, want {}", got["line"], branch["line"]));
            }
            if got["file"].as_str().is_none_or(|f| !f.ends_with(branch["file"].as_str().unwrap())) {
                problems.push(format!("branch file {}, want *{}", got["file"], branch["file"]));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{name}: {} (headline: {})",
                problems.join("; "),
                json["verdict"]["headline"]
            ));
        }
    }
    assert!(failures.is_empty(), "scenario failures:\n{}", failures.join("\n"));
}

/// Copies a scenario's dumps under new names (a host name in the prefix, ranks kept), in a
/// new order of creation, and checks the verdict is unchanged.
#[test]
fn renaming_and_reordering_files_does_not_change_the_verdict() {
    for dir in scenarios() {
        let dumps = dir.join("dumps");
        let (_, before) = analyze(&dumps, None);
        let tmp = tempfile::tempdir().unwrap();
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(&dumps).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files.reverse();
        for f in &files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let Some(rank) = rank_of(&name) else { continue };
            let ext = if name.ends_with(".json") { ".json" } else { "" };
            std::fs::copy(f, tmp.path().join(format!("job-node0{}_trace_{rank}{ext}", rank % 3)))
                .unwrap();
        }
        let (_, after) = analyze(tmp.path(), None);
        assert_eq!(verdict(&before), verdict(&after), "{}", dir.display());
    }
}

/// A copy of a majority rank's dump as an extra rank (a healthy rank joining the same
/// collectives) must not change the category or the culprits.
#[test]
fn adding_a_healthy_rank_does_not_change_the_verdict() {
    for dir in scenarios() {
        let dumps = dir.join("dumps");
        let (_, before) = analyze(&dumps, None);
        let (category, culprits) = verdict(&before);
        let world = before["input"]["world_size"].as_u64().unwrap();
        let gloo_inferred = before["process_groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|pg| pg["membership"] != "pg_config");
        if !gloo_inferred || world < 2 || category == "straggler" {
            // Members listed in pg_config exclude the copy, and a straggler's timing is per rank.
            continue;
        }
        let healthy = (0..world).find(|r| !culprits.contains(r)).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mut source = None;
        for f in std::fs::read_dir(&dumps).unwrap().map(|e| e.unwrap().path()) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let Some(rank) = rank_of(&name) else { continue };
            std::fs::copy(&f, tmp.path().join(&name)).unwrap();
            if rank == healthy {
                source = Some((f.clone(), name));
            }
        }
        let Some((file, name)) = source else { continue };
        let extra = name.replacen(&healthy.to_string(), &world.to_string(), 1);
        let extra = if rank_of(&extra) == Some(world) { extra } else { continue };
        std::fs::copy(&file, tmp.path().join(extra)).unwrap();
        let (_, after) = analyze(tmp.path(), None);
        assert_eq!((category.clone(), culprits.clone()), verdict(&after), "{}", dir.display());
    }
}

fn rank_of(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    let digits: String = stem
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}
