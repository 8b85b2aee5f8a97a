//! The job's guard: a second process that stops the job when `desync run` dies without
//! stopping it. SIGKILL, the OOM killer or a crash run no handler and no `Drop`, and the
//! workspace denies `unsafe` (no `prctl(PR_SET_PDEATHSIG)` in a `pre_exec`), so the job
//! itself cannot be told; a process that outlives `run` can.
//!
//! Protocol: `run` starts the guard before the job, in a process group of its own (a Ctrl-C
//! at the terminal is `run`'s to handle), with a pipe on the guard's standard input. Only
//! `run` holds the write end: Rust opens it close-on-exec, so the job never inherits it.
//! `run` writes `job <pid>` once the job started and `release` once it is done with the job
//! (stopped, or ended by itself). The kernel closes the write end when `run` dies for any
//! reason: end of input without `release` means the job was abandoned, and the guard stops
//! the job's whole tree ([`Tree`]: its process group, members that left it, their
//! descendants) with SIGTERM, then SIGKILL after the grace, and exits. After `release` it
//! exits at once and signals nothing. While `run` lives the guard looks at the tree every
//! 250 ms, so members that leave the job's process group (`setsid`) are known before their
//! parents die and stop linking them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use super::tree::Tree;

/// How often the guard records the tree while `run` lives.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// After SIGKILL, how long the guard waits for processes stuck in the kernel to go.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// How the guard ended.
#[derive(Debug, PartialEq, Eq)]
pub enum GuardEnd {
    /// `run` released the job (or ended before starting one): nothing was signalled.
    Released,
    /// `run` died holding the job: these processes got SIGTERM, and `killed` SIGKILL after
    /// the grace; `left` still ran after that.
    Stopped { stopped: Vec<i32>, killed: Vec<i32>, left: Vec<i32> },
}

/// `run`'s side: the guard's process and the write end of its pipe.
pub(super) struct Guard {
    child: Child,
    input: ChildStdin,
}

impl Guard {
    /// Starts `command` (`desync job-guard ...`) as the guard.
    pub(super) fn start(command: &[std::ffi::OsString]) -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        let (program, args) =
            command.split_first().ok_or_else(|| std::io::Error::other("no guard command"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()?;
        let input = child.stdin.take().ok_or_else(|| std::io::Error::other("no guard pipe"))?;
        Ok(Self { child, input })
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Tells the guard which job to stop if `run` dies.
    pub(super) fn watch(&mut self, job: u32) -> std::io::Result<()> {
        writeln!(self.input, "job {job}")?;
        self.input.flush()
    }

    /// `run` is done with the job: the guard exits without a signal to anyone.
    pub(super) fn release(mut self) {
        let _ = writeln!(self.input, "release").and_then(|()| self.input.flush());
        drop(self.input);
        let _ = self.child.wait();
    }
}

/// The guard's side: reads `input` (the pipe from `run`, process `desync`) and, when it ends
/// without a release, stops the job's tree with `grace` between SIGTERM and SIGKILL.
pub fn guard_job(input: impl Read + Send + 'static, desync: i32, grace: Duration) -> GuardEnd {
    // A reader thread turns the pipe into messages, so the main thread can look at the
    // tree between them; `None` is the end of input.
    let (send, messages) = mpsc::channel::<Option<String>>();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(input).lines();
        loop {
            let line = lines.next().and_then(Result::ok);
            let end = line.is_none();
            if send.send(line).is_err() || end {
                return;
            }
        }
    });
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut tree: Option<Tree> = None;
    loop {
        match messages.recv_timeout(LOOK_EVERY) {
            Ok(Some(line)) => {
                if line.trim() == "release" {
                    return GuardEnd::Released;
                }
                if let Some(pid) = line.trim().strip_prefix("job ").and_then(|p| p.parse().ok()) {
                    tree = Some(Tree::of(pid, desync, vec![me, desync]));
                }
            }
            Ok(None) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if let Some(tree) = &mut tree {
            tree.all_living();
        }
    }
    match tree {
        Some(mut tree) => {
            tree.starter_gone();
            stop(&mut tree, grace)
        }
        // `run` ended before it started a job: nothing to stop.
        None => GuardEnd::Released,
    }
}

/// SIGTERM to the tree, SIGKILL to what is left after `grace` (the same steps as `run`'s
/// own stop, without a `Child` handle: the first process is signalled like any member).
fn stop(tree: &mut Tree, grace: Duration) -> GuardEnd {
    let stopped = signal_all(tree, Signal::TERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        let living = tree.all_living();
        if living.is_empty() {
            return GuardEnd::Stopped { stopped, killed: Vec::new(), left: Vec::new() };
        }
        for pid in living.into_iter().filter(|p| !stopped.contains(p)) {
            let _ = Pid::from_raw(pid).map(|p| kill_process(p, Signal::TERM));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut killed: Vec<i32> = Vec::new();
    let until = Instant::now() + KILL_WAIT;
    let mut left = Vec::new();
    while Instant::now() < until {
        for pid in signal_all(tree, Signal::KILL) {
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        left = tree.all_living();
        if left.is_empty() {
            break;
        }
    }
    GuardEnd::Stopped { stopped, killed, left }
}

/// `signal` to the job's process group and every living member, the first process too;
/// returns the members that were running (listed before the signal: after it, those that
/// died of it are zombies of another parent and no longer listed).
fn signal_all(tree: &mut Tree, signal: Signal) -> Vec<i32> {
    let mut running = tree.all_living();
    running.extend(tree.signal(signal));
    running.sort_unstable();
    running.dedup();
    for &pid in &running {
        let _ = Pid::from_raw(pid).map(|p| kill_process(p, signal));
    }
    running
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_ends_the_guard_without_a_signal() {
        let input: &'static [u8] = b"job 2147483000\nrelease\n";
        assert_eq!(guard_job(input, 2_147_483_001, Duration::ZERO), GuardEnd::Released);
    }

    #[test]
    fn an_end_before_any_job_stops_nothing() {
        let input: &'static [u8] = b"";
        assert_eq!(guard_job(input, 2_147_483_001, Duration::ZERO), GuardEnd::Released);
    }
}
