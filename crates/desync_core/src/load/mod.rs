//! Stage 1: find every rank's dump, decode them in parallel, and infer the world and its
//! process groups. One unreadable file is a warning, never the end of the run.

mod discover;
mod groups;
pub(crate) mod intern;
mod json;
mod ownership;
mod pickle;

use std::num::NonZeroI64;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::Progress;
use crate::error::{DumpError, Error};
use crate::model::{RankDump, Trace, Warning, WarningKind, format_ranks};

pub use discover::{Candidate, split_rank, walk};
pub use ownership::Ownership;

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Only files whose names start with this prefix; the rank follows it.
    pub prefix: Option<String>,
    /// Which frames are library code beyond their location (`--library`, `--user-code`).
    pub ownership: Ownership,
}

/// A decoded file plus what was odd inside it.
pub(crate) struct Decoded {
    pub dump: RankDump,
    pub notes: Notes,
}

/// Entries that could not be understood, counted so the report says so once per file.
#[derive(Default)]
pub(crate) struct Notes {
    pub bad_entries: usize,
    pub first_reason: Option<String>,
}

impl Notes {
    fn bad_entry(&mut self, why: String) {
        self.bad_entries += 1;
        self.first_reason.get_or_insert(why);
    }
}

/// Loads a directory of per-rank dumps (recursively) or a single dump file.
pub fn load(path: &Path, options: &LoadOptions, progress: &dyn Progress) -> Result<Trace, Error> {
    let (candidates, warnings) = discover(path, options)?;
    progress.start(candidates.len() as u64, "loading dumps");
    let loader = Loader::new(options.ownership.clone());
    candidates.into_par_iter().for_each(|c| {
        match std::fs::read(&c.path) {
            Ok(bytes) => loader.add(c.path, c.rank, &bytes),
            Err(e) => loader.fail(c.path, c.rank, DumpError::Io(e)),
        }
        progress.advance(1);
    });
    progress.finish();
    loader.finish(path, warnings)
}

/// The dump files under `path` (a directory, searched recursively, or one file) with the rank
/// each name carries, plus warnings for the files set aside.
pub(crate) fn discover(
    path: &Path,
    options: &LoadOptions,
) -> Result<(Vec<Candidate>, Vec<Warning>), Error> {
    let meta = std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { path: path.to_path_buf() },
        _ => Error::Io { path: path.to_path_buf(), source },
    })?;
    if !meta.is_dir() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let rank = split_rank(name).map(|(_, r)| r);
        return Ok((vec![Candidate { path: path.into(), rank }], Vec::new()));
    }
    let files = discover::walk(path).map_err(|source| Error::Io { path: path.into(), source })?;
    let Selection { candidates, warnings } = select(path, files, options)?;
    Ok((candidates, warnings))
}

/// The dumps to read among a listing, and warnings for what was set aside.
#[derive(Debug, Default)]
pub struct Selection {
    pub candidates: Vec<Candidate>,
    pub warnings: Vec<Warning>,
}

/// Sorts the names listed under `input` (files below a directory, objects under a bucket
/// prefix) into dumps to read and warnings for the rest, by the same rules wherever they came
/// from. A listing with no dump in it is an error that says what was there instead.
pub fn select(
    input: &Path,
    names: Vec<PathBuf>,
    options: &LoadOptions,
) -> Result<Selection, Error> {
    let total = names.len();
    let found = discover::classify(names, options.prefix.as_deref());
    let mut warnings = Vec::new();
    for (skipped, why) in found.skipped {
        warnings.push(warn(WarningKind::Skipped, Some(skipped), None, why));
    }
    if found.unnamed > 0 {
        let message = format!(
            "{} file(s) ignored: no rank number at the end of the name{}",
            found.unnamed,
            options.prefix.as_ref().map(|p| format!(" after prefix `{p}`")).unwrap_or_default()
        );
        warnings.push(warn(WarningKind::Skipped, None, None, message));
    }
    if found.candidates.is_empty() {
        let hint = match &options.prefix {
            Some(p) => format!("{total} file(s), none named `{p}<rank>`"),
            None => {
                format!("{total} file(s), none ending in a rank number (like `nccl_trace_rank_3`)")
            }
        };
        return Err(Error::NoDumps { path: input.into(), hint });
    }
    Ok(Selection { candidates: found.candidates, warnings })
}

/// Decodes dumps handed to it one by one, from any source (files, HTTP responses from a live
/// job's debug server, objects in a bucket), and assembles them into a [`Trace`].
///
/// `add` may be called from many threads at once. It decodes on the spot and keeps only the
/// decoded dump, so the caller can drop the bytes: memory follows what was decoded, not what
/// was fetched.
#[derive(Default)]
pub struct Loader {
    rank_lists: RankLists,
    results: std::sync::Mutex<Vec<Attempt>>,
    ownership: Ownership,
}

