//! Stage 5: rendering an [`Analysis`](crate::Analysis). Each renderer writes to the
//! `&mut dyn Write` it is given; nothing here prints.

mod html;
mod json;
mod perfetto;
mod text;

pub use html::{HtmlOptions, write_html};
pub use json::{SCHEMA_VERSION, to_json, write_json};
pub use perfetto::write_perfetto;
pub use text::{TextOptions, clip_chars, escape_controls, write_text};

use crate::Analysis;
use crate::diagnose::Category;
use crate::model::RankSet;

/// Why an analysis has no Code section, in one sentence (text and HTML say the same).
pub(crate) fn no_code_reason(a: &Analysis) -> &'static str {
    let has_frames = a
        .trace
        .ranks
        .iter()
        .flat_map(|r| &r.entries)
        .any(|e| e.stack().is_some_and(|s| !s.is_empty()));
    if a.diagnosis.category == Category::Healthy {
        "the job is healthy: there is no branch point to show"
    } else if !has_frames {
        "the dumps carry no stack frames (JSON dumps never do; pickle dumps do unless \
         TORCH_INCLUDE_STACK_TRACE=0), so no line of code can be shown"
    } else {
        "no collective's stacks on the two sides could be compared"
    }
}

/// Paths serialize as text, non-UTF-8 bytes replaced (a file name on disk need not be UTF-8,
/// a JSON string must be).
pub fn serialize_path<S: serde::Serializer>(
    path: &std::path::Path,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// [`serialize_path`] for an optional path.
pub fn serialize_opt_path<S: serde::Serializer>(
    path: &Option<std::path::PathBuf>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => s.serialize_str(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// Rank sets serialize as plain sorted arrays.
pub fn serialize_ranks<S: serde::Serializer>(ranks: &RankSet, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ranks.as_slice())
}
