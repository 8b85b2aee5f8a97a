//! Answers that stay small at any world size (issue 46, "Bounded answers"), on generated NCCL
//! jobs of 256 and 4,096 ranks (tensor parallelism 8, so 4,096 ranks have 521 process groups):
//! the JSON report's rank sets are capped arrays beside whole `*_ranges`, its process-group
//! list is capped; every MCP answer stays under 32 KB and pages round-trip; `export
//! --perfetto` narrows to ranks, groups and a window, and writes representatives by default.

use std::path::Path;
use std::process::{Command, Output};

use desync_mcp::Session;
use desync_mcp::tools::{LoadArgs, MAX_ANSWER_BYTES, Page};
use desync_synth::{Fault, Format, OpMix, Plan, Spec, parse_groups, write_dir};
use serde_json::Value;

fn desync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_desync")).args(args).output().unwrap()
}

/// `ranks` pickle dumps with frames, 40 entries each; rank `ranks / 2 + 3` departs at the
/// default group's seq 9.
fn job(dir: &Path, ranks: u32) -> u32 {
    let culprit = ranks / 2 + 3;
    let mut spec = Spec::new(ranks, 40);
    spec.history = Some(80);
    spec.groups = parse_groups("tp=8,dp").unwrap();
    spec.ops = OpMix::parse("p2p=0").unwrap();
    spec.frames = true;
    spec.fault = format!("divergence:ranks={culprit},seq=9").parse::<Fault>().unwrap();
    write_dir(&Plan::new(&spec).unwrap(), dir, "nccl_trace_rank_", Format::Pickle).unwrap();
    culprit
}

fn report(dir: &Path) -> (usize, Value) {
    let out = desync(&["analyze", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    (out.stdout.len(), serde_json::from_slice(&out.stdout).unwrap())
}

/// Every rank set in the report: (array, ranges, truncated) for each `K` beside `K_ranges`.
fn rank_sets(v: &Value, found: &mut Vec<(Vec<u64>, String, bool)>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| rank_sets(i, found)),
        Value::Object(map) => {
            for (key, ranges) in map {
                let Some(name) = key.strip_suffix("_ranges") else { continue };
                let Some(Value::Array(ranks)) = map.get(name) else { continue };
                found.push((
                    ranks.iter().map(|r| r.as_u64().unwrap()).collect(),
                    ranges.as_str().unwrap().to_owned(),
                    map.get(&format!("{name}_truncated")) == Some(&Value::Bool(true)),
                ));
            }
            map.values().for_each(|i| rank_sets(i, found));
        }
        _ => {}
    }
}

fn expand(ranges: &str) -> Vec<u64> {
    ranges
        .split(',')
        .filter(|s| !s.is_empty())
        .flat_map(|item| match item.split_once('-') {
            Some((a, b)) => a.parse::<u64>().unwrap()..=b.parse().unwrap(),
            None => item.parse::<u64>().unwrap()..=item.parse().unwrap(),
        })
        .collect()
}

/// The JSON report at 4,096 ranks: world-sized rank sets are cut to 256 ranks and marked, the
/// ranges are whole, and the report grows far slower than the world (16x the ranks, well
/// under 4x the bytes: what grows is the process groups, capped at 1,000).
#[test]
fn json_rank_sets_and_lists_are_bounded() {
    let small = tempfile::tempdir().unwrap();
    let large = tempfile::tempdir().unwrap();
    job(small.path(), 256);
    let culprit = job(large.path(), 4096);
    let (_, small_json) = report(small.path());
    let (large_bytes, json) = report(large.path());
    assert_eq!(json["verdict"]["culprit_ranks"], serde_json::json!([culprit]));
    assert_eq!(json["verdict"]["culprit_ranks_ranges"], culprit.to_string());
    assert_eq!(json["input"]["ranks_loaded"].as_array().unwrap().len(), 256);
    assert_eq!(json["input"]["ranks_loaded_ranges"], "0-4095");
    assert_eq!(json["input"]["ranks_loaded_truncated"], true);
    assert_eq!(json["process_groups_total"], 4096 / 8 + 8 + 1);
    assert!(json.get("process_groups_truncated").is_none());
    let mut sets = Vec::new();
    rank_sets(&json, &mut sets);
    assert!(sets.iter().any(|s| s.2), "no world-sized set was cut");
    for (array, ranges, truncated) in sets {
        let whole = expand(&ranges);
        assert!(array.len() <= 256 && whole.starts_with(&array), "{ranges}: {array:?}");
        assert_eq!(truncated, whole.len() > 256, "{ranges}");
    }
    // Past the process groups (one per 8 ranks here, listed up to 1,000), what the report
    // holds does not grow with the world: 16x the ranks, less than 2x the bytes.
    let without_groups = |mut v: Value| {
        v.as_object_mut().unwrap().remove("process_groups");
        v.to_string().len()
    };
    let (small_rest, large_rest) = (without_groups(small_json), without_groups(json.clone()));
    assert!(
        large_rest < 2 * small_rest,
        "16x the ranks made the report {large_rest} bytes against {small_rest} (process groups aside)"
    );
    let per_group = large_bytes / json["process_groups"].as_array().unwrap().len();
    assert!(per_group < 2_000, "{per_group} bytes per process group");
}

