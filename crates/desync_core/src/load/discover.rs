//! Finding dump files and the rank each one belongs to.
//!
//! torchfrtrace infers one common prefix and crashes on anything else sharing it (`.pipe`
//! fifos, `.json` twins, host names in the name: pytorch#140879). Here the rank is the run of
//! digits that ends the file stem, the prefix is whatever comes before it, and files that do not
//! fit are reported, not fatal.

use std::path::{Path, PathBuf};

/// A file that looks like a per-rank dump by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    /// Rank from the file name; `None` for a single file given without one.
    pub rank: Option<u32>,
}

/// What discovery found: dump candidates plus files set aside, each with a reason.
#[derive(Debug, Default)]
pub struct Discovery {
    pub candidates: Vec<Candidate>,
    pub skipped: Vec<(PathBuf, String)>,
    /// Files with no rank in their name, counted for one summary line.
    pub unnamed: usize,
    /// Stacks files (`<dump file name>.stacks`) with the rank their name gives.
    pub stacks: Vec<(PathBuf, u32)>,
    /// Files named like a job's log ([`LOG_EXTENSIONS`]): read beside the dumps only when
    /// their content is a log too (`logs::beside`).
    pub logs: Vec<PathBuf>,
}

/// Extensions of a job's output saved beside its dumps (`job.log`, `slurm-123.out`,
/// `rank_3.err`): never dump names, so such a file is a log candidate. Not `.txt`: notes and
/// saved reports (desync's own `report.txt` quotes log lines) are kept there.
pub const LOG_EXTENSIONS: &[&str] = &["log", "out", "err"];

/// Extensions a dump may carry after the rank ("`trace_rank_3.json`"); `desync` marks the
/// summaries `desync summarize` writes.
const DUMP_EXTENSIONS: &[&str] = &["json", "pkl", "pickle", "bin", "dump", "fr", "desync"];

/// Leftovers of FR's pipe trigger and of writers still busy; never dumps.
const TRANSIENT_EXTENSIONS: &[&str] = &["pipe", "tmp", "lock", "swp", "part"];

/// Directory levels searched below the root: dumps sit a level or two down (one folder per
/// node or per attempt); a deeper tree is not a dump layout, and its paths grow past `PATH_MAX`.
pub const MAX_WALK_DEPTH: usize = 64;

/// What [`walk`] found below a root.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every regular file, and symlink to a regular file inside the root, sorted for
    /// determinism.
    pub files: Vec<PathBuf>,
    /// Symlinks to files outside the root: never read. A dump directory is often copied from
    /// elsewhere, and a link named `gloo_trace_rank_5` may point at `~/.ssh/id_rsa`.
    pub outside: Vec<PathBuf>,
    /// Directories below the root that were not searched, and why (unreadable, too deep).
    pub unsearched: Vec<(PathBuf, String)>,
}

/// Lists every regular file below `root`, recursively. Only the root itself must be readable:
/// a subdirectory that cannot be listed, or lies deeper than [`MAX_WALK_DEPTH`], is set aside
/// with the reason, and the rest is listed.
pub fn walk(root: &Path) -> std::io::Result<Listing> {
    let mut listing = Listing::default();
    let real_root = std::fs::canonicalize(root)?;
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let items = match std::fs::read_dir(&dir) {
            Ok(items) => items,
            Err(e) if depth == 0 => return Err(e),
            Err(e) => {
                listing.unsearched.push((dir, format!("directory not searched: {e}")));
                continue;
            }
        };
        for item in items {
            let entry = item.and_then(|item| Ok((item.file_type()?, item.path())));
            let (file_type, path) = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    listing
                        .unsearched
                        .push((dir.clone(), format!("directory not fully searched: {e}")));
                    break;
                }
            };
            if file_type.is_dir() {
                if depth + 1 > MAX_WALK_DEPTH {
                    let why = format!(
                        "directory not searched: more than {MAX_WALK_DEPTH} levels below {}",
                        root.display()
                    );
                    listing.unsearched.push((path, why));
                } else {
                    stack.push((path, depth + 1));
                }
            } else if file_type.is_file() {
                listing.files.push(path);
            } else if file_type.is_symlink() && path.is_file() {
                match std::fs::canonicalize(&path) {
                    Ok(real) if real.starts_with(&real_root) => listing.files.push(path),
                    _ => listing.outside.push(path),
                }
            }
        }
    }
    listing.files.sort();
    listing.outside.sort();
    listing.unsearched.sort();
    Ok(listing)
}

