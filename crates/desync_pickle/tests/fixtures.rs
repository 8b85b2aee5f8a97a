//! Decodes real Flight Recorder dumps (torch 2.11 C++ pickler, NCCL, one H100)
//! and checks values against what Python's `pickle.load` returned for the
//! same files (expected values were read off once with
//! `.venv/bin/python -c 'import pickle; ...'` and written down here).
//!
//! Invariant checked beyond values: memoized frame dicts decode to shared
//! nodes, exactly as many distinct ones as Python has distinct dict objects.

#![allow(clippy::float_cmp, reason = "decoded floats must equal Python's bit for bit")]

use std::collections::HashSet;

use desync_pickle::{Kind, Value, parse};

const HANG: &[u8] = include_bytes!("data/nccl_hang_rank_0");
const HEALTHY: &[u8] = include_bytes!("data/nccl_healthy.pkl");

const ENTRY_KEYS: [&str; 22] = [
    "frames",
    "record_id",
    "pg_id",
    "process_group",
    "thread_name",
    "thread_id",
    "collective_seq_id",
    "p2p_seq_id",
    "op_id",
    "profiling_name",
    "time_created_ns",
    "duration_ms",
    "input_sizes",
    "input_dtypes",
    "output_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "retired",
    "timeout_ms",
    "is_p2p",
];

fn keys(v: Value<'_>) -> Vec<&str> {
    v.items().map(|(k, _)| k.as_str().unwrap()).collect()
}

fn int(v: Value<'_>, key: &str) -> i64 {
    v.get(key).and_then(|x| x.as_i64()).unwrap_or_else(|| panic!("{key}"))
}

fn string<'p>(v: Value<'p>, key: &str) -> &'p str {
    v.get(key).and_then(|x| x.as_str()).unwrap_or_else(|| panic!("{key}"))
}

fn sizes(v: Value<'_>) -> Vec<Vec<i64>> {
    v.iter().map(|inner| inner.iter().map(|x| x.as_i64().unwrap()).collect()).collect()
}

fn frame_stats(entries: Value<'_>) -> (usize, usize) {
    let mut ids = HashSet::new();
    let mut refs = 0;
    for e in entries.iter() {
        for f in e.get("frames").unwrap().iter() {
            ids.insert(f.id());
            refs += 1;
        }
    }
    (ids.len(), refs)
}

#[test]
fn hang_dump_matches_python() {
    let p = parse(HANG).unwrap();
    let root = p.root();
    assert_eq!(p.end_offset(), HANG.len());
    assert_eq!(p.lossy_string_count(), 0);
    assert_eq!(keys(root), ["version", "pg_config", "comm_lib_version", "pg_status", "entries"]);
    assert_eq!(string(root, "version"), "2.10");
    assert_eq!(string(root, "comm_lib_version"), "2.28.9");

    let pg = root.get("pg_config").unwrap().get("0").unwrap();
    assert_eq!(string(pg, "name"), "0");
    assert_eq!(string(pg, "desc"), "default_pg");
    assert_eq!(string(pg, "ranks"), "[0]");
    let st = root.get("pg_status").unwrap().get("0").unwrap();
    assert_eq!(int(st, "last_enqueued_collective"), 6);
    assert_eq!(int(st, "last_started_collective"), 5);
    assert_eq!(int(st, "last_completed_collective"), 5);

    let entries = root.get("entries").unwrap();
    assert_eq!(entries.kind(), Kind::List);
    assert_eq!(entries.len(), 6);
    let first = entries.index(0).unwrap();
    assert_eq!(keys(first), ENTRY_KEYS);
    assert_eq!(int(first, "time_created_ns"), 1_795_343_369_964_155_016);
    assert_eq!(first.get("duration_ms").unwrap().as_f64(), Some(0.025_312_000_885_605_812));
    assert_eq!(first.get("retired").unwrap().as_bool(), Some(true));

    // The hung op: scheduled, never started, no duration_ms key.
    let last = entries.index(5).unwrap();
    let mut expected: Vec<&str> = ENTRY_KEYS.to_vec();
    expected.retain(|k| *k != "duration_ms");
    assert_eq!(keys(last), expected);
    assert_eq!(int(last, "record_id"), 5);
    assert_eq!(int(last, "collective_seq_id"), 6);
    assert_eq!(int(last, "op_id"), 6);
    assert_eq!(int(last, "p2p_seq_id"), 0);
    assert_eq!(int(last, "timeout_ms"), 15000);
    assert_eq!(int(last, "time_created_ns"), 1_795_343_369_974_655_780);
    assert_eq!(string(last, "thread_name"), "python3");
    assert_eq!(string(last, "thread_id"), "140196901843264");
    assert_eq!(string(last, "profiling_name"), "nccl:all_reduce");
    assert_eq!(string(last, "state"), "scheduled");
    assert!(last.get("time_discovered_started_ns").unwrap().is_none());
    assert!(last.get("time_discovered_completed_ns").unwrap().is_none());
    assert_eq!(last.get("retired").unwrap().as_bool(), Some(false));
    assert_eq!(last.get("is_p2p").unwrap().as_bool(), Some(false));
    assert_eq!(sizes(last.get("input_sizes").unwrap()), [[4096]]);
    assert_eq!(sizes(last.get("output_sizes").unwrap()), [[4096]]);
    let dt: Vec<&str> =
        last.get("input_dtypes").unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(dt, ["Float"]);
    let pgt = last.get("process_group").unwrap();
    assert_eq!(pgt.kind(), Kind::Tuple);
    let pgt: Vec<&str> = pgt.iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(pgt, ["0", "default_pg"]);

    let frames: Vec<(&str, &str, i64)> = last
        .get("frames")
        .unwrap()
        .iter()
        .map(|f| (string(f, "name"), string(f, "filename"), int(f, "line")))
        .collect();
    assert_eq!(
        frames,
        [
            (
                "all_reduce",
                "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py",
                3068
            ),
            (
                "wrapper",
                "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py",
                83
            ),
            ("hang", "/workspace/job/gpu_hang/nccl_probe_job_a.py", 54),
            ("<module>", "/workspace/job/gpu_hang/nccl_probe_job_a.py", 62),
        ]
    );
    // Python: 5 distinct frame dict objects behind 24 references.
    assert_eq!(frame_stats(entries), (5, 24));
    let total: f64 = entries.iter().filter_map(|e| e.get("duration_ms")?.as_f64()).sum();
    assert_eq!(total, 0.042_368_001_071_736_22);
}

