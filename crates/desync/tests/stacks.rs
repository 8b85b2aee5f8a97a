//! Stacks files beside the dumps (`<dump file name>.stacks`, faulthandler's text) through the
//! real binary: a stall's culprit is shown at the innermost user line of its main thread, with
//! what that line sits in, and the next steps stop asking for a py-spy dump of it. The dumps
//! are the real `stalled_rank` scenario (rank 2 never issues step 4's `all_reduce`); the stacks
//! and the source are a shape of their own: rank 2 blocked in `fcntl.flock` on a lease file,
//! inside an `if` on its rank (a parameter: the caller passes `RANK`) inside a `while True`, with a helper thread listed first.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const LEASE_PY: &str = r"import fcntl


def acquire_lease(fd, rank):
    while True:
        if rank % 2 == 0:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        break
";

const STACKS: &str = "Thread 0x00007f1a00000002 (most recent call first):\n  \
File \"/usr/lib/python3.12/threading.py\", line 355 in wait\n  \
File \"/usr/lib/python3.12/queue.py\", line 171 in get\n  \
File \"/opt/job/src/prefetch.py\", line 30 in worker\n  \
File \"/usr/lib/python3.12/threading.py\", line 1010 in run\n  \
File \"/usr/lib/python3.12/threading.py\", line 1073 in _bootstrap_inner\n  \
File \"/usr/lib/python3.12/threading.py\", line 1030 in _bootstrap\n\n\
Current thread 0x00007f1a00000001 (most recent call first):\n  \
File \"/opt/job/src/lease.py\", line 7 in acquire_lease\n  \
File \"/opt/job/src/main.py\", line 6 in <module>\n";

const MAIN_PY: &str = r#"import os
from lease import acquire_lease

rank = int(os.environ["RANK"])
fd = open("/tmp/lease", "w")
acquire_lease(fd, rank)
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The `stalled_rank` dumps copied into `dir/dumps`, with the source under `dir/src`.
fn job(dir: &Path) -> PathBuf {
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let scenario = repo().join("tests/scenarios/stalled_rank/dumps");
    for entry in std::fs::read_dir(scenario).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dumps.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lease.py"), LEASE_PY).unwrap();
    std::fs::write(dir.join("src/main.py"), MAIN_PY).unwrap();
    dumps
}

