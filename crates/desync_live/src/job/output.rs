//! The job's output, passed through to desync's own stdout and stderr and kept in a log file.
//!
//! A rank that raised leaves its traceback only in the job's output, and torch's watchdog
//! lines (the timed-out seq, `Dump signal from rank N`) are there too: `desync run` keeps the
//! output beside the dumps, where `analyze` reads logs, so the report can name a crashing
//! rank's line. The terminal gets every byte as it comes (progress bars redraw with `\r`);
//! the file gets whole lines, so stdout and stderr interleave line by line, not mid-line.
//!
//! The file stays readable by `analyze` (which reads logs beside dumps up to 32 MiB): past
//! [`HEAD_BYTES`] + [`TAIL_BYTES`] it keeps the first `HEAD_BYTES` and the last `TAIL_BYTES`
//! of the output, with a line saying how much was left out between them; the end of a hung
//! job's output is what matters most.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The start of the output kept whatever its length (the job's setup, its first errors).
pub const HEAD_BYTES: u64 = 4 << 20;
/// The end of the output kept (the hang, the tracebacks, the launcher's failure table).
pub const TAIL_BYTES: usize = 24 << 20;

/// The copies of the job's stdout and stderr, running until the job's last process closes
/// them.
pub struct Capture {
    copiers: Vec<JoinHandle<()>>,
    log: Arc<Mutex<Kept>>,
}

impl Capture {
    /// Starts copying `child`'s piped stdout and stderr (the command must have been given
    /// [`std::process::Stdio::piped`] for both) to this process's own and to `path`.
    pub fn start(child: &mut std::process::Child, path: &Path) -> std::io::Result<Self> {
        let log = Arc::new(Mutex::new(Kept::create(path)?));
        let mut copiers = Vec::new();
        if let Some(out) = child.stdout.take() {
            let log = Arc::clone(&log);
            copiers.push(std::thread::spawn(move || copy(out, std::io::stdout(), &log)));
        }
        if let Some(err) = child.stderr.take() {
            let log = Arc::clone(&log);
            copiers.push(std::thread::spawn(move || copy(err, std::io::stderr(), &log)));
        }
        Ok(Self { copiers, log })
    }

    /// Waits up to `wait` for the copies to reach the end of the job's output, then writes
    /// the kept tail. A process that still holds the pipes after that (one that escaped the
    /// stop) does not hold `run` up: its later output reaches neither place.
    pub fn finish(self, wait: Duration) -> std::io::Result<PathBuf> {
        let deadline = Instant::now() + wait;
        for copier in self.copiers {
            while !copier.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if copier.is_finished() {
                let _ = copier.join();
            }
        }
        let mut kept = self.log.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.close()
    }
}

/// Copies one stream: every chunk to the terminal at once, each whole line to the log.
fn copy(from: impl Read, mut to: impl Write, log: &Mutex<Kept>) {
    let mut reader = BufReader::with_capacity(64 * 1024, from);
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // A closed terminal (desync's own stdout piped to `head`) must not stop the copy to
        // the log, nor the job, which would block on a full pipe.
        let _ = to.write_all(chunk).and_then(|()| to.flush());
        let len = chunk.len();
        partial.extend_from_slice(chunk);
        reader.consume(len);
        if let Some(end) = partial.iter().rposition(|&b| b == b'\n') {
            let rest = partial.split_off(end + 1);
            log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).add(&partial);
            partial = rest;
        }
    }
    if !partial.is_empty() {
        partial.push(b'\n');
        log.lock().unwrap_or_else(std::sync::PoisonError::into_inner).add(&partial);
    }
}

