//! Saving an alert's snapshot as ordinary files, so `desync analyze <dir>/dumps` replays it
//! after the job is gone:
//!
//! ```text
//! <save-dir>/20261122T171502Z-divergence/
//!   dumps/rank_<N>.json|pkl   each rank's recorder, as its worker served it (plus, in JSON,
//!                             the frames the live stacks gave its newest entry)
//!   stacks/rank_<N>.txt       each rank's Python threads (dump_traceback), when available
//!   report.txt, report.json   the alert's analysis
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use desync_core::Analysis;
use desync_core::model::Frame;

use crate::source::Source;

/// Snapshots one watch saves at most, and bytes in all: a job whose dumps churn (a directory
/// rewritten every second with a new finding each time) must not fill the disk.
pub const MAX_SNAPSHOTS: usize = 20;
pub const MAX_BYTES: u64 = 1 << 30;

/// What a watch has saved so far, against [`MAX_SNAPSHOTS`] and [`MAX_BYTES`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Saved {
    pub snapshots: usize,
    pub bytes: u64,
}

impl Saved {
    /// Why the next snapshot may not be saved, if it may not.
    pub fn refusal(&self) -> Option<String> {
        (self.snapshots >= MAX_SNAPSHOTS || self.bytes >= MAX_BYTES).then(|| {
            format!(
                "not saved: this watch already saved {} snapshot(s), {} MB, the most it keeps ({MAX_SNAPSHOTS} snapshots, {} MB)",
                self.snapshots,
                self.bytes >> 20,
                MAX_BYTES >> 20
            )
        })
    }
}

/// Writes one snapshot under `folder`; returns the number of files. Stops with an error when
/// the watch's byte budget runs out mid-way (what was written stays).
pub fn save(
    source: &mut dyn Source,
    analysis: &Analysis,
    stacks: &BTreeMap<u32, String>,
    attached: &BTreeMap<u32, Vec<Frame>>,
    folder: &Path,
    saved: &mut Saved,
) -> std::io::Result<usize> {
    saved.snapshots += 1;
    let mut write = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        if saved.bytes + bytes.len() as u64 > MAX_BYTES {
            return Err(std::io::Error::other(format!(
                "stopped before {}: this watch's snapshots reached the limit of {} MB",
                path.display(),
                MAX_BYTES >> 20
            )));
        }
        // Never opens a FIFO or device planted under a predictable snapshot name.
        desync_core::output::write_bytes(path, bytes)?;
        saved.bytes += bytes.len() as u64;
        Ok(())
    };
    let dumps = folder.join("dumps");
    std::fs::create_dir_all(&dumps)?;
    let mut written = 0;
    for (rank, name, bytes) in source.raw_dumps() {
        let bytes = match attached.get(&rank) {
            Some(frames) => crate::traceback::embed_frames(bytes, frames),
            None => bytes,
        };
        write(&dumps.join(name), &bytes)?;
        written += 1;
    }
    if !stacks.is_empty() {
        let dir = folder.join("stacks");
        std::fs::create_dir_all(&dir)?;
        for (rank, text) in stacks {
            write(&dir.join(format!("rank_{rank}.txt")), text.as_bytes())?;
            written += 1;
        }
    }
    let mut text = Vec::new();
    let options = desync_core::report::TextOptions { color: false, max_mismatches: 5, width: None };
    desync_core::report::write_text(analysis, options, &mut text)?;
    write(&folder.join("report.txt"), &text)?;
    let mut json = Vec::new();
    desync_core::report::write_json(analysis, &mut json)?;
    write(&folder.join("report.json"), &json)?;
    Ok(written + 2)
}
