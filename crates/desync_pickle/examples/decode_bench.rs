//! Decode-speed check: `cargo run --release -p desync_pickle --example
//! decode_bench -- FILE [ROUNDS]`.
//!
//! Role: time `parse` on a real or synthetic FR dump, then a typical walk
//! (every entry's ids, name, sizes and frames), and print the best round.
//! Not a test: numbers depend on the machine; README.md records them.

use std::time::{Duration, Instant};

use desync_pickle::parse;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: decode_bench FILE [ROUNDS]");
    let rounds: usize = args.next().map_or(5, |r| r.parse().expect("ROUNDS"));
    let bytes = std::fs::read(&path).expect("read");
    let mut best_parse = Duration::MAX;
    let mut best_walk = Duration::MAX;
    let mut summary = (0usize, 0usize, 0i64);
    for _ in 0..rounds {
        let t = Instant::now();
        let p = parse(&bytes).expect("decode");
        best_parse = best_parse.min(t.elapsed());
        let t = Instant::now();
        let entries = p.root().get("entries").expect("entries");
        let mut frames = 0usize;
        let mut checksum = 0i64;
        for e in entries.iter() {
            checksum =
                checksum.wrapping_add(e.get("record_id").and_then(|v| v.as_i64()).unwrap_or(0));
            checksum = checksum
                .wrapping_add(e.get("collective_seq_id").and_then(|v| v.as_i64()).unwrap_or(0));
            checksum = checksum.wrapping_add(
                e.get("profiling_name").and_then(|v| v.as_str()).map_or(0, |s| s.len() as i64),
            );
            for s in e.get("input_sizes").iter().flat_map(desync_pickle::Value::iter) {
                checksum = checksum.wrapping_add(s.iter().filter_map(|x| x.as_i64()).sum::<i64>());
            }
            frames += e.get("frames").map_or(0, |f| f.len());
        }
        best_walk = best_walk.min(t.elapsed());
        summary = (entries.len(), p.node_count(), checksum + frames as i64);
    }
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "{path}: {mb:.1} MB, {} entries, {} nodes; parse {best_parse:.2?} ({:.0} MB/s), walk {best_walk:.2?} (best of {rounds}; checksum {})",
        summary.0,
        summary.1,
        mb / best_parse.as_secs_f64(),
        summary.2
    );
}