/// One file's outcome; the rank is what the name said (`None`: read as rank 0). For a
/// summary, path and rank are those of the dump it was made from.
pub(crate) struct Attempt {
    pub path: PathBuf,
    pub rank: Option<u32>,
    pub result: Result<Decoded, DumpError>,
}

impl Attempt {
    /// Decodes one file of any format, a summary included.
    pub fn decode(path: PathBuf, rank: Option<u32>, bytes: &[u8], rank_lists: &RankLists) -> Self {
        if crate::summary::is_summary(bytes) {
            return match crate::summary::read(bytes, rank_lists) {
                Ok(summary) => Self {
                    path: summary.origin.path,
                    rank: summary.origin.rank,
                    result: summary.content.map_err(DumpError::Summarized),
                },
                Err(e) => Self { path, rank, result: Err(DumpError::Summary(e)) },
            };
        }
        let result = decode_bytes(bytes, rank.unwrap_or(0), &path, rank_lists);
        Self { path, rank, result }
    }

    /// What the report says about this one file (unreadable, no rank in its name, entries
    /// skipped); cross-file warnings come later, from the whole set.
    pub fn warnings(&self, warnings: &mut Vec<Warning>) {
        match &self.result {
            Ok(decoded) => {
                if self.rank.is_none() {
                    let message = "no rank in the file name; read as rank 0".to_owned();
                    warnings.push(warn(
                        WarningKind::Skipped,
                        Some(self.path.clone()),
                        Some(0),
                        message,
                    ));
                }
                note_entries(decoded, warnings);
            }
            Err(e) => warnings.push(warn(
                WarningKind::Unreadable,
                Some(self.path.clone()),
                self.rank,
                e.to_string(),
            )),
        }
    }
}

impl Loader {
    /// A loader that applies `ownership` to the frames it decodes.
    pub fn new(ownership: Ownership) -> Self {
        Self { ownership, ..Self::default() }
    }

    /// Decodes one dump. `path` names it in warnings and reports (a file, a URL, an object key);
    /// `rank` is the rank its name carries.
    pub fn add(&self, path: PathBuf, rank: Option<u32>, bytes: &[u8]) {
        self.push(Attempt::decode(path, rank, bytes, &self.rank_lists));
    }

    /// Records a dump that could not even be fetched; it becomes an `unreadable` warning.
    pub fn fail(&self, path: PathBuf, rank: Option<u32>, error: DumpError) {
        self.push(Attempt { path, rank, result: Err(error) });
    }

    fn push(&self, attempt: Attempt) {
        self.results.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(attempt);
    }

    /// Assembles everything added so far. `input` names the whole set in errors; `warnings`
    /// are the caller's own (files skipped during discovery) and come first.
    pub fn finish(self, input: &Path, mut warnings: Vec<Warning>) -> Result<Trace, Error> {
        let mut results =
            self.results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Threads finish in any order; reports and tie-breaks must not depend on it.
        results.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.path.cmp(&b.path)));
        let files_seen = results.len();
        let mut dumps: Vec<RankDump> = Vec::with_capacity(results.len());
        let mut first_problem = None;
        for attempt in results {
            attempt.warnings(&mut warnings);
            match attempt.result {
                Ok(decoded) => dumps.push(decoded.dump),
                Err(e) => {
                    first_problem.get_or_insert_with(|| format!("{}: {e}", attempt.path.display()));
                }
            }
        }
        if dumps.is_empty() {
            return Err(Error::NothingReadable {
                path: input.into(),
                count: files_seen,
                first: first_problem.unwrap_or_default(),
            });
        }
        let ranks = dedup_ranks(dumps, &mut warnings);
        let mut trace = Trace { ranks, warnings, files_seen, ..Trace::default() };
        groups::infer(&mut trace);
        check_versions(&mut trace);
        ownership::apply(&mut trace, &self.ownership);
        Ok(trace)
    }
}

/// Tells the serialization from the first byte that is not white space. Summaries are told
/// apart before this, in [`Attempt::decode`]: they carry their dump's own path and rank.
fn decode_bytes(
    bytes: &[u8],
    rank: u32,
    path: &Path,
    rank_lists: &RankLists,
) -> Result<Decoded, DumpError> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| bytes[i]) {
        None => Err(DumpError::Empty),
        // PROTO opcode: every pickle protocol >= 2 starts with it.
        Some(0x80) => pickle::decode(bytes, rank, path, rank_lists),
        Some(b'{') => json::decode(bytes, rank, path, rank_lists),
        Some(_) => Err(DumpError::Foreign(describe_start(bytes))),
    }
}

/// The first bytes of a foreign file, printable, so the user can tell what it is.
fn describe_start(bytes: &[u8]) -> String {
    let head: String = bytes
        .iter()
        .take(16)
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect();
    format!("`{head}`")
}

