//! Round trips: any dump the loaders can decode comes back from its summary identical, field
//! for field (compared through `Debug`, which prints every field and every f64 exactly); and
//! no damaged summary makes the reader panic.

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{is_summary, read, write};
use crate::load::{Attempt, Shared};

/// What a summary must preserve of an attempt, as text.
fn fingerprint(a: &Attempt) -> String {
    match &a.result {
        Ok(d) => format!(
            "{:?} {:?} {:?} {} {:?}",
            a.path, a.rank, d.dump, d.notes.bad_entries, d.notes.first_reason
        ),
        Err(e) => format!("{:?} {:?} error: {e}", a.path, a.rank),
    }
}

fn round_trip(bytes: &[u8], rank: Option<u32>) {
    let lists = Shared::default();
    let original = Attempt::decode(PathBuf::from("/dumps/host-3/trace_7"), rank, bytes, &lists);
    let summary = write(&original);
    assert!(is_summary(&summary));
    let back =
        Attempt::decode(PathBuf::from("/summaries/trace_7.desync"), Some(9), &summary, &lists);
    assert_eq!(fingerprint(&back), fingerprint(&original));
    // A summary of a summary is the same summary.
    assert_eq!(write(&back), summary);
}

fn frame() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["train.py", "/torch/distributed/c10d.py", "<frozen>", "é.py"]),
        prop::sample::select(vec!["main", "all_reduce", "<module>", ""]),
        -3i64..100_000,
    )
        .prop_map(|(file, name, line)| json!({"filename": file, "name": name, "line": line}))
}

prop_compose! {
    fn entry()(
        record_id in prop::option::weighted(0.95, any::<i64>()),
        pg in 0usize..3,
        seq in any::<i64>(),
        p2p in prop::option::of(0i64..1_000),
        op_id in prop::option::of(any::<i64>()),
        name in prop::sample::select(vec![
            "nccl:all_reduce", "nccl:send 0->1", "nccl:recv 3<-?", "gloo:barrier", "weird", "",
        ]),
        created in any::<i64>(),
        started in any::<i64>(),
        completed in any::<i64>(),
        duration in prop::option::of(prop_oneof![
            any::<f32>().prop_filter("JSON has no NaN", |d| d.is_finite()).prop_map(f64::from),
            any::<f64>().prop_filter("JSON has no NaN", |d| d.is_finite()),
        ]),
        sizes in prop::collection::vec(prop::collection::vec(any::<i64>(), 0..3), 0..3),
        dtypes in prop::collection::vec(prop::sample::select(vec!["Float", "BFloat16"]), 0..3),
        state in prop::sample::select(vec!["scheduled", "started", "completed", "odd"]),
        retired in prop::option::of(any::<bool>()),
        timeout in prop::option::of(any::<i64>()),
        is_p2p in prop::option::of(any::<bool>()),
        frames in prop::collection::vec(frame(), 0..4),
    ) -> Value {
        let groups = [("0", "default_pg"), ("a85e", "mesh_tp"), ("7b7e", "")];
        json!({
            "record_id": record_id, "pg_id": pg, "process_group": [groups[pg].0, groups[pg].1],
            "collective_seq_id": seq, "p2p_seq_id": p2p, "op_id": op_id,
            "profiling_name": name, "time_created_ns": created,
            "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
            "duration_ms": duration, "input_sizes": sizes, "output_sizes": sizes,
            "input_dtypes": dtypes, "output_dtypes": [], "state": state, "retired": retired,
            "timeout_ms": timeout, "is_p2p": is_p2p, "frames": frames,
        })
    }
}

prop_compose! {
    fn dump()(
        entries in prop::collection::vec(entry(), 0..40),
        world in prop::collection::vec(0u32..70_000, 0..50),
        last in prop::option::of(-1i64..5_000),
        comm in prop::option::of("[a-z0-9.]{0,6}"),
    ) -> Vec<u8> {
        let ranks = format!("{world:?}");
        let dump = json!({
            "version": "2.10", "comm_lib_version": comm,
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}},
            "pg_status": {"0": {"last_enqueued_collective": last.map(|l| l.to_string()),
                                "last_started_collective": last, "last_completed_collective": -1}},
            "entries": entries,
        });
        serde_json::to_vec(&dump).unwrap()
    }
}

proptest! {
    #[test]
    fn any_decodable_dump_survives_its_summary(bytes in dump(), rank in prop::option::of(0u32..100)) {
        round_trip(&bytes, rank);
    }

    #[test]
    fn damaged_summaries_never_panic(bytes in dump(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
        let lists = Shared::default();
        let original = Attempt::decode(PathBuf::from("trace_1"), Some(1), &bytes, &lists);
        let summary = write(&original);
        let mut damaged = summary.clone();
        damaged[flip.index(summary.len())] ^= 1 << bit;
        let _ = read(&damaged, &lists);
        let _ = read(&summary[..cut.index(summary.len())], &lists);
        // Past the checksum: damage inside the body itself reaches the parser.
        let mut body = super::decompress(&summary).unwrap();
        let i = flip.index(body.len());
        body[i] ^= 1 << bit;
        let _ = read(&rewrap(&body), &lists);
        let _ = read(&rewrap(&body[..cut.index(body.len())]), &lists);
    }
}

/// A well-formed file around any body.
fn rewrap(body: &[u8]) -> Vec<u8> {
    let mut file = super::Out::default();
    file.raw(b"desync-summary 1\n");
    file.u(body.len() as u64);
    let mut z = flate2::write::ZlibEncoder::new(file.0, flate2::Compression::fast());
    std::io::Write::write_all(&mut z, body).unwrap();
    z.finish().unwrap()
}

#[test]
fn unreadable_dumps_round_trip_as_their_error() {
    round_trip(b"", Some(3));
    round_trip(b"garbage!", None);
    round_trip(b"\x80\x04truncated", Some(0));
}

#[test]
fn real_scenarios_round_trip() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
    let mut seen = 0;
    for scenario in std::fs::read_dir(root).unwrap() {
        let Ok(files) = std::fs::read_dir(scenario.unwrap().path().join("dumps")) else { continue };
        for file in files {
            round_trip(&std::fs::read(file.unwrap().path()).unwrap(), Some(0));
            seen += 1;
        }
    }
    assert!(seen > 20, "only {seen} dumps found");
}
