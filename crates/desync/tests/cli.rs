//! The binary's contract on bad and odd input: exit codes (0 healthy, 1 findings, 2 error),
//! messages on stderr, nothing lost (every odd file is a warning), no panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scenario(name: &str) -> PathBuf {
    repo().join("tests/scenarios").join(name)
}

fn desync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_desync")).args(args).output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn missing_path_is_an_error_with_exit_2() {
    let out = desync(&["analyze", "/nonexistent/dumps"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/dumps: no such file or directory"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn directory_without_dumps_explains_what_it_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let out = desync(&["analyze", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none ending in a rank number"), "{}", stderr(&out));
}

#[test]
fn nothing_readable_is_exit_2_naming_the_first_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace_0"), b"").unwrap();
    std::fs::write(dir.path().join("trace_1"), b"garbage!").unwrap();
    let out = desync(&["analyze", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("none of the 2 dump files"), "{}", stderr(&out));
}

/// A real job's dumps plus every kind of junk a dump folder collects: each becomes a
/// warning and the verdict on the real dumps stays the same.
#[test]
fn junk_files_become_warnings_and_do_not_change_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let src = scenario("early_stop/dumps");
    for r in 0..4 {
        std::fs::copy(
            src.join(format!("gloo_trace_rank_{r}")),
            dir.path().join(format!("gloo_trace_rank_{r}")),
        )
        .unwrap();
    }
    let real = std::fs::read(src.join("gloo_trace_rank_0")).unwrap();
    std::fs::write(dir.path().join("gloo_trace_rank_4"), b"").unwrap(); // empty: a writer that died
    std::fs::write(dir.path().join("gloo_trace_rank_5"), &real[..real.len() / 2]).unwrap(); // truncated
    std::fs::write(dir.path().join("gloo_trace_rank_6"), b"#!/bin/sh\necho not a dump\n").unwrap(); // foreign
    std::fs::write(dir.path().join("gloo_trace_rank_0.pipe"), b"").unwrap(); // FR's pipe trigger
    let mut dup = dir.path().to_path_buf();
    dup.push("copy");
    std::fs::create_dir(&dup).unwrap();
    std::fs::copy(src.join("gloo_trace_rank_1"), dup.join("gloo_trace_rank_1")).unwrap(); // duplicate rank

    let out = desync(&["analyze", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json = json_of(&out);
    assert_eq!(json["verdict"]["category"], "divergence");
    assert_eq!(json["verdict"]["culprit_ranks"], serde_json::json!([3]));
    let kinds: Vec<&str> =
        json["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    let messages: Vec<String> =
        json["warnings"].as_array().unwrap().iter().map(std::string::ToString::to_string).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "unreadable").count(), 3, "{messages:#?}");
    assert!(kinds.contains(&"skipped"), "{messages:#?}");
    assert!(kinds.contains(&"duplicate_rank"), "{messages:#?}");
    let all = messages.join("\n");
    assert!(all.contains("empty file"), "{all}");
    assert!(all.contains("truncated or corrupt pickle") && all.contains("at byte"), "{all}");
    assert!(all.contains("not a Flight Recorder dump"), "{all}");
}

