//! Limits that real jobs never reach, checked before anything is sized by the input, and the
//! one way desync reads a file it did not write: regular files only, up to a size.
//!
//! Dumps come from processes that were failing and from people who copy them by hand; a
//! number in a file name, a rank in `pg_config` or a shape in an `all_gather` is a claim, not a
//! size to allocate. docs/security.md lists every limit with its reason.

use std::io::Read;
use std::path::Path;

/// Highest global rank accepted (2^20 - 1): the largest jobs run ~10^5 ranks. A file name, a
/// `pg_config` list, a worker or a shape that implies more is refused with a warning.
pub const MAX_RANK: u32 = (1 << 20) - 1;
/// World sizes above this are refused: `MAX_RANK` + 1.
pub const MAX_WORLD_SIZE: u32 = MAX_RANK + 1;
/// A dump larger than this is not read: 20,000 entries with frames take under 50 MB
/// (`TORCH_FR_BUFFER_SIZE` defaults to 2,000).
pub const MAX_DUMP_BYTES: u64 = 512 << 20;
/// Entries kept per file (FR's ring buffer holds `TORCH_FR_BUFFER_SIZE` entries; 2,000 by
/// default, 20,000 in the largest setups seen). Past it, the oldest entries are dropped.
pub const MAX_ENTRIES: usize = 1 << 20;
/// Strings in a dump (op names, process group names, file and function names, dtypes): a path
/// is at most `PATH_MAX` (4,096) bytes. An entry holding a longer one is dropped.
pub const MAX_STRING_BYTES: usize = 64 << 10;
/// Members listed across all process groups of one job: 2^26 (256 MiB of ranks), e.g. a
/// million ranks in 64 groups that each span the world.
pub const MAX_MEMBER_SLOTS: usize = 1 << 26;

/// The values one file may expand to once shared (memoized) parts are counted at every use:
/// entries, frames of their stacks, shapes and their dimensions, dtypes. Pickle lets a few
/// bytes reference one list thousands of times; a real dump costs at least a byte per value,
/// so four values per byte of file (plus a floor for tiny files) is never reached by one.
pub fn expansion_budget(file_bytes: usize) -> u64 {
    (file_bytes as u64).saturating_mul(4).max(1 << 20)
}

/// Strings that are shown but never matched (a dump's format version, its library version,
/// `pg_config` names): cut at [`MAX_STRING_BYTES`] on a character boundary.
pub(crate) fn clip(s: &str) -> &str {
    if s.len() <= MAX_STRING_BYTES {
        return s;
    }
    let mut end = MAX_STRING_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("not a regular file ({0}); give a dump file or a directory of dumps")]
    NotRegular(&'static str),
    #[error("{size} bytes is larger than the limit of {limit} bytes for this kind of file")]
    TooLarge { size: u64, limit: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What a file system object is, for messages.
pub fn describe_type(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    if kind.is_file() { "a regular file" } else { "not a regular file" }
}

/// Reads a regular file of at most `limit` bytes. FIFOs, sockets and devices are refused
/// before they are opened (opening a FIFO blocks until a writer comes; `/dev/zero` never
/// ends), and the file is opened non-blocking and checked again, so a swap between the two
/// checks cannot block either.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular(describe_type(&meta)));
    }
    let file = open_nonblocking(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(FileError::NotRegular(describe_type(&meta)));
    }
    if meta.len() > limit {
        return Err(FileError::TooLarge { size: meta.len(), limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while it is read still stops at the limit.
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { size: bytes.len() as u64, limit });
    }
    Ok(bytes)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_only_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_regular(&file, 5).unwrap(), b"12345");
        assert!(matches!(read_regular(&file, 4), Err(FileError::TooLarge { size: 5, limit: 4 })));
        assert!(matches!(read_regular(dir.path(), 10), Err(FileError::NotRegular("a directory"))));
        #[cfg(unix)]
        {
            assert!(matches!(
                read_regular(Path::new("/dev/zero"), 10),
                Err(FileError::NotRegular("a character device"))
            ));
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                assert!(matches!(read_regular(&fifo, 10), Err(FileError::NotRegular("a FIFO"))));
            }
        }
    }
}
