//! `desync run -- COMMAND`: the job under watch (`desync_live::job`), then the post-mortem on
//! the dumps it left, printed like `analyze` and written as `DIR/report.html`.
//!
//! This front end decides the job's environment: the dump directory, Flight Recorder's
//! defaults (a variable the user already set is kept, except the dump path, which `run` owns),
//! and, unless `--no-inject`, a `sitecustomize.py` on PYTHONPATH that calls
//! `desync.torch.enable()` in every rank (the package's source is compiled into this binary,
//! so a `cargo install`ed desync needs nothing installed in the job's environment).

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use desync_live::job::{Ending, JobEvent, JobOptions, StopCause};
use desync_live::{Event, WatchOptions};

use crate::Outcome;
use crate::cli::{JobGuardArgs, RunArgs};

/// Each rank writes `dumps/rank_<N>` (the prefix torch's own writer gets from
/// `TORCH_FR_DUMP_TEMP_FILE`, and the one `desync.torch` uses).
const PREFIX: &str = "rank_";

/// The job's stdout and stderr, kept beside the dumps: `analyze` reads a log there, so the
/// replay (`desync analyze DIR/dumps`) says what `run` said.
const OUTPUT_LOG: &str = "job.log";

/// The Python side, written under `DIR/python/` for the job's PYTHONPATH.
const PYTHON_FILES: &[(&str, &str)] = &[
    ("desync/__init__.py", include_str!("../../../../python/desync/__init__.py")),
    ("desync/__main__.py", include_str!("../../../../python/desync/__main__.py")),
    ("desync/torch.py", include_str!("../../../../python/desync/torch.py")),
    ("desync/lightning.py", include_str!("../../../../python/desync/lightning.py")),
    ("desync/accelerate.py", include_str!("../../../../python/desync/accelerate.py")),
    ("desync/py.typed", ""),
    ("sitecustomize.py", include_str!("../../../../python/desync/_sitecustomize.py")),
];

pub fn run(args: &RunArgs) -> anyhow::Result<Outcome> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            PathBuf::from(format!("desync-run-{}", desync_live::watch::stamp(SystemTime::now())))
        }
    };
    let dir = absolute(&dir)?;
    desync_core::output::check_dir_target(&dir)?;
    let dumps = dir.join("dumps");
    let pipes = dir.join("pipes");
    let stacks = dir.join("stacks");
    if dumps.is_dir() && std::fs::read_dir(&dumps)?.next().is_some() {
        bail!("{}: already holds dumps of an earlier run; give another --dir", dumps.display());
    }
    std::fs::create_dir_all(&dumps).with_context(|| format!("creating {}", dumps.display()))?;
    // A trigger left by an earlier run would make the ranks dump for good at once.
    let _ = std::fs::remove_file(dir.join("dump-now"));

    let sources = args.sources.options()?;
    let load = desync_core::load::LoadOptions {
        prefix: Some(PREFIX.to_owned()),
        ownership: args.ownership.ownership(),
        // No --world-size for `run`: the dumps it collects carry it (pg_config, file names).
        world_size: None,
        per_rank_entries: false,
    };
    let interval = seconds("--interval", args.interval)?.max(Duration::from_millis(200));
    let mut env = job_env(&dumps, &pipes, interval);
    if !args.no_output_log && std::env::var_os("PYTHONUNBUFFERED").is_none() {
        // Through a pipe Python buffers stdout in blocks: a hung rank's last lines would sit
        // in its buffer, and die with it when the job is stopped.
        env.push(("PYTHONUNBUFFERED".into(), "1".into()));
    }
    env.push(("DESYNC_DUMP_TRIGGER".into(), dir.join("dump-now").into()));
    if !args.no_inject {
        let python = dir.join("python");
        write_python_side(&python)?;
        env.push(prepend_path("PYTHONPATH", &python));
        env.push(("DESYNC_AUTO_ENABLE".into(), "1".into()));
        env.push(("DESYNC_STACKS_DIR".into(), stacks.clone().into()));
    }
    let options = JobOptions {
        command: args.command.clone(),
        env,
        dump_dir: dumps.clone(),
        load: load.clone(),
        pipe_dir: Some(pipes),
        trigger: Some(dir.join("dump-now")),
        stacks_dir: (!args.no_inject).then(|| stacks.clone()),
        watch: WatchOptions {
            interval,
            lag: seconds("--lag", args.lag)?,
            duration: None,
            exit_on_alert: true,
            until_gone: None,
            save_dir: None,
            sources: sources.clone(),
        },
        hang_after: seconds("--hang-after", args.hang_after)?,
        grace: seconds("--grace", args.grace)?,
        guard: guard_command(args.grace),
        output_log: (!args.no_output_log).then(|| dumps.join(OUTPUT_LOG)),
    };

    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in
        [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP]
    {
        signal_hook::flag::register(signal, Arc::clone(&interrupted))
            .context("installing the Ctrl-C handler")?;
    }
    let mut log = Log::default();
    let ending = desync_live::job::run_job(&options, &interrupted, &mut |e| log.event(&e))?;

    let (status, headline) = match &ending {
        Ending::Exited(status) => (*status, format!("the job exited with {}", describe(*status))),
        Ending::Stopped { cause, status } => {
            (*status, format!("{}; desync stopped it", cause_text(cause)))
        }
    };
    let code = desync_live::job::exit_code(status).clamp(0, 255) as u8;
    eprintln!("desync run: {headline}");
    keep_stacks(&stacks, &dumps)?;
    if let Ending::Stopped { cause: StopCause::NoDumps(after), .. } = &ending {
        no_dumps_verdict(*after, args.no_inject)?;
    }
    report(&dir, &dumps, &load, &sources, status.success())?;
    Ok(Outcome::Exit(code))
}

