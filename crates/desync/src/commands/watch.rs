//! `desync watch`: the live front end over `desync_live`. Text mode keeps one status line on
//! stderr (rewritten in place on a terminal, printed on change in a log) and prints the full
//! report on stdout at each alert; JSON mode prints one object per line on stdout.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail};
use desync_live::watch::Judgement;
use desync_live::{Alert, Event, Flow, Source, Status, WatchOptions};

use crate::Outcome;
use crate::cli::{Format, WatchArgs};

pub fn run(args: &WatchArgs) -> anyhow::Result<Outcome> {
    let timeout = seconds("--timeout", args.timeout)?;
    if timeout.is_zero() {
        bail!("--timeout must be more than 0 seconds");
    }
    let options = WatchOptions {
        interval: seconds("--interval", args.interval)?.max(MIN_INTERVAL),
        lag: seconds("--lag", args.lag)?,
        duration: args.duration.map(|d| seconds("--for", d)).transpose()?,
        exit_on_alert: args.exit_on_alert,
        until_gone: args.until_gone.then_some(timeout),
        save_dir: (!args.no_save).then(|| args.save.clone()),
        sources: args.sources.options()?,
    };
    if let Some(dir) = &options.save_dir {
        // Refused before watching: the first alert would otherwise fail to save.
        desync_core::output::check_dir_target(dir)?;
    }
    let mut source: Box<dyn Source> = if let Some(dir) = &args.dir {
        if !dir.is_dir() {
            bail!("--dir {}: not a directory", dir.display());
        }
        let load = desync_core::load::LoadOptions {
            prefix: args.prefix.clone(),
            ownership: args.ownership.ownership(),
            world_size: args.world_size,
            per_rank_entries: false,
        };
        Box::new(desync_live::Directory::new(dir.clone(), load))
    } else {
        let workers = LiveArgs {
            store: args.store.as_deref(),
            workers: &args.workers,
            world_size: args.world_size,
            timeout,
            concurrency: args.concurrency,
        };
        Box::new(workers.live()?)
    };

    let mut printer = Printer::new(args.format);
    let mut snapshots = 0usize;
    let alerts = desync_live::watch(source.as_mut(), &options, &mut |event| {
        if matches!(event, Event::Status(_)) {
            snapshots += 1;
        }
        let result = match event {
            Event::Status(status) => printer.status(status),
            Event::SourceDown(problem) => printer.down(problem),
            Event::Alert(alert) => {
                if let Some(command) = &args.on_alert {
                    run_hook(command, alert);
                }
                printer.alert(alert)
            }
        };
        // A closed stdout (`| head`) ends the watch quietly.
        if result.is_err() { Flow::Stop } else { Flow::Continue }
    });
    printer.end();
    if alerts > 0 {
        return Ok(Outcome::Findings);
    }
    if snapshots == 0 {
        bail!("no snapshot could be taken: {}", printer.last_problem.as_deref().unwrap_or("?"));
    }
    Ok(Outcome::Clean)
}

/// A shorter interval would only hammer the workers: each snapshot fetches every rank.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// How to reach a live job's workers (`--store` or `--workers`), shared with `publish`.
pub(crate) struct LiveArgs<'a> {
    pub store: Option<&'a str>,
    pub workers: &'a [String],
    pub world_size: Option<u32>,
    pub timeout: Duration,
    pub concurrency: u16,
}

impl LiveArgs<'_> {
    pub fn live(&self) -> anyhow::Result<desync_live::Live> {
        let concurrency = usize::from(self.concurrency);
        if let Some(store) = self.store {
            if !store
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
            {
                bail!("--store wants HOST:PORT (the job's MASTER_ADDR:MASTER_PORT), not `{store}`");
            }
            let (store, world_size) = (store.to_owned(), self.world_size);
            return Ok(desync_live::Live::from_store(store, world_size, self.timeout, concurrency));
        }
        let workers = desync_live::workers::parse_workers(self.workers)
            .context("--workers wants http://HOST:PORT or RANK=http://HOST:PORT")?;
        Ok(desync_live::Live::from_workers(workers, self.timeout, concurrency))
    }
}

/// Durations past this (about 115 days) are typos, and past ~5·10^11 s they would not even
/// fit the clock's arithmetic.
const MAX_SECONDS: f64 = 1e7;

