//! Python tracebacks, per rank, even interleaved (torchrun's tee prefixes each line with its
//! rank) or cut (a paste that starts mid-traceback still ends with the exception line): the
//! exception, the innermost frame, and the innermost frame of the user's code.
//!
//! Whether an exception is the rank's own failure or a symptom of a peer's (it waited and
//! timed out, or the peer's socket closed) is [`SYMPTOMS`]' call: a table, not code.

use super::Cite;
use super::lines::Record;
use crate::model::is_library_file;

/// Exception texts that say a rank was waiting on its peers, not that it failed on its own.
/// Each was seen in a real log (tests/logs, tests/scenarios/*/logs).
pub const SYMPTOMS: &[(&str, &str)] = &[
    ("Watchdog caught collective operation timeout", "NCCL's watchdog: this rank waited"),
    ("timed out in blocking wait", "NCCL with TORCH_NCCL_BLOCKING_WAIT: this rank waited"),
    ("Timed out waiting", "Gloo's transport timeout (`Timed out waiting 5000ms for recv`)"),
    ("Connection closed by peer", "Gloo: a peer's process exited under this rank"),
    ("Connection reset by peer", "a peer's process exited under this rank"),
    ("Broken pipe", "a peer's process exited under this rank"),
    ("DistBackendError", "torch's wrapper for a backend's timeout or abort"),
    ("NCCL communicator was aborted", "another thread or rank aborted the communicator"),
    ("remote process exited", "NCCL's ncclRemoteError: a peer died"),
    ("Socket Timeout", "a store or socket wait on a peer ran out"),
    ("DistStoreError", "a TCPStore wait on a peer ran out"),
    ("ChildFailedError", "torchrun's own summary of its workers' failures"),
];

/// Exception texts that say a peer's process is gone (not that it is slow): the rank that
/// ended is to be found among those that failed on nothing.
pub const PEER_EXITED: &[&str] = &[
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "remote process exited",
];

/// Whether an exception text says a peer's process exited under this rank.
pub fn peer_exited(message: &str) -> bool {
    PEER_EXITED.iter().any(|needle| message.contains(needle))
}

/// The symptom an exception text shows, if any (its row's reason).
pub fn symptom_of(message: &str) -> Option<&'static str> {
    SYMPTOMS.iter().find(|(needle, _)| message.contains(needle)).map(|(_, why)| *why)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub file: String,
    pub line: u32,
    pub function: String,
    /// The source line the traceback printed under the frame, when it did.
    pub source: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Traceback {
    pub rank: Option<u32>,
    /// `ValueError: corrupt record ...` (the whole exception line).
    pub exception: String,
    /// Innermost frame of the user's code (not site-packages, dist-packages, the standard
    /// library); `None` when every frame shown is library code or the frames were cut.
    pub user_frame: Option<Frame>,
    /// Every frame shown, outermost first (as Python prints them).
    pub frames: Vec<Frame>,
    /// 1-based line of the traceback's first frame (or its `Traceback` header) in its file:
    /// with [`Traceback::cite`]'s line, the lines to read.
    pub first_line: usize,
    /// `Some(reason)` when the exception is a peer's failure seen from here ([`SYMPTOMS`]).
    pub symptom: Option<&'static str>,
    pub cite: Cite,
}

#[derive(Default)]
struct Open {
    frames: Vec<Frame>,
    /// Line of the header or first frame of the traceback being read.
    first_line: Option<usize>,
}

/// Tracebacks in `records`, keyed by the records' rank (`None`: lines without one).
pub fn read(records: &[Record], cite: impl Fn(&Record) -> Cite) -> Vec<Traceback> {
    let mut open: Vec<(Option<u32>, Open)> = Vec::new();
    let mut out = Vec::new();
    for r in records {
        let body = r.body.as_str();
        let slot = if let Some(i) = open.iter().position(|(rank, _)| *rank == r.rank) {
            i
        } else {
            open.push((r.rank, Open::default()));
            open.len() - 1
        };
        let state = &mut open[slot].1;
        if body.starts_with("Traceback (most recent call last)") {
            // A chained traceback restarts the frames; the last exception is the one raised.
            state.frames.clear();
            state.first_line = Some(r.line);
            continue;
        }
        if let Some(frame) = frame_line(body) {
            if state.frames.is_empty() && state.first_line.is_none() {
                state.first_line = Some(r.line);
            }
            state.frames.push(frame);
            continue;
        }
        if state.frames.is_empty() {
            // A lone exception line, no frames above it: only a rank's own line saying it
            // waited on its peers (a [`SYMPTOMS`] text, e.g. Gloo's `Timed out waiting ...`
            // printed by a launcher that keeps the last line) is evidence; any other could be
            // a message the job logged.
            if r.rank.is_some()
                && state.first_line.is_none()
                && is_exception_line(body)
                && let Some(symptom) = symptom_of(body)
            {
                out.push(Traceback {
                    rank: r.rank,
                    exception: body.trim().to_owned(),
                    user_frame: None,
                    frames: Vec::new(),
                    first_line: r.line,
                    symptom: Some(symptom),
                    cite: cite(r),
                });
            }
            continue;
        }
        if body.starts_with([' ', '\t']) {
            // The source line under the last frame (or the caret line under it).
            let text = body.trim();
            if let Some(last) = state.frames.last_mut()
                && last.source.is_none()
                && !text.chars().all(|c| matches!(c, '^' | '~' | ' '))
            {
                last.source = Some(text.to_owned());
            }
            continue;
        }
        if is_exception_line(body) {
            let frames = std::mem::take(&mut state.frames);
            let first_line = state.first_line.take().unwrap_or(r.line);
            let user_frame = frames.iter().rev().find(|f| !is_library_file(&f.file)).cloned();
            out.push(Traceback {
                rank: r.rank,
                exception: body.trim().to_owned(),
                user_frame,
                frames,
                first_line,
                symptom: symptom_of(body),
                cite: cite(r),
            });
        }
    }
    out
}

