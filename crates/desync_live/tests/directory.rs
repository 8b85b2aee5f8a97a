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