pub(crate) fn seconds(flag: &str, value: f64) -> anyhow::Result<Duration> {
    if !(value.is_finite() && value >= 0.0) {
        bail!("{flag} wants a number of seconds, not {value}");
    }
    if value > MAX_SECONDS {
        bail!("{flag} {value}: more than {MAX_SECONDS:.0} seconds (about 115 days)");
    }
    Ok(Duration::from_secs_f64(value))
}

/// Runs the user's hook without waiting for it: the watch goes on while it pages someone.
fn run_hook(command: &str, alert: &Alert) {
    let d = &alert.analysis.diagnosis;
    let snapshot = alert.saved.as_ref().map(|(p, _)| p.display().to_string()).unwrap_or_default();
    let spawned = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("DESYNC_CATEGORY", d.category.as_str())
        .env("DESYNC_CULPRITS", d.culprit_ranks.to_string())
        .env("DESYNC_HEADLINE", &d.headline)
        .env("DESYNC_SNAPSHOT", snapshot)
        .stdin(std::process::Stdio::null())
        .spawn();
    match spawned {
        // Reaped by a thread so it never lingers as a zombie.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => eprintln!("desync: --on-alert could not start `{command}`: {e}"),
    }
}

struct Printer {
    format: Format,
    terminal: bool,
    started: Instant,
    /// What the last printed status said, seq numbers aside: a log gets a line when that
    /// changes (and a heartbeat), not one per snapshot of a healthy job.
    last_state: String,
    last_printed: Option<Instant>,
    last_problem: Option<String>,
    open_line: bool,
}

/// In a log, an unchanged status is repeated this often as a heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(30);

impl Printer {
    fn new(format: Format) -> Self {
        Self {
            format,
            terminal: std::io::stderr().is_terminal(),
            started: Instant::now(),
            last_state: String::new(),
            last_printed: None,
            last_problem: None,
            open_line: false,
        }
    }

    fn status(&mut self, s: &Status) -> std::io::Result<()> {
        if self.format == Format::Json {
            return json_line(&status_json(s));
        }
        let line = desync_core::report::escape_controls(&status_line(s)).into_owned();
        let stale = self.last_printed.is_none_or(|t| t.elapsed() >= HEARTBEAT);
        if self.terminal {
            let mut err = std::io::stderr().lock();
            write!(err, "\r\x1b[2K{} {line}", clock(s.at))?;
            err.flush()?;
            self.open_line = true;
        } else if state_of(s) != self.last_state || stale {
            eprintln!("{} {line}", clock(s.at));
            self.last_printed = Some(Instant::now());
        }
        self.last_state = state_of(s);
        Ok(())
    }

    fn down(&mut self, problem: &str) -> std::io::Result<()> {
        let first = self.last_problem.as_deref() != Some(problem);
        self.last_problem = Some(problem.to_owned());
        if self.format == Format::Json {
            return json_line(&serde_json::json!({"event": "source_down", "message": problem}));
        }
        if first {
            self.close_line();
            let problem = desync_core::report::escape_controls(problem);
            eprintln!("{} desync watch: {problem} (retrying)", clock(SystemTime::now()));
        }
        Ok(())
    }

    fn alert(&mut self, a: &Alert) -> std::io::Result<()> {
        let out = std::io::stdout();
        let mut out = out.lock();
        if self.format == Format::Json {
            let report = desync_core::report::to_json(&a.analysis);
            let value = serde_json::json!({
                "event": "alert",
                "category": a.key.category.as_str(),
                "held_s": a.held.as_secs_f64(),
                "watching_s": self.started.elapsed().as_secs_f64(),
                "snapshot_taken": desync_live::watch::stamp(a.snapshot_taken),
                "saved": a.saved.as_ref().map(|(p, _)| p.display().to_string()),
                "save_error": a.save_error,
                "stacks_attached": a.stacks_attached,
                "report": report,
            });
            serde_json::to_writer(&mut out, &value)?;
            writeln!(out)?;
            return out.flush();
        }
        self.close_line();
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let held = if a.held.is_zero() {
            "mismatched collectives: alerting at once".to_owned()
        } else {
            format!("held for {:.0} s", a.held.as_secs_f64())
        };
        writeln!(
            out,
            "=== desync watch ALERT at {} ({held}; watching for {:.0} s) ===",
            clock(a.snapshot_taken),
            self.started.elapsed().as_secs_f64()
        )?;
        let options = super::text_options(color);
        desync_core::report::write_text(&a.analysis, options, &mut out)?;
        if a.stacks_attached > 0 {
            writeln!(
                out,
                "\n(live Python stacks from dump_traceback gave {} rank(s) the line they are blocked on)",
                a.stacks_attached
            )?;
        }
        match (&a.saved, &a.save_error) {
            (Some((dir, files)), _) => writeln!(
                out,
                "\nSnapshot saved: {} ({files} files); replay with `desync analyze {}`",
                dir.display(),
                dir.join("dumps").display()
            )?,
            (None, Some(e)) => writeln!(out, "\nSnapshot not saved: {e}")?,
            (None, None) => {}
        }
        writeln!(out)?;
        out.flush()
    }