/// `desync job-guard`: this same binary, told who its parent is and the grace.
fn guard_command(grace: f64) -> Option<Vec<OsString>> {
    let exe = std::env::current_exe().ok()?;
    Some(vec![
        exe.into(),
        "job-guard".into(),
        "--parent".into(),
        std::process::id().to_string().into(),
        "--grace".into(),
        grace.to_string().into(),
    ])
}

/// The guard's own process (`desync job-guard`, started by `run`): waits on `run`'s pipe and,
/// if `run` dies holding the job, stops it and says so on stderr (the terminal `run` had).
pub fn guard(args: &JobGuardArgs) -> anyhow::Result<Outcome> {
    let grace = seconds("--grace", args.grace)?;
    let end = desync_live::job::guard_job(std::io::stdin(), args.parent, grace);
    if let desync_live::job::GuardEnd::Stopped { stopped, killed, left } = end {
        eprintln!(
            "desync run: desync ended without stopping its job; its guard stopped {} ({}){}{}",
            processes(stopped.len()),
            pid_list(&stopped),
            if killed.is_empty() {
                String::new()
            } else {
                format!("; {} got SIGKILL after --grace", processes(killed.len()))
            },
            if left.is_empty() {
                String::new()
            } else {
                format!("; {} still running ({})", processes(left.len()), pid_list(&left))
            },
        );
    }
    Ok(Outcome::Exit(0))
}

/// Keeps the stacks that processes wrote (on SIGUSR2, before the stop) and says where; the
/// empty files of processes never asked go, and the directory too when nothing is left. A
/// rank's process said which rank it is (`<pid>.rank`, written by `desync.torch` once its
/// process group existed): its stacks go beside its dump as `rank_<N>.stacks`, where
/// `analyze` reads them, unless the rank wrote its own there with its final dump.
fn keep_stacks(stacks: &Path, dumps: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(stacks) else { return Ok(()) };
    let mut kept = 0;
    let mut ranks: Vec<(u32, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if path.extension().is_some_and(|e| e == "rank") {
            if let Some(rank) = marker_rank(&path) {
                ranks.push((rank, path.with_extension("txt")));
            }
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        } else if meta.is_file() && meta.len() == 0 {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        } else {
            kept += 1;
        }
    }
    let mut placed = Vec::new();
    for (rank, text_path) in ranks {
        let beside = dumps.join(format!("{PREFIX}{rank}.{}", desync_core::load::STACKS_EXTENSION));
        if has_threads(&beside) || !has_threads(&text_path) {
            continue;
        }
        let text = std::fs::read(&text_path)
            .with_context(|| format!("reading {}", text_path.display()))?;
        desync_core::output::write_bytes(&beside, &text)
            .with_context(|| format!("writing {}", beside.display()))?;
        placed.push(rank);
    }
    if kept == 0 {
        let _ = std::fs::remove_dir(stacks);
    } else {
        eprintln!(
            "desync run: Python stacks of {}, taken before the stop: {}",
            processes(kept),
            stacks.display()
        );
    }
    if !placed.is_empty() {
        placed.sort_unstable();
        let ranks: desync_core::model::RankSet = placed.into_iter().collect();
        eprintln!("desync run: stacks of rank(s) {ranks} put beside their dumps");
    }
    Ok(())
}