fn load(session: &Session, dir: &Path) -> String {
    let out = session
        .load(&LoadArgs { path: dir.display().to_string(), ..LoadArgs::default() })
        .expect("load");
    assert!(
        out.to_string().len() < MAX_ANSWER_BYTES,
        "load_dumps: {} bytes",
        out.to_string().len()
    );
    out["handle"].as_str().unwrap().to_owned()
}

/// Every MCP answer on the 4,096-rank job stays under 32 KB, and paging through the process
/// groups and the behavioural groups visits each exactly once.
#[test]
fn mcp_answers_are_bounded_and_pages_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let culprit = job(dir.path(), 4096);
    let session = Session::new([dir.path().to_path_buf()]);
    let h = load(&session, dir.path());
    let size = |v: &Value| v.to_string().len();

    let verdict = session.verdict(&h).unwrap();
    assert!(size(&verdict) < MAX_ANSWER_BYTES);
    assert_eq!(verdict["verdict"]["culprit_ranks"], serde_json::json!([culprit]));
    let reference = &verdict["earliest_mismatch"];
    assert_eq!(reference["reference_ranks"].as_array().unwrap().len(), 64);
    assert_eq!(reference["reference_ranks_truncated"], true);

    let mut names = Vec::new();
    let mut offset = 0;
    loop {
        let page = session.process_groups(&h, Page::new(Some(offset), Some(100))).unwrap();
        assert!(size(&page) < MAX_ANSWER_BYTES, "process_groups page: {} bytes", size(&page));
        assert_eq!(page["total"], 4096 / 8 + 8 + 1);
        for pg in page["process_groups"].as_array().unwrap() {
            names.push(pg["name"].as_str().unwrap().to_owned());
        }
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((names.len(), unique.len()), (4096 / 8 + 8 + 1, 4096 / 8 + 8 + 1));

    let first = session.groups(&h, Page::new(None, Some(1))).unwrap();
    let total = first["total"].as_u64().unwrap() as usize;
    assert!(total >= 2, "{first}");
    let mut ranks = 0;
    for offset in 0..total {
        let page = session.groups(&h, Page::new(Some(offset), Some(1))).unwrap();
        assert!(size(&page) < MAX_ANSWER_BYTES);
        let group = &page["groups"][0];
        ranks += expand(group["ranks_ranges"].as_str().unwrap()).len();
    }
    assert_eq!(ranks, 4096);

    let pg = verdict["verdict"]["process_group"]["name"].as_str().unwrap();
    let seq = verdict["verdict"]["collective_seq_id"].as_u64().unwrap();
    let coll = session.collective(&h, pg, seq).unwrap();
    assert!(size(&coll) < MAX_ANSWER_BYTES, "collective: {} bytes", size(&coll));
    assert_eq!(coll["sides"][0]["rank_list_truncated"], true);

    let newest = session.rank_entries(&h, culprit, None, 10, 0).unwrap();
    let older = session
        .rank_entries(&h, culprit, None, 10, newest["next_before"].as_u64().unwrap() as usize)
        .unwrap();
    assert_eq!(older["before"], 10);
    let (a, b) = (&newest["entries"][0]["record_id"], &older["entries"][9]["record_id"]);
    assert_eq!(a.as_u64().unwrap(), b.as_u64().unwrap() + 1, "pages are contiguous");
    let all = session.rank_entries(&h, culprit, None, 100_000, 0).unwrap();
    assert!(all["entries"].as_array().unwrap().len() <= 100);

    assert!(size(&session.compare_stacks(&h).unwrap()) < MAX_ANSWER_BYTES);
}

/// `bound_answer` holds any answer to the bound and says it cut.
#[test]
fn oversized_answers_are_cut_and_say_so() {
    let big = serde_json::json!({ "items": (0..20_000).collect::<Vec<_>>(), "ok": 1 });
    let cut = desync_mcp::tools::bound_answer(big);
    assert!(cut.to_string().len() <= MAX_ANSWER_BYTES);
    assert!(cut["answer_truncated"].as_str().unwrap().contains("bytes"));
    assert_eq!(cut["ok"], 1);
}

