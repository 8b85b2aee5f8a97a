//! The reports people look at, through the real binary on real scenarios: `desync report`
//! and `analyze --html` (one self-contained HTML file: verdict, lanes, mismatch marker), and
//! `desync export --perfetto` (Chrome Trace Event JSON, checked by a structural validator of
//! the trace-event format written here, since the `perfetto` Python package needs network).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scenario(name: &str) -> PathBuf {
    repo().join("tests/scenarios").join(name)
}

fn desync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_desync")).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `desync report` on a scenario (with its sources) -> the HTML text.
fn report(name: &str, dir: &Path) -> String {
    let html = dir.join(format!("{name}.html"));
    let s = scenario(name);
    let out = desync(&[
        "report",
        s.join("dumps").to_str().unwrap(),
        "--source-root",
        s.join("src").to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "a hang is a finding: {}", stderr(&out));
    std::fs::read_to_string(&html).unwrap()
}

/// The timeline's JSON blob, parsed.
fn blob(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"desync-data\">";
    let start = html.find(open).expect("data blob") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("blob is JSON")
}

const VOID: &[&str] =
    &["meta", "link", "br", "hr", "img", "input", "col", "area", "base", "wbr", "source"];

/// A small well-formedness check: every non-void element closes, in order; `<script>` and
/// `<style>` bodies are skipped as raw text. Returns the ids seen.
fn check_structure(html: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        if rest.starts_with("<!--") {
            rest = &rest[rest.find("-->").expect("comment closes") + 3..];
            continue;
        }
        let end = rest.find('>').expect("tag closes");
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().unwrap_or_else(|| panic!("stray </{name}>"));
            assert_eq!(open, name.trim(), "</{name}> closes <{open}>");
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(at) = tag.find(" id=\"") {
            let id = &tag[at + 5..];
            ids.insert(id[..id.find('"').unwrap()].to_owned());
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            rest = &rest[rest.find(&close).unwrap_or_else(|| panic!("unclosed <{name}>"))..];
            stack.push(name);
        } else if !VOID.contains(&name.as_str()) && !tag.ends_with('/') {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    ids
}

/// Nothing is fetched: no `src`/`href` to a URL, no stylesheet or script links, no CSS `url()`.
fn assert_self_contained(html: &str) {
    for attr in ["src=\"", "href=\"", "src='", "href='"] {
        for (i, _) in html.match_indices(attr) {
            let value = &html[i + attr.len()..];
            let value = &value[..value.find(['"', '\'']).unwrap_or(value.len())];
            assert!(
                !value.contains("://") && !value.starts_with("//"),
                "external reference {attr}{value}"
            );
        }
    }
    assert!(!html.contains("http://") && !html.contains("https://"), "a URL in the report");
    assert!(!html.contains("<script src") && !html.contains("rel=\"stylesheet\""));
    assert!(!html.contains("url(http") && !html.contains("@import"));
}

#[test]
fn early_stop_report_shows_verdict_lanes_and_the_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("early_stop", dir.path());
    assert_self_contained(&html);
    let ids = check_structure(&html);
    for id in [
        "verdict",
        "category",
        "culprits",
        "headline",
        "evidence",
        "earliest",
        "groups",
        "timeline",
        "legend",
        "pgs",
        "code",
        "snippet",
        "marked-line",
        "explanation",
        "probes",
        "warnings",
        "desync-data",
        "tip",
        "detail",
    ] {
        assert!(ids.contains(id), "no #{id} in {ids:?}");
    }
    // Verdict first, with the same headline as the JSON report.
    let json: Value = serde_json::from_slice(
        &desync(&["analyze", scenario("early_stop/dumps").to_str().unwrap(), "--format", "json"])
            .stdout,
    )
    .unwrap();
    let headline = json["verdict"]["headline"].as_str().unwrap();
    assert!(html.contains(&format!("<p id=\"headline\">{headline}</p>")), "headline missing");
    assert!(html.find("id=\"verdict\"").unwrap() < html.find("id=\"timeline\"").unwrap());
    assert!(html.contains("data-category=\"divergence\""));
    assert!(html.contains("<b id=\"culprits\" class=\"rankset\">3</b>"));
    // The branch point: `break` at train.py:101, marked.
    assert!(
        html.contains(
            "<span class=\"line marked\" id=\"marked-line\"><span class=\"ln\">  101 ▶</span>"
        ),
        "marked line"
    );
    assert!(html.contains("id=\"probe-consensus\""));

    let data = blob(&html);
    let pg = &data["pgs"][0];
    assert_eq!(pg["label"], "pg 0 (default_pg)");
    let lanes = pg["lanes"].as_array().unwrap();
    let labels: Vec<&str> = lanes.iter().map(|l| l["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["rank 0", "rank 1", "rank 2", "rank 3"], "one lane per rank");
    let culprits: Vec<&str> = lanes
        .iter()
        .filter(|l| l["culprit"] == true)
        .map(|l| l["ranks"].as_str().unwrap())
        .collect();
    assert_eq!(culprits, ["3"], "the departed rank is highlighted");
    let cols = pg["cols"].as_array().unwrap();
    let earliest: Vec<&Value> =
        pg["marks"].as_array().unwrap().iter().filter(|m| m["kind"] == "earliest").collect();
    assert_eq!(earliest.len(), 1, "one earliest-mismatch marker");
    assert_eq!(cols[earliest[0]["col"].as_u64().unwrap() as usize], 55, "marker at seq 55");
    assert!(earliest[0]["label"].as_str().unwrap().contains("earliest mismatch"));
    // Every lane has a cell at seq 55, and rank 3's differs from rank 0's (other sizes).
    let at = |lane: &Value, col: u64| -> Option<u64> {
        lane["cells"]
            .as_array()
            .unwrap()
            .chunks(2)
            .find(|c| c[0] == col)
            .map(|c| c[1].as_u64().unwrap())
    };
    let col = earliest[0]["col"].as_u64().unwrap();
    let (d0, d3) = (at(&lanes[0], col).unwrap(), at(&lanes[3], col).unwrap());
    assert_eq!(data["details"][d0 as usize]["input"], serde_json::json!([[577]]));
    assert_eq!(data["details"][d3 as usize]["input"], serde_json::json!([[3]]));
    assert!(
        !data["details"][d3 as usize]["frames"].as_array().unwrap().is_empty(),
        "pickle dumps carry stacks"
    );
}

#[test]
fn pg_order_report_draws_every_group_with_its_members() {
    let dir = tempfile::tempdir().unwrap();
    let html = report("pg_order", dir.path());
    assert_self_contained(&html);
    check_structure(&html);
    assert!(html.contains("data-category=\"deadlock\""));
    let data = blob(&html);
    let pgs = data["pgs"].as_array().unwrap();
    assert_eq!(pgs.len(), 5);
    for pg in pgs {
        let lanes: Vec<String> = pg["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["ranks"].as_str().unwrap().to_owned())
            .collect();
        let members = expand(pg["members"].as_str().unwrap());
        assert_eq!(
            lanes,
            members.iter().map(u32::to_string).collect::<Vec<_>>(),
            "one lane per member of {}",
            pg["label"]
        );
    }
    // The stuck collective is marked in the group where most stuck ranks wait (pg 1, seq 4).
    let stuck: Vec<(&str, i64)> = pgs
        .iter()
        .flat_map(|pg| {
            pg["marks"].as_array().unwrap().iter().filter(|m| m["kind"] == "stuck").map(move |m| {
                (
                    pg["label"].as_str().unwrap(),
                    pg["cols"][m["col"].as_u64().unwrap() as usize].as_i64().unwrap(),
                )
            })
        })
        .collect();
    assert_eq!(stuck, [("pg 1 (tp)", 4)]);
}

/// "0-2,5" -> [0, 1, 2, 5].
fn expand(ranks: &str) -> Vec<u32> {
    ranks
        .split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (a.parse().unwrap()..=b.parse().unwrap()).collect::<Vec<u32>>(),
            None => vec![part.parse().unwrap()],
        })
        .collect()
}

#[test]
fn analyze_html_writes_the_report_next_to_the_usual_output() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = desync(&[
        "analyze",
        scenario("early_stop/dumps").to_str().unwrap(),
        "--format",
        "json",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("stdout is still the JSON report");
    assert_eq!(json["verdict"]["category"], "divergence");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("data-category=\"divergence\""));
    // Without --source-root the code section says why there is no snippet, and still closes.
    check_structure(&text);
}

#[test]
fn report_to_stdout_and_unwritable_output() {
    let out = desync(&["report", scenario("healthy/dumps").to_str().unwrap(), "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("data-category=\"healthy\""));
    check_structure(&html);

    let out = desync(&[
        "report",
        scenario("healthy/dumps").to_str().unwrap(),
        "-o",
        "/nonexistent/dir/r.html",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot write /nonexistent/dir/r.html"), "{}", stderr(&out));
}

/// Writes `ranks` JSON dumps of `entries` `all_reduce` calls each; at seq `at`, rank `culprit`
/// calls it with another size (a mismatch at one seq, no frames: JSON dumps carry none).
fn synthetic_job(dir: &Path, ranks: u32, entries: u64, culprit: u32, at: u64) {
    let members: Vec<String> = (0..ranks).map(|r| r.to_string()).collect();
    for rank in 0..ranks {
        let mut list = Vec::new();
        let mut seq = 0;
        for i in 0..entries {
            seq += 1;
            let size = if rank == culprit && seq == at { 3 } else { 1024 };
            list.push(serde_json::json!({
                "collective_seq_id": seq, "input_dtypes": ["Float"], "input_sizes": [[size]], "is_p2p": false,
                "op_id": seq, "output_dtypes": ["Float"], "output_sizes": [[size]], "p2p_seq_id": 0, "pg_id": 0,
                "process_group": ["0", "default_pg"], "profiling_name": "gloo:all_reduce", "record_id": i,
                "retired": true, "state": "scheduled", "thread_id": "1", "thread_name": "python",
                "time_created_ns": 1_700_000_000_000_000_000_i64 + (seq as i64) * 1_000_000 + i64::from(rank),
                "time_discovered_completed_ns": 0, "time_discovered_started_ns": 0, "timeout_ms": 600_000
            }));
        }
        let dump = serde_json::json!({
            "comm_lib_version": "", "entries": list, "nccl_comm_state": {},
            "pg_config": {"0": {"desc": "default_pg", "name": "0", "ranks": format!("[{}]", members.join(", "))}},
            "pg_status": {"0": {"last_completed_collective": "-1", "last_enqueued_collective": seq.to_string(), "last_started_collective": "-1"}},
            "version": "2.10"
        });
        std::fs::write(dir.join(format!("trace_rank_{rank}")), serde_json::to_vec(&dump).unwrap())
            .unwrap();
    }
}

/// Past 64 ranks, lanes are stream classes labelled with compact rank ranges; past the last
/// ~200 seqs and the mismatch window, seqs are elided behind a gap column that says how many.
#[test]
fn large_jobs_aggregate_lanes_and_elide_seqs() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    synthetic_job(&dumps, 96, 600, 7, 100);
    let html_path = dir.path().join("big.html");
    let out = desync(&["report", dumps.to_str().unwrap(), "-o", html_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let html = std::fs::read_to_string(html_path).unwrap();
    check_structure(&html);
    let data = blob(&html);
    let pg = &data["pgs"][0];
    let lanes: Vec<(&str, &str, bool)> = pg["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["label"].as_str().unwrap(), l["ranks"].as_str().unwrap(), l["culprit"] == true))
        .collect();
    assert_eq!(lanes, [("ranks 0-6,8-95 (95)", "0-6,8-95", false), ("rank 7", "7", true)]);
    let cols: Vec<i64> =
        pg["cols"].as_array().unwrap().iter().map(|c| c.as_i64().unwrap()).collect();
    let gaps: Vec<i64> = cols.iter().copied().filter(|&c| c < 0).collect();
    let drawn = cols.iter().filter(|&&c| c >= 0).count() as i64;
    assert!(!gaps.is_empty(), "some seqs are elided");
    assert_eq!(drawn - gaps.iter().sum::<i64>(), 600, "drawn + elided = every seq");
    assert!(drawn <= 200 + 41 + 1, "drawn {drawn}");
    assert!(
        cols.contains(&100) && cols.contains(&80) && cols.contains(&120),
        "the mismatch window is kept"
    );
    let earliest = pg["marks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["kind"] == "earliest")
        .expect("earliest marker");
    assert_eq!(cols[earliest["col"].as_u64().unwrap() as usize], 100);
}

// ---- Perfetto / Chrome Trace Event format ----

fn export(dumps: &Path, dir: &Path) -> Value {
    let file = dir.join("trace.json");
    let out = desync(&["export", dumps.to_str().unwrap(), "--perfetto", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&std::fs::read(file).unwrap()).expect("the trace is JSON")
}

/// The trace-event format's structural rules, as Perfetto's and catapult's JSON importers
/// apply them. Returns the events by phase.
fn validate_trace(trace: &Value) -> BTreeMap<String, Vec<Value>> {
    let events = trace["traceEvents"].as_array().expect("traceEvents array");
    let mut by_ph: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "pid/tid: {e}");
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("no ts: {e}"));
        assert!(ts >= 0.0, "ts before the clock base: {e}");
        assert!(e["name"].is_string(), "name: {e}");
        match ph {
            "X" => assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "X needs dur >= 0: {e}"),
            "M" => {
                let name = e["name"].as_str().unwrap();
                assert!(
                    ["process_name", "thread_name", "process_sort_index", "thread_sort_index"]
                        .contains(&name),
                    "{e}"
                );
                assert!(e["args"].is_object());
            }
            "i" => assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g")), "instant scope: {e}"),
            "s" | "t" | "f" => assert!(e["id"].is_u64(), "flow id: {e}"),
            other => panic!("unexpected phase {other}: {e}"),
        }
        by_ph.entry(ph.to_owned()).or_default().push(e.clone());
    }
    // Metadata: every process and every track with slices is named.
    let named = |what: &str| -> BTreeSet<(u64, u64)> {
        by_ph["M"]
            .iter()
            .filter(|e| e["name"] == what)
            .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect()
    };
    let (processes, threads) = (named("process_name"), named("thread_name"));
    let key = |e: &Value| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
    let mut tracks: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    for x in by_ph.get("X").into_iter().flatten() {
        let (pid, tid) = key(x);
        assert!(processes.contains(&(pid, 0)), "process {pid} unnamed");
        assert!(threads.contains(&(pid, tid)), "track {pid}/{tid} unnamed");
        tracks
            .entry((pid, tid))
            .or_default()
            .push((x["ts"].as_f64().unwrap(), x["dur"].as_f64().unwrap()));
    }
    // Slices on one track nest or follow each other (importers drop overlapping siblings).
    for (track, slices) in &mut tracks {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in slices.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0 + 1e-6, "overlapping slices on {track:?}: {w:?}");
        }
    }
    // Flows: per id one start and one finish, in time order, each inside a slice of its track.
    let mut flows: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for ph in ["s", "t", "f"] {
        for e in by_ph.get(ph).into_iter().flatten() {
            flows.entry(e["id"].as_u64().unwrap()).or_default().push(e);
        }
    }
    for (id, steps) in &flows {
        let count = |ph: &str| steps.iter().filter(|e| e["ph"] == ph).count();
        assert_eq!((count("s"), count("f")), (1, 1), "flow {id} is not paired");
        let ts = |ph: &str| steps.iter().find(|e| e["ph"] == ph).unwrap()["ts"].as_f64().unwrap();
        assert!(ts("s") <= ts("f"), "flow {id} goes back in time");
        for e in steps {
            let t = e["ts"].as_f64().unwrap();
            let inside =
                tracks.get(&key(e)).is_some_and(|s| s.iter().any(|&(a, d)| a <= t && t <= a + d));
            assert!(inside, "flow {id} step not on a slice: {e}");
        }
    }
    by_ph
}

#[test]
fn perfetto_export_of_early_stop_is_a_valid_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = export(&scenario("early_stop/dumps"), dir.path());
    let by_ph = validate_trace(&trace);
    let names: BTreeSet<String> = by_ph["M"]
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        ["rank 0", "rank 1", "rank 2", "rank 3"].map(String::from).into_iter().collect()
    );
    assert!(
        by_ph["M"]
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "pg 0 (default_pg)")
    );
    // One slice per entry: 55 collectives on each of 4 ranks, with their metadata.
    let xs = &by_ph["X"];
    assert_eq!(xs.len(), 220);
    let first = xs.iter().map(|x| x["ts"].as_f64().unwrap()).fold(f64::MAX, f64::min);
    assert!(first.abs() < 1e-9, "times are relative to the earliest entry of any rank");
    let at55: Vec<&Value> = xs.iter().filter(|x| x["args"]["seq"] == 55).collect();
    assert_eq!(at55.len(), 4);
    assert!(
        at55.iter().any(|x| x["pid"] == 3 && x["args"]["input_sizes"] == serde_json::json!([[3]]))
    );
    assert!(
        at55.iter().all(|x| x["args"]["state"].is_string() && x["args"]["input_dtypes"].is_array())
    );
    // Where each rank was: the call site (innermost user frame) and the stack, in the args.
    let rank3 = at55.iter().find(|x| x["pid"] == 3).unwrap();
    let site = rank3["args"]["call_site"].as_str().unwrap();
    assert!(site.ends_with("train.py:105 in main"), "{site}");
    let stack = rank3["args"]["stack"].as_str().unwrap();
    assert!(stack.lines().count() >= 2 && stack.contains("train.py:105 in main"), "{stack}");
    assert!(stack.lines().next().unwrap().contains("torch/distributed"), "innermost first");
    // The earliest mismatch is marked on every involved rank and linked across ranks.
    let marked: BTreeSet<u64> = by_ph["i"]
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("earliest mismatch"))
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(marked, [0, 1, 2, 3].into_iter().collect());
    assert!(by_ph["i"].iter().any(|e| e["pid"] == 3 && e["args"]["role"] == "departed"));
    assert!(by_ph["i"].iter().all(|e| e["args"]["verdict"] == "divergence"), "instants carry it");
    let flow55 = by_ph["s"]
        .iter()
        .chain(&by_ph["f"])
        .chain(&by_ph["t"])
        .filter(|e| e["args"]["seq"] == 55)
        .count();
    assert_eq!(flow55, 4, "the seq-55 flow passes through all four ranks");
}

