//! Semantics of generated dump sets, checked by decoding them with
//! `desync_pickle`: determinism, the ring buffer, counters and states that
//! agree across ranks, and what each injected fault must look like.

use std::collections::{BTreeMap, HashSet};

use desync_pickle::{Value, parse};
use desync_synth::{Error, Fault, Format, OpMix, Plan, Spec, parse_groups, render_rank, write_dir};

#[derive(Debug, Clone, PartialEq)]
struct E {
    record_id: i64,
    pg_id: i64,
    pg_name: String,
    pg_desc: String,
    seq: i64,
    p2p_seq: i64,
    op_id: i64,
    name: String,
    created: i64,
    duration: Option<f64>,
    in_sizes: Vec<Vec<i64>>,
    out_sizes: Vec<Vec<i64>>,
    state: String,
    started: Option<i64>,
    completed: Option<i64>,
    retired: bool,
    is_p2p: bool,
    frames: Vec<(String, String, i64)>,
}

struct Dump {
    keys: Vec<String>,
    pg_config: BTreeMap<String, (String, String)>,
    pg_status: BTreeMap<String, [i64; 3]>,
    entries: Vec<E>,
    /// Distinct frame-dict nodes (memoized dicts are shared).
    frame_nodes: usize,
}

fn int(v: Value<'_>, k: &str) -> i64 {
    v.get(k).and_then(|x| x.as_i64()).unwrap_or_else(|| panic!("{k}"))
}

fn text(v: Value<'_>, k: &str) -> String {
    v.get(k).and_then(|x| x.as_str()).unwrap_or_else(|| panic!("{k}")).to_string()
}

fn sizes(v: Value<'_>) -> Vec<Vec<i64>> {
    v.iter().map(|s| s.iter().map(|x| x.as_i64().unwrap()).collect()).collect()
}