/// The log file: the head written as it comes, then a bounded tail held in memory.
struct Kept {
    file: Option<File>,
    path: PathBuf,
    written: u64,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Kept {
    /// Read as well as written: past the bounds, the part beyond the head is read back.
    fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Self {
            file: Some(file),
            path: path.to_path_buf(),
            written: 0,
            tail: VecDeque::new(),
            dropped: 0,
        })
    }

    /// Whole lines of output. Until the file holds both bounds' worth it is written as it
    /// comes (a crash of desync itself then loses nothing); after that the end is held in
    /// memory, and only the last `TAIL_BYTES` survive.
    fn add(&mut self, lines: &[u8]) {
        if self.tail.is_empty()
            && self.written + lines.len() as u64 <= HEAD_BYTES + TAIL_BYTES as u64
        {
            if let Some(file) = &mut self.file {
                if file.write_all(lines).is_ok() {
                    self.written += lines.len() as u64;
                } else {
                    self.file = None;
                }
            }
            return;
        }
        if self.tail.is_empty() {
            // The file's bytes past the head become the start of the tail.
            self.tail = self.reread_past_head();
        }
        self.tail.extend(lines);
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        if excess > 0 {
            // Cut at a line boundary, so the tail starts with a whole line.
            let cut = self
                .tail
                .iter()
                .skip(excess)
                .position(|&b| b == b'\n')
                .map_or(excess, |p| excess + p + 1);
            self.tail.drain(..cut);
            self.dropped += cut as u64;
        }
    }

    /// What the file holds past [`HEAD_BYTES`] (from a line boundary on), and the file cut
    /// back to the head.
    fn reread_past_head(&mut self) -> VecDeque<u8> {
        let Some(file) = &mut self.file else { return VecDeque::new() };
        let mut bytes = Vec::new();
        let read =
            file.seek(std::io::SeekFrom::Start(0)).and_then(|_| file.read_to_end(&mut bytes));
        if read.is_err() {
            self.file = None;
            return VecDeque::new();
        }
        let head = bytes[..(HEAD_BYTES as usize).min(bytes.len())]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        if file
            .set_len(head as u64)
            .and_then(|()| file.seek(std::io::SeekFrom::End(0)).map(drop))
            .is_err()
        {
            self.file = None;
        }
        self.written = head as u64;
        bytes.split_off(head).into()
    }

    /// Writes what is held: the mark of the cut, then the tail.
    fn close(&mut self) -> std::io::Result<PathBuf> {
        let Some(mut file) = self.file.take() else {
            return Err(std::io::Error::other(format!(
                "{}: could not be written",
                self.path.display()
            )));
        };
        if !self.tail.is_empty() {
            if self.dropped > 0 {
                writeln!(
                    file,
                    "[desync run: {} bytes of the job's output left out here; the first {} MiB and the last {} MiB are kept]",
                    self.dropped,
                    HEAD_BYTES >> 20,
                    TAIL_BYTES >> 20
                )?;
            }
            let (a, b) = self.tail.as_slices();
            file.write_all(a)?;
            file.write_all(b)?;
            self.tail.clear();
        }
        file.flush()?;
        Ok(self.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept_in(dir: &Path) -> Kept {
        Kept::create(&dir.join("job.log")).unwrap()
    }

    #[test]
    fn short_output_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut kept = kept_in(dir.path());
        kept.add(b"[rank1]: Traceback (most recent call last):\n");
        kept.add(b"[rank1]: FileNotFoundError: x\n");
        let path = kept.close().unwrap();
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            "[rank1]: Traceback (most recent call last):\n[rank1]: FileNotFoundError: x\n"
        );
    }

    #[test]
    fn long_output_keeps_its_head_and_its_tail_in_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut kept = kept_in(dir.path());
        let line = |i: usize| format!("[rank0]: step {i:09} loss 0.25 {}\n", "x".repeat(80));
        let total = (HEAD_BYTES as usize + TAIL_BYTES) * 2 / line(0).len() + 10;
        for i in 0..total {
            kept.add(line(i).as_bytes());
        }
        kept.add(b"[rank3]: RuntimeError: the last line\n");
        let path = kept.close().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.len() as u64 <= HEAD_BYTES + TAIL_BYTES as u64 + 200, "{}", text.len());
        assert!(text.starts_with(&line(0)));
        assert!(text.ends_with("[rank3]: RuntimeError: the last line\n"));
        let mark = text.lines().find(|l| l.starts_with("[desync run:")).expect("the cut is marked");
        assert!(mark.contains("bytes of the job's output left out here"), "{mark}");
        assert!(text.lines().all(|l| l.starts_with("[rank") || l.starts_with("[desync run:")));
    }
}
