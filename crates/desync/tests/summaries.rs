//! `desync summarize` through the real binary. The contract: analyzing the summaries gives the
//! same analysis as analyzing the dumps (the whole JSON report, the input directory's own path
//! aside), for every real scenario and for generated NCCL jobs with each kind of fault; bad
//! summaries are warnings that say what is wrong, never panics.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use desync_synth::{Fault, Format, Plan, Spec, TailState, parse_groups, write_dir};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn desync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_desync")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn summarize(inputs: &[&Path], out: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.arg("summarize").args(inputs).arg("-o").arg(out);
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "summarize: {}", text(&output.stderr));
    output
}

/// `analyze --format json`, with `input.path` removed and the directory's name taken out of
/// the next steps' commands: what names the directory analyzed rather than what is in it.
fn analysis(dir: &Path, source_root: Option<&Path>) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.arg("analyze").arg(dir).args(["--format", "json"]);
    if let Some(root) = source_root {
        cmd.arg("--source-root").arg(root);
    }
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "{}: exit {code}: {}", dir.display(), text(&out.stderr));
    let mut json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["input"].as_object_mut().unwrap().remove("path");
    let input = dir.to_string_lossy().into_owned();
    for step in json["next_steps"].as_array_mut().unwrap() {
        if let Some(command) = step["command"].as_str() {
            step["command"] = Value::from(command.replace(&input, "<input>"));
        }
    }
    (code, json)
}

/// Summarizes `dumps` and checks the two analyses are the same.
fn assert_same_analysis(dumps: &Path, source_root: Option<&Path>, label: &str) {
    let out = tempfile::tempdir().unwrap();
    summarize(&[dumps], out.path());
    let (code_dumps, from_dumps) = analysis(dumps, source_root);
    let (code_summaries, from_summaries) = analysis(out.path(), source_root);
    assert_eq!(code_dumps, code_summaries, "{label}: exit codes differ");
    assert!(
        from_dumps == from_summaries,
        "{label}: analyses differ\n--- dumps\n{}\n--- summaries\n{}",
        serde_json::to_string_pretty(&from_dumps).unwrap(),
        serde_json::to_string_pretty(&from_summaries).unwrap()
    );
}

#[test]
fn every_scenario_analyzes_the_same_from_its_summaries() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("dumps").is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 10, "expected the committed scenarios, found {}", dirs.len());
    for dir in dirs {
        let src = dir.join("src");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert_same_analysis(&dir.join("dumps"), src.is_dir().then_some(src.as_path()), &name);
    }
}

fn generated(fault: &str, format: Format, dir: &Path) {
    let mut spec = Spec::new(16, 300);
    spec.groups = parse_groups("tp=4,dp").unwrap();
    spec.frames = true;
    spec.seed = 11;
    spec.fault = fault.parse::<Fault>().unwrap();
    if matches!(spec.fault, Fault::None | Fault::Straggler { .. }) {
        spec.tail = TailState::Completed;
    }
    write_dir(&Plan::new(&spec).unwrap(), dir, "nccl_trace_rank_", format).unwrap();
}

#[test]
fn generated_nccl_faults_analyze_the_same_from_their_summaries() {
    let faults = [
        "none",
        "divergence:ranks=5+6,seq=100",
        "mismatch:ranks=9,seq=100",
        "stall:ranks=3,seq=100",
        "gpuhang:ranks=12,seq=100",
        "crash:ranks=10",
        "straggler:rank=7,ms=60",
    ];
    for fault in faults {
        for format in [Format::Pickle, Format::Json] {
            let dumps = tempfile::tempdir().unwrap();
            generated(fault, format, dumps.path());
            assert_same_analysis(dumps.path(), None, &format!("{fault} ({format:?})"));
        }
    }
}

#[test]
fn summaries_and_dumps_mix_in_one_directory() {
    let dumps = tempfile::tempdir().unwrap();
    generated("divergence:ranks=5,seq=60", Format::Pickle, dumps.path());
    let summaries = tempfile::tempdir().unwrap();
    summarize(&[dumps.path()], summaries.path());
    // Half summaries, half dumps: each file is read by what it contains.
    let mixed = tempfile::tempdir().unwrap();
    for rank in 0..16 {
        let (from, name) = if rank < 8 {
            (summaries.path(), format!("nccl_trace_rank_{rank}.desync"))
        } else {
            (dumps.path(), format!("nccl_trace_rank_{rank}"))
        };
        std::fs::copy(from.join(&name), mixed.path().join(&name)).unwrap();
    }
    assert_eq!(analysis(mixed.path(), None), analysis(dumps.path(), None));

    // A rank present twice, as dump and as summary, is the usual duplicate: one is used, the
    // other named in a warning.
    std::fs::copy(dumps.path().join("nccl_trace_rank_3"), mixed.path().join("nccl_trace_rank_3"))
        .unwrap();
    let (_, json) = analysis(mixed.path(), None);
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("rank 3 has two dumps"), "{warnings}");
    assert_eq!(json["verdict"], analysis(dumps.path(), None).1["verdict"]);
}