/// `  File "train.py", line 24, in main`
fn frame_line(body: &str) -> Option<Frame> {
    let rest = body.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (line, rest) = super::lines::split_digits(rest)?;
    let function = rest.strip_prefix(", in ").unwrap_or("").trim().to_owned();
    Some(Frame { file: file.to_owned(), line: line.parse().ok()?, function, source: None })
}

/// `ValueError: x`, `torch.OutOfMemoryError: CUDA out of memory`, `KeyboardInterrupt`.
fn is_exception_line(body: &str) -> bool {
    let name = body.split_once(':').map_or(body, |(name, _)| name).trim_end();
    !name.is_empty()
        && name.split('.').all(|part| {
            part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::lines::records;

    fn read_text(text: &str) -> Vec<Traceback> {
        read(&records(0, text), |r| Cite {
            file: String::new(),
            line: r.line,
            text: r.body.clone(),
        })
    }

    #[test]
    fn interleaved_ranks_keep_their_own_frames() {
        let t = read_text(
            "[rank1]: Traceback (most recent call last):\n\
             [rank0]: Traceback (most recent call last):\n\
             [rank1]:   File \"/job/run.py\", line 5, in <module>\n\
             [rank0]:   File \"/job/run.py\", line 9, in <module>\n\
             [rank1]:     step()\n\
             [rank0]:   File \"/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py\", line 3, in all_reduce\n\
             [rank1]:   File \"/job/data.py\", line 40, in step\n\
             [rank1]:     raise KeyError(k)\n\
             [rank1]: KeyError: 'shard-9'\n\
             [rank0]: RuntimeError: [gloo/transport/tcp/pair.cc:547] Connection closed by peer [127.0.0.1]:4\n",
        );
        assert_eq!(t.len(), 2);
        let one = t.iter().find(|t| t.rank == Some(1)).unwrap();
        assert_eq!(one.exception, "KeyError: 'shard-9'");
        assert_eq!(one.symptom, None);
        let f = one.user_frame.as_ref().unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.source.as_deref()),
            ("/job/data.py", 40, Some("raise KeyError(k)"))
        );
        let zero = t.iter().find(|t| t.rank == Some(0)).unwrap();
        assert!(zero.symptom.is_some());
        assert_eq!(
            zero.user_frame.as_ref().unwrap().line,
            9,
            "innermost frame outside site-packages"
        );
    }

    #[test]
    fn a_lone_symptom_line_of_a_rank_is_a_waiter_and_nothing_else_is() {
        let t = read_text(
            "[host7|6]:RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete\n\
             [rank2]: ValueError: bad config value\n\
             RuntimeError: Timed out waiting 5000ms for send\n",
        );
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].rank, Some(6));
        assert!(t[0].symptom.is_some() && t[0].frames.is_empty());
    }

    #[test]
    fn a_cut_traceback_still_counts() {
        let t = read_text(
            "[rank4]:   File \"/env/lib/python3.10/site-packages/m/attn.py\", line 96, in fwd\n\
             [rank4]:     out = sdpa(\n\
             [rank4]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.35 GiB.\n",
        );
        assert_eq!(t[0].rank, Some(4));
        assert!(t[0].exception.starts_with("torch.OutOfMemoryError"));
        assert!(t[0].user_frame.is_none(), "library frames only");
    }

    #[test]
    fn prose_after_frames_is_no_exception() {
        let t = read_text(
            "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\nthe job failed: see above\n",
        );
        assert!(t.is_empty());
    }
}
