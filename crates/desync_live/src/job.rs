//! Run a training job under watch (`desync run -- torchrun ...`): start it, follow the dump
//! directory its ranks rewrite with the same loop as `desync watch --dir`, and stop it when it
//! has stopped making progress, so the caller can analyse the dumps it left.
//!
//! desync owns the job's whole process tree ([`tree`]): the job runs in its own process group,
//! and on Linux desync becomes the reaper of its orphans, so a worker that started its own
//! session (`setsid`) or outlived its parent is still found and stopped. While a job runs,
//! nothing else in this process may start children: every child of desync counts as the
//! job's. The caller forwards the user's Ctrl-C through `interrupted`; this module never
//! installs signal handlers, prints, or reads the environment: the variables the job gets are
//! in [`JobOptions::env`].
//!
//! The job is hung when the watch loop alerts, or when nothing moved for `hang_after`: no
//! collective on any rank, no new rank's dump, counted from the start when no dump appears at
//! all. Then the job's Python processes are asked for their stacks (SIGUSR2, to those that
//! registered for it) and the ranks for their final dumps (desync's trigger file; NCCL's
//! debug-info pipes, if the job made any), with up to `grace` to write them when some rank
//! can answer; then every process of the tree gets SIGTERM, and SIGKILL after `grace`.
//! A job that exits by itself but leaves processes behind has them stopped the same way.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use desync_core::load::LoadOptions;

use crate::source::Directory;
use guard::Guard;
use rustix::process::{Pid, Signal, kill_process};
use tree::Tree;

mod guard;
mod output;
mod tree;

use crate::watch::{Event, Flow, WatchOptions};
pub use guard::{GuardEnd, guard_job};

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
    /// Where the job's Python processes write their stacks on SIGUSR2, each to `<pid>.txt`
    /// (`DESYNC_STACKS_DIR`): the processes of the tree with such a file get SIGUSR2 before
    /// the stop. A process without one is never sent SIGUSR2 (it would die of it).
    pub stacks_dir: Option<PathBuf>,
    /// The watch loop's settings; its `exit_on_alert`, `duration` and `until_gone` are ignored
    /// (the job's own exit ends the watch).
    pub watch: WatchOptions,
    /// No rank issued a new collective (and no new rank dumped) for this long, or no dump
    /// appeared this long after the start: the job is hung.
    pub hang_after: Duration,
    /// After the job failed: how long dumps may still be landing. After SIGTERM: how long
    /// before SIGKILL.
    pub grace: Duration,
    /// The command that starts the job's guard ([`guard_job`] behind it): the process that
    /// stops the job if this one dies without stopping it. `None`: no guard.
    pub guard: Option<Vec<OsString>>,
    /// Where to keep the job's stdout and stderr (which still reach desync's own): the only
    /// record of a crashing rank's traceback (`output.rs`). `None`: the job writes to the
    /// terminal directly.
    pub output_log: Option<PathBuf>,
}

