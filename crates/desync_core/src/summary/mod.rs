//! Summaries: one rank's dump, reduced to exactly what the analysis reads, in a compact file
//! (`desync summarize`). Nodes of a large job summarize their own dumps and ship kilobytes;
//! `analyze` reads summaries wherever it reads dumps, and a summary gives the same analysis as
//! the dump it came from, to the last field: the loader's [`RankDump`], entries, the decoder's
//! notes, and the dump's path and rank (reports point at the real dump, not the summary).
//!
//! Layout (docs/summaries.md has the full spec):
//! ```text
//! "desync-summary 1\n"          magic and format version, readable with `head -1`
//! varint body_len                 uncompressed body length
//! zlib(body)                      adler32-checked: truncation and corruption are caught
//! body = origin [header tables columns]
//! ```
//! A dump that could not be read is summarized too, as its origin plus the error message, so
//! the analysis of the summaries warns about it exactly as the analysis of the dumps would.

mod batch;
mod codec;
mod convert;
mod format;

use std::io::Read;
use std::path::PathBuf;

use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;

use crate::load::intern::Interner;
use crate::load::{Attempt, Decoded, Shared};
use crate::model::RankDump;
use codec::{In, Out};
use convert::{Resolved, TableBuilder};

pub use batch::{Summarized, summarize};

/// Every summary starts with this, then the version number and a newline.
pub const MAGIC: &[u8] = b"desync-summary ";
/// The format version this build writes and the only one it reads. Bump it on any change to
/// the body; old readers then say so instead of misreading.
pub const VERSION: u32 = 1;
/// Summaries are kilobytes (a 20,000-entry dump's body is under 1 MiB); a body claiming more
/// than this is corrupt or hostile, not big. Inflating stops here whatever the header says.
const MAX_BODY: u64 = 256 << 20;

/// Why a summary could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("first line is not `desync-summary <version>`")]
    BadHeader,
    #[error(
        "format version {found}, but this desync reads version {VERSION} only; summarize the dumps again with this desync, or analyze with the desync that wrote them"
    )]
    UnknownVersion { found: u64 },
    #[error("truncated: the data stops at byte {offset} of the uncompressed body")]
    Truncated { offset: usize },
    #[error("corrupt at byte {offset} of the uncompressed body: {what}")]
    Corrupt { offset: usize, what: String },
    #[error("truncated or corrupt compressed data ({0})")]
    Compressed(std::io::Error),
}

/// Where a summary's dump came from: its path and the rank its name carried (`None`: the
/// name had none and the dump counts as rank 0, as it would have when analyzed directly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: PathBuf,
    pub rank: Option<u32>,
}

/// A summary read back: the dump as its loader decoded it, or the reason it could not be.
pub(crate) struct Summary {
    pub origin: Origin,
    pub content: Result<Decoded, String>,
}

pub(crate) fn is_summary(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The summary of one decoded (or undecodable) file.
pub(crate) fn write(attempt: &Attempt) -> Vec<u8> {
    let origin = Origin { path: attempt.path.clone(), rank: attempt.rank };
    let mut body = Out::default();
    match &attempt.result {
        Err(e) => format::write_origin(&mut body, &origin, Some(&e.to_string())),
        Ok(decoded) => {
            format::write_origin(&mut body, &origin, None);
            let header = format::Header { dump: &decoded.dump, notes: &decoded.notes };
            format::write_header(&mut body, &header);
            let mut tables = TableBuilder::default();
            let records: Vec<_> = decoded.dump.entries.iter().map(|e| tables.record(e)).collect();
            format::write_tables(&mut body, &tables.tables);
            format::write_records(&mut body, &records);
        }
    }
    let mut file = Out::default();
    file.raw(MAGIC);
    file.raw(format!("{VERSION}\n").as_bytes());
    file.u(body.0.len() as u64);
    let mut z = ZlibEncoder::new(file.0, Compression::default());
    // Writing to a Vec cannot fail.
    std::io::Write::write_all(&mut z, &body.0).expect("write to memory");
    z.finish().expect("write to memory")
}

/// Reads a summary back into what the loader would have made of its dump.
pub(crate) fn read(bytes: &[u8], shared: &Shared) -> Result<Summary, SummaryError> {
    let body = decompress(bytes)?;
    let mut r = In::new(&body);
    let (origin, unreadable) = format::read_origin(&mut r)?;
    if let Some(message) = unreadable {
        return Ok(Summary { origin, content: Err(message) });
    }
    let header = format::read_header(&mut r)?;
    let tables_at = r.offset();
    let tables = format::read_tables(&mut r)?;
    let records = format::read_records(&mut r)?;
    if !r.is_empty() {
        return Err(r.corrupt("bytes after the last column"));
    }
    let corrupt = |what: String| SummaryError::Corrupt { offset: tables_at, what };
    let mut intern = Interner::new(&shared.streams);
    let resolved = Resolved::new(&tables, &mut intern).map_err(corrupt)?;
    let entries =
        records.iter().map(|rec| resolved.entry(rec, &mut intern)).collect::<Result<_, _>>();
    let dump = RankDump {
        rank: origin.rank.unwrap_or(0),
        path: origin.path.clone(),
        format: header.format,
        version: intern.str(&header.version),
        comm_lib_version: header.comm_lib_version.as_deref().map(|s| intern.str(s)),
        pg_config: header.pg_config(&mut intern, &shared.rank_lists),
        pg_status: header.pg_status,
        entries: entries.map_err(corrupt)?,
    };
    Ok(Summary { origin, content: Ok(Decoded { dump, notes: header.notes }) })
}

/// Checks magic and version, then inflates the body, refusing a short or overlong one.
fn decompress(bytes: &[u8]) -> Result<Vec<u8>, SummaryError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(SummaryError::BadHeader)?;
    let line_end = rest.iter().take(21).position(|&b| b == b'\n').ok_or(SummaryError::BadHeader)?;
    let found = std::str::from_utf8(&rest[..line_end])
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or(SummaryError::BadHeader)?;
    if found != u64::from(VERSION) {
        return Err(SummaryError::UnknownVersion { found });
    }
    let mut r = In::new(&rest[line_end + 1..]);
    let len = r.u()?;
    if len > MAX_BODY {
        return Err(r.corrupt(format!("body length {len} is implausible")));
    }
    let compressed = &rest[line_end + 1 + r.offset()..];
    let mut body = Vec::with_capacity(len.min(1 << 26) as usize);
    ZlibDecoder::new(compressed)
        .take(len + 1)
        .read_to_end(&mut body)
        .map_err(SummaryError::Compressed)?;
    match (body.len() as u64).cmp(&len) {
        std::cmp::Ordering::Less => Err(SummaryError::Truncated { offset: body.len() }),
        std::cmp::Ordering::Greater => Err(SummaryError::Corrupt {
            offset: len as usize,
            what: "body is longer than declared".into(),
        }),
        std::cmp::Ordering::Equal => Ok(body),
    }
}

#[cfg(test)]
mod tests;
