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

pub fn save(
    source: &mut dyn Source,
    analysis: &Analysis,
    stacks: &BTreeMap<u32, String>,
    attached: &BTreeMap<u32, Vec<Frame>>,
    folder: &Path,
) -> std::io::Result<usize> {
    let dumps = folder.join("dumps");
    std::fs::create_dir_all(&dumps)?;
    let mut written = 0;
    for (rank, name, bytes) in source.raw_dumps() {
        let bytes = match attached.get(&rank) {
            Some(frames) => crate::traceback::embed_frames(bytes, frames),
            None => bytes,
        };
        std::fs::write(dumps.join(name), bytes)?;
        written += 1;
    }
    if !stacks.is_empty() {
        let dir = folder.join("stacks");
        std::fs::create_dir_all(&dir)?;
        for (rank, text) in stacks {
            std::fs::write(dir.join(format!("rank_{rank}.txt")), text)?;
            written += 1;
        }
    }
    let mut text = Vec::new();
    let options = desync_core::report::TextOptions { color: false, max_mismatches: 5 };
    desync_core::report::write_text(analysis, options, &mut text)?;
    std::fs::write(folder.join("report.txt"), text)?;
    let mut json = Vec::new();
    desync_core::report::write_json(analysis, &mut json)?;
    std::fs::write(folder.join("report.json"), json)?;
    Ok(written + 2)
}