fn trace(args: &[&str]) -> (Value, Value) {
    let out = desync(args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let path = args[args.iter().position(|a| *a == "--perfetto").unwrap() + 1];
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    (doc["otherData"]["selection"].clone(), doc["traceEvents"].clone())
}

fn pids(events: &Value) -> Vec<u64> {
    let mut pids: Vec<u64> =
        events.as_array().unwrap().iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Past 64 ranks the default trace holds representatives (culprit included) and says what it
/// left out; `--ranks`, `--groups` and `--around-mismatch` narrow it; `--all-ranks` does not.
#[test]
fn perfetto_export_narrows() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    let culprit = u64::from(job(&dumps, 96));
    let d = dumps.to_str().unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    let (sel, events) = trace(&["export", d, "--perfetto", &file("default.json")]);
    let written = pids(&events);
    assert!(written.contains(&culprit) && written.len() < 8, "{written:?}");
    assert_eq!(sel["ranks_left_out"], 96 - written.len() as u64);
    assert!(sel["ranks_reason"].as_str().unwrap().starts_with("representatives"));

    let (sel, events) = trace(&["export", d, "--perfetto", &file("all.json"), "--all-ranks"]);
    assert_eq!(pids(&events).len(), 96);
    assert_eq!(sel["ranks_left_out"], 0);

    let (_, events) = trace(&["export", d, "--perfetto", &file("r.json"), "--ranks", "1-3,50"]);
    assert_eq!(pids(&events), [1, 2, 3, 50]);

    let (_, events) = trace(&[
        "export",
        d,
        "--perfetto",
        &file("g.json"),
        "--ranks",
        "0-7",
        "--groups",
        "default_pg",
    ]);
    let slices: Vec<&Value> =
        events.as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    assert!(!slices.is_empty());
    assert!(slices.iter().all(|e| e["args"]["pg"].as_str().unwrap().contains("default_pg")));

    let (sel, events) = trace(&[
        "export",
        d,
        "--perfetto",
        &file("w.json"),
        "--ranks",
        "0",
        "--groups",
        "0",
        "--around-mismatch",
        "2",
    ]);
    assert_eq!(sel["around_mismatch"], 2);
    let seqs: Vec<u64> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["args"]["seq"].as_u64().unwrap())
        .collect();
    assert!(!seqs.is_empty() && seqs.iter().all(|s| (7..=11).contains(s)), "{seqs:?}");

    let out = desync(&["export", d, "--perfetto", &file("x.json"), "--groups", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
    assert!(!dir.path().join("x.json").exists());
}

/// A job's log where every one of `ranks` ranks raised its own error and the odd ones also
/// timed out (a line per rank each: shape of our own).
fn world_log(dir: &Path, ranks: u32) -> std::path::PathBuf {
    let mut text = String::new();
    for r in 0..ranks {
        text.push_str(&format!(
            "[rank{r}]: Traceback (most recent call last):\n\
             [rank{r}]:   File \"/job/train.py\", line 40, in step\n\
             [rank{r}]:     loss = model(batch)\n\
             [rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        ));
        if r % 2 == 1 {
            text.push_str(&format!(
                "[rank{r}]:[E1128 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n"
            ));
        }
    }
    let path = dir.join(format!("job_{ranks}.log"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The log report of a whole world: its rank sets are capped arrays beside whole ranges, its
/// lists (claims, tracebacks, timeouts) keep their first items and say how many there were,
/// and its headline and text name rank sets briefly: 16x the ranks, about the same bytes.
#[test]
fn log_rank_sets_lists_and_sentences_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let run = |ranks: u32| {
        let log = world_log(dir.path(), ranks);
        let json = desync(&["analyze", "--format", "json", log.to_str().unwrap()]);
        let text = desync(&["analyze", log.to_str().unwrap()]);
        (json.stdout, String::from_utf8(text.stdout).unwrap())
    };
    let (small, small_text) = run(256);
    let (large, large_text) = run(4096);
    let json: Value = serde_json::from_slice(&large).unwrap();
    let verdict = &json["verdict"];
    assert_eq!(verdict["category"], "crash", "{verdict:#}");
    assert_eq!(verdict["culprit_ranks_ranges"], "0-4095");
    assert_eq!(verdict["culprit_ranks"].as_array().unwrap().len(), 256);
    assert_eq!(verdict["culprit_ranks_truncated"], true);
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.len() < 400, "{} chars: {headline}", headline.len());
    assert_eq!(json["claims"].as_array().unwrap().len(), 64);
    assert!(json["claims_total"].as_u64().unwrap() >= 4096, "{}", json["claims_total"]);
    let log = &json["log"];
    assert_eq!(log["tracebacks"].as_array().unwrap().len(), 64);
    assert_eq!(log["tracebacks_total"], 4096);
    assert_eq!(log["timeouts_total"], 2048);
    assert_eq!(log["ranks_seen_ranges"], "0-4095");
    let mut sets = Vec::new();
    rank_sets(&json, &mut sets);
    for (array, ranges, truncated) in sets {
        let whole = expand(&ranges);
        assert!(array.len() <= 256 && whole.starts_with(&array), "{ranges}: {array:?}");
        assert_eq!(truncated, whole.len() > 256, "{ranges}");
    }
    // Claims' own rank sets are odd ranks (the timeouts): whole ranges grow with the world,
    // everything else does not.
    assert!(
        large.len() < 2 * small.len(),
        "16x the ranks made the log report {} bytes against {}",
        large.len(),
        small.len()
    );
    assert!(
        large_text.len() < 2 * small_text.len(),
        "text: {} bytes against {}",
        large_text.len(),
        small_text.len()
    );
}
