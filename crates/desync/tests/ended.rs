//! Culprits of a stall that ended rather than hang (`logs/ended.rs`): a rank that left its
//! training loop early on a condition of its own data and exited cleanly, its collectives
//! having paired one for one with its peers' until it ran out. The dumps alone read a stall;
//! the log shows the waiters failing on a peer's exit and the culprit failing on nothing, so
//! the verdict is a divergence of that rank with no seq, and the code is the guarded jump that
//! made it issue fewer collectives. With a timeout in the log, or without the culprit's own
//! lines, it stays a stall. Dumps, logs and project are this test's own (three ranks, a
//! `break` on an exhausted shard), written to a temporary folder.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const FIT: &str = "\
import torch.distributed as dist


def fit(model, shard, optimizer):
    steps = 0
    for batch in shard.batches():
        if batch is None:
            break
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        sync(model)
        steps += 1
    return steps


def sync(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
";

const TRAIN: &str = "\
import torch.distributed as dist

from trainer.fit import fit


def main(model, shard, optimizer):
    dist.init_process_group(\"gloo\")
    steps = fit(model, shard, optimizer)
    print(f\"rank {dist.get_rank()}: {steps} steps\", flush=True)
";

const CLOSED: &str = "\
step 1 loss 0.91
step 2 loss 0.77
step 3 loss 0.70
Traceback (most recent call last):
  File \"/srv/shop/train.py\", line 8, in main
    steps = fit(model, shard, optimizer)
  File \"/srv/shop/trainer/fit.py\", line 20, in sync
    dist.all_reduce(p.grad)
RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:547] Connection closed by peer [10.1.0.7]:4410
";

const ENDED: &str = "step 1 loss 0.93\nstep 2 loss 0.80\nstep 3 loss 0.71\nrank 1: 3 steps\n";

/// One Gloo-style JSON dump per rank: one world all_reduce per step from `sync`, rank 1
/// three steps and ranks 0 and 2 four (their fourth still waiting), and each rank's logs.
fn job(logs: &[(u32, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let steps = [4u64, 3, 4];
    for (rank, &n) in steps.iter().enumerate() {
        let entries: Vec<Value> = (1..=n)
            .map(|seq| {
                json!({
                    "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "record_id": seq - 1,
                    "pg_id": 0, "process_group": ["0", "default_pg"],
                    "profiling_name": "gloo:all_reduce", "is_p2p": false,
                    "input_sizes": [[4096]], "output_sizes": [[4096]],
                    "input_dtypes": ["Float"], "output_dtypes": ["Float"],
                    "state": "scheduled", "retired": true,
                    "time_created_ns": 1_000_000_000 + seq * 1_000_000, "timeout_ms": 600_000,
                    "frames": [
                        {"name": "sync", "filename": "/srv/shop/trainer/fit.py", "line": 20},
                        {"name": "fit", "filename": "/srv/shop/trainer/fit.py", "line": 12},
                        {"name": "main", "filename": "/srv/shop/train.py", "line": 8},
                    ],
                })
            })
            .collect();
        // The culprit completed everything it issued; the waiters' last is still open.
        let completed = if rank == 1 { n } else { n - 1 };
        let dump = json!({
            "version": "2.10", "comm_lib_version": "",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
            "pg_status": {"0": {
                "last_enqueued_collective": n.to_string(),
                "last_started_collective": "-1",
                "last_completed_collective": completed.to_string(),
            }},
            "entries": entries,
        });
        std::fs::write(dumps.join(format!("trace_rank_{rank}")), dump.to_string()).unwrap();
    }
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("trainer")).unwrap();
    std::fs::write(src.join("trainer/fit.py"), FIT).unwrap();
    std::fs::write(src.join("trainer/__init__.py"), "").unwrap();
    std::fs::write(src.join("train.py"), TRAIN).unwrap();
    let logs_dir = dir.path().join("logs");
    std::fs::create_dir_all(&logs_dir).unwrap();
    for (rank, text) in logs {
        std::fs::write(logs_dir.join(format!("rank_{rank}.log")), text).unwrap();
    }
    dir
}

fn analyze(dir: &Path) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.args(["analyze", "--format", "json"])
        .arg(dir.join("dumps"))
        .arg("--source-root")
        .arg(dir.join("src"));
    let mut logs: Vec<_> =
        std::fs::read_dir(dir.join("logs")).unwrap().map(|e| e.unwrap().path()).collect();
    logs.sort();
    for log in logs {
        cmd.arg("--log").arg(log);
    }
    let out = cmd.output().unwrap();
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
fn a_rank_that_ended_short_of_its_peers_is_a_divergence_at_its_jump() {
    let dir = job(&[(0, CLOSED), (1, ENDED), (2, CLOSED)]);
    let report = analyze(dir.path());
    let verdict = &report["verdict"];
    assert_eq!(verdict["category"], "divergence", "{verdict:#}");
    assert_eq!(culprits(&report), vec![1]);
    assert_eq!(verdict["collective_seq_id"], Value::Null, "no seq shows where they parted");
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.contains("ended their run having issued fewer collectives"), "{headline}");
    let evidence = report.to_string();
    assert!(
        evidence.contains("issued up to seq 3") && evidence.contains("up to seq 4"),
        "{evidence}"
    );
    assert_eq!(report["log"]["upgrade"]["from"], "stall");
    assert_eq!(report["log"]["upgrade"]["to"], "divergence");
    let branch = &report["code"]["branch"];
    assert_eq!(
        (branch["construct"].as_str(), branch["line"].as_u64()),
        (Some("break"), Some(8)),
        "{branch:#}"
    );
    assert_eq!(branch["condition"], "batch is None", "{branch:#}");
}

#[test]
fn a_timeout_or_a_silent_culprit_keeps_the_stall() {
    // A waiter that timed out: in a true stall the first waiter times out, and its own exit
    // is what the others see close. Nothing says the culprit ended.
    let timed_out = CLOSED.replace(
        "Connection closed by peer [10.1.0.7]:4410",
        "Timed out waiting 30000ms for recv operation to complete",
    );
    let report = analyze(job(&[(0, &timed_out), (1, ENDED), (2, CLOSED)]).path());
    assert_eq!(report["verdict"]["category"], "stall", "{:#}", report["verdict"]);
    assert_eq!(culprits(&report), vec![1]);
    assert!(report["log"]["upgrade"].is_null());

    // The culprit's own log is not there: whether it ended or hangs is not in the evidence.
    let report = analyze(job(&[(0, CLOSED), (2, CLOSED)]).path());
    assert_eq!(report["verdict"]["category"], "stall", "{:#}", report["verdict"]);

    // No log at all: the dumps' stall.
    let report = analyze(job(&[]).path());
    assert_eq!(report["verdict"]["category"], "stall", "{:#}", report["verdict"]);
}