    fn close_line(&mut self) {
        if self.open_line {
            eprintln!();
            self.open_line = false;
        }
    }

    fn end(&mut self) {
        self.close_line();
    }
}

pub(crate) fn json_line(value: &serde_json::Value) -> std::io::Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    out.flush()
}

fn status_line(s: &Status) -> String {
    let mut line = format!("{}/{} ranks", s.ranks_seen, s.ranks_expected);
    if !s.unreachable.is_empty() {
        let ranks: Vec<u32> = s.unreachable.iter().map(|(r, _)| *r).collect();
        line.push_str(&format!(" ({} unreachable)", desync_core::model::format_ranks(&ranks)));
    }
    // The group whose ranks are furthest apart is the one to look at.
    if let Some((label, low, high)) = s.groups.iter().max_by_key(|(_, low, high)| high - low) {
        if low == high {
            line.push_str(&format!(" · {label} seq {low}"));
        } else {
            line.push_str(&format!(" · {label} seq {low}–{high}"));
        }
    }
    match &s.judgement {
        Judgement::Quiet if s.observed == s.category => {
            line.push_str(&format!(" · {}", s.category.as_str()));
        }
        // A straggler or a missing rank seen in this snapshot, not held long enough to show.
        Judgement::Quiet => line.push_str(&format!(
            " · {} (this snapshot: {})",
            s.category.as_str(),
            s.observed.as_str()
        )),
        Judgement::Suspect { key, held } => line.push_str(&format!(
            " · watching: {} for {:.0} s — {}",
            key.category.as_str(),
            held.as_secs_f64(),
            s.headline
        )),
        Judgement::Alert { key, .. } | Judgement::Reported { key, .. } => {
            line.push_str(&format!(" · ALERTED: {} — {}", key.category.as_str(), s.headline));
        }
    }
    line
}

/// The parts of a status worth a new log line.
fn state_of(s: &Status) -> String {
    let unreachable: Vec<u32> = s.unreachable.iter().map(|(r, _)| *r).collect();
    let judgement = match &s.judgement {
        Judgement::Quiet => "quiet".to_owned(),
        Judgement::Suspect { key, .. } => format!("suspect {key:?}"),
        Judgement::Alert { key, .. } | Judgement::Reported { key, .. } => format!("alert {key:?}"),
    };
    format!(
        "{}/{} {unreachable:?} {} {judgement}",
        s.ranks_seen,
        s.ranks_expected,
        s.category.as_str()
    )
}

fn status_json(s: &Status) -> serde_json::Value {
    let (judgement, held) = match &s.judgement {
        Judgement::Quiet => ("quiet", None),
        Judgement::Suspect { held, .. } => ("suspect", Some(held.as_secs_f64())),
        Judgement::Alert { held, .. } => ("alert", Some(held.as_secs_f64())),
        Judgement::Reported { held, .. } => ("reported", Some(held.as_secs_f64())),
    };
    serde_json::json!({
        "event": "status",
        "at": desync_live::watch::stamp(s.at),
        "took_ms": s.took.as_millis(),
        "bytes": s.bytes,
        "active_only": s.active_only,
        "confirmed_whole": s.confirmed,
        "ranks_seen": s.ranks_seen,
        "ranks_expected": s.ranks_expected,
        "unreachable": s.unreachable.iter().map(|(r, why)| serde_json::json!({"rank": r, "error": why})).collect::<Vec<_>>(),
        "groups": s.groups.iter().map(|(label, low, high)| serde_json::json!({"label": label, "seq_low": low, "seq_high": high})).collect::<Vec<_>>(),
        "category": s.category.as_str(),
        "observed": s.observed.as_str(),
        "headline": s.headline,
        "judgement": judgement,
        "held_s": held,
    })
}

/// `17:15:02` in UTC: the status line's clock, comparable with torch's log timestamps.
pub(crate) fn clock(at: SystemTime) -> String {
    let stamp = desync_live::watch::stamp(at);
    let time = &stamp[9..15];
    format!("{}:{}:{}", &time[0..2], &time[2..4], &time[4..6])
}
