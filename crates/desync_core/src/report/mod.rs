//! Stage 5: rendering an [`Analysis`](crate::Analysis). Each renderer writes to the
//! `&mut dyn Write` it is given; nothing here prints.

mod html;
mod json;
mod perfetto;
mod text;

pub use html::{HtmlOptions, write_html};
pub use json::{SCHEMA_VERSION, to_json, write_json};
pub use perfetto::{
    PerfettoError, PerfettoOptions, REPRESENTATIVE_WORLD, SelectionError, representatives,
    write_perfetto,
};
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

/// Ranks a JSON rank array lists before it is cut (docs/json-schema.md, "Rank sets"): an array
/// of 100,000 ranks is about a megabyte of pretty JSON, and a report holds several.
pub const RANK_LIST_LIMIT: usize = 256;

/// A rank set as the JSON report writes it, flattened into the struct that holds it: `NAME`,
/// the sorted ranks (the lowest [`RANK_LIST_LIMIT`] when the set is larger), `NAME_ranges`,
/// the whole set as ranges (`"0-3,5,8-1023"`, what [`crate::model::format_ranks`] writes), and
/// `NAME_truncated: true` only when the array was cut. Consumers that read the array keep
/// working on every set they could read before it was cut; the ranges are always whole.
pub struct RankFields<'a> {
    name: &'static str,
    ranks: std::borrow::Cow<'a, [u32]>,
}

impl<'a> RankFields<'a> {
    /// `ranks` must be sorted (a [`RankSet`]'s slice, or a sorted vector).
    pub fn new(name: &'static str, ranks: &'a [u32]) -> Self {
        debug_assert!(ranks.is_sorted(), "{name}: rank fields need sorted ranks");
        Self { name, ranks: std::borrow::Cow::Borrowed(ranks) }
    }

    /// Ranks in any order, sorted and deduplicated here.
    pub fn owned(name: &'static str, mut ranks: Vec<u32>) -> Self {
        ranks.sort_unstable();
        ranks.dedup();
        Self { name, ranks: std::borrow::Cow::Owned(ranks) }
    }
}

impl serde::Serialize for RankFields<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let cut = self.ranks.len() > RANK_LIST_LIMIT;
        let mut map = s.serialize_map(Some(2 + usize::from(cut)))?;
        map.serialize_entry(self.name, &self.ranks[..self.ranks.len().min(RANK_LIST_LIMIT)])?;
        map.serialize_entry(
            &format!("{}_ranges", self.name),
            &crate::model::format_ranks(&self.ranks),
        )?;
        if cut {
            map.serialize_entry(&format!("{}_truncated", self.name), &true)?;
        }
        map.end()
    }
}

/// A `Vec<u32>` field (any order) as [`RankFields`] named `ranks`: use with
/// `#[serde(flatten, serialize_with = "...")]`. Below: the same for other field names.
pub fn serialize_rank_vec<S: serde::Serializer>(ranks: &[u32], s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&RankFields::owned("ranks", ranks.to_vec()), s)
}

/// See [`serialize_rank_vec`]: named `culprit_ranks`.
pub fn serialize_culprit_ranks<S: serde::Serializer>(
    ranks: &[u32],
    s: S,
) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&RankFields::owned("culprit_ranks", ranks.to_vec()), s)
}

/// See [`serialize_rank_vec`]: named `not_in_log`.
pub fn serialize_not_in_log<S: serde::Serializer>(ranks: &[u32], s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&RankFields::owned("not_in_log", ranks.to_vec()), s)
}

/// A [`RankSet`] field as [`RankFields`] named `ranks`: use with `#[serde(flatten)]`.
pub fn serialize_ranks<S: serde::Serializer>(ranks: &RankSet, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&RankFields::new("ranks", ranks.as_slice()), s)
}
