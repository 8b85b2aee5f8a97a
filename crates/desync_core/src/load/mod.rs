//! Stage 1: find every rank's dump, decode them in parallel, and infer the world and its
//! process groups. One unreadable file is a warning, never the end of the run.

mod discover;
mod groups;
pub(crate) mod intern;
mod json;
pub mod limits;
mod ownership;
mod pickle;
mod runs;
mod stacks;

use std::num::NonZeroI64;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::Progress;
use crate::error::{DumpError, Error};
use crate::model::{RankDump, Trace, Warning, WarningKind, format_ranks};

pub use discover::{Candidate, classify, split_rank, walk};
pub use limits::{FileError, read_regular};
pub use ownership::Ownership;
pub use stacks::{
    MAX_STACKS_BYTES, STACKS_EXTENSION, parse as parse_stacks, rank_stacks, stacks_rank,
};

#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Only files whose names start with this prefix; the rank follows it.
    pub prefix: Option<String>,
    /// Which frames are library code beyond their location (`--library`, `--user-code`).
    pub ownership: Ownership,
    /// The world size the user states (`--world-size`). The dumps' own evidence (file names,
    /// `pg_config`, gather shapes) can only raise it, with a warning.
    pub world_size: Option<u32>,
    /// Keep every rank's entries apart: no call or entry head shared between files. The
    /// analysis is the same, in more memory: the straightforward representation that tests
    /// compare the shared one with (load/intern.rs).
    pub per_rank_entries: bool,
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
    let Selection { candidates, warnings, stacks, logs } = discover(path, options)?;
    progress.start(candidates.len() as u64, "loading dumps");
    let loader = Loader::new(options);
    candidates.into_par_iter().for_each(|c| {
        match read_regular(&c.path, limits::MAX_DUMP_BYTES) {
            Ok(bytes) => loader.add(c.path, c.rank, &bytes),
            Err(e) => loader.fail(c.path, c.rank, DumpError::File(e)),
        }
        progress.advance(1);
    });
    progress.finish();
    let mut trace = loader.finish(path, warnings)?;
    stacks::attach(&mut trace, stacks);
    trace.logs_found = logs;
    ownership::apply_to_stacks(&mut trace, &options.ownership);
    Ok(trace)
}

/// The dump files under `path` (a directory, searched recursively, or one file) with the rank
/// each name carries, the stacks files beside them, and warnings for the files set aside.
pub(crate) fn discover(path: &Path, options: &LoadOptions) -> Result<Selection, Error> {
    let meta = std::fs::metadata(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { path: path.to_path_buf() },
        _ => Error::Io { path: path.to_path_buf(), source },
    })?;
    if !meta.is_dir() {
        // A FIFO would block the read forever and /dev/zero never ends: refuse them here, with
        // the reason, rather than as an unreadable dump.
        if !meta.is_file() {
            let kind = limits::describe_type(&meta);
            return Err(Error::NotRegular { path: path.to_path_buf(), kind });
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let rank = split_rank(name).map(|(_, r)| r);
        let candidates = vec![Candidate { path: path.into(), rank }];
        return Ok(Selection { candidates, ..Selection::default() });
    }
    let listing = discover::walk(path).map_err(|source| Error::Io { path: path.into(), source })?;
    let selected =
        select(path, listing.files, options).map_err(|e| match (e, listing.unsearched.first()) {
            (Error::NoDumps { path, hint }, Some((dir, why))) => {
                let n = listing.unsearched.len();
                let hint = format!("{hint}; {n} folder(s) not searched ({}: {why})", dir.display());
                Error::NoDumps { path, hint }
            }
            (e, _) => e,
        });
    let Selection { candidates, mut warnings, stacks, logs } = selected?;
    for link in listing.outside {
        let why = "a symlink to a file outside the dump directory: not followed (name the file itself to read it)";
        warnings.push(warn(WarningKind::Skipped, Some(link), None, why.to_owned()));
    }
    // One unreadable or absurdly deep folder must not hide the dumps beside it.
    for (dir, why) in listing.unsearched {
        warnings.push(warn(WarningKind::Skipped, Some(dir), None, why));
    }
    Ok(Selection { candidates, warnings, stacks, logs })
}

