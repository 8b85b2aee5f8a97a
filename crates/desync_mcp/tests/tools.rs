//! The MCP tools' logic on a committed real scenario, without a client: handles, the
//! collective view, source lookup and the errors malformed calls must produce.

use std::path::PathBuf;

use desync_mcp::Session;
use desync_mcp::tools::LoadArgs;

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios").join(name)
}

fn load_early_stop(session: &Session) -> String {
    let dir = scenario("early_stop");
    let out = session
        .load(&LoadArgs {
            path: dir.join("dumps").display().to_string(),
            source_root: Some(dir.join("src").display().to_string()),
            ..LoadArgs::default()
        })
        .expect("load");
    assert_eq!(out["summary"]["verdict_category"], "divergence");
    assert_eq!(out["summary"]["world_size"], 4);
    out["handle"].as_str().unwrap().to_owned()
}

#[test]
fn workflow_on_early_stop() {
    let session = Session::default();
    let h = load_early_stop(&session);
    assert_eq!(h, "h1");

    let v = session.verdict(&h).unwrap();
    assert_eq!(v["verdict"]["culprit_ranks"], serde_json::json!([3]));

    let c = session.collective(&h, "0", 55).unwrap();
    assert_eq!(c["consistent"], false);
    let sides = c["sides"].as_array().unwrap();
    assert_eq!(sides.len(), 2);
    assert_eq!(sides[0]["ranks"], "0-2");
    assert_eq!(sides[1]["ranks"], "3");

    let e = session.rank_entries(&h, 3, Some("0"), 3).unwrap();
    assert_eq!(e["entries"].as_array().unwrap().len(), 3);

    let s = session.compare_stacks(&h).unwrap();
    assert_eq!(s["branch"]["line"], 101);
    let file = s["branch"]["file"].as_str().unwrap();
    let src = session.source(Some(&h), file, 101, 1).unwrap();
    assert_eq!(src["lines"].as_array().unwrap().len(), 3);
    assert_eq!(src["lines"][1]["text"].as_str().unwrap().trim(), "break");

    assert!(session.probes_diff(&h).unwrap().contains("@@"));
}

#[test]
fn malformed_calls_are_errors() {
    let session = Session::default();
    assert!(session.verdict("h1").unwrap_err().contains("unknown handle"));
    assert!(
        session
            .load(&LoadArgs { path: "/nonexistent/dumps".into(), ..LoadArgs::default() })
            .is_err()
    );
    let h = load_early_stop(&session);
    assert!(session.collective(&h, "nope", 1).unwrap_err().contains("unknown process group"));
    assert!(session.rank_entries(&h, 99, None, 5).unwrap_err().contains("rank 99"));
    assert!(session.source(Some(&h), "train.py", 100_000, 2).unwrap_err().contains("out of range"));
    assert!(session.source(None, "/nonexistent.py", 1, 2).is_err());
    assert!(desync_mcp::tools::lint(&["/nonexistent/dir".into()]).is_err());
    assert!(desync_mcp::tools::lint(&[]).is_err());
}