fn decode(bytes: &[u8]) -> Dump {
    let p = parse(bytes).unwrap();
    let root = p.root();
    let keys = root.items().map(|(k, _)| k.as_str().unwrap().to_string()).collect();
    let pg_config = root
        .get("pg_config")
        .unwrap()
        .items()
        .map(|(k, v)| (k.as_str().unwrap().to_string(), (text(v, "desc"), text(v, "ranks"))))
        .collect();
    let pg_status = root
        .get("pg_status")
        .unwrap()
        .items()
        .map(|(k, v)| {
            let st = [
                int(v, "last_enqueued_collective"),
                int(v, "last_started_collective"),
                int(v, "last_completed_collective"),
            ];
            (k.as_str().unwrap().to_string(), st)
        })
        .collect();
    let mut frame_ids = HashSet::new();
    let entries = root
        .get("entries")
        .unwrap()
        .iter()
        .map(|e| {
            let pg = e.get("process_group").unwrap();
            let frames = e
                .get("frames")
                .map(|f| {
                    f.iter()
                        .map(|fr| {
                            frame_ids.insert(fr.id());
                            (text(fr, "name"), text(fr, "filename"), int(fr, "line"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            E {
                record_id: int(e, "record_id"),
                pg_id: int(e, "pg_id"),
                pg_name: pg.index(0).unwrap().as_str().unwrap().to_string(),
                pg_desc: pg.index(1).unwrap().as_str().unwrap().to_string(),
                seq: int(e, "collective_seq_id"),
                p2p_seq: int(e, "p2p_seq_id"),
                op_id: int(e, "op_id"),
                name: text(e, "profiling_name"),
                created: int(e, "time_created_ns"),
                duration: e.get("duration_ms").and_then(|d| d.as_f64()),
                in_sizes: sizes(e.get("input_sizes").unwrap()),
                out_sizes: sizes(e.get("output_sizes").unwrap()),
                state: text(e, "state"),
                started: e.get("time_discovered_started_ns").unwrap().as_i64(),
                completed: e.get("time_discovered_completed_ns").unwrap().as_i64(),
                retired: e.get("retired").unwrap().as_bool().unwrap(),
                is_p2p: e.get("is_p2p").unwrap().as_bool().unwrap(),
                frames,
            }
        })
        .collect();
    Dump { keys, pg_config, pg_status, entries, frame_nodes: frame_ids.len() }
}

fn dumps(spec: &Spec) -> Vec<Option<Dump>> {
    let plan = Plan::new(spec).unwrap();
    (0..spec.world_size)
        .map(|r| render_rank(&plan, r, Format::Pickle).map(|b| decode(&b)))
        .collect()
}

fn spec(ws: u32, entries: u32, groups: &str, fault: &str) -> Spec {
    let mut s = Spec::new(ws, entries);
    s.groups = parse_groups(groups).unwrap();
    s.fault = fault.parse().unwrap();
    s.seed = 7;
    s
}

/// Non-p2p entries of one PG (by desc) on a rank, by seq.
fn colls<'a>(d: &'a Dump, desc: &str) -> BTreeMap<i64, &'a E> {
    d.entries.iter().filter(|e| e.pg_desc == desc && !e.is_p2p).map(|e| (e.seq, e)).collect()
}

#[test]
fn deterministic_regardless_of_threads() {
    let mut s = spec(8, 50, "tp=2,dp", "none");
    s.frames = true;
    let plan = Plan::new(&s).unwrap();
    let a = render_rank(&plan, 5, Format::Pickle).unwrap();
    let b = render_rank(&Plan::new(&s).unwrap(), 5, Format::Pickle).unwrap();
    assert_eq!(a, b);
    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let w1 =
        one.install(|| write_dir(&plan, dir1.path(), "nccl_trace_rank_", Format::Pickle)).unwrap();
    let w2 = write_dir(&plan, dir2.path(), "nccl_trace_rank_", Format::Pickle).unwrap();
    assert_eq!(w1, w2);
    assert_eq!(w1.files, 8);
    for r in 0..8 {
        let name = format!("nccl_trace_rank_{r}");
        let f1 = std::fs::read(dir1.path().join(&name)).unwrap();
        assert_eq!(f1, std::fs::read(dir2.path().join(&name)).unwrap());
        if r == 5 {
            assert_eq!(f1, a);
        }
    }
    s.seed = 8;
    assert_ne!(render_rank(&Plan::new(&s).unwrap(), 5, Format::Pickle).unwrap(), a);
}

#[test]
fn ring_buffer_keeps_the_newest_entries() {
    let mut s = spec(4, 100, "", "none");
    s.history = Some(250);
    for d in dumps(&s).into_iter().map(Option::unwrap) {
        assert_eq!(d.keys, ["version", "pg_config", "comm_lib_version", "pg_status", "entries"]);
        assert_eq!(d.entries.len(), 100);
        let ids: Vec<i64> = d.entries.iter().map(|e| e.record_id).collect();
        assert!(ids.windows(2).all(|w| w[1] == w[0] + 1));
        assert!(ids[0] >= 150, "older entries were dropped: {}", ids[0]);
        // pg_status covers the whole history, consistent with the newest entry.
        let newest = d.entries.iter().rev().find(|e| !e.is_p2p).unwrap();
        let st = d.pg_status["0"];
        assert_eq!(st[0], newest.seq);
        assert_eq!(newest.state, "started");
        assert_eq!(st[1], newest.seq);
        assert_eq!(st[2], newest.seq - 1);
    }
}

#[test]
fn healthy_job_agrees_across_ranks() {
    let mut s = spec(8, 300, "tp=2,dp", "none");
    s.history = Some(300);
    s.ops = OpMix::parse("p2p=8,all_to_all=2").unwrap();
    s.frames = true;
    let all: Vec<Dump> = dumps(&s).into_iter().map(Option::unwrap).collect();
    let mut saw_p2p = false;
    for (r, d) in all.iter().enumerate() {
        // pg_config: default + this rank's tp and dp groups, sorted by name.
        assert_eq!(d.pg_config.len(), 3);
        assert_eq!(d.pg_config["0"], ("default_pg".into(), "[0, 1, 2, 3, 4, 5, 6, 7]".into()));
        let tp = d.pg_config.values().find(|v| v.0 == "mesh_tp").unwrap();
        let base = r / 2 * 2;
        assert_eq!(tp.1, format!("[{base}, {}]", base + 1));
        let dp = d.pg_config.values().find(|v| v.0 == "mesh_dp").unwrap();
        assert_eq!(dp.1, format!("[{}, {}, {}, {}]", r % 2, r % 2 + 2, r % 2 + 4, r % 2 + 6));
        assert_eq!(d.pg_status.keys().collect::<Vec<_>>(), ["0", "1", "2"]);

        let mut last_created = 0;
        let mut last_seq: BTreeMap<i64, i64> = BTreeMap::new();
        let mut last_op: BTreeMap<i64, i64> = BTreeMap::new();
        let mut last_p2p: BTreeMap<i64, i64> = BTreeMap::new();
        for e in &d.entries {
            assert!(e.created > 1_795_000_000_000_000_000 && e.created > last_created);
            last_created = e.created;
            assert_eq!(e.pg_name == "0", e.pg_id == 0);
            let seq = last_seq.entry(e.pg_id).or_insert(0);
            let op = last_op.entry(e.pg_id).or_insert(0);
            let p2p = last_p2p.entry(e.pg_id).or_insert(0);
            if e.is_p2p {
                saw_p2p = true;
                // p2p carries the current collective seq without bumping it.
                assert_eq!(e.seq, *seq);
                assert!(e.p2p_seq == *p2p || e.p2p_seq == *p2p + 1);
                *p2p = e.p2p_seq;
                if e.name == "nccl:coalesced" {
                    assert_eq!(e.op_id, *op, "the end marker reuses the last op id");
                    assert!(e.in_sizes.is_empty());
                } else {
                    assert_eq!(e.op_id, *op + 1);
                    assert_eq!(e.state, "scheduled");
                    assert!(e.started.is_none() && e.completed.is_none() && !e.retired);
                    assert!(e.duration.is_none());
                }
            } else {
                assert_eq!(e.seq, *seq + 1);
                assert_eq!(e.op_id, *op + 1);
                assert_eq!(e.p2p_seq, *p2p);
            }
            *seq = e.seq;
            *op = e.op_id;
            let last = std::ptr::eq(e, d.entries.last().unwrap());
            if e.is_p2p && e.name != "nccl:coalesced" {
                continue;
            }
            if last {
                assert_eq!(e.state, "started");
                assert!(e.started.is_some() && e.completed.is_none() && !e.retired);
            } else {
                assert_eq!(e.state, "completed");
                let (s0, c0) = (e.started.unwrap(), e.completed.unwrap());
                assert!(e.created < s0 && s0 <= c0 && e.retired);
                assert!(e.duration.unwrap() > 0.0);
            }
            assert_eq!(e.frames.last().unwrap().0, "<module>");
        }
        // Frame dicts are memoized: one node per distinct frame.
        let distinct: HashSet<_> = d.entries.iter().flat_map(|e| e.frames.iter()).collect();
        assert_eq!(d.frame_nodes, distinct.len());
    }
    assert!(saw_p2p, "the op mix should produce p2p batches");

    // Members of a PG see the same collectives with the same sizes.
    for desc in ["default_pg", "mesh_tp", "mesh_dp"] {
        let mut by_pg: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (r, d) in all.iter().enumerate() {
            let name = d.entries.iter().find(|e| e.pg_desc == desc).unwrap().pg_name.as_str();
            by_pg.entry(name).or_default().push(r);
        }
        for ranks in by_pg.values() {
            let first = colls(&all[ranks[0]], desc);
            for &r in &ranks[1..] {
                for (seq, e) in colls(&all[r], desc) {
                    if let Some(f) = first.get(&seq) {
                        assert_eq!(
                            (&f.name, &f.in_sizes, &f.frames),
                            (&e.name, &e.in_sizes, &e.frames)
                        );
                    }
                }
            }
        }
    }
    // Every send has the matching recv on the peer (PG-local ranks).
    for d in &all {
        for e in d.entries.iter().filter(|e| e.name.starts_with("nccl:send")) {
            let (src, dst) = e.name["nccl:send ".len()..].split_once("->").unwrap();
            let recv = format!("nccl:recv {dst}<-{src}");
            let found = all.iter().any(|o| {
                o.entries
                    .iter()
                    .any(|x| x.name == recv && x.pg_name == e.pg_name && x.p2p_seq == e.p2p_seq)
            });
            assert!(found, "no {recv} for {} p2p_seq {}", e.name, e.p2p_seq);
        }
    }
}

#[test]
fn divergence_faulty_rank_issues_another_op() {
    let mut s = spec(4, 200, "", "divergence:ranks=3,seq=50");
    s.frames = true;
    let plan = Plan::new(&s).unwrap();
    let site = plan.fault_site().unwrap().clone();
    assert_eq!((site.class.as_str(), site.seq), ("default", 50));
    let all: Vec<Dump> = dumps(&s).into_iter().map(Option::unwrap).collect();
    let peer = all[0].entries.last().unwrap();
    let bad = all[3].entries.last().unwrap();
    assert_eq!((peer.seq, bad.seq), (50, 50));
    assert_eq!(peer.name, site.profiling_name);
    assert_ne!(peer.name, bad.name);
    assert_ne!(peer.frames, bad.frames);
    assert!(bad.frames.iter().any(|f| f.0 == "evaluate"));
    assert_eq!((peer.state.as_str(), bad.state.as_str()), ("started", "started"));
    for d in &all {
        assert_eq!(d.pg_status["0"], [50, 50, 49]);
    }
}

#[test]
fn metadata_mismatch_changes_sizes_only() {
    let all: Vec<Dump> = dumps(&spec(4, 100, "", "mismatch:ranks=1,seq=30"))
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let good = all[0].entries.last().unwrap();
    let bad = all[1].entries.last().unwrap();
    assert_eq!((good.seq, bad.seq), (30, 30));
    assert_eq!(good.name, bad.name);
    assert_ne!(good.in_sizes, bad.in_sizes);
    assert_eq!(good.in_sizes[0].len(), bad.in_sizes[0].len());
}

#[test]
fn stall_faulty_ranks_never_enqueue_the_seq() {
    let all: Vec<Dump> =
        dumps(&spec(4, 100, "", "stall:ranks=2,seq=30")).into_iter().map(Option::unwrap).collect();
    for (r, d) in all.iter().enumerate() {
        let c = colls(d, "default_pg");
        let (&last, e) = c.iter().next_back().unwrap();
        if r == 2 {
            assert_eq!(last, 29);
            assert_eq!(e.state, "completed");
            assert_eq!(d.pg_status["0"], [29, 29, 29]);
        } else {
            assert_eq!(last, 30);
            assert_eq!(e.state, "started");
            assert_eq!(d.pg_status["0"], [30, 30, 29]);
        }
    }
}

#[test]
fn gpu_hang_leaves_faulty_ranks_scheduled() {
    let all: Vec<Dump> = dumps(&spec(4, 100, "", "gpuhang:ranks=1+2,seq=30"))
        .into_iter()
        .map(Option::unwrap)
        .collect();
    for (r, d) in all.iter().enumerate() {
        let e = d.entries.last().unwrap();
        assert_eq!(e.seq, 30);
        assert!(!e.retired && e.completed.is_none() && e.duration.is_none());
        if r == 1 || r == 2 {
            assert_eq!(e.state, "scheduled");
            assert!(e.started.is_none());
            assert_eq!(d.pg_status["0"], [30, 29, 29]);
        } else {
            assert_eq!(e.state, "started");
            assert_eq!(d.pg_status["0"], [30, 30, 29]);
        }
    }
}

#[test]
fn stuck_ranks_block_their_groups_transitively() {
    // Rank 1 diverges in its tp group {0, 1}; everyone else runs until an op
    // of theirs involves a stuck rank, then waits there.
    let s = spec(8, 400, "tp=2,dp", "divergence:ranks=1,seq=20,pg=tp");
    let all: Vec<Dump> = dumps(&s).into_iter().map(Option::unwrap).collect();
    for (r, d) in all.iter().enumerate() {
        let e = d.entries.last().unwrap();
        assert_eq!(e.state, "started", "rank {r}");
        if r < 2 {
            assert_eq!((e.pg_desc.as_str(), e.seq), ("mesh_tp", 20), "rank {r}");
        }
    }
    // Ranks outside the faulty tp group got further than the faulty pair.
    let furthest = all.iter().map(|d| d.entries.last().unwrap().created).max().unwrap();
    assert!(furthest > all[0].entries.last().unwrap().created);
}

#[test]
fn crash_writes_no_dump() {
    let s = spec(4, 50, "", "crash:ranks=2");
    let plan = Plan::new(&s).unwrap();
    assert!(render_rank(&plan, 2, Format::Pickle).is_none());
    assert!(!plan.has_dump(2) && plan.has_dump(3) && !plan.has_dump(4));
    let dir = tempfile::tempdir().unwrap();
    let w = write_dir(&plan, dir.path(), "trace_", Format::Json).unwrap();
    assert_eq!(w.files, 3);
    assert!(!dir.path().join("trace_2").exists());
    assert!(dir.path().join("trace_3").exists());
}

#[test]
fn straggler_is_late_but_not_stuck() {
    let all: Vec<Dump> = dumps(&spec(4, 100, "", "straggler:rank=3,ms=15"))
        .into_iter()
        .map(Option::unwrap)
        .collect();
    let late = colls(&all[3], "default_pg");
    let on_time = colls(&all[0], "default_pg");
    for (seq, e) in &late {
        let other = on_time[seq];
        let lag = e.created - other.created;
        assert!((14_500_000..15_500_000).contains(&lag), "seq {seq}: lag {lag}");
        if e.state == "completed" {
            // Peers wait for the straggler inside the kernel.
            assert!(other.duration.unwrap() > 14.0 && e.duration.unwrap() < 2.0);
        }
    }
    assert_eq!(all[3].entries.last().unwrap().state, "started");
}

#[test]
fn invalid_specs_are_rejected() {
    let err = |s: Spec| match Plan::new(&s) {
        Err(Error::Spec(msg)) => msg,
        other => panic!("expected a spec error, got {other:?}"),
    };
    assert!(err(spec(6, 10, "tp=4", "none")).contains("not a multiple"));
    assert!(err(spec(4, 10, "", "stall:ranks=9,seq=2")).contains("world size"));
    assert!(err(spec(4, 10, "", "stall:ranks=1,seq=9999")).contains("beyond"));
    assert!(err(spec(4, 10, "", "divergence:ranks=1,seq=2,pg=pp")).contains("pp"));
    assert!(err(spec(0, 10, "", "none")).contains("world size"));
    assert!(matches!(
        "divergence:ranks=1".parse::<Fault>(),
        Err(Error::Spec(m)) if m.contains("seq")
    ));
}

#[test]
fn world_of_one_and_tiny_buffers() {
    let d = decode(
        &render_rank(&Plan::new(&spec(1, 3, "", "none")).unwrap(), 0, Format::Pickle).unwrap(),
    );
    assert_eq!(d.entries.len(), 3);
    assert!(d.entries.iter().all(|e| !e.is_p2p));
    assert_eq!(d.pg_config["0"].1, "[0]");
}