#[test]
fn unreadable_dumps_stay_warnings_with_their_original_path() {
    let dumps = tempfile::tempdir().unwrap();
    generated("none", Format::Pickle, dumps.path());
    std::fs::write(dumps.path().join("nccl_trace_rank_16"), b"").unwrap();
    std::fs::write(dumps.path().join("nccl_trace_rank_17"), b"garbage!").unwrap();
    std::fs::write(dumps.path().join("nccl_trace_rank_18.pipe"), b"").unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = summarize(&[dumps.path()], out.path());
    let stderr = text(&run.stderr);
    assert!(stderr.contains("nccl_trace_rank_16: empty file"), "{stderr}");
    assert!(stderr.contains("nccl_trace_rank_17: not a Flight Recorder dump"), "{stderr}");
    assert!(stderr.contains(".pipe` files are FR triggers"), "{stderr}");
    let stdout = text(&run.stdout);
    assert!(stdout.starts_with("summarized 18 dump(s) (2 of them unreadable"), "{stdout}");
    assert!(stdout.contains("x smaller"), "{stdout}");

    let (_, from_summaries) = analysis(out.path(), None);
    let (_, from_dumps) = analysis(dumps.path(), None);
    let unreadable = |json: &Value| -> Vec<Value> {
        json["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["kind"] == "unreadable")
            .cloned()
            .collect()
    };
    assert_eq!(unreadable(&from_summaries).len(), 2);
    assert_eq!(unreadable(&from_summaries), unreadable(&from_dumps));
    assert_eq!(from_summaries["verdict"], from_dumps["verdict"]);
}

fn one_summary() -> (tempfile::TempDir, tempfile::TempDir) {
    let dumps = tempfile::tempdir().unwrap();
    generated("none", Format::Pickle, dumps.path());
    let out = tempfile::tempdir().unwrap();
    summarize(&[dumps.path()], out.path());
    (dumps, out)
}

#[test]
fn unknown_format_version_is_named_in_the_warning() {
    let (_dumps, out) = one_summary();
    let path = out.path().join("nccl_trace_rank_2.desync");
    let bytes = std::fs::read(&path).unwrap();
    let newer = [b"desync-summary 9".as_slice(), &bytes[b"desync-summary 1".len()..]].concat();
    std::fs::write(&path, newer).unwrap();
    let (_, json) = analysis(out.path(), None);
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("format version 9, but this desync reads version 1"), "{warnings}");
    assert_eq!(json["input"]["missing_ranks"], serde_json::json!([2]));

    // Alone, it is the only file: nothing readable is an error (exit 2), with the reason.
    let alone = desync(&["analyze", path.to_str().unwrap()]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(text(&alone.stderr).contains("format version 9"), "{}", text(&alone.stderr));
}

#[test]
fn truncated_and_corrupt_summaries_are_warnings_not_panics() {
    let (_dumps, out) = one_summary();
    let path = |rank: u32| out.path().join(format!("nccl_trace_rank_{rank}.desync"));
    let bytes = std::fs::read(path(4)).unwrap();
    std::fs::write(path(4), &bytes[..bytes.len() / 2]).unwrap();
    let mut flipped = std::fs::read(path(5)).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    std::fs::write(path(5), flipped).unwrap();
    std::fs::write(path(6), b"desync-summary 1\n").unwrap();

    let out = desync(&["analyze", out.path().to_str().unwrap(), "--format", "json"]);
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings: Vec<String> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "unreadable")
        .map(|w| w["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings.iter().all(|w| w.starts_with("unreadable summary: ")), "{warnings:?}");
    assert_eq!(json["input"]["missing_ranks"], serde_json::json!([4, 5, 6]));
}

#[test]
fn summaries_written_into_the_input_are_not_summarized_again() {
    let dumps = tempfile::tempdir().unwrap();
    generated("none", Format::Json, dumps.path());
    let from_dumps = analysis(dumps.path(), None);
    let inside = dumps.path().join("summaries");
    summarize(&[dumps.path()], &inside);
    let again = summarize(&[dumps.path()], &inside);
    assert!(text(&again.stdout).starts_with("summarized 16 dump(s)"), "{}", text(&again.stdout));
    assert_eq!(std::fs::read_dir(&inside).unwrap().count(), 16);
    // Summarizing summaries keeps pointing at the dumps.
    let twice = tempfile::tempdir().unwrap();
    summarize(&[inside.as_path()], twice.path());
    assert_eq!(analysis(twice.path(), None), from_dumps);
}

#[test]
fn several_inputs_go_to_one_output_and_a_missing_input_is_an_error() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    generated("none", Format::Pickle, a.path());
    // Node b holds ranks 8-15, node a ranks 0-7.
    for rank in 8..16 {
        let name = format!("nccl_trace_rank_{rank}");
        std::fs::rename(a.path().join(&name), b.path().join(&name)).unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    summarize(&[a.path(), b.path()], out.path());
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 16);

    let missing = desync(&["summarize", "/nonexistent/dumps", "-o", out.path().to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no such file or directory"));
}
