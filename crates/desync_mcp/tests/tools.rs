//! The MCP tools' logic on a committed real scenario, without a client: handles, the
//! collective view, source lookup and the errors malformed calls must produce.

use std::path::PathBuf;

use desync_mcp::Session;
use desync_mcp::tools::{LoadArgs, Page};

fn scenario(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios").join(name)
}

/// A session whose client may name the committed scenarios only.
fn session() -> Session {
    Session::new([scenario("")])
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
    let session = session();
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

    let e = session.rank_entries(&h, 3, Some("0"), 3, 0).unwrap();
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
    let session = session();
    assert!(session.verdict("h1").unwrap_err().contains("unknown handle"));
    assert!(
        session
            .load(&LoadArgs { path: "/nonexistent/dumps".into(), ..LoadArgs::default() })
            .is_err()
    );
    let h = load_early_stop(&session);
    assert!(session.collective(&h, "nope", 1).unwrap_err().contains("unknown process group"));
    assert!(session.rank_entries(&h, 99, None, 5, 0).unwrap_err().contains("rank 99"));
    assert!(session.source(Some(&h), "train.py", 100_000, 2).unwrap_err().contains("out of range"));
    assert!(session.source(None, "/nonexistent.py", 1, 2).is_err());
    assert!(session.lint(&["/nonexistent/dir".into()], Page::default()).is_err());
    assert!(session.lint(&[], Page::default()).is_err());
}

#[test]
fn paths_outside_the_allowed_roots_are_refused() {
    let session = session();
    let dir = scenario("early_stop");
    let dumps = dir.join("dumps").display().to_string();
    let load = |source_root: Option<&str>, path_maps: &[&str]| {
        session.load(&LoadArgs {
            path: dumps.clone(),
            source_root: source_root.map(str::to_owned),
            path_maps: path_maps.iter().map(|m| (*m).to_owned()).collect(),
            ..LoadArgs::default()
        })
    };
    let outside = |answer: Result<serde_json::Value, String>| {
        let error = answer.expect_err("a path outside the allowed roots was accepted");
        assert!(error.contains("outside the directories this server allows"), "{error}");
    };
    outside(load(Some("/"), &[]));
    outside(load(None, &["/w=/"]));
    outside(load(Some(&format!("{}/../../..", dir.display())), &[]));
    outside(session.load(&LoadArgs { path: "/etc".into(), ..LoadArgs::default() }));
    outside(session.lint(&["/etc".into()], Page::default()));
    assert!(load(Some(&dir.join("src").display().to_string()), &[]).is_ok());
    // A server allowed nothing refuses everything.
    let closed = Session::new(Vec::<PathBuf>::new());
    let error = closed.load(&LoadArgs { path: dumps.clone(), ..LoadArgs::default() }).unwrap_err();
    assert!(error.contains("--allow-root"), "{error}");
}