/// `analyze --format json`, the job's own files and the scenario's training script mapped.
fn analyze(dumps: &Path, src: &Path) -> Value {
    let scenario_src = repo().join("tests/scenarios/stalled_rank/src");
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(dumps)
        .args(["--format", "json", "--path-map"])
        .arg(format!("/opt/job/src={}", src.display()))
        .arg("--path-map")
        .arg(format!("/tmp/desync-jobs/stalled_rank={}", scenario_src.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn py_spy_steps(json: &Value) -> usize {
    json["next_steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["command"].as_str().is_some_and(|c| c.contains("py-spy")))
        .count()
}

#[test]
fn a_stalled_rank_is_shown_where_its_main_thread_waits() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = job(dir.path());
    let src = dir.path().join("src");
    let without = analyze(&dumps, &src);
    assert_eq!(without["where_ranks_are"], serde_json::json!([]));
    assert_eq!(py_spy_steps(&without), 1, "{}", without["next_steps"]);

    std::fs::write(dumps.join("gloo_trace_rank_2.stacks"), STACKS).unwrap();
    let json = analyze(&dumps, &src);
    assert_eq!(json["verdict"]["category"], "stall");
    let places = json["where_ranks_are"].as_array().unwrap();
    assert_eq!(places.len(), 1, "{places:?}");
    let place = &places[0];
    assert_eq!(place["ranks"], serde_json::json!([2]));
    assert_eq!(place["function"], "acquire_lease");
    assert_eq!(place["line"], 7);
    assert_eq!(place["source"], "fcntl.flock(fd, fcntl.LOCK_EX)");
    // The `if` on the rank it sits in, then the loop around it.
    let within = place["within"].as_array().unwrap();
    assert_eq!((&within[0]["construct"], &within[0]["line"]), (&"if".into(), &6.into()));
    assert!(
        within[0]["dependence"].as_array().unwrap().iter().any(|d| d["kind"] == "rank id"),
        "{within:?}"
    );
    assert_eq!((&within[1]["construct"], &within[1]["line"]), (&"while".into(), &5.into()));
    // Not the helper thread listed first: the main thread's user frames only.
    let frames: Vec<&str> = place["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert_eq!(frames, ["acquire_lease", "<module>"]);
    // The code section says where rank 2 is, beside where the others wait.
    let explanation = json["code"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("wait in `dist.all_reduce(flat)`"), "{explanation}");
    assert!(
        explanation.contains("rank(s) 2 are at lease.py:7 in acquire_lease()"),
        "{explanation}"
    );
    let before = without["code"]["explanation"].as_str().unwrap();
    assert!(before.contains("rank(s) 2 did not reach it"), "{before}");
    // The next steps read the stacks file instead of asking for a py-spy dump.
    assert_eq!(py_spy_steps(&json), 0, "{}", json["next_steps"]);
    let steps = json["next_steps"].to_string();
    assert!(steps.contains("gloo_trace_rank_2.stacks"), "{steps}");

    let text = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(&dumps)
        .arg("--path-map")
        .arg(format!("/opt/job/src={}", src.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Where the late ranks are"), "{text}");
    assert!(
        text.contains("lease.py:7 in acquire_lease(): `fcntl.flock(fd, fcntl.LOCK_EX)`"),
        "{text}"
    );
    assert!(text.contains("inside the `if` at line 6: `if rank % 2 == 0:` (rank id)"), "{text}");

    let html = dir.path().join("report.html");
    let status = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(&dumps)
        .arg("--html")
        .arg(&html)
        .arg("--path-map")
        .arg(format!("/opt/job/src={}", src.display()))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let html = std::fs::read_to_string(html).unwrap();
    assert!(html.contains("<section id=\"where\">"), "no place section");
    assert!(html.contains("<code>fcntl.flock(fd, fcntl.LOCK_EX)</code>"), "no line");
}

#[test]
fn stacks_are_read_only_beside_the_dumps_and_never_through_a_link_out() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = job(dir.path());
    let src = dir.path().join("src");
    // Outside the dump directory, a file a link points to: never read.
    let outside = dir.path().join("elsewhere.stacks");
    std::fs::write(&outside, STACKS).unwrap();
    std::os::unix::fs::symlink(&outside, dumps.join("gloo_trace_rank_2.stacks")).unwrap();
    // In a folder without dumps: not beside rank 2's dump.
    std::fs::create_dir_all(dumps.join("old")).unwrap();
    std::fs::write(dumps.join("old/gloo_trace_rank_2.stacks"), STACKS).unwrap();
    // Larger than the limit: a warning, not read.
    let huge = "x".repeat(9 << 20);
    std::fs::write(dumps.join("gloo_trace_rank_1.stacks"), huge).unwrap();
    let json = analyze(&dumps, &src);
    assert_eq!(json["where_ranks_are"], serde_json::json!([]));
    assert_eq!(json["verdict"]["category"], "stall");
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("stacks file not read"), "{warnings}");
    assert!(warnings.contains("a symlink to a file outside the dump directory"), "{warnings}");
}

/// A rank that died of an uncaught exception: desync's Python side wrote the exception into the
/// first line of its stacks file. `analyze` and `watch --dir` on the same folder both call it a
/// crash of that rank, cite the stacks file's first line, and ask for no py-spy dump of a
/// process that is gone.
#[test]
fn a_rank_whose_stacks_file_says_it_died_is_a_crash_in_analyze_and_in_watch() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = job(dir.path());
    let src = dir.path().join("src");
    let header = "# desync stacks of rank 2 (pid 4242): uncaught KeyError: 'shard_17'\n";
    std::fs::write(dumps.join("gloo_trace_rank_2.stacks"), format!("{header}{STACKS}")).unwrap();

    let json = analyze(&dumps, &src);
    let verdict = &json["verdict"];
    assert_eq!(verdict["category"], "crash", "{verdict}");
    assert_eq!(verdict["culprit_ranks"], serde_json::json!([2]), "{verdict}");
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.contains("KeyError") && headline.contains("(its stacks file)"), "{headline}");
    assert!(json["log"].to_string().contains("gloo_trace_rank_2.stacks"), "{}", json["log"]);
    assert_eq!(py_spy_steps(&json), 0, "{}", json["next_steps"]);

    // The watcher sees the same folder: a progress finding, so it alerts once it held `--lag`.
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .args(["watch", "--dir"])
        .arg(&dumps)
        .args(["--interval", "1", "--lag", "1", "--for", "20", "--exit-on-alert"])
        .args(["--no-save", "--format", "json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let alert: Value = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|event| event["event"] == "alert")
        .unwrap_or_else(|| panic!("no alert: {stdout}"));
    let verdict = &alert["report"]["verdict"];
    assert_eq!(verdict["category"], "crash", "{verdict}");
    assert_eq!(verdict["culprit_ranks"], serde_json::json!([2]), "{verdict}");
    assert!(alert["report"]["log"].to_string().contains("gloo_trace_rank_2.stacks"));
}
