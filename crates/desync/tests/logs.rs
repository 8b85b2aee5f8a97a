//! The log corpus (tests/logs/<case>/log.txt, truth.json written from each issue thread or job
//! design before desync read the log) through the real binary: `desync analyze LOG --format
//! json`. Every claim desync makes must hold against the truth:
//! - the category is the truth's (`null`: `inconclusive`), the culprits are the truth's
//!   (`null`: none — no culprit where the log does not show one);
//! - every rank a claim names is a rank the log shows;
//! - a timeout claim's seq is the truth's for each of its ranks; a rank said to have raised
//!   its own error is one the truth says raised;
//! - every cited line is in the log, at the number given.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/logs")
}

fn analyze(log: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .args(["analyze", "--format", "json"])
        .arg(log)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: exit {:?}: {}",
        log.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ranks(v: &Value) -> Vec<u64> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default()
}

/// Checks one case; returns its problems.
fn check(case: &Path) -> Vec<String> {
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("truth.json")).unwrap()).unwrap();
    let log = case.join("log.txt");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let report = analyze(&log);
    let mut problems = Vec::new();

    let verdict = &report["verdict"];
    let want_category = truth["category"].as_str().unwrap_or("inconclusive");
    if verdict["category"] != want_category {
        problems.push(format!("category {} (truth {want_category})", verdict["category"]));
    }
    let mut want_culprits = ranks(&truth["culprit_ranks"]);
    want_culprits.sort_unstable();
    if ranks(&verdict["culprit_ranks"]) != want_culprits {
        problems.push(format!("culprits {} (truth {want_culprits:?})", verdict["culprit_ranks"]));
    }

    let seen = ranks(&truth["ranks_seen"]);
    let raised = truth.get("raised").map(ranks);
    for claim in report["claims"].as_array().unwrap() {
        let claim_ranks = ranks(&claim["ranks"]);
        for r in &claim_ranks {
            if !seen.contains(r) {
                problems.push(format!("claim names rank {r}, not in the log: {}", claim["text"]));
            }
        }
        if claim["kind"] == "timed_out"
            && let Some(timed_out) = truth["timed_out"].as_object()
        {
            for r in &claim_ranks {
                let want = timed_out.get(&r.to_string()).and_then(Value::as_u64);
                if want != claim["collective_seq_id"].as_u64() {
                    problems.push(format!(
                        "rank {r} timed out at {} (truth {want:?})",
                        claim["collective_seq_id"]
                    ));
                }
            }
        }
        if claim["kind"] == "raised"
            && let Some(raised) = &raised
        {
            for r in &claim_ranks {
                if !raised.contains(r) {
                    problems.push(format!("rank {r} said to have raised: {}", claim["text"]));
                }
            }
        }
        for cite in claim["evidence"].as_array().unwrap() {
            let n = cite["line"].as_u64().unwrap() as usize;
            let quoted = cite["text"].as_str().unwrap().trim_end_matches('…');
            // A wrapped message is cited from its first line, joined with the next ones.
            let joined: String = lines.iter().skip(n.saturating_sub(1)).take(3).copied().collect();
            if n == 0 || !joined.contains(quoted.get(..40.min(quoted.len())).unwrap_or(quoted)) {
                problems.push(format!("cited line {n} is not in the log: {quoted}"));
            }
        }
    }
    if let Some(user_line) = truth.get("user_line") {
        let found = report["log"]["tracebacks"].as_array().unwrap().iter().any(|t| {
            t["rank"] == user_line["rank"]
                && t["user_frame"]["file"] == user_line["file"]
                && t["user_frame"]["line"] == user_line["line"]
        });
        if !found {
            problems.push(format!("user line {user_line} not found"));
        }
    }
    problems
}

#[test]
fn every_claim_holds_against_the_corpus() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("truth.json").is_file())
        .collect();
    cases.sort();
    assert!(cases.len() >= 15, "the corpus has {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .flat_map(|case| {
            let name = case.file_name().unwrap().to_string_lossy().into_owned();
            check(case).into_iter().map(move |p| format!("{name}: {p}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_log_beside_dumps_adds_the_crashing_rank() {
    // tests/frameworks/ddp_unused_param_crash: dumps and the job's per-rank logs; rank 2 raised
    // DDP's unused-parameter error, the others failed when its sockets closed.
    let case = corpus().join("../frameworks/ddp_unused_param_crash");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.args(["analyze", "--format", "json"]).arg(case.join("dumps"));
    for r in 0..4 {
        cmd.arg("--log").arg(case.join(format!("logs/rank_{r}.log")));
    }
    let out = cmd.output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = &report["log"];
    assert_eq!(log["verdict"]["category"], "crash", "{log:#}");
    assert_eq!(ranks(&log["verdict"]["culprit_ranks"]), vec![2]);
    let raised = log["claims"].as_array().unwrap().iter().find(|c| c["kind"] == "raised").unwrap();
    assert!(
        raised["text"].as_str().unwrap().contains("Expected to have finished reduction"),
        "{raised}"
    );
}

#[test]
fn a_file_that_is_neither_dump_nor_log_is_refused_unquoted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "secret=hunter2\nnothing a job writes\n").unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_desync")).arg("analyze").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("content not shown") && !stderr.contains("hunter2"), "{stderr}");
}
