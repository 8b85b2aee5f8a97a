//! Stage 5: rendering an [`Analysis`](crate::Analysis). Each renderer writes to the
//! `&mut dyn Write` it is given; nothing here prints.

mod html;
mod json;
mod perfetto;
mod text;

pub use html::{HtmlOptions, write_html};
pub use json::{SCHEMA_VERSION, to_json, write_json};
pub use perfetto::write_perfetto;
pub use text::{TextOptions, write_text};

use crate::model::RankSet;

/// Rank sets serialize as plain sorted arrays.
pub fn serialize_ranks<S: serde::Serializer>(ranks: &RankSet, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ranks.as_slice())
}
