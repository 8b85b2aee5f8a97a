//! Stage 5: rendering an [`Analysis`](crate::Analysis). Each renderer writes to the
//! `&mut dyn Write` it is given; nothing here prints.

mod html;
mod json;
mod perfetto;
mod text;

pub use html::{HtmlOptions, write_html};
pub use json::{SCHEMA_VERSION, to_json, write_json};
pub use perfetto::write_perfetto;
pub use text::{TextOptions, escape_controls, write_text};

use crate::model::RankSet;

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
