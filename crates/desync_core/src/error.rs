//! Typed errors. [`Error`] ends a run (exit 2); [`DumpError`] is about one file and becomes a
//! warning in the report, because one bad dump must never hide what the others say.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: no such file or directory", path.display())]
    NotFound { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not a regular file ({kind}); give a dump file or a directory of dumps", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("no Flight Recorder dumps in {}: {hint}", path.display())]
    NoDumps { path: PathBuf, hint: String },
    #[error("none of the {count} dump files in {} could be read (first problem: {first})", path.display())]
    NothingReadable { path: PathBuf, count: usize, first: String },
    #[error("invalid --path-map `{0}`: expected FROM=TO")]
    PathMap(String),
    /// A log named by the user in which nothing desync reads was found; its content is not
    /// quoted (it may be any file).
    #[error(
        "{names}: not a Flight Recorder dump, nor a log with a line desync reads (a watchdog timeout, a group's progress, a traceback, torchrun's failure table); content not shown"
    )]
    NotALog { names: String },
    #[error("--source-root {}: not a directory", .0.display())]
    SourceRoot(PathBuf),
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// An output file that exists and is not a regular file (writing to a FIFO blocks).
    #[error("cannot write {}: not a regular file ({kind}); give a file name to write to", path.display())]
    NotWritable { path: PathBuf, kind: &'static str },
    /// An output directory (or an output file's folder) that exists and is not a directory.
    #[error("cannot write into {}: not a directory ({kind})", path.display())]
    NotADirectory { path: PathBuf, kind: &'static str },
}

/// Why one file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("empty file (a dump still being written, or a writer that died)")]
    Empty,
    /// Neither pickle nor JSON. Its content is never quoted: the file may be anything a link
    /// or a crafted name points at (a key, a credentials file).
    #[error(
        "not a Flight Recorder dump ({size} bytes, neither pickle nor JSON; content not shown)"
    )]
    Foreign { size: usize },
    /// Decoded, but not shaped like a dump (no FR format version, no entries). Its content is
    /// never quoted either: a pickle or JSON file can hold anything.
    #[error("not a Flight Recorder dump ({0}; content not shown)")]
    NotADump(&'static str),
    #[error("truncated or corrupt pickle: {0}")]
    Pickle(#[from] desync_pickle::PickleError),
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json { line: usize, column: usize, message: String },
    #[error("unexpected dump layout: {0}")]
    Layout(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    File(#[from] crate::load::FileError),
    /// A number or size past one of [`crate::load::limits`]'s limits.
    #[error("{0}")]
    Limit(String),
    #[error("unreadable summary: {0}")]
    Summary(#[from] crate::summary::SummaryError),
    /// The dump was unreadable when it was summarized; the message is what analysis said then.
    #[error("{0}")]
    Summarized(String),
}

impl From<serde_json::Error> for DumpError {
    fn from(e: serde_json::Error) -> Self {
        let message = e.to_string();
        // serde_json appends " at line L column C"; keep the message without the duplicate.
        let message = message.split(" at line ").next().unwrap_or(&message);
        // serde quotes the value it choked on (`invalid type: string "..."`); the file may be
        // no dump at all, so nothing of its content is repeated.
        let message = message.split(['"', '`']).next().unwrap_or(message).trim_end();
        let message = message.trim_end_matches([':', ',']).to_owned();
        Self::Json { line: e.line(), column: e.column(), message }
    }
}

#[cfg(test)]
mod tests {
    use super::DumpError;

    #[test]
    fn json_errors_never_repeat_the_value() {
        for text in ["\"SECRET-VALUE\"", "{\"SECRET-KEY\": 1}", "[\"SECRET-ITEM\"]"] {
            let e = serde_json::from_str::<u64>(text).unwrap_err();
            let message = DumpError::from(e).to_string();
            assert!(!message.contains("SECRET"), "{message}");
            assert!(message.starts_with("invalid JSON at line 1"), "{message}");
        }
        assert!(DumpError::Foreign { size: 42 }.to_string().contains("42 bytes"));
    }
}