#[test]
fn perfetto_export_of_pg_order_names_a_track_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let trace = export(&scenario("pg_order/dumps"), dir.path());
    let by_ph = validate_trace(&trace);
    let tracks: BTreeSet<String> = by_ph["M"]
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 0)
        .map(|e| e["args"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        tracks,
        ["pg 0 (default_pg)", "pg 1 (tp)", "pg 3 (dp)"].map(String::from).into_iter().collect()
    );
    // A deadlock has no conflicting mismatch to link, but the stuck ranks are marked.
    assert!(!by_ph.contains_key("s"));
    let stuck: BTreeSet<u64> = by_ph["i"]
        .iter()
        .filter(|e| e["name"].as_str().unwrap().starts_with("stuck"))
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(stuck, [0, 1, 2, 3].into_iter().collect());
}

#[test]
fn perfetto_export_of_nccl_states_uses_recorded_durations() {
    let dir = tempfile::tempdir().unwrap();
    let trace = export(&scenario("nccl_h100_healthy/dumps"), dir.path());
    let by_ph = validate_trace(&trace);
    // NCCL records completion: some slices are longer than the fixed width for unknown ones.
    assert!(
        by_ph["X"]
            .iter()
            .any(|x| x["args"]["state"] == "completed" && x["args"]["dur_unknown"].is_null())
    );
}
