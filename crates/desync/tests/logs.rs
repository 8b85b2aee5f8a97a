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
    // The dumps' verdict itself: a crash of rank 2, no longer the stall the dumps alone read.
    assert_eq!(report["verdict"]["category"], "crash", "{:#}", report["verdict"]);
    assert_eq!(ranks(&report["verdict"]["culprit_ranks"]), vec![2]);
    assert_eq!(
        report["where_ranks_are"][0]["line"], 12,
        "engine/loop.py:12, the forward that raised"
    );
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

/// The job's log (torchrun's tee: `[rankN]:` prefixes) of a stall whose late rank in fact
/// raised in its data step: rank 2's `OSError` in the dataset's read (shape of our own: the
/// stalled_rank scenario's dumps, an error that job did not raise), rank 0's Gloo timeout.
const RAISED_IN_DATA_STEP: &str = "\
[rank2]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank2]:   File \"/tmp/desync-jobs/stalled_rank/train.py\", line 91, in main
[rank2]:     for step, (xb, yb) in enumerate(loader, start=1):
[rank2]:   File \"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 733, in __next__
[rank2]:     data = self._next_data()
[rank2]:   File \"/tmp/desync-jobs/stalled_rank/train.py\", line 51, in __getitem__
[rank2]:     self._cache = {chunk: self.fs.read(f\"part-{self.shard}-{chunk:03d}\")}
[rank2]:   File \"/venv/lib/python3.11/site-packages/nfsclient/io.py\", line 12, in read
[rank2]:     raise OSError(116, \"Stale file handle\")
[rank2]: OSError: [Errno 116] Stale file handle
[rank0]:   File \"/tmp/desync-jobs/stalled_rank/train.py\", line 68, in allreduce_gradients
[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 6000ms for recv operation to complete
";

/// The stalled_rank scenario's dumps copied into a fresh folder, with `extra` files beside them.
fn dumps_with(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let scenario = corpus().join("../scenarios/stalled_rank/dumps");
    for entry in std::fs::read_dir(&scenario).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn analyze_dumps(dir: &Path, extra_args: &[&str]) -> (Value, String) {
    let source_root = corpus().join("../scenarios/stalled_rank/src");
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(dir)
        .arg("--source-root")
        .arg(&source_root)
        .args(extra_args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = if extra_args.contains(&"json") {
        serde_json::from_str(&stdout).unwrap()
    } else {
        Value::Null
    };
    (json, stdout + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_culprit_the_log_shows_raised_makes_the_stall_a_crash() {
    // Without the log: a stall of rank 2 (the dumps cannot hold an exception).
    let bare = dumps_with(&[]);
    let (report, _) = analyze_dumps(bare.path(), &["--format", "json"]);
    assert_eq!(report["verdict"]["category"], "stall");

    // The log found in the dump directory (no --log): a crash of rank 2, at its user line.
    let dir = dumps_with(&[("job.log", RAISED_IN_DATA_STEP)]);
    let (report, _) = analyze_dumps(dir.path(), &["--format", "json"]);
    let verdict = &report["verdict"];
    assert_eq!(verdict["category"], "crash", "{verdict:#}");
    assert_eq!(ranks(&verdict["culprit_ranks"]), vec![2]);
    assert_eq!(verdict["collective_seq_id"], 8, "the collective its peers wait in stays");
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.contains("OSError") && headline.contains("0-1,3 wait"), "{headline}");
    let log = &report["log"];
    assert_eq!(log["found_beside"], true);
    assert_eq!(log["upgrade"]["from"], "stall");
    assert_eq!(ranks(&log["upgrade"]["culprit_ranks"]), vec![2]);
    // Where rank 2 was: the traceback's innermost user line, bridged to the `if` around it.
    let place = &report["where_ranks_are"][0];
    assert_eq!(place["origin"], "log_traceback", "{place:#}");
    assert_eq!(
        (place["line"].as_u64(), place["function"].as_str()),
        (Some(51), Some("__getitem__"))
    );
    assert!(place["file"].as_str().unwrap().ends_with("stalled_rank/train.py"));
    assert_eq!(place["log_lines"], serde_json::json!([1, 11]), "{place:#}");
    assert_eq!(place["within"][0]["construct"], "if", "{place:#}");
    // No step asks for the stack of a process that is gone.
    let steps = report["next_steps"].to_string();
    assert!(!steps.contains("py-spy"), "{steps}");
    assert!(steps.contains("sed -n '1,16p'"), "{steps}");

    // The text report says where the log came from and what it changed.
    let (_, text) = analyze_dumps(dir.path(), &[]);
    assert!(text.contains("CRASH"), "{text}");
    assert!(text.contains("(found in the dump directory)"), "{text}");
    assert!(
        text.contains("the log made the dumps' verdict (stall) a crash of rank(s) 2"),
        "{text}"
    );
    assert!(
        text.contains("rank(s) 2 raised `OSError: [Errno 116] Stale file handle` at train.py:51"),
        "{text}"
    );
    assert!(!text.contains("py-spy"), "{text}");
}

#[test]
fn files_beside_the_dumps_that_are_no_log_stay_unread_and_unquoted() {
    // Named like logs, but one holds no line desync reads and one is binary: the verdict is
    // the dumps' own, nothing of them is shown, and it is no error.
    let dir = dumps_with(&[
        ("notes.log", "password=hunter2\nnothing a job prints\n"),
        ("core.out", "\u{0}\u{1}hunter3 binary"),
        // A .txt file is never a log candidate, even with a traceback in it.
        ("report.txt", RAISED_IN_DATA_STEP),
    ]);
    let (report, _) = analyze_dumps(dir.path(), &["--format", "json"]);
    assert_eq!(report["verdict"]["category"], "stall");
    assert!(report.get("log").is_none_or(Value::is_null), "{:#}", report["log"]);
    let (_, text) = analyze_dumps(dir.path(), &[]);
    assert!(!text.contains("hunter") && !text.contains("Stale file handle"), "{text}");
}

#[test]
fn a_named_log_without_a_line_desync_reads_is_a_warning_beside_dumps() {
    let dir = dumps_with(&[]);
    let log = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(log.path(), "epoch 1 loss 0.31\nsecret=hunter2\n").unwrap();
    let (report, text) =
        analyze_dumps(dir.path(), &["--format", "json", "--log", log.path().to_str().unwrap()]);
    assert_eq!(report["verdict"]["category"], "stall");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("no line desync reads"), "{warnings}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[test]
fn html_shows_the_log_claims_with_their_lines() {
    let dir = dumps_with(&[("job.log", RAISED_IN_DATA_STEP)]);
    let html = dir.path().join("report.html");
    let (_, _) = analyze_dumps(dir.path(), &["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"log\">"), "log section");
    assert!(page.contains("id=\"log-upgrade\""), "upgrade note");
    assert!(page.contains("data-kind=\"raised\""), "the raised claim");
    assert!(page.contains("job.log:11</code>"), "the line the claim rests on");
    assert!(page.contains("data-origin=\"log_traceback\""), "the traceback place");
}

#[test]
fn a_waiter_that_raised_does_not_make_the_stall_a_crash() {
    // Rank 0 is a waiter in the dumps; an error of its own on the way out changes nothing
    // about rank 2, which the dumps show never issued the collective.
    let log = "[rank0]: Traceback (most recent call last):\n\
               [rank0]:   File \"/tmp/desync-jobs/stalled_rank/train.py\", line 68, in allreduce_gradients\n\
               [rank0]: KeyError: 'grad'\n";
    let dir = dumps_with(&[("job.log", log)]);
    let (report, _) = analyze_dumps(dir.path(), &["--format", "json"]);
    assert_eq!(report["verdict"]["category"], "stall", "{:#}", report["verdict"]);
    assert_eq!(ranks(&report["verdict"]["culprit_ranks"]), vec![2]);
    assert!(report["log"]["upgrade"].is_null());
    assert_eq!(report["log"]["verdict"]["category"], "crash", "the log alone says rank 0 raised");
}
