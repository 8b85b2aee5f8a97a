//! A process group created on some ranks only (`diagnose/group_creation.rs`). Every rank of
//! the default group must enter `new_group`; ranks that skip one name every later group
//! differently from their peers, and the next group created everywhere hangs in its
//! rendezvous, which Flight Recorder never records: every recorded collective agrees. The
//! dumps still show it: the ranks that created the group issued on it (a counter name), and
//! the others' `pg_config` is Gloo's single world item, written before a process creates any
//! sub-group. Dumps and project are this test's own (six ranks; the even ranks build a
//! "leaders" group under a rank test), written to a temporary folder.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const SETUP: &str = "\
import torch.distributed as dist


def leaders_group(rank, world):
    if rank % 2 == 0:
        group = dist.new_group(ranks=list(range(0, world, 2)))
        dist.all_reduce(probe(), group=group)
        return group
    return None


def probe():
    import torch
    return torch.ones(1)
";

const TRAIN: &str = "\
import torch
import torch.distributed as dist

from mesh.setup import leaders_group


def main():
    dist.init_process_group(\"gloo\")
    rank, world = dist.get_rank(), dist.get_world_size()
    for step in range(3):
        dist.all_reduce(torch.ones(8))
    leaders_group(rank, world)
    summary = dist.new_group(backend=\"gloo\")
";

const WORLD: u32 = 6;

fn entry(seq: u64, record: u64, group: &str, frames: Value) -> Value {
    json!({
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "record_id": record,
        "pg_id": if group == "0" { 0 } else { 1 }, "process_group": [group, ""],
        "profiling_name": "gloo:all_reduce", "is_p2p": false,
        "input_sizes": [[8]], "output_sizes": [[8]],
        "input_dtypes": ["Float"], "output_dtypes": ["Float"],
        "state": "completed", "retired": true,
        "time_created_ns": 1_000_000_000 + record * 1_000_000, "timeout_ms": 30_000,
        "frames": frames,
    })
}

/// Three world all_reduces on every rank; the ranks in `creators` also one all_reduce on the
/// sub-group named `sub`. `pg_config` as Gloo in torch 2.11 writes it: the world's ranks
/// while the process has no sub-group, "[]" once it has one (`with_sub_group`).
fn job(creators: &[u32], with_sub_group: &[u32], sub: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let world_list = format!("{:?}", (0..WORLD).collect::<Vec<_>>());
    for rank in 0..WORLD {
        let mut entries: Vec<Value> = (1..=3)
            .map(|seq| {
                entry(
                    seq,
                    seq - 1,
                    "0",
                    json!([{"name": "main", "filename": "/srv/ranker/train.py", "line": 11}]),
                )
            })
            .collect();
        let mut status = json!({"0": {
            "last_enqueued_collective": "3", "last_started_collective": "-1",
            "last_completed_collective": "3",
        }});
        if creators.contains(&rank) {
            entries.push(entry(
                1,
                3,
                sub,
                json!([
                    {"name": "leaders_group", "filename": "/srv/ranker/mesh/setup.py", "line": 7},
                    {"name": "main", "filename": "/srv/ranker/train.py", "line": 12},
                ]),
            ));
            status["1"] = json!({
                "last_enqueued_collective": "1", "last_started_collective": "-1",
                "last_completed_collective": "1",
            });
        }
        let ranks =
            if with_sub_group.contains(&rank) { "[]".to_owned() } else { world_list.clone() };
        let dump = json!({
            "version": "2.10", "comm_lib_version": "",
            "pg_config": {"": {"name": "", "desc": "", "ranks": ranks}},
            "pg_status": status,
            "entries": entries,
        });
        std::fs::write(dumps.join(format!("trace_rank_{rank}")), dump.to_string()).unwrap();
    }
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("mesh")).unwrap();
    std::fs::write(src.join("mesh/setup.py"), SETUP).unwrap();
    std::fs::write(src.join("mesh/__init__.py"), "").unwrap();
    std::fs::write(src.join("train.py"), TRAIN).unwrap();
    dir
}

fn analyze(dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .args(["analyze", "--format", "json"])
        .arg(dir.join("dumps"))
        .arg("--source-root")
        .arg(dir.join("src"))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn culprits(report: &Value) -> Vec<u64> {
    report["verdict"]["culprit_ranks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect()
}

#[test]
fn a_sub_group_only_some_ranks_created_is_a_divergence_at_the_rank_test() {
    let even = [0, 2, 4];
    let report = analyze(job(&even, &even, "1").path());
    let verdict = &report["verdict"];
    assert_eq!(verdict["category"], "divergence", "{verdict:#}");
    assert_eq!(culprits(&report), vec![0, 2, 4]);
    assert_eq!(verdict["collective_seq_id"], Value::Null, "no recorded collective differs");
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.contains("never created") && headline.contains("1,3,5"), "{headline}");
    let branch = &report["code"]["branch"];
    assert_eq!(
        (branch["construct"].as_str(), branch["line"].as_u64()),
        (Some("if"), Some(5)),
        "{branch:#}"
    );
}

#[test]
fn a_sub_group_every_rank_created_or_a_locally_synchronized_one_is_healthy() {
    // Every rank entered new_group; only the even ranks are members and use it.
    let report = analyze(job(&[0, 2, 4], &[0, 1, 2, 3, 4, 5], "1").path());
    assert_eq!(report["verdict"]["category"], "healthy", "{:#}", report["verdict"]);
    // use_local_synchronization=True: the group's name is a hash, non-members need not enter.
    let hashed = "7d2c9e4b1a0f3e5d";
    let report = analyze(job(&[0, 2, 4], &[0, 2, 4], hashed).path());
    assert_eq!(report["verdict"]["category"], "healthy", "{:#}", report["verdict"]);
}
