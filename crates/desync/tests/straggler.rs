//! A straggler's report says where its time goes. The straggler scenario's rank 2 reads its
//! shard from a slow tier inside the data loader (the job's design, tests/scenarios/straggler):
//! its extra time falls between the previous step's last collective (`dist.all_reduce(stats)`)
//! and the next step's gradient `all_reduce`, and the code shown is the loop body's call that it
//! reaches late.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/straggler")
}

/// 1-based line of the first source line that starts (after its indent) with `needle`.
fn line_of(source: &str, needle: &str) -> u64 {
    source.lines().position(|l| l.trim_start().starts_with(needle)).expect(needle) as u64 + 1
}

#[test]
fn the_straggler_report_names_the_interval_where_time_is_lost() {
    let dir = scenario();
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(dir.join("dumps"))
        .arg("--source-root")
        .arg(dir.join("src"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let source = std::fs::read_to_string(dir.join("src/train.py")).unwrap();

    assert_eq!(report["verdict"]["category"], "straggler");
    let interval = &report["straggler"]["slow_interval"];
    assert_eq!(interval["from"]["call_site"]["line"], line_of(&source, "dist.all_reduce(stats)"));
    assert_eq!(interval["to"]["call_site"]["function"], "allreduce_gradients");
    assert!(interval["mean_extra_ms"].as_f64().unwrap() > 100.0, "{interval}");
    assert!(interval["share_of_extra"].as_f64().unwrap() > 0.5, "{interval}");

    let branch = &report["code"]["branch"];
    assert_eq!(branch["line"], line_of(&source, "allreduce_gradients(model, world_size)"));
    let snippet: Vec<&str> = report["code"]["snippet"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    // The loop header (where the data loader yields) is inside the code shown.
    assert!(snippet.iter().any(|l| l.trim_start().starts_with("for step")), "{snippet:#?}");
    assert!(
        report["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| { e.as_str().unwrap().contains("loses its time between") })
    );
}