#[test]
fn single_file_and_prefix_selection() {
    let hang = scenario("nccl_h100_hang/dumps/nccl_trace_rank_0");
    let out = desync(&["analyze", hang.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["verdict"]["category"], "gpu_hang");

    let dumps = scenario("early_stop/dumps");
    let out =
        desync(&["analyze", dumps.to_str().unwrap(), "--prefix", "nccl_", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "no file matches that prefix: {}", stderr(&out));
    assert!(stderr(&out).contains("none named `nccl_<rank>`"), "{}", stderr(&out));
}

#[test]
fn invalid_options_are_exit_2() {
    let dumps = scenario("healthy/dumps");
    let out = desync(&["analyze", dumps.to_str().unwrap(), "--path-map", "no-equals-sign"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected FROM=TO"));
    let out = desync(&["analyze", dumps.to_str().unwrap(), "--source-root", "/nonexistent/src"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"));
}

#[test]
fn healthy_is_exit_0_and_text_has_no_colour_off_a_tty() {
    let out = desync(&["analyze", scenario("healthy/dumps").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("desync: HEALTHY"), "{text}");
    assert!(!text.contains('\x1b'), "no ANSI escapes when stdout is not a terminal");
    let forced =
        desync(&["analyze", scenario("healthy/dumps").to_str().unwrap(), "--color", "always"]);
    assert!(String::from_utf8_lossy(&forced.stdout).contains('\x1b'));
}

#[test]
fn quiet_prints_one_line() {
    let out = desync(&["analyze", scenario("stalled_rank/dumps").to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("stall: "), "{text}");
}

#[test]
fn closed_stdout_pipe_is_not_an_error() {
    // The reader is gone before desync starts (`desync analyze ... | head -0` whose `head`
    // already left), so every write meets a closed pipe. (Closing the read end after the
    // spawn raced desync's write into the pipe's buffer on a loaded machine.)
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_desync"))
        .args(["analyze", scenario("early_stop_8/dumps").to_str().unwrap(), "--format", "json"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn emit_probes_writes_a_diff_against_the_local_source() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::copy(scenario("early_stop/src/train.py"), src.join("train.py")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .current_dir(dir.path())
        .args([
            "analyze",
            scenario("early_stop/dumps").to_str().unwrap(),
            "--source-root",
            "src",
            "--emit-probes",
            "probes.diff",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let diff = std::fs::read_to_string(dir.path().join("probes.diff")).unwrap();
    assert!(diff.starts_with("--- a/src/train.py\n+++ b/src/train.py\n@@ -"), "{diff}");
    // Inserted before the `if` at line 99, with its indentation.
    assert!(
        diff.contains("+            # desync probe: do all ranks take the same decision here?\n"),
        "{diff}"
    );
    // The condition is evaluated once, as code, for both the consensus and the decision log.
    assert_eq!(
        diff.matches("+            _desync_decision = bool((val_loss < args.target_loss))\n")
            .count(),
        1,
        "{diff}"
    );
    assert!(diff.contains("+            _desync_flag = _desync_torch.tensor([int(_desync_decision)], dtype=_desync_torch.int64)\n"), "{diff}");
    // The probe brings its own imports, under names the file cannot already use.
    assert!(
        diff.contains(
            "+            import torch as _desync_torch, torch.distributed as _desync_dist\n"
        ),
        "{diff}"
    );
    assert!(diff.contains("_desync_dist.ReduceOp.MIN"), "{diff}");
}

/// An `all_to_all` whose totals do not add up (`tests/frameworks/moe_alltoall_router_splits`):
/// with the project in view, the split sizes are followed out of the autograd Function and
/// up the module frames to the line that computed them from the rank's own tokens; with only
/// the collective's file in view, nothing decides them, and the explanation says which
/// metadata Flight Recorder does not record.
#[test]
fn all_to_all_splits_are_followed_to_their_origin_or_said_to_be_unrecorded() {
    let case = repo().join("tests/frameworks/moe_alltoall_router_splits");
    let dumps = case.join("dumps");
    let analyze = |root: &Path| {
        json_of(&desync(&[
            "analyze",
            dumps.to_str().unwrap(),
            "--format",
            "json",
            "--source-root",
            root.to_str().unwrap(),
        ]))
    };
    let full = analyze(&case.join("src"));
    let branch = &full["code"]["branch"];
    assert!(branch["file"].as_str().unwrap().ends_with("moe/layer.py"), "{branch:#}");
    assert_eq!(branch["line"], 43, "{branch:#}");
    assert_eq!(full["code"]["candidates"][0]["origin"], "value_origin");
    let evidence = full["code"]["candidates"][0]["evidence_for"].to_string();
    assert!(evidence.contains("passed at step.py:19"), "{evidence}");

    let only_call = tempfile::tempdir().unwrap();
    std::fs::create_dir(only_call.path().join("moe")).unwrap();
    std::fs::copy(case.join("src/moe/comm.py"), only_call.path().join("moe/comm.py")).unwrap();
    let partial = analyze(only_call.path());
    assert_eq!(partial["code"]["candidates"][0]["origin"], "call", "{:#}", partial["code"]);
    let explanation = partial["code"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("not its split sizes"), "{explanation}");
}