/// The dumps to read among a listing, and warnings for what was set aside.
#[derive(Debug, Default)]
pub struct Selection {
    pub candidates: Vec<Candidate>,
    pub warnings: Vec<Warning>,
    /// Stacks files (`<dump file name>.stacks`) with the rank each name gives.
    pub stacks: Vec<(PathBuf, u32)>,
    /// Files named like a job's log (`discover::LOG_EXTENSIONS`), not read yet.
    pub logs: Vec<PathBuf>,
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
    Ok(Selection { candidates: found.candidates, warnings, stacks: found.stacks, logs: found.logs })
}

/// Decodes dumps handed to it one by one, from any source (files, HTTP responses from a live
/// job's debug server, objects in a bucket), and assembles them into a [`Trace`].
///
/// `add` may be called from many threads at once. It decodes on the spot and keeps only the
/// decoded dump, so the caller can drop the bytes: memory follows what was decoded, not what
/// was fetched.
#[derive(Default)]
pub struct Loader {
    shared: Shared,
    results: std::sync::Mutex<Vec<Attempt>>,
    ownership: Ownership,
    /// The world size the user stated, if any.
    world_size: Option<u32>,
    /// See [`LoadOptions::per_rank_entries`].
    per_rank_entries: bool,
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
    pub fn decode(path: PathBuf, rank: Option<u32>, bytes: &[u8], shared: &Shared) -> Self {
        let mut attempt = if crate::summary::is_summary(bytes) {
            match crate::summary::read(bytes, shared) {
                Ok(summary) => Self {
                    path: summary.origin.path,
                    rank: summary.origin.rank,
                    result: summary.content.map_err(DumpError::Summarized),
                },
                Err(e) => Self { path, rank, result: Err(DumpError::Summary(e)) },
            }
        } else if let Some(huge) = rank.filter(|&r| r > limits::MAX_RANK) {
            Self { path, rank, result: Err(rank_limit(huge)) }
        } else {
            let result = decode_bytes(bytes, rank.unwrap_or(0), &path, shared);
            Self { path, rank, result }
        };
        if let Some(huge) = attempt.rank.filter(|&r| r > limits::MAX_RANK) {
            attempt.result = Err(rank_limit(huge));
        }
        if let Ok(decoded) = &mut attempt.result {
            limit_expansion(decoded, bytes.len());
        }
        attempt
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
    /// A loader for `options`: the ownership it applies to the frames it decodes and the
    /// world size the user stated.
    pub fn new(options: &LoadOptions) -> Self {
        Self {
            ownership: options.ownership.clone(),
            world_size: options.world_size,
            per_rank_entries: options.per_rank_entries,
            ..Self::default()
        }
    }

    /// Decodes one dump. `path` names it in warnings and reports (a file, a URL, an object key);
    /// `rank` is the rank its name carries.
    pub fn add(&self, path: PathBuf, rank: Option<u32>, bytes: &[u8]) {
        if self.per_rank_entries {
            self.push(Attempt::decode(path, rank, bytes, &Shared::default()));
        } else {
            self.push(Attempt::decode(path, rank, bytes, &self.shared));
        }
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
        // Every file names a rank, readable or not: an unreadable rank_7 says rank 7 existed.
        let highest_named =
            results.iter().filter_map(|a| a.rank).filter(|&r| r <= limits::MAX_RANK).max();
        let mut dumps: Vec<RankDump> = Vec::with_capacity(results.len());
        let mut first_problem = None;
        let mut skipped_entries = Vec::new();
        let mut incarnations = Vec::new();
        for attempt in results {
            attempt.warnings(&mut warnings);
            match attempt.result {
                Ok(mut decoded) => {
                    if decoded.notes.bad_entries > 0 {
                        skipped_entries.push((decoded.dump.rank, decoded.notes.bad_entries));
                    }
                    if let Some((groups, dropped)) =
                        runs::keep_latest_incarnation(&mut decoded.dump)
                    {
                        incarnations.push((decoded.dump.rank, groups, dropped));
                    }
                    dumps.push(decoded.dump);
                }
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
        runs::incarnation_warnings(incarnations, &mut warnings);
        let ranks = runs::choose(dumps, &mut warnings);
        let mut trace = Trace { ranks, warnings, files_seen, skipped_entries, ..Trace::default() };
        let stated = groups::Stated { highest_named, world_size: self.world_size };
        groups::infer(&mut trace, stated);
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
    shared: &Shared,
) -> Result<Decoded, DumpError> {
    // A UTF-8 byte order mark, as some editors and Windows tools write before JSON.
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| bytes[i]) {
        None => Err(DumpError::Empty),
        // PROTO opcode: every pickle protocol >= 2 starts with it.
        Some(0x80) => pickle::decode(bytes, rank, path, shared),
        Some(b'{') => json::decode(bytes, rank, path, shared),
        Some(_) => Err(DumpError::Foreign { size: bytes.len() }),
    }
}

fn rank_limit(rank: u32) -> DumpError {
    DumpError::Limit(format!(
        "rank {rank} in the file name is above the limit of {} ranks; not read",
        limits::MAX_WORLD_SIZE
    ))
}

/// Bounds what one file expands to (see [`limits::expansion_budget`]): entries past
/// [`limits::MAX_ENTRIES`], and entries whose shared parts (a stack, a size list referenced by
/// every entry) would expand past the budget, are dropped, the oldest first (the newest show
/// where the job stopped). Counting is by shared part, so this is linear in the entries.
fn limit_expansion(decoded: &mut Decoded, file_bytes: usize) {
    let budget = limits::expansion_budget(file_bytes);
    let mut cost_of: rustc_hash::FxHashMap<usize, u64> = rustc_hash::FxHashMap::default();
    let mut spent = 0u64;
    let entries = &decoded.dump.entries;
    let mut keep_from = entries.len();
    for (i, e) in entries.iter().enumerate().rev() {
        let call = std::sync::Arc::as_ptr(&e.call) as usize;
        let cost = *cost_of.entry(call).or_insert_with(|| e.call.expanded_size());
        if entries.len() - i > limits::MAX_ENTRIES || spent + cost > budget {
            break;
        }
        spent += cost;
        keep_from = i;
    }
    if keep_from > 0 {
        let dropped = keep_from;
        decoded.dump.entries.drain(..keep_from);
        decoded.notes.bad_entries += dropped;
        let why = format!(
            "the oldest {dropped} entries dropped: past {} entries or {budget} values once shared parts are expanded (a file of {file_bytes} bytes)",
            limits::MAX_ENTRIES
        );
        decoded.notes.first_reason = Some(why);
    }
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

/// What every file of one load shares: member lists and the entries' calls and heads.
#[derive(Default)]
pub(crate) struct Shared {
    pub rank_lists: RankLists,
    pub streams: intern::Streams,
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

/// A dump's `version` field, checked before anything of the file is kept: FR writes
/// "major.minor" (`version_val` in FlightRecorder.hpp; torchfrtrace requires two parts). Any
/// other text means the file is something else that happens to decode (a pickled dict, a
/// JSON config), and nothing of it may reach a report, not even as "the version it wrote".
/// `None` when the field is absent (the oldest dumps are a bare list).
pub(crate) fn fr_version(found: Option<&str>) -> Result<Option<&str>, DumpError> {
    let Some(text) = found else { return Ok(None) };
    let number =
        |part: &str| (1..=6).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit());
    match text.split_once('.') {
        Some((major, minor)) if number(major) && number(minor) => Ok(Some(text)),
        _ => Err(DumpError::NotADump("its `version` is not a Flight Recorder format version")),
    }
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
