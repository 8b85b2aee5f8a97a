//! Run a training job under watch (`desync run -- torchrun ...`): start it, follow the dump
//! directory its ranks rewrite with the same loop as `desync watch --dir`, and stop it when it
//! has stopped making progress, so the caller can analyse the dumps it left.
//!
//! The job runs in its own process group, so stopping it reaches torchrun's workers too (and
//! whatever they forked). The caller forwards the user's Ctrl-C through `interrupted`; this
//! module never installs signal handlers, prints, or reads the environment: the variables the
//! job gets are in [`JobOptions::env`].
//!
//! When the job is judged hung: NCCL's debug-info pipes (if the job made any) are poked so its
//! recorders dump once more, the job gets SIGTERM, then SIGKILL after `grace`.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use desync_core::load::LoadOptions;

use crate::source::Directory;
use crate::watch::{Event, Flow, WatchOptions};

#[derive(Debug, Clone)]
pub struct JobOptions {
    /// The command and its arguments (`torchrun --nproc-per-node 4 train.py`).
    pub command: Vec<OsString>,
    /// Variables added to the job's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Where the ranks write `<prefix><rank>` (rewritten while they run, final on failure).
    pub dump_dir: PathBuf,
    pub load: LoadOptions,
    /// Where NCCL's debug-info pipes appear (`TORCH_NCCL_DEBUG_INFO_PIPE_FILE`), if set.
    pub pipe_dir: Option<PathBuf>,
    /// A file whose creation asks desync's Python side for each rank's final dump, with its
    /// stacks (`DESYNC_DUMP_TRIGGER`), before a hung job is stopped.
    pub trigger: Option<PathBuf>,
    /// The watch loop's settings; its `exit_on_alert`, `duration` and `until_gone` are ignored
    /// (the job's own exit ends the watch).
    pub watch: WatchOptions,
    /// No rank issued a new collective for this long: the job is hung.
    pub hang_after: Duration,
    /// After the job failed: how long dumps may still be landing. After SIGTERM: how long
    /// before SIGKILL.
    pub grace: Duration,
}

/// Why desync stepped in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// The watch loop alerted: ranks disagree (the alert's headline).
    Desync(String),
    /// No collective progressed for this long.
    NoProgress(Duration),
    /// The user interrupted desync (Ctrl-C).
    Interrupted,
}

/// How the job ended.
#[derive(Debug)]
pub enum Ending {
    /// By itself.
    Exited(ExitStatus),
    /// desync judged it hung (or was interrupted) and stopped it; its status after that.
    Stopped { cause: StopCause, status: ExitStatus },
}

