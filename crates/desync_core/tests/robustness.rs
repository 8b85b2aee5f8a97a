//! No input panics the analysis: real dumps (pickle and JSON, Gloo and NCCL) are truncated,
//! bit-flipped, spliced and replaced by arbitrary bytes, written as rank files next to intact
//! ones, and the whole workflow (load, align, diagnose, bridge, report) must return normally.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios").join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn samples() -> Vec<Vec<u8>> {
    vec![
        fixture("early_stop/dumps/gloo_trace_rank_0"),
        fixture("json_extra_collective/dumps/gloo_trace_rank_1"),
        fixture("nccl_h100_hang/dumps/nccl_trace_rank_0"),
        fixture("nccl_h100_healthy_json/dumps/nccl_trace_rank_0"),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Splice(usize, Vec<u8>),
    Arbitrary(Vec<u8>),
}

fn apply(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let at = |i: usize| if bytes.is_empty() { 0 } else { i % bytes.len() };
    match m {
        Mutation::Truncate(i) => bytes[..at(*i)].to_vec(),
        Mutation::Flip(i, mask) => {
            let mut b = bytes.to_vec();
            if !b.is_empty() {
                let j = at(*i);
                b[j] ^= mask | 1;
            }
            b
        }
        Mutation::Splice(i, insert) => {
            let j = at(*i);
            [&bytes[..j], insert.as_slice(), &bytes[j..]].concat()
        }
        Mutation::Arbitrary(b) => b.clone(),
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, m)| Mutation::Flip(i, m)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..32))
            .prop_map(|(i, b)| Mutation::Splice(i, b)),
        proptest::collection::vec(any::<u8>(), 0..256).prop_map(Mutation::Arbitrary),
    ]
}

fn run(dir: &Path) {
    let config = desync_core::Config { input: PathBuf::from(dir), ..Default::default() };
    if let Ok(analysis) = desync_core::analyze(&config, &desync_core::NoProgress) {
        let mut sink = Vec::new();
        desync_core::report::write_json(&analysis, &mut sink).unwrap();
        desync_core::report::write_text(
            &analysis,
            desync_core::report::TextOptions::default(),
            &mut sink,
        )
        .unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn mutated_dumps_never_panic(which in 0usize..4, m in mutation(), m2 in mutation()) {
        let samples = samples();
        let base = &samples[which];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trace_0"), base).unwrap();
        std::fs::write(dir.path().join("trace_1"), apply(base, &m)).unwrap();
        std::fs::write(dir.path().join("trace_2"), apply(&apply(base, &m), &m2)).unwrap();
        run(dir.path());
    }
}

/// A corrupt sequence id far beyond the others must cost nothing: the alignment walks the
/// seqs that exist, not the range between them.
#[test]
fn huge_sequence_ids_do_not_blow_up() {
    let entry = |seq: u64| {
        format!(
            r#"{{"record_id":{seq},"pg_id":0,"process_group":["0","default_pg"],"collective_seq_id":{seq},"p2p_seq_id":0,"op_id":{seq},"profiling_name":"nccl:all_reduce","time_created_ns":1,"input_sizes":[[4]],"output_sizes":[[4]],"input_dtypes":["Float"],"output_dtypes":["Float"],"state":"completed","is_p2p":false}}"#
        )
    };
    let dump = |seqs: &[u64]| {
        let entries: Vec<String> = seqs.iter().map(|&s| entry(s)).collect();
        format!(
            r#"{{"version":"2.10","pg_config":{{}},"pg_status":{{}},"entries":[{}]}}"#,
            entries.join(",")
        )
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trace_0"), dump(&[1, 2, 3])).unwrap();
    std::fs::write(dir.path().join("trace_1"), dump(&[1, 2, 1 << 40])).unwrap();
    let started = std::time::Instant::now();
    let config = desync_core::Config { input: dir.path().into(), ..Default::default() };
    let analysis = desync_core::analyze(&config, &desync_core::NoProgress).unwrap();
    assert!(started.elapsed().as_secs() < 5);
    let seqs: Vec<u64> = analysis.alignment.groups[0].mismatches.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, [3, 1 << 40]);
}