#[test]
fn healthy_dump_matches_python() {
    let p = parse(HEALTHY).unwrap();
    let root = p.root();
    let cfg = root.get("pg_config").unwrap();
    assert_eq!(keys(cfg), ["0", "1"]);
    assert_eq!(string(cfg.get("1").unwrap(), "desc"), "undefined");
    let status = root.get("pg_status").unwrap();
    assert_eq!(int(status.get("0").unwrap(), "last_completed_collective"), 11);
    assert_eq!(int(status.get("1").unwrap(), "last_enqueued_collective"), 1);

    let entries = root.get("entries").unwrap();
    assert_eq!(entries.len(), 12);
    let names: Vec<&str> = entries.iter().map(|e| string(e, "profiling_name")).collect();
    assert_eq!(
        names,
        [
            "nccl:all_reduce",
            "nccl:all_reduce",
            "nccl:all_reduce",
            "nccl:broadcast",
            "nccl:_all_gather_base",
            "nccl:_reduce_scatter_base",
            "nccl:all_to_all",
            "nccl:all_gather",
            "nccl:all_reduce_barrier",
            "nccl:all_reduce",
            "nccl:allreduce_coalesced",
            "nccl:all_reduce",
        ]
    );
    for e in entries.iter() {
        assert_eq!(keys(e), ENTRY_KEYS);
    }
    let ag = entries.index(7).unwrap();
    assert_eq!(sizes(ag.get("output_sizes").unwrap()), [[1, 1024]]);
    let coalesced = entries.index(10).unwrap();
    assert_eq!(sizes(coalesced.get("input_sizes").unwrap()), [[1024], [1024]]);
    let sub = entries.index(9).unwrap();
    assert_eq!(int(sub, "pg_id"), 1);
    assert_eq!(int(sub, "collective_seq_id"), 1);
    assert_eq!(int(sub, "timeout_ms"), 600_000);
    let last = entries.index(11).unwrap();
    assert_eq!(last.get("duration_ms").unwrap().as_f64(), Some(0.006_560_000_125_318_766));
    assert_eq!(int(last, "time_discovered_completed_ns"), 1_795_343_355_889_284_483);
    // Python: 21 distinct frame dict objects behind 48 references.
    assert_eq!(frame_stats(entries), (21, 48));
    let total: f64 = entries.iter().filter_map(|e| e.get("duration_ms")?.as_f64()).sum();
    assert_eq!(total, 4.639_359_916_560_352);
}

#[test]
fn every_truncation_of_a_real_dump_is_eof() {
    // A dump that is still being written must read as "incomplete", never
    // as another error and never as a value.
    for cut in 0..HANG.len() {
        let err = parse(&HANG[..cut]).unwrap_err();
        assert_eq!(err.kind, desync_pickle::PickleErrorKind::UnexpectedEof, "cut at {cut}");
        assert!(err.offset <= cut);
    }
}