/// What the front end hears about, besides the watch loop's own events.
pub enum JobEvent<'a> {
    Started {
        pid: u32,
    },
    Watch(Event<'a>),
    /// desync is stopping the job, and why.
    Stopping(&'a StopCause),
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no command to run (give it after `--`)")]
    NoCommand,
    #[error("could not start `{program}`: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("waiting for the job: {0}")]
    Wait(std::io::Error),
}

/// Runs the job to its end, or until it is judged hung.
pub fn run_job(
    options: &JobOptions,
    interrupted: &AtomicBool,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> Result<Ending, JobError> {
    let (program, args) = options.command.split_first().ok_or(JobError::NoCommand)?;
    for dir in std::iter::once(&options.dump_dir).chain(&options.pipe_dir) {
        std::fs::create_dir_all(dir)
            .map_err(|source| JobError::Io { path: dir.clone(), source })?;
    }
    let mut child = Command::new(program)
        .args(args)
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .process_group(0)
        .spawn()
        .map_err(|source| JobError::Spawn {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
    on_event(JobEvent::Started { pid: child.id() });

    let mut source = Directory::new(options.dump_dir.clone(), options.load.clone());
    let watch_options = WatchOptions {
        exit_on_alert: true,
        duration: None,
        until_gone: None,
        ..options.watch.clone()
    };
    let mut progress = Progress::default();
    let mut cause = None;
    let mut exited = None;
    let mut wait_error = None;
    crate::watch(&mut source, &watch_options, &mut |event| {
        match child.try_wait() {
            Ok(Some(status)) => exited = Some(status),
            Ok(None) => {}
            Err(e) => wait_error = Some(e),
        }
        match &event {
            Event::Status(status) => {
                if progress.stalled(&status.groups, options.hang_after) {
                    cause = Some(StopCause::NoProgress(options.hang_after));
                }
            }
            Event::Alert(alert) => {
                cause = Some(StopCause::Desync(alert.analysis.diagnosis.headline.clone()));
            }
            Event::SourceDown(_) => {}
        }
        if interrupted.load(Ordering::Relaxed) {
            cause = Some(StopCause::Interrupted);
        }
        on_event(JobEvent::Watch(event));
        if exited.is_some() || cause.is_some() || wait_error.is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    if let Some(e) = wait_error {
        return Err(JobError::Wait(e));
    }
    if let Some(status) = exited {
        settle(&options.dump_dir, options.grace);
        return Ok(Ending::Exited(status));
    }
    // The loop only stops for an exit, a cause or an error: a cause it is.
    let cause = cause.unwrap_or(StopCause::Interrupted);
    on_event(JobEvent::Stopping(&cause));
    let asked = SystemTime::now();
    if let Some(trigger) = &options.trigger {
        std::fs::write(trigger, b"")
            .map_err(|source| JobError::Io { path: trigger.clone(), source })?;
    }
    if let Some(pipes) = &options.pipe_dir {
        poke_pipes(pipes);
    }
    if options.trigger.is_some() || options.pipe_dir.is_some() {
        await_fresh_dumps(&options.dump_dir, asked, options.grace);
    }
    let status = stop(&mut child, options.grace).map_err(JobError::Wait)?;
    settle(&options.dump_dir, Duration::from_secs(2));
    Ok(Ending::Stopped { cause, status })
}

/// The exit code a shell would report for `status` (128 + signal for a killed process).
pub fn exit_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Tracks when any process group's newest collective last moved.
#[derive(Default)]
struct Progress {
    last: Vec<(String, u64, u64)>,
    since: Option<Instant>,
}

impl Progress {
    /// True once the groups' seq ranges have not changed for `limit` (and there are some).
    fn stalled(&mut self, groups: &[(String, u64, u64)], limit: Duration) -> bool {
        let now = Instant::now();
        if groups.is_empty() || self.last != groups {
            self.last = groups.to_vec();
            self.since = Some(now);
            return false;
        }
        self.since.is_some_and(|since| now.duration_since(since) >= limit)
    }
}

/// SIGTERM to the job's process group, SIGKILL after `grace`; returns the job's status.
fn stop(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    if let Some(group) = group {
        // ESRCH: it just exited by itself; `wait` below collects it.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        if let Some(status) = child.try_wait()? {
            // The leader is gone; stragglers in its group (orphaned workers) go too.
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            return Ok(status);
        }
        if Instant::now() >= deadline {
            if let Some(group) = group {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            }
            return child.wait();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes a byte into every `*.pipe` FIFO under `dir`: NCCL's recorders dump on it
/// (`TORCH_NCCL_DEBUG_INFO_PIPE_FILE`; torch opens the FIFO non-blocking for reading).
fn poke_pipes(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "pipe") {
            // Non-blocking open for writing fails with ENXIO when no reader has it open (a
            // rank that is gone); that rank cannot dump anyway.
            use std::os::unix::fs::OpenOptionsExt;
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&path);
            if let Ok(mut pipe) = opened {
                let _ = std::io::Write::write_all(&mut pipe, b"1");
            }
        }
    }
}

/// Waits until every dump under `dir` was rewritten after `asked` (at most `limit`): a rank's
/// final dump symbolizes its Python stacks, which takes seconds the first time. A rank that
/// never rewrites (dead, or without desync's Python side) costs the whole `limit`.
fn await_fresh_dumps(dir: &std::path::Path, asked: SystemTime, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let files = fingerprint(dir);
        let stale = files.iter().any(|(path, modified, _)| {
            let dump =
                path.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.'));
            dump && modified.is_none_or(|m| m < asked)
        });
        if !files.is_empty() && !stale {
            // The newest file may still be half renamed into place; a breath more.
            std::thread::sleep(Duration::from_millis(250));
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Waits until the files under `dir` stop changing for a moment (at most `limit`): ranks that
/// were told to dump are still writing.
fn settle(dir: &std::path::Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut last = fingerprint(dir);
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        let now = fingerprint(dir);
        if now != last {
            last = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_millis(750) {
            return;
        }
    }
}

fn fingerprint(dir: &std::path::Path) -> Vec<(PathBuf, Option<std::time::SystemTime>, u64)> {
    desync_core::load::walk(dir)
        .unwrap_or_default()
        .files
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            let len = meta.map_or(0, |m| m.len());
            (p, modified, len)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_stalls_only_when_nothing_moves() {
        let mut p = Progress::default();
        let a = vec![("0".to_owned(), 5, 7)];
        assert!(!p.stalled(&a, Duration::ZERO), "the first sighting starts the clock");
        assert!(p.stalled(&a, Duration::ZERO));
        let b = vec![("0".to_owned(), 6, 7)];
        assert!(!p.stalled(&b, Duration::from_mins(1)));
        assert!(!p.stalled(&b, Duration::from_mins(1)));
        assert!(!p.stalled(&[], Duration::ZERO));
    }

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    }

    /// A job running `command` with dumps under `dir`, watched every 100 ms.
    fn test_job(command: &[&str], dir: &std::path::Path, grace: Duration) -> JobOptions {
        JobOptions {
            command: command.iter().map(OsString::from).collect(),
            env: Vec::new(),
            dump_dir: dir.join("dumps"),
            load: LoadOptions::default(),
            pipe_dir: None,
            trigger: None,
            watch: WatchOptions {
                interval: Duration::from_millis(100),
                lag: Duration::from_secs(1),
                duration: None,
                exit_on_alert: true,
                until_gone: None,
                save_dir: None,
                sources: desync_core::bridge::SourceOptions::default(),
            },
            hang_after: Duration::from_mins(1),
            grace,
        }
    }

    #[test]
    fn a_failing_job_keeps_its_status() {
        let dir = tempfile::tempdir().unwrap();
        let options = test_job(&["sh", "-c", "exit 7"], dir.path(), Duration::from_millis(200));
        let ending = run_job(&options, &AtomicBool::new(false), &mut |_| {}).unwrap();
        match ending {
            Ending::Exited(status) => assert_eq!(exit_code(status), 7),
            other @ Ending::Stopped { .. } => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_interrupt_stops_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        // The shell's child (sleep) is in the job's group too and must not outlive it.
        let options =
            test_job(&["sh", "-c", "sleep 30 & wait"], dir.path(), Duration::from_secs(2));
        let interrupted = AtomicBool::new(true);
        let started = Instant::now();
        let ending = run_job(&options, &interrupted, &mut |_| {}).unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        match ending {
            Ending::Stopped { cause: StopCause::Interrupted, status } => {
                assert_eq!(exit_code(status), 143);
            }
            other => panic!("{other:?}"),
        }
    }
}