/// Splits a file name into (prefix, rank) when it ends in digits, an optional dump extension
/// aside. `"nccl_trace_rank_12"` -> `("nccl_trace_rank_", 12)`.
pub fn split_rank(file_name: &str) -> Option<(&str, u32)> {
    let stem = match file_name.rsplit_once('.') {
        Some((stem, ext)) if DUMP_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) => stem,
        _ => file_name,
    };
    let digits = stem.len() - stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    let (prefix, number) = stem.split_at(stem.len() - digits);
    Some((prefix, number.parse().ok()?))
}

/// Sorts files into dump candidates and skipped files. With `prefix`, only names that start
/// with it count; the rank is what follows.
pub fn classify(files: Vec<PathBuf>, prefix: Option<&str>) -> Discovery {
    let mut found = Discovery::default();
    for path in files {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            found.skipped.push((path, "file name is not valid UTF-8".into()));
            continue;
        };
        if let Some(ext) = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())
            && TRANSIENT_EXTENSIONS.contains(&ext.as_str())
        {
            found.skipped.push((
                path,
                format!("`.{ext}` files are FR triggers or partial writes, not dumps"),
            ));
            continue;
        }
        if let Some(ext) = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())
            && LOG_EXTENSIONS.contains(&ext.as_str())
        {
            found.logs.push(path);
            continue;
        }
        if let Some(prefix) = prefix
            && !name.starts_with(prefix)
        {
            continue;
        }
        if let Some(rank) = super::stacks::stacks_rank(&name, prefix) {
            found.stacks.push((path, rank));
            continue;
        }
        match split_rank(&name) {
            Some((stem, rank)) if prefix.is_none_or(|p| stem == p) => {
                found.candidates.push(Candidate { path, rank: Some(rank) });
            }
            _ => found.unnamed += 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_from_names() {
        assert_eq!(split_rank("nccl_trace_rank_12"), Some(("nccl_trace_rank_", 12)));
        assert_eq!(split_rank("trace_3.json"), Some(("trace_", 3)));
        assert_eq!(split_rank("host-node02_5"), Some(("host-node02_", 5)));
        assert_eq!(split_rank("README"), None);
        assert_eq!(split_rank("trace_0.pipe"), None);
    }

    #[test]
    fn classify_skips_pipes_and_respects_prefix() {
        let files = ["d/a_0", "d/a_1", "d/a_1.pipe", "d/a_1.stacks", "d/b_2", "d/notes.md"]
            .map(PathBuf::from);
        let all = classify(files.to_vec(), None);
        assert_eq!(all.candidates.len(), 3);
        assert_eq!(all.skipped.len(), 1);
        assert_eq!(all.unnamed, 1);
        assert_eq!(all.stacks, [(PathBuf::from("d/a_1.stacks"), 1)]);
        let only_a = classify(files.to_vec(), Some("a_"));
        let ranks: Vec<_> = only_a.candidates.iter().map(|c| c.rank).collect();
        assert_eq!(ranks, [Some(0), Some(1)]);
    }

    #[test]
    fn log_names_are_log_candidates_not_dumps() {
        let files = ["d/trace_0", "d/rank_3.log", "d/slurm-1234.out", "d/job.ERR", "d/report.txt"]
            .map(PathBuf::from);
        let found = classify(files.to_vec(), None);
        assert_eq!(found.candidates.len(), 1);
        assert_eq!(found.logs.len(), 3);
        assert_eq!(found.unnamed, 1, "a .txt file is no log candidate");
    }
}