/// The rank a `<pid>.rank` marker names.
fn marker_rank(path: &Path) -> Option<u32> {
    let text = desync_core::load::read_regular(path, 64).ok()?;
    String::from_utf8_lossy(&text).trim().parse().ok()
}

/// Whether a stacks file holds at least one thread (a file only registered for SIGUSR2 holds
/// none).
fn has_threads(path: &Path) -> bool {
    desync_core::load::read_regular(path, desync_core::load::MAX_STACKS_BYTES).is_ok_and(|bytes| {
        !desync_core::load::parse_stacks(&String::from_utf8_lossy(&bytes)).0.is_empty()
    })
}

/// The verdict of a job stopped before any rank dumped: there is nothing to analyse, and the
/// way to get something next time.
fn no_dumps_verdict(after: Duration, no_inject: bool) -> anyhow::Result<()> {
    let how = if no_inject {
        "without the injected hook (--no-inject), the script must call desync.torch.enable() \
         before the process group starts"
    } else {
        "the injected hook dumps each rank once its process group exists; a rank that never \
         creates one (stuck before init_process_group, or not a torch.distributed job) never \
         dumps"
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "inconclusive: no rank wrote a Flight Recorder dump in {:.0} s; desync stopped the job",
        after.as_secs_f64()
    )?;
    writeln!(
        out,
        "  To get dumps: {how}. NCCL ranks also dump on a watchdog timeout \
         (TORCH_FR_BUFFER_SIZE > 0). A job that needs longer to reach its first collective \
         wants a larger --hang-after."
    )?;
    out.flush()?;
    Ok(())
}

/// Flight Recorder's settings for the job (docs/flight-recorder.md says why each).
fn job_env(dumps: &Path, pipes: &Path, interval: Duration) -> Vec<(OsString, OsString)> {
    let prefix = dumps.join(PREFIX).into_os_string();
    let mut env: Vec<(OsString, OsString)> = vec![
        // `run` owns where the dumps go; both names, for older torch.
        ("TORCH_FR_DUMP_TEMP_FILE".into(), prefix.clone()),
        ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE".into(), prefix),
        ("DESYNC_DUMP_DIR".into(), dumps.into()),
        // The ranks rewrite their dump this often; the watch loop reads them as they change.
        ("DESYNC_LIVE_EVERY".into(), format!("{:.1}", interval.as_secs_f64()).into()),
    ];
    let defaults: [(&str, &[&str], OsString); 5] = [
        ("TORCH_FR_BUFFER_SIZE", &["TORCH_NCCL_TRACE_BUFFER_SIZE"], "2000".into()),
        ("TORCH_NCCL_DUMP_ON_TIMEOUT", &[], "1".into()),
        ("TORCH_FR_CPP_STACK", &["TORCH_NCCL_TRACE_CPP_STACK"], "0".into()),
        // On-demand dumps for NCCL ranks: `run` writes into these FIFOs when it stops a hang.
        ("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", &[], pipes.join(PREFIX).into_os_string()),
        // `run` watches the dump directory; the debug server's extra processes are not needed.
        ("DESYNC_DEBUG_SERVER", &[], "0".into()),
    ];
    for (name, aliases, value) in defaults {
        if std::iter::once(name)
            .chain(aliases.iter().copied())
            .all(|n| std::env::var_os(n).is_none())
        {
            env.push((name.into(), value));
        }
    }
    env
}