fn note_entries(decoded: &Decoded, warnings: &mut Vec<Warning>) {
    if decoded.notes.bad_entries > 0 {
        let message = format!(
            "{} entr{} skipped ({})",
            decoded.notes.bad_entries,
            if decoded.notes.bad_entries == 1 { "y" } else { "ies" },
            decoded.notes.first_reason.as_deref().unwrap_or("unreadable")
        );
        let d = &decoded.dump;
        warnings.push(warn(WarningKind::Entry, Some(d.path.clone()), Some(d.rank), message));
    }
}

/// Two files for one rank (a re-dump, a copy): keep the one with more entries.
fn dedup_ranks(mut dumps: Vec<RankDump>, warnings: &mut Vec<Warning>) -> Vec<RankDump> {
    dumps.sort_by(|a, b| {
        a.rank.cmp(&b.rank).then(b.entries.len().cmp(&a.entries.len())).then(a.path.cmp(&b.path))
    });
    let mut kept: Vec<RankDump> = Vec::with_capacity(dumps.len());
    for dump in dumps {
        match kept.last() {
            Some(prev) if prev.rank == dump.rank => {
                let message = format!(
                    "rank {} has two dumps; using {} ({} entries), ignoring this one ({} entries)",
                    dump.rank,
                    prev.path.display(),
                    prev.entries.len(),
                    dump.entries.len()
                );
                warnings.push(warn(
                    WarningKind::DuplicateRank,
                    Some(dump.path),
                    Some(dump.rank),
                    message,
                ));
            }
            _ => kept.push(dump),
        }
    }
    kept
}

fn check_versions(trace: &mut Trace) {
    let mut versions: Vec<&str> = trace.ranks.iter().map(|r| &*r.version).collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.len() > 1 {
        let message = format!("ranks wrote different FR format versions: {}", versions.join(", "));
        trace.warnings.push(warn(WarningKind::Version, None, None, message));
    }
    if !trace.missing_ranks.is_empty() {
        let message =
            format!("no readable dump for rank(s) {}", format_ranks(&trace.missing_ranks));
        trace.warnings.push(warn(WarningKind::MissingRank, None, None, message));
    }
}

pub(crate) fn warn(
    kind: WarningKind,
    path: Option<PathBuf>,
    rank: Option<u32>,
    message: String,
) -> Warning {
    Warning { kind, path, rank, message }
}

/// Member lists shared by all files of a load (see `PgConfig::ranks`): dumps spell them as
/// text, summaries as numbers.
#[derive(Default)]
pub(crate) struct RankLists {
    by_text: std::sync::Mutex<rustc_hash::FxHashMap<Box<str>, std::sync::Arc<[u32]>>>,
    parsed: std::sync::Mutex<rustc_hash::FxHashSet<std::sync::Arc<[u32]>>>,
}

impl RankLists {
    pub fn get(&self, text: &str) -> std::sync::Arc<[u32]> {
        let mut map = self.by_text.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = map.get(text) {
            return found.clone();
        }
        let mut ranks = parse_rank_list(text);
        ranks.sort_unstable();
        ranks.dedup();
        let parsed = self.get_parsed(&ranks);
        map.insert(text.into(), parsed.clone());
        parsed
    }

    /// The shared copy of a list already parsed, sorted and deduplicated.
    pub fn get_parsed(&self, ranks: &[u32]) -> std::sync::Arc<[u32]> {
        let mut set = self.parsed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(found) = set.get(ranks) {
            return found.clone();
        }
        let shared: std::sync::Arc<[u32]> = ranks.into();
        set.insert(shared.clone());
        shared
    }
}

/// `"[0, 1, 2]"` (torch) or `"[0,1]"` (torchcomms) -> ranks; anything unparsable is dropped.
pub(crate) fn parse_rank_list(text: &str) -> Vec<u32> {
    text.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .filter_map(|r| r.trim().parse().ok())
        .collect()
}

/// FR writes -1 for "none yet".
pub(crate) fn seq(value: Option<i64>) -> Option<u64> {
    value.and_then(|v| u64::try_from(v).ok())
}

/// A `time_discovered_*_ns`: JSON writes 0 for "never discovered", pickle omits the key; a
/// negative value is no clock reading either.
pub(crate) fn discovered(ns: Option<i64>) -> Option<NonZeroI64> {
    ns.filter(|&t| t > 0).and_then(NonZeroI64::new)
}

/// `duration_ms` back to the C++ `float` FR measured it as (see [`crate::model::Entry`]).
pub(crate) fn duration(ms: Option<f64>) -> Option<f32> {
    ms.map(|d| d as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists() {
        assert_eq!(parse_rank_list("[0, 1, 2]"), [0, 1, 2]);
        assert_eq!(parse_rank_list("[0,1]"), [0, 1]);
        assert!(parse_rank_list("[]").is_empty());
    }
}
