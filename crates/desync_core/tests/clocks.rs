//! An entry keeps the low 32 bits of its clocks and shares the high halves with the ranks of
//! its stream (model/entry.rs, `ClockHigh`). Ranks whose clocks leave a 4.3 s window, or whose
//! gaps from creation to start or completion do not fit 32 bits, must still read back every
//! value exactly, whether they share a head or not.

use std::path::Path;

use desync_core::NoProgress;
use desync_core::load::{LoadOptions, load};

/// One completed all-reduce at seq 1 per rank, with the given clocks (0 = not discovered).
fn dump(created: i64, started: i64, completed: i64) -> String {
    format!(
        r#"{{"version":"2.10","pg_config":{{}},"pg_status":{{}},"entries":[{{"record_id":0,"pg_id":0,"process_group":["0","default_pg"],"collective_seq_id":1,"p2p_seq_id":0,"op_id":1,"profiling_name":"nccl:all_reduce","time_created_ns":{created},"time_discovered_started_ns":{started},"time_discovered_completed_ns":{completed},"duration_ms":2.5,"input_sizes":[[4]],"output_sizes":[[4]],"input_dtypes":["Float"],"output_dtypes":["Float"],"state":"completed","is_p2p":false,"retired":true}}]}}"#
    )
}

/// Created, started, completed, duration: as `Entry` reads them back.
type Readings = (i64, Option<i64>, Option<i64>, Option<f32>);

fn clocks_of(dir: &Path) -> Vec<Readings> {
    let trace = load(dir, &LoadOptions::default(), &NoProgress).unwrap();
    trace
        .ranks
        .iter()
        .map(|r| {
            let e = &r.entries[0];
            (e.created_ns(), e.started_ns(), e.completed_ns(), e.duration_ms())
        })
        .collect()
}

#[test]
fn clock_gaps_past_32_bits_read_back_exact() {
    // A creation time just below a 2^32 ns boundary, so that ranks straddle two windows.
    let t = (1_764_000_000_000_000_000_i64 >> 32 << 32) + (1 << 32) - 500;
    let hour = 3_600_000_000_000_i64;
    let ranks = [
        (t, t + 1_000, t + 2_000),
        // Same window, small gaps: shares the first rank's high halves.
        (t + 100, t + 1_200, t + 2_300),
        // The next window (created 600 ns later crosses the boundary).
        (t + 600, t + 1_700, t + 2_600),
        // A 40 s queue before the start and a collective that ran an hour.
        (t, t + 40_000_000_000, t + hour),
        // A start before creation (the clock stepped back), never completed.
        (t, t - 7, 0),
        // Never started nor completed.
        (t + 3, 0, 0),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (rank, &(c, s, d)) in ranks.iter().enumerate() {
        std::fs::write(dir.path().join(format!("trace_{rank}")), dump(c, s, d)).unwrap();
    }
    let expected: Vec<_> = ranks
        .iter()
        .map(|&(c, s, d)| (c, (s > 0).then_some(s), (d > 0).then_some(d), Some(2.5)))
        .collect();
    assert_eq!(clocks_of(dir.path()), expected);
}
