//! `watch --dir`: the directory source reloads when any dump the loader reads changes,
//! including dumps in subdirectories (the loader searches recursively), and only then.

use std::path::{Path, PathBuf};

use desync_core::load::LoadOptions;
use desync_live::{Detail, Directory, Snapshot, Source};

fn scenario_dumps() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/stalled_rank/dumps")
}

fn taken_ranks(snapshot: Snapshot) -> Option<usize> {
    match snapshot {
        Snapshot::Taken { trace, .. } => Some(trace.ranks.len()),
        Snapshot::Unchanged => None,
    }
}

fn copy_dumps(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for item in std::fs::read_dir(scenario_dumps()).unwrap() {
        let path = item.unwrap().path();
        std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
    }
}

#[test]
fn a_rewrite_in_a_subdirectory_is_a_new_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("node0");
    copy_dumps(&node);
    let mut source = Directory::new(dir.path().to_path_buf(), LoadOptions::default());
    assert_eq!(taken_ranks(source.snapshot(Detail::Active).unwrap()), Some(4));
    assert_eq!(
        taken_ranks(source.snapshot(Detail::Active).unwrap()),
        None,
        "nothing was rewritten"
    );

    // A rank rewrites its dump (here: a shorter copy of its own bytes, a different size).
    let dump = std::fs::read_dir(&node).unwrap().next().unwrap().unwrap().path();
    let bytes = std::fs::read(&dump).unwrap();
    std::fs::write(&dump, &bytes[..bytes.len() - 1]).unwrap();
    assert!(
        taken_ranks(source.snapshot(Detail::Active).unwrap()).is_some(),
        "the rewrite was missed"
    );
}

#[test]
fn a_writer_s_temporary_file_is_no_new_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    copy_dumps(dir.path());
    let mut source = Directory::new(dir.path().to_path_buf(), LoadOptions::default());
    assert_eq!(taken_ranks(source.snapshot(Detail::Active).unwrap()), Some(4));
    // What `desync publish` writes before renaming it into place: not a dump, not a change.
    std::fs::write(dir.path().join(".gloo_trace_rank_0.tmp"), b"half a pickle").unwrap();
    assert_eq!(taken_ranks(source.snapshot(Detail::Active).unwrap()), None);
}

/// The stalled job's dumps with rank 2's (the stalled rank's) file time `culprit_ms` after the
/// other ranks' files, watched with `lag`: the first status and each alert's category.
fn watch_with_culprit_written(
    culprit_ms: i64,
    lag: std::time::Duration,
) -> (desync_core::diagnose::Category, String, Vec<desync_core::diagnose::Category>) {
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    copy_dumps(dir.path());
    let base = SystemTime::now() - Duration::from_mins(1);
    for item in std::fs::read_dir(dir.path()).unwrap() {
        let path = item.unwrap().path();
        let culprit = path.file_name().unwrap().to_str().unwrap().ends_with("_2");
        let offset = Duration::from_millis(culprit_ms.unsigned_abs());
        let at = match (culprit, culprit_ms < 0) {
            (false, _) => base,
            (true, false) => base + offset,
            (true, true) => base - offset,
        };
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(at).unwrap();
    }
    let options = desync_live::watch::WatchOptions {
        interval: Duration::from_millis(20),
        lag,
        duration: Some(Duration::from_secs(5)),
        exit_on_alert: true,
        until_gone: None,
        save_dir: None,
        sources: desync_core::bridge::SourceOptions::default(),
    };
    let mut source = Directory::new(dir.path().to_path_buf(), LoadOptions::default());
    let mut first = None;
    let mut alerts = Vec::new();
    desync_live::watch(&mut source, &options, &mut |event| {
        match event {
            desync_live::watch::Event::Status(s) if first.is_none() => {
                first = Some((s.observed, s.headline.clone()));
            }
            desync_live::watch::Event::Alert(a) => alerts.push(a.analysis.diagnosis.category),
            _ => {}
        }
        desync_live::watch::Flow::Continue
    });
    let (observed, headline) = first.expect("no status");
    (observed, headline, alerts)
}

#[test]
fn ranks_read_moments_apart_are_no_stall_yet_but_a_stall_that_holds_still_alerts() {
    use desync_core::diagnose::Category;
    let lag = std::time::Duration::from_millis(400);

    // The stalled rank's file is older than every waiting rank's, by less than the lag: per-node
    // agents write at their own moments, and it may have moved on since.
    let (observed, headline, alerts) = watch_with_culprit_written(-150, lag);
    assert_eq!(observed, Category::Inconclusive, "{headline}");
    assert!(
        headline.starts_with("rank(s) 2 were written 150 ms before rank(s) 0-1,3 that wait"),
        "{headline}"
    );
    // Nothing new comes (the files are written once): the finding holds and alerts after the lag.
    assert_eq!(alerts, [Category::Stall]);

    // Written after the ranks waiting for it, it was seen behind them: the snapshot shows a stall.
    let (observed, headline, alerts) = watch_with_culprit_written(150, lag);
    assert_eq!(observed, Category::Stall, "{headline}");
    assert_eq!(alerts, [Category::Stall]);

    // Older than the lag: a recorder that stopped being refreshed, no reading artefact.
    let (observed, headline, _) = watch_with_culprit_written(-2_000, lag);
    assert_eq!(observed, Category::Stall, "{headline}");
}
