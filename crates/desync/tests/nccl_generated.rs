//! NCCL-only states that a CPU Gloo job cannot produce (started/completed states, a kernel
//! that never starts, coalesced ops, p2p batches, subgroups, ring buffers that wrapped) are
//! generated with `desync_synth`, which follows the real NCCL bytes, and analysed through the
//! real binary: each injected fault must come out as its category with its culprit ranks,
//! in pickle and in JSON.

use std::path::Path;
use std::process::Command;

use desync_synth::{Fault, Format, Plan, Spec, TailState, parse_groups, write_dir};
use serde_json::Value;

const WORLD: u32 = 16;

fn analyze(dir: &Path) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("analyze")
        .arg(dir)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(code == 0 || code == 1, "exit {code}: {}", String::from_utf8_lossy(&out.stderr));
    (code, serde_json::from_slice(&out.stdout).unwrap())
}

fn verdict_for(fault: &str, format: Format) -> (String, Vec<u64>, Value) {
    let mut spec = Spec::new(WORLD, 400);
    spec.groups = parse_groups("tp=4,dp").unwrap();
    spec.frames = true;
    spec.seed = 7;
    spec.fault = fault.parse::<Fault>().unwrap();
    // A dump taken mid-run catches the newest op in flight on every rank, which no dump field
    // tells apart from a hang (FR records no dump time); healthy and straggler runs are
    // dumped drained, as after a finished job or a timeout elsewhere.
    if matches!(spec.fault, Fault::None | Fault::Straggler { .. }) {
        spec.tail = TailState::Completed;
    }
    let plan = Plan::new(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_dir(&plan, dir.path(), "nccl_trace_rank_", format).unwrap();
    let (_, json) = analyze(dir.path());
    let v = &json["verdict"];
    let culprits =
        v["culprit_ranks"].as_array().unwrap().iter().map(|r| r.as_u64().unwrap()).collect();
    (v["category"].as_str().unwrap().to_owned(), culprits, json)
}

fn check(fault: &str, category: &str, culprits: &[u64]) {
    for format in [Format::Pickle, Format::Json] {
        let (got, ranks, json) = verdict_for(fault, format);
        assert_eq!(
            (got.as_str(), ranks.as_slice()),
            (category, culprits),
            "{fault} ({format:?}): {}",
            json["verdict"]["headline"]
        );
    }
}

#[test]
fn healthy_generated_job() {
    check("none", "healthy", &[]);
}

#[test]
fn divergence_on_two_ranks() {
    check("divergence:ranks=5+6,seq=100", "divergence", &[5, 6]);
}

#[test]
fn metadata_mismatch_on_one_rank() {
    check("mismatch:ranks=9,seq=100", "metadata_mismatch", &[9]);
}

#[test]
fn stall_of_one_rank() {
    check("stall:ranks=3,seq=100", "stall", &[3]);
}

#[test]
fn gpu_hang_where_the_kernel_never_started() {
    check("gpuhang:ranks=12,seq=100", "gpu_hang", &[12]);
}

#[test]
fn crash_of_one_rank() {
    check("crash:ranks=10", "crash", &[10]);
}

#[test]
fn straggler_rank() {
    check("straggler:rank=7,ms=60", "straggler", &[7]);
}

#[test]
fn a_job_dumped_half_at_a_time_names_the_ranks_that_wait_for_the_others() {
    // Ranks 0-7 dumped five collectives before ranks 8-15 (a job read while it runs, one half
    // after the other): each half is still in its own newest collective, so the ranks blamed
    // are themselves stuck, and the headline must say the *other* ranks wait, where they wait.
    let dumped = |history: u64| {
        let mut spec = Spec::new(WORLD, 400);
        spec.history = Some(history);
        spec.seed = 7;
        let dir = tempfile::tempdir().unwrap();
        write_dir(&Plan::new(&spec).unwrap(), dir.path(), "nccl_trace_rank_", Format::Pickle)
            .unwrap();
        dir
    };
    let (early, late) = (dumped(600), dumped(605));
    let mixed = tempfile::tempdir().unwrap();
    for rank in 0..WORLD {
        let from = if rank < WORLD / 2 { &early } else { &late };
        let name = format!("nccl_trace_rank_{rank}");
        std::fs::copy(from.path().join(&name), mixed.path().join(&name)).unwrap();
    }
    let (_, json) = analyze(mixed.path());
    let verdict = &json["verdict"];
    assert_eq!(verdict["category"], "stall", "{verdict}");
    assert_eq!(verdict["culprit_ranks"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.starts_with("rank(s) 8-15 wait in "), "{headline}");
    assert!(headline.contains("seq 605 "), "where the later half waits: {headline}");
}

/// Healthy jobs heavy in p2p batches whose ring buffers wrapped at different points on
/// different ranks: no p2p op may read unmatched (counting each channel from each rank's own
/// oldest op paired sends with later recvs), and the verdict stays healthy.
#[test]
fn p2p_pairing_follows_each_ranks_ring_buffer() {
    for seed in 1..=6 {
        for tail in [TailState::Completed, TailState::Started] {
            let mut spec = Spec::new(8, 300);
            spec.groups = parse_groups("tp=2,dp").unwrap();
            spec.ops = desync_synth::OpMix::parse("p2p=5").unwrap();
            spec.seed = seed;
            spec.tail = tail;
            let plan = Plan::new(&spec).unwrap();
            let dir = tempfile::tempdir().unwrap();
            write_dir(&plan, dir.path(), "nccl_trace_rank_", Format::Pickle).unwrap();
            let (_, json) = analyze(dir.path());
            assert_eq!(json["p2p_mismatches"], serde_json::json!([]), "seed {seed} {tail:?}");
            if tail == TailState::Completed {
                assert_eq!(json["verdict"]["category"], "healthy", "seed {seed}");
            }
        }
    }
}
