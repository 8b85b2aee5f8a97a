//! The one way desync writes a file it was asked for (`--html`, `report -o`, `--emit-probes`,
//! `export --perfetto`, `summarize -o`, `watch --save`): only to a regular file or a new name,
//! through a temporary file next to it that is then renamed over the target.
//!
//! Opening a FIFO for writing blocks until a reader comes, a device takes bytes forever or
//! not at all, and a directory cannot be written: each is refused by [`check_file_target`]
//! before the long work, so the user learns at once rather than after the analysis. The write
//! itself opens only a name it creates (`O_EXCL`, never following a link), so a FIFO swapped in
//! after the check cannot block it either: the rename replaces that name instead.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::load::limits::describe_type;

/// Refuses an output file that exists and is not a regular file (a FIFO, socket, device or
/// directory), and one whose folder does not exist. A link is judged by what it points to.
pub fn check_file_target(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => {
            Err(Error::NotWritable { path: path.to_path_buf(), kind: describe_type(&meta) })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => check_folder(path),
        Err(source) => Err(Error::Write { path: path.to_path_buf(), source }),
    }
}

/// Refuses an output directory that exists and is not a directory (a regular file, a FIFO, a
/// device). A missing one is created when the first file is written.
pub fn check_dir_target(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => {
            Err(Error::NotADirectory { path: path.to_path_buf(), kind: describe_type(&meta) })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Write { path: path.to_path_buf(), source }),
    }
}

/// The folder a new file would be created in must be a directory.
fn check_folder(path: &Path) -> Result<(), Error> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => return Ok(()),
    };
    match std::fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => {
            Err(Error::NotADirectory { path: folder.to_path_buf(), kind: describe_type(&meta) })
        }
        Err(source) => Err(Error::Write { path: path.to_path_buf(), source }),
    }
}

/// Writes what `render` produces to `path`, through `.<name>.<pid>.tmp` beside it: a reader
/// never sees half a file, and nothing but a name this call created is ever opened. A link at
/// `path` is written through (its target is replaced), as a plain write would.
pub fn write_file(
    path: &Path,
    render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    check_file_target(path)?;
    let fail = |source| Error::Write { path: path.to_path_buf(), source };
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let temporary = temporary_name(&target);
    let written = (|| {
        let file = create_new(&temporary)?;
        let mut out = std::io::BufWriter::new(file);
        render(&mut out)?;
        out.flush()?;
        drop(out);
        std::fs::rename(&temporary, &target)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(fail)
}

/// Writes `bytes` to `path` as [`write_file`] does, as an `io::Result` (for writers that report
/// their own errors, like `watch`'s snapshots).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file(path, |out| out.write_all(bytes)).map_err(|e| match e {
        Error::Write { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

fn temporary_name(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    target.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Creates `path`, which must not exist: never opens a FIFO, a device or a link planted there.
/// A stale temporary left by a killed run of the same process id is removed first.
fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    let open = || std::fs::OpenOptions::new().write(true).create_new(true).open(path);
    match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            open()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_and_new_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report.html");
        assert!(check_file_target(&file).is_ok(), "a new name");
        write_file(&file, |out| out.write_all(b"one")).unwrap();
        write_file(&file, |out| out.write_all(b"two")).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two", "an existing file is replaced");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");

        let err = check_file_target(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a regular file (a directory)"), "{err}");
        let err = check_file_target(&dir.path().join("missing/report.html")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        let err = check_file_target(&file.join("x")).unwrap_err().to_string();
        assert!(err.to_lowercase().contains("not a directory"), "{err}");
        assert!(check_file_target(Path::new("/dev/null")).is_err(), "a device");
    }

    #[test]
    fn a_failed_render_leaves_the_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.json");
        std::fs::write(&file, b"before").unwrap();
        let err = write_file(&file, |_| Err(std::io::Error::other("render failed"))).unwrap_err();
        assert!(err.to_string().contains("render failed"));
        assert_eq!(std::fs::read(&file).unwrap(), b"before");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.html");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.html");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_file(&link, |out| out.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }

    #[test]
    fn directories_only_for_output_folders() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_dir_target(dir.path()).is_ok());
        assert!(check_dir_target(&dir.path().join("new")).is_ok());
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let err = check_dir_target(&file).unwrap_err().to_string();
        assert!(err.contains("not a directory (a regular file)"), "{err}");
    }
}