fn write_python_side(root: &Path) -> anyhow::Result<()> {
    for (relative, text) in PYTHON_FILES {
        let path = root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        desync_core::output::write_bytes(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn prepend_path(name: &str, dir: &Path) -> (OsString, OsString) {
    let mut value = dir.as_os_str().to_owned();
    if let Some(old) = std::env::var_os(name).filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(old);
    }
    (name.into(), value)
}

/// The post-mortem: the text report on stdout, the HTML next to the dumps.
fn report(
    dir: &Path,
    dumps: &Path,
    load: &desync_core::load::LoadOptions,
    sources: &desync_core::bridge::SourceOptions,
    job_succeeded: bool,
) -> anyhow::Result<()> {
    let has_dumps = desync_core::load::walk(dumps).is_ok_and(|listing| {
        listing
            .files
            .iter()
            .any(|f| f.file_name().and_then(OsStr::to_str).is_some_and(|n| n.starts_with(PREFIX)))
    });
    if !has_dumps {
        eprintln!(
            "desync run: no rank wrote a dump to {} (Gloo ranks dump through desync.torch.enable(); \
             NCCL ranks on a watchdog timeout)",
            dumps.display()
        );
        let log = dumps.join(OUTPUT_LOG);
        if log.is_file() {
            eprintln!(
                "desync run: the job's output is in {0}; what its lines show: desync analyze {0}",
                log.display()
            );
        }
        return Ok(());
    }
    let config = desync_core::Config {
        input: dumps.to_path_buf(),
        load: load.clone(),
        sources: sources.clone(),
        logs_beside: true,
        ..Default::default()
    };
    let analysis = desync_core::analyze(&config, &desync_core::NoProgress)?;
    let html = dir.join("report.html");
    super::report::write_output(&html, |w| {
        desync_core::report::write_html(&analysis, &desync_core::report::HtmlOptions::default(), w)
    })?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let d = &analysis.diagnosis;
    if job_succeeded && !d.category.is_problem() {
        writeln!(out, "{}: {}", d.category.as_str(), d.headline)?;
    } else {
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let options = super::text_options(color);
        desync_core::report::write_text(&analysis, options, &mut out)?;
    }
    out.flush()?;
    eprintln!(
        "desync run: report written to {}; dumps in {} (replay: desync analyze {})",
        html.display(),
        dumps.display(),
        dumps.display()
    );
    Ok(())
}

/// Progress lines on stderr, interleaved with the job's own output: one per change, not one
/// per look at the dumps.
#[derive(Default)]
struct Log {
    last: String,
}

impl Log {
    fn event(&mut self, event: &JobEvent<'_>) {
        let line = match event {
            JobEvent::Started { pid } => format!("job started (pid {pid}); watching its dumps"),
            JobEvent::Watch(Event::Status(s)) => {
                let judgement = match &s.judgement {
                    desync_live::watch::Judgement::Suspect { key, .. } => {
                        format!(" · watching: {}", key.category.as_str())
                    }
                    _ => String::new(),
                };
                format!(
                    "{}/{} ranks dumping · {}{judgement}",
                    s.ranks_seen,
                    s.ranks_expected,
                    s.category.as_str()
                )
            }
            JobEvent::Watch(Event::Alert(a)) => {
                format!("{}: {}", a.key.category.as_str(), a.analysis.diagnosis.headline)
            }
            // Before the ranks' first dumps there is nothing to read: not worth a line. The
            // kept output is said with the report's paths.
            JobEvent::Watch(Event::SourceDown(_)) | JobEvent::OutputKept(_) => return,
            JobEvent::Stopping(cause) => {
                format!("{}: stopping the job and every process it started", cause_text(cause))
            }
            JobEvent::Leftovers(pids) => format!(
                "the job's first process exited, but it left {} running ({}): stopping them",
                processes(pids.len()),
                pid_list(pids)
            ),
            JobEvent::Killed(pids) => format!(
                "{} outlived SIGTERM by --grace and got SIGKILL ({})",
                processes(pids.len()),
                pid_list(pids)
            ),
            JobEvent::Unguarded(e) => format!(
                "could not start the job's guard ({e}): if desync is killed, the job keeps running"
            ),
            JobEvent::OutputNotKept(e) => {
                format!("the job's output could not be kept ({e}); the report has no log")
            }
            JobEvent::Unkillable(pids) => format!(
                "{} still running after SIGKILL, stuck in the kernel ({})",
                processes(pids.len()),
                pid_list(pids)
            ),
        };
        if line != self.last {
            eprintln!("desync run: {line}");
            self.last = line;
        }
    }
}

fn processes(count: usize) -> String {
    if count == 1 { "1 process".to_owned() } else { format!("{count} processes") }
}

/// `pid 12, 13, 14` (the first eight, then how many more).
fn pid_list(pids: &[i32]) -> String {
    let shown: Vec<String> = pids.iter().take(8).map(i32::to_string).collect();
    let more = pids.len().saturating_sub(shown.len());
    let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
    format!("pid {}{tail}", shown.join(", "))
}

fn cause_text(cause: &StopCause) -> String {
    match cause {
        StopCause::Desync(headline) => format!("hang: {headline}"),
        StopCause::NoProgress(after) => {
            format!("hang: no rank issued a collective for {:.0} s", after.as_secs_f64())
        }
        StopCause::NoDumps(after) => {
            format!("hang: no rank wrote a dump in {:.0} s", after.as_secs_f64())
        }
        StopCause::Interrupted => "interrupted".to_owned(),
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".to_owned(),
    }
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir().context("current directory")?.join(path))
}

fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    if !(value.is_finite() && value >= 0.0) {
        bail!("{flag} wants a number of seconds, not {value}");
    }
    Ok(Duration::from_secs_f64(value))
}