/// Why desync stepped in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// The watch loop alerted: ranks disagree (the alert's headline).
    Desync(String),
    /// No collective progressed for this long.
    NoProgress(Duration),
    /// No rank wrote a readable dump in this long since the start.
    NoDumps(Duration),
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
    /// The job's first process exited, and these processes of its tree still run: desync
    /// asks them for dumps and stops them.
    Leftovers(&'a [i32]),
    /// These processes outlived SIGTERM by `grace` and got SIGKILL (the first process
    /// included).
    Killed(&'a [i32]),
    /// These processes still run after SIGKILL (stuck in the kernel, or out of reach).
    Unkillable(&'a [i32]),
    /// The guard could not be started: the job runs, but if desync is killed it is left
    /// running.
    Unguarded(&'a std::io::Error),
    /// The job's output could not be kept in `output_log` (it still reached the terminal).
    OutputNotKept(&'a std::io::Error),
    /// The job's output is kept here.
    OutputKept(&'a std::path::Path),
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
    // Before the spawn: an orphan of the job's very first moments is adopted too. Where this
    // fails, orphans escape to init and only those seen before are found.
    Tree::adopt_orphans();
    // The guard first: a job is never without one, not even for its first moments.
    let mut guard = match options.guard.as_deref().map(Guard::start) {
        Some(Ok(guard)) => Some(guard),
        Some(Err(e)) => {
            on_event(JobEvent::Unguarded(&e));
            None
        }
        None => None,
    };
    let mut command = Command::new(program);
    command.args(args).envs(options.env.iter().map(|(k, v)| (k, v))).process_group(0);
    if options.output_log.is_some() {
        command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    }
    let mut child = command.spawn().map_err(|source| JobError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    let capture =
        options.output_log.as_deref().map(|path| output::Capture::start(&mut child, path));
    let pid = child.id();
    // From here on, any way out of this function stops the tree (`Job`'s drop).
    let mut tree = Tree::new(pid);
    if let Some(g) = &mut guard {
        tree.spare(g.pid());
        if let Err(e) = g.watch(pid) {
            on_event(JobEvent::Unguarded(&e));
        }
    }
    let mut job = Job { tree, child, finished: false, guard };
    on_event(JobEvent::Started { pid });
    let capture = match capture {
        Some(Ok(capture)) => Some(capture),
        Some(Err(e)) => {
            on_event(JobEvent::OutputNotKept(&e));
            None
        }
        None => None,
    };

    let mut source = Directory::new(options.dump_dir.clone(), options.load.clone());
    let watch_options = WatchOptions {
        exit_on_alert: true,
        duration: None,
        until_gone: None,
        ..options.watch.clone()
    };
    let mut progress = Progress::new(Instant::now());
    let mut cause = None;
    let mut exited = None;
    let mut wait_error = None;
    crate::watch(&mut source, &watch_options, &mut |event| {
        // Each look records the tree while parents still link it: a member that leaves its
        // group later is known by then.
        job.tree.living();
        match job.child.try_wait() {
            Ok(Some(status)) => exited = Some(status),
            Ok(None) => {}
            Err(e) => wait_error = Some(e),
        }
        // A cause, once found, stays (an alert, the better account, may still replace it).
        match &event {
            Event::Status(status) => {
                let state = (status.ranks_seen, status.groups.as_slice());
                cause = cause.take().or(progress.hung(Some(state), options.hang_after));
            }
            Event::Alert(alert) => {
                cause = Some(StopCause::Desync(alert.analysis.diagnosis.headline.clone()));
            }
            Event::SourceDown(_) => {
                cause = cause.take().or(progress.hung(None, options.hang_after));
            }
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
        let leftovers = job.tree.living();
        if !leftovers.is_empty() {
            on_event(JobEvent::Leftovers(&leftovers));
            job.request_stacks(options.stacks_dir.as_deref());
            request_final_dumps(options)?;
            job.stop(options.grace, on_event).map_err(JobError::Wait)?;
        }
        job.finished = true;
        job.release_guard();
        keep_output(capture, on_event);
        return Ok(Ending::Exited(status));
    }
    // The loop only stops for an exit, a cause or an error: a cause it is.
    let cause = cause.unwrap_or(StopCause::Interrupted);
    on_event(JobEvent::Stopping(&cause));
    job.request_stacks(options.stacks_dir.as_deref());
    request_final_dumps(options)?;
    let status = job.stop(options.grace, on_event).map_err(JobError::Wait)?;
    job.release_guard();
    keep_output(capture, on_event);
    settle(&options.dump_dir, Duration::from_secs(2));
    Ok(Ending::Stopped { cause, status })
}

/// The job's output, once its processes are gone: the copies drained and the log written.
fn keep_output(capture: Option<output::Capture>, on_event: &mut dyn FnMut(JobEvent<'_>)) {
    let Some(capture) = capture else { return };
    match capture.finish(Duration::from_secs(2)) {
        Ok(path) => on_event(JobEvent::OutputKept(&path)),
        Err(e) => on_event(JobEvent::OutputNotKept(&e)),
    }
}

/// The exit code a shell would report for `status` (128 + signal for a killed process).
pub fn exit_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Per process group: (label, lowest and highest last seq), as [`crate::watch::Status`] has it.
type GroupSeqs = [(String, u64, u64)];

/// Tracks when the job last moved: a process group's newest collective, or a new rank's dump.
struct Progress {
    last: (usize, Vec<(String, u64, u64)>),
    since: Instant,
    /// Whether any dump was ever read: without one, a stall is "no dumps".
    dumped: bool,
}

impl Progress {
    /// The clock starts with the job: a job that never dumps is hung after the limit too.
    fn new(start: Instant) -> Self {
        Self { last: (0, Vec::new()), since: start, dumped: false }
    }

    /// Why the job counts as hung, once (ranks dumping, their groups' seq ranges) has not
    /// changed for `limit`. `None`: the dumps could not be read this time (none yet, or
    /// unreadable), which neither moves nor resets the clock.
    fn hung(&mut self, state: Option<(usize, &GroupSeqs)>, limit: Duration) -> Option<StopCause> {
        let now = Instant::now();
        if let Some((ranks, groups)) = state {
            self.dumped |= ranks > 0;
            if self.last.0 != ranks || self.last.1 != groups {
                self.last = (ranks, groups.to_vec());
                self.since = now;
                return None;
            }
        }
        if now.duration_since(self.since) < limit {
            return None;
        }
        Some(if self.dumped { StopCause::NoProgress(limit) } else { StopCause::NoDumps(limit) })
    }
}

/// The running job: its first process and its tree. Dropped unfinished (an error, a panic),
/// it kills the whole tree at once rather than leave it running.
struct Job {
    child: Child,
    tree: Tree,
    finished: bool,
    /// Released once the job is stopped or ended; held until then (see [`guard`]).
    guard: Option<Guard>,
}

impl Job {
    /// desync is done with the job: its guard exits without stopping anything.
    fn release_guard(&mut self) {
        if let Some(guard) = self.guard.take() {
            guard.release();
        }
    }

    /// SIGUSR2 to every running process of the tree that registered for it (a `<pid>.txt`
    /// under `dir`); waits up to a second for their stacks.
    fn request_stacks(&mut self, dir: Option<&std::path::Path>) {
        let Some(dir) = dir else { return };
        let mut pids = self.tree.living();
        if matches!(self.child.try_wait(), Ok(None)) {
            pids.push(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        }
        let file = |pid: i32| dir.join(format!("{pid}.txt"));
        let asked: Vec<i32> = pids
            .into_iter()
            .filter(|&pid| file(pid).is_file())
            .filter(|&pid| {
                Pid::from_raw(pid).is_some_and(|p| kill_process(p, Signal::USR2).is_ok())
            })
            .collect();
        // faulthandler writes from the handler itself; a process in uninterruptible sleep
        // takes the signal only when it wakes.
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline
            && asked.iter().any(|&pid| std::fs::metadata(file(pid)).is_ok_and(|m| m.len() == 0))
        {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM to every process of the tree, SIGKILL to what is left after `grace`; returns
    /// the first process's status. Processes that appear meanwhile get the same.
    fn stop(
        &mut self,
        grace: Duration,
        on_event: &mut dyn FnMut(JobEvent<'_>),
    ) -> std::io::Result<ExitStatus> {
        self.finished = true;
        let mut told: BTreeSet<i32> = self.tree.signal(Signal::TERM).into_iter().collect();
        let deadline = Instant::now() + grace;
        loop {
            let first = self.child.try_wait()?;
            let living = self.tree.living();
            if let Some(status) = first
                && living.is_empty()
            {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                break;
            }
            for &pid in &living {
                if told.insert(pid) {
                    let _ = Pid::from_raw(pid).map(|p| kill_process(p, Signal::TERM));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut killed: BTreeSet<i32> = BTreeSet::new();
        if self.child.try_wait()?.is_none() {
            killed.insert(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        }
        // SIGKILL is not ignorable, but a process in uninterruptible sleep dies only when it
        // leaves the kernel: a few seconds, then desync says which are left.
        let until = Instant::now() + Duration::from_secs(5);
        let mut living = Vec::new();
        while Instant::now() < until {
            killed.extend(self.tree.signal(Signal::KILL));
            std::thread::sleep(Duration::from_millis(50));
            living = self.tree.living();
            if self.child.try_wait()?.is_some() && living.is_empty() {
                break;
            }
        }
        let killed: Vec<i32> = killed.into_iter().collect();
        if !killed.is_empty() {
            on_event(JobEvent::Killed(&killed));
        }
        if !living.is_empty() {
            on_event(JobEvent::Unkillable(&living));
        }
        self.child.wait()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if !self.finished {
            self.tree.signal(Signal::KILL);
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.tree.living();
        }
        self.release_guard();
    }
}

/// Asks every rank for its final dump before the job is stopped: desync's trigger file (the
/// ranks' Python side writes a dump with stacks when it appears) and NCCL's debug-info pipes.
/// Waits up to `grace` for fresh dumps, but only when some rank can answer: one that already
/// dumps (the trigger is read by its live-dump thread), or a pipe that took the byte.
fn request_final_dumps(options: &JobOptions) -> Result<(), JobError> {
    let asked = SystemTime::now();
    let mut answering = false;
    if let Some(trigger) = &options.trigger {
        std::fs::write(trigger, b"")
            .map_err(|source| JobError::Io { path: trigger.clone(), source })?;
        answering |= !fingerprint(&options.dump_dir).is_empty();
    }
    if let Some(pipes) = &options.pipe_dir {
        answering |= poke_pipes(pipes) > 0;
    }
    if answering {
        await_fresh_dumps(&options.dump_dir, asked, options.grace);
    }
    Ok(())
}

/// Writes a byte into every `*.pipe` FIFO under `dir` and counts those taken: NCCL's recorders
/// dump on it (`TORCH_NCCL_DEBUG_INFO_PIPE_FILE`; torch opens the FIFO non-blocking for
/// reading).
fn poke_pipes(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut poked = 0;
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
            if let Ok(mut pipe) = opened
                && std::io::Write::write_all(&mut pipe, b"1").is_ok()
            {
                poked += 1;
            }
        }
    }
    poked
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
        let mut p = Progress::new(Instant::now());
        let a = vec![("0".to_owned(), 5, 7)];
        assert_eq!(
            p.hung(Some((2, &a)), Duration::ZERO),
            None,
            "the first sighting starts the clock"
        );
        assert_eq!(
            p.hung(Some((2, &a)), Duration::ZERO),
            Some(StopCause::NoProgress(Duration::ZERO))
        );
        let b = vec![("0".to_owned(), 6, 7)];
        assert_eq!(p.hung(Some((2, &b)), Duration::from_mins(1)), None);
        assert_eq!(p.hung(Some((2, &b)), Duration::from_mins(1)), None);
        // A new rank's dump is progress too.
        assert_eq!(p.hung(Some((3, &b)), Duration::ZERO), None);
        // Unreadable dumps neither reset nor stop the clock.
        assert!(p.hung(None, Duration::ZERO).is_some());
    }

    #[test]
    fn a_job_without_dumps_is_hung_counting_from_its_start() {
        let start = Instant::now().checked_sub(Duration::from_secs(10)).unwrap();
        let mut p = Progress::new(start);
        assert_eq!(p.hung(None, Duration::from_mins(1)), None);
        assert_eq!(
            p.hung(None, Duration::from_secs(5)),
            Some(StopCause::NoDumps(Duration::from_secs(5)))
        );
        // Dumps without collectives yet: still counted from the start.
        let mut p = Progress::new(start);
        assert_eq!(
            p.hung(Some((0, &[])), Duration::from_secs(5)),
            Some(StopCause::NoDumps(Duration::from_secs(5)))
        );
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
            stacks_dir: None,
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
            guard: None,
            output_log: None,
        }
    }

    #[test]
    fn the_jobs_output_is_kept_line_by_line_from_both_streams() {
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let script = "echo '[rank0]: step 1'; echo '[rank1]: Traceback (most recent call last):' >&2; \
                      printf '[rank1]: ValueError: no newline at the end' >&2; exit 3";
        let mut options = test_job(&["sh", "-c", script], dir.path(), Duration::from_secs(1));
        let log = dir.path().join("dumps").join("job.log");
        options.output_log = Some(log.clone());
        let mut kept_at = None;
        let ending = run_job(&options, &AtomicBool::new(false), &mut |event| {
            if let JobEvent::OutputKept(path) = event {
                kept_at = Some(path.to_path_buf());
            }
        })
        .expect("the job runs");
        let Ending::Exited(status) = ending else { panic!("{ending:?}") };
        assert_eq!(exit_code(status), 3);
        assert_eq!(kept_at.as_deref(), Some(log.as_path()));
        let text = std::fs::read_to_string(&log).expect("the log is written");
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        assert_eq!(
            lines,
            [
                "[rank0]: step 1",
                "[rank1]: Traceback (most recent call last):",
                "[rank1]: ValueError: no newline at the end"
            ]
        );
        assert!(text.ends_with('\n'), "the last line is closed: {text:?}");
    }

    /// Every child of this process counts as the running job's: the job tests take turns.
    static ONE_JOB_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn an_abandoned_job_is_stopped_by_its_guard() {
        use std::io::Write;
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A job of two processes in their own group; the "desync" that started it is a pid
        // that does not exist, as after `run` died.
        let mut job = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .process_group(0)
            .spawn()
            .expect("sh runs");
        let (read, mut write) = std::io::pipe().expect("a pipe");
        write.write_all(format!("job {}\n", job.id()).as_bytes()).expect("written");
        let guard =
            std::thread::spawn(move || guard_job(read, i32::MAX - 1, Duration::from_secs(1)));
        std::thread::sleep(Duration::from_millis(600));
        drop(write);
        let end = guard.join().expect("the guard ends");
        let GuardEnd::Stopped { stopped, left, .. } = end else { panic!("{end:?}") };
        assert!(stopped.len() >= 2, "{stopped:?}");
        assert!(left.is_empty(), "{left:?}");
        assert!(!job.wait().expect("reaped").success());
    }

    /// Whether `pid` still runs (a zombie has exited).
    fn running(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| tree_state(&stat))
            .is_some_and(|state| state != "Z")
    }

    fn tree_state(stat: &str) -> Option<String> {
        Some(stat[stat.rfind(')')? + 1..].split_whitespace().next()?.to_owned())
    }

    /// A shell line that starts, in its own session, a process ignoring SIGTERM and writes
    /// that process's pid to `pidfile`.
    fn escaping_worker(pidfile: &std::path::Path) -> String {
        format!("setsid sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 60' &", pidfile.display())
    }

    fn await_file(path: &std::path::Path) -> i32 {
        for _ in 0..100 {
            if let Some(pid) =
                std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok())
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{} never written", path.display());
    }

    #[test]
    fn a_failing_job_keeps_its_status() {
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().unwrap();
        let options = test_job(&["sh", "-c", "exit 7"], dir.path(), Duration::from_millis(200));
        let ending = run_job(&options, &AtomicBool::new(false), &mut |_| {}).unwrap();
        match ending {
            Ending::Exited(status) => assert_eq!(exit_code(status), 7),
            other @ Ending::Stopped { .. } => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_interrupt_stops_the_whole_tree() {
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("escaped");
        // The shell's child (sleep) is in the job's group; the escaping worker is not, and
        // ignores SIGTERM: neither may outlive the job.
        let line = format!("{} sleep 30 & wait", escaping_worker(&pidfile));
        let options = test_job(&["sh", "-c", &line], dir.path(), Duration::from_millis(500));
        let mut looks = 0;
        let interrupted = AtomicBool::new(false);
        let started = Instant::now();
        let mut killed = Vec::new();
        let ending = run_job(&options, &interrupted, &mut |e| match e {
            // The worker has written its pid before the interrupt lands.
            JobEvent::Watch(_) => {
                looks += 1;
                if pidfile.exists() {
                    interrupted.store(true, Ordering::Relaxed);
                }
            }
            JobEvent::Killed(pids) => killed = pids.to_vec(),
            _ => {}
        })
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        let escaped = await_file(&pidfile);
        match ending {
            Ending::Stopped { cause: StopCause::Interrupted, status } => {
                assert_eq!(exit_code(status), 143);
            }
            other => panic!("{other:?}"),
        }
        assert!(killed.contains(&escaped), "{killed:?} lacks {escaped}");
        assert!(!running(escaped), "the worker that left the session still runs");
        assert!(looks > 0);
    }

    #[test]
    fn a_job_that_exits_leaving_workers_behind_has_them_stopped() {
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !std::path::Path::new("/proc/self/stat").exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("escaped");
        // The first process exits at once: the worker is an orphan before desync ever looked.
        let line = format!("{} exit 3", escaping_worker(&pidfile));
        let options = test_job(&["sh", "-c", &line], dir.path(), Duration::from_millis(300));
        let mut leftovers = Vec::new();
        let ending = run_job(&options, &AtomicBool::new(false), &mut |e| {
            if let JobEvent::Leftovers(pids) = e {
                leftovers = pids.to_vec();
            }
        })
        .unwrap();
        let escaped = await_file(&pidfile);
        match ending {
            Ending::Exited(status) => assert_eq!(exit_code(status), 3),
            other @ Ending::Stopped { .. } => panic!("{other:?}"),
        }
        assert!(leftovers.contains(&escaped), "{leftovers:?} lacks {escaped}");
        assert!(!running(escaped), "the orphaned worker still runs");
    }
}
