//! The watch loop: take a snapshot, run the same analysis as `desync analyze` on it, decide
//! whether what it shows is a desync or just ranks caught a moment apart, and report.
//!
//! A live snapshot is never taken at one instant: ranks are a few collectives apart and the
//! fetches race them. So a finding is judged by how certain it is:
//! - **Content** findings (ranks recorded *different* collectives, sizes or dtypes at the same
//!   sequence id: a divergence or metadata mismatch with an earliest mismatch) cannot be a
//!   timing artefact: they alert on the first snapshot that shows them.
//! - **Progress** findings (ranks waiting in a collective that others have not issued, wait
//!   cycles, stuck kernels) are normal for an instant; they alert when the same finding, at the
//!   same sequence id, holds for `lag`.
//! - Stragglers are a performance note, shown in the status line, never an alert.
//!
//! The status shows a *settled* category, not each snapshot's: an alarm is shown once it
//! alerted (content findings at once, progress findings after `lag`), a straggler or an
//! inconclusive reading once it has held for `lag`, and an all-clear at once (a snapshot in
//! which every rank agrees cannot be a timing artefact). Until anything settles the status
//! reads `inconclusive`. What this one snapshot showed is reported beside it (`observed`).
//!
//! Polls ask for active entries only where the source can give them (NCCL workers), and an
//! alert is always decided on whole recorders: see [`take`] and docs/watch.md.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use desync_core::diagnose::Category;
use desync_core::model::RankSet;
use desync_core::{Analysis, bridge::SourceOptions};

use crate::source::{Reading, Snapshot, Source};
use crate::workers::Detail;

#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub interval: Duration,
    pub lag: Duration,
    /// Stop after this long (tests, cron); `None`: until interrupted.
    pub duration: Option<Duration>,
    /// Stop after the first alert.
    pub exit_on_alert: bool,
    /// Stop once the job is gone: after a snapshot was taken, the source answered nothing
    /// for this long (and on at least two polls in a row). A watcher started beside a job
    /// ends with it instead of guessing how long the job runs. `None`: keep polling.
    pub until_gone: Option<Duration>,
    /// Where alerts save their snapshot (`<dir>/<time>-<category>/`); `None`: not saved.
    pub save_dir: Option<PathBuf>,
    pub sources: SourceOptions,
}

/// What one finding is about; the same key in consecutive snapshots is the same finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingKey {
    pub category: Category,
    pub process_group: Option<String>,
    pub seq: Option<u64>,
    pub culprits: Vec<u32>,
}

impl FindingKey {
    fn of(a: &Analysis) -> Self {
        let d = &a.diagnosis;
        Self {
            category: d.category,
            process_group: d.process_group.map(|i| a.trace.process_groups[i].name.to_string()),
            seq: d.collective_seq_id,
            culprits: d.culprit_ranks.as_slice().to_vec(),
        }
    }
}

/// Whether a diagnosis should alert, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// Healthy, or only a straggler.
    None,
    /// Alert now: no timing can explain it.
    Content,
    /// Alert once it has held for `lag`.
    Progress,
}

pub fn urgency(a: &Analysis) -> Urgency {
    let d = &a.diagnosis;
    match d.category {
        Category::Healthy | Category::Straggler | Category::Inconclusive => Urgency::None,
        Category::MetadataMismatch => Urgency::Content,
        Category::Divergence if d.earliest.is_some() => Urgency::Content,
        _ => Urgency::Progress,
    }
}

/// Remembers the finding in progress and the settled category across snapshots.
#[derive(Clone)]
pub struct Judge {
    pending: Option<(FindingKey, Instant)>,
    alerted: Vec<FindingKey>,
    settled: Category,
    /// A quiet category other than the settled one, and since when it has been seen.
    candidate: Option<(Category, Instant)>,
}

impl Default for Judge {
    fn default() -> Self {
        Self {
            pending: None,
            alerted: Vec::new(),
            settled: Category::Inconclusive,
            candidate: None,
        }
    }
}

/// The judge's answer for one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    Quiet,
    /// A progress finding not yet held for `lag`.
    Suspect {
        key: FindingKey,
        held: Duration,
    },
    Alert {
        key: FindingKey,
        held: Duration,
    },
    /// Already alerted; still there.
    Reported {
        key: FindingKey,
        held: Duration,
    },
}

impl Judge {
    /// The category the status shows: see the module's doc.
    pub fn settled(&self) -> Category {
        self.settled
    }

    pub fn judge(
        &mut self,
        urgency: Urgency,
        key: &FindingKey,
        now: Instant,
        lag: Duration,
    ) -> Judgement {
        let judgement = self.judge_finding(urgency, key, now, lag);
        self.settle(&judgement, key.category, now, lag);
        judgement
    }

    fn settle(&mut self, judgement: &Judgement, observed: Category, now: Instant, lag: Duration) {
        match judgement {
            Judgement::Alert { key, .. } | Judgement::Reported { key, .. } => {
                self.settled = key.category;
                self.candidate = None;
            }
            // Not shown until it alerts; the settled category stands.
            Judgement::Suspect { .. } => self.candidate = None,
            Judgement::Quiet if observed == self.settled => self.candidate = None,
            Judgement::Quiet if observed == Category::Healthy => {
                self.settled = observed;
                self.candidate = None;
            }
            Judgement::Quiet => {
                let since = match self.candidate {
                    Some((c, since)) if c == observed => since,
                    _ => now,
                };
                if now.saturating_duration_since(since) >= lag {
                    self.settled = observed;
                    self.candidate = None;
                } else {
                    self.candidate = Some((observed, since));
                }
            }
        }
    }

    fn judge_finding(
        &mut self,
        urgency: Urgency,
        key: &FindingKey,
        now: Instant,
        lag: Duration,
    ) -> Judgement {
        let key = key.clone();
        if urgency == Urgency::None {
            self.pending = None;
            return Judgement::Quiet;
        }
        let since = match &self.pending {
            Some((pending, since)) if *pending == key => *since,
            _ => {
                self.pending = Some((key.clone(), now));
                now
            }
        };
        let held = now.saturating_duration_since(since);
        if self.alerted.contains(&key) {
            return Judgement::Reported { key, held };
        }
        if urgency == Urgency::Content || held >= lag {
            self.alerted.push(key.clone());
            Judgement::Alert { key, held }
        } else {
            Judgement::Suspect { key, held }
        }
    }
}

/// What the loop tells its front end.
pub enum Event<'a> {
    /// After every snapshot.
    Status(&'a Status),
    /// A finding to act on, with the full analysis (already with live stacks attached).
    Alert(&'a Alert),
    /// The source could not be read this time (store gone, all workers down); the loop retries.
    SourceDown(&'a str),
}

#[derive(Debug, Clone)]
pub struct Status {
    pub at: SystemTime,
    /// Fetching and analysing this snapshot: `--interval` should stay well above it.
    pub took: Duration,
    pub ranks_seen: usize,
    pub ranks_expected: usize,
    pub unreachable: Vec<(u32, String)>,
    /// Per process group: (label, lowest and highest last seq across its members).
    pub groups: Vec<(String, u64, u64)>,
    /// The settled category (the module's doc says when a category settles).
    pub category: Category,
    /// What this snapshot alone showed, and its headline.
    pub observed: Category,
    pub headline: String,
    pub judgement: Judgement,
    /// Whether this poll read active entries only (the all-clear came from them).
    pub active_only: bool,
    /// When an active poll was confirmed from some ranks' whole recorders: how many.
    pub confirmed: Option<usize>,
    /// Bytes fetched for this poll (both fetches when the active ones called for the whole).
    pub bytes: u64,
}

pub struct Alert {
    pub analysis: Analysis,
    pub key: FindingKey,
    /// How long the finding had held when it alerted (zero for content findings).
    pub held: Duration,
    pub snapshot_taken: SystemTime,
    /// Where the snapshot was saved, with how many files.
    pub saved: Option<(PathBuf, usize)>,
    pub save_error: Option<String>,
    /// Ranks whose newest entry got the stack of the thread blocked in it.
    pub stacks_attached: usize,
}

/// The front end's answer to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// Watches until the front end says stop, the duration ends, or (with `exit_on_alert`) the
/// first alert. Returns the number of alerts.
pub fn watch(
    source: &mut dyn Source,
    options: &WatchOptions,
    on_event: &mut dyn FnMut(Event<'_>) -> Flow,
) -> usize {
    let started = Instant::now();
    let mut judge = Judge::default();
    let mut alerts = 0;
    // The newest snapshot's finding, and its analysis until an alert consumes it: a dump
    // directory that is not rewritten (FR's pipe trigger) brings nothing new, yet the finding
    // goes on holding and may come of age.
    let mut last: Option<Last> = None;
    let mut saved = crate::save::Saved::default();
    let mut gone = Gone::default();
    loop {
        let cycle = Instant::now();
        let mut flow = Flow::Continue;
        let taken = take(source, Detail::Active, options);
        gone.observe(taken.is_ok(), cycle);
        match taken {
            Err(problem) => {
                last = None;
                flow = on_event(Event::SourceDown(&problem.to_string()));
            }
            Ok(None) => {
                if let Some(l) = &mut last {
                    l.status.at = SystemTime::now();
                    l.status.took = cycle.elapsed();
                    l.status.judgement = judge.judge(l.urgency, &l.key, cycle, options.lag);
                    l.status.category = judge.settled();
                    flow = on_event(Event::Status(&l.status));
                }
            }
            Ok(Some(mut taken)) => {
                let before = judge.clone();
                let mut finding = Finding::of(&taken, &mut judge, cycle, options.lag);
                // An alert is decided on whole recorders: an active-only poll that would alert
                // is taken again, the ranks it is about whole, and judged in its place from
                // the judge's state before.
                if taken.reading.active_only && matches!(finding.judgement, Judgement::Alert { .. })
                {
                    let involved = involved_ranks(&taken.analysis);
                    let again = if (1..=CONFIRM_AT_MOST).contains(&involved.len()) {
                        source.confirm(&involved)
                    } else {
                        source.snapshot(Detail::Full)
                    };
                    judge = before;
                    if let Ok(Some(confirmed)) = analysed(source, again, options) {
                        let polled = taken.reading.bytes;
                        taken = confirmed;
                        taken.reading.bytes += polled;
                        finding = Finding::of(&taken, &mut judge, cycle, options.lag);
                    } else {
                        // Gone in between: the next poll says so; no alert on half the data.
                        let key = finding.key.clone();
                        finding.judgement = Judgement::Suspect { key, held: Duration::ZERO };
                    }
                }
                let Taken { analysis, reading } = taken;
                let at = SystemTime::now();
                let (expected, unreachable) = (reading.expected, reading.unreachable);
                let mut status = status(&analysis, expected, unreachable, finding.judgement, at);
                status.active_only = reading.active_only;
                status.confirmed = reading.confirmed;
                status.bytes = reading.bytes;
                if let Some(headline) = finding.instead {
                    status.observed = Category::Inconclusive;
                    status.headline = headline;
                }
                status.category = judge.settled();
                status.took = cycle.elapsed();
                flow = on_event(Event::Status(&status));
                let (urgency, key) = (finding.urgency, finding.key);
                last = Some(Last { urgency, key, status, analysis: Some(analysis), taken: at });
            }
        }
        if let Some(l) = &mut last
            && let Judgement::Alert { key, held } = l.status.judgement.clone()
            && let Some(analysis) = l.analysis.take()
        {
            alerts += 1;
            let alert = raise(source, analysis, key, held, l.taken, options, &mut saved);
            flow = match on_event(Event::Alert(&alert)) {
                _ if options.exit_on_alert => Flow::Stop,
                answer => answer.min_stop(flow),
            };
        }
        if flow == Flow::Stop
            || options.duration.is_some_and(|d| started.elapsed() >= d)
            || options.until_gone.is_some_and(|after| gone.is_gone(after, cycle))
        {
            return alerts;
        }
        let spent = cycle.elapsed();
        std::thread::sleep(options.interval.saturating_sub(spent));
    }
}

/// Whether the job went away: the source answered before, and has not since.
#[derive(Default)]
struct Gone {
    answered_once: bool,
    /// The first of the failed polls in a row, and how many there were.
    down_since: Option<(Instant, u32)>,
}

impl Gone {
    fn observe(&mut self, answered: bool, at: Instant) {
        if answered {
            self.answered_once = true;
            self.down_since = None;
        } else if self.answered_once {
            let (since, polls) = self.down_since.unwrap_or((at, 0));
            self.down_since = Some((since, polls + 1));
        }
    }

    /// Down on two polls in a row at least, for `after` since the first of them. A job that
    /// never answered is not gone: it may not have started yet.
    fn is_gone(&self, after: Duration, now: Instant) -> bool {
        self.down_since.is_some_and(|(since, polls)| {
            polls >= 2 && now.saturating_duration_since(since) >= after
        })
    }
}

/// One snapshot, analysed, and how it was read.
struct Taken {
    analysis: Analysis,
    reading: Reading,
}

/// One snapshot with at most `detail`, analysed; `None`: nothing changed since the last.
fn take(
    source: &mut dyn Source,
    detail: Detail,
    options: &WatchOptions,
) -> Result<Option<Taken>, crate::SourceError> {
    let snapshot = source.snapshot(detail);
    analysed(source, snapshot, options)
}

fn analysed(
    source: &dyn Source,
    snapshot: Result<Snapshot, crate::SourceError>,
    options: &WatchOptions,
) -> Result<Option<Taken>, crate::SourceError> {
    let Snapshot::Taken { trace, reading } = snapshot? else {
        return Ok(None);
    };
    let analysis = desync_core::analyze_trace(&source.input(), trace, &options.sources);
    Ok(Some(Taken { analysis, reading }))
}

/// Ranks confirmed alone at most; a finding about more is confirmed from every rank.
const CONFIRM_AT_MOST: usize = 64;

/// The ranks an alert must be confirmed from: the culprits, the ranks others wait for, and
/// one rank of each behaviour group (the ranks that stand at the same place). The others
/// stand where their group's representative does, which their active entries already show.
fn involved_ranks(a: &Analysis) -> Vec<u32> {
    let d = &a.diagnosis;
    let mut ranks: Vec<u32> = d.culprit_ranks.as_slice().to_vec();
    for group in &d.groups {
        ranks.extend(group.waiting_for.as_slice());
        ranks.extend(group.ranks.as_slice().first());
    }
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// What one snapshot shows, judged.
struct Finding {
    urgency: Urgency,
    key: FindingKey,
    judgement: Judgement,
    /// Set when this snapshot alone cannot tell the finding from how it was read (slow workers
    /// that did not answer, ranks read at different moments): what the status says instead.
    instead: Option<String>,
}

impl Finding {
    fn of(taken: &Taken, judge: &mut Judge, now: Instant, lag: Duration) -> Self {
        let mut urgency = urgency(&taken.analysis);
        let mut key = FindingKey::of(&taken.analysis);
        let mut instead = waits_only_on(&taken.analysis, &taken.reading.slow);
        if instead.is_some() {
            // A worker too slow to answer is not a dead rank: nothing to judge yet.
            urgency = Urgency::None;
            key.category = Category::Inconclusive;
        } else if urgency == Urgency::Progress {
            // The judge's clock runs on: a finding that holds alerts after `lag` as before,
            // whatever order the files happen to be written in.
            instead = read_apart(&taken.analysis, &taken.reading.written_at, lag);
        }
        let judgement = judge.judge(urgency, &key, now, lag);
        Self { urgency, key, judgement, instead }
    }
}

/// When a progress finding is what reading ranks at different moments shows (per-node agents
/// rewriting one directory, each at its own time): every rank it blames was written before
/// every rank waiting for it, and less than `lag` before. The blamed ranks may have moved on
/// since, so this snapshot alone cannot tell; what to say instead. A recorder older than
/// `lag` has stopped being refreshed, which is no reading artefact.
fn read_apart(
    a: &Analysis,
    written_at: &BTreeMap<u32, SystemTime>,
    lag: Duration,
) -> Option<String> {
    let d = &a.diagnosis;
    let waiting: RankSet = d
        .groups
        .iter()
        .filter(|g| g.waiting_for.as_slice().iter().any(|&r| d.culprit_ranks.contains(r)))
        .flat_map(|g| g.ranks.as_slice().iter().copied())
        .filter(|&r| !d.culprit_ranks.contains(r))
        .collect();
    let times = |ranks: &RankSet| -> Option<Vec<SystemTime>> {
        ranks.as_slice().iter().map(|r| written_at.get(r).copied()).collect()
    };
    let culprits_newest = times(&d.culprit_ranks)?.into_iter().max()?;
    let waiting_oldest = times(&waiting)?.into_iter().min()?;
    let apart = waiting_oldest.duration_since(culprits_newest).ok()?;
    (!apart.is_zero() && apart < lag).then(|| {
        format!(
            "rank(s) {} were written {} ms before rank(s) {} that wait for them: read at different moments, they may have moved on since; the next reading tells",
            d.culprit_ranks.brief(),
            apart.as_millis(),
            waiting.brief()
        )
    })
}

/// When the snapshot reads as a crash only because some workers did not answer in time,
/// what to say instead: those ranks are unreachable, not known to be dead.
fn waits_only_on(a: &Analysis, slow: &[u32]) -> Option<String> {
    let d = &a.diagnosis;
    let only_slow = d.category == Category::Crash
        && !d.culprit_ranks.is_empty()
        && d.culprit_ranks.as_slice().iter().all(|r| slow.binary_search(r).is_ok());
    only_slow.then(|| {
        format!(
            "rank(s) {} did not answer in time (unreachable: busy or slow workers, not known to be dead); the others wait for them",
            d.culprit_ranks
        )
    })
}

struct Last {
    urgency: Urgency,
    key: FindingKey,
    status: Status,
    analysis: Option<Analysis>,
    taken: SystemTime,
}

impl Flow {
    /// Stop if either says stop.
    fn min_stop(self, other: Flow) -> Flow {
        if self == Flow::Stop || other == Flow::Stop { Flow::Stop } else { Flow::Continue }
    }
}

/// Completes an alert: the live stacks, a fresh analysis with them, the saved snapshot.
fn raise(
    source: &mut dyn Source,
    analysis: Analysis,
    key: FindingKey,
    held: Duration,
    taken: SystemTime,
    options: &WatchOptions,
    saved: &mut crate::save::Saved,
) -> Alert {
    let stacks = source.tracebacks();
    let Analysis { mut trace, .. } = analysis;
    let attached = crate::traceback::attach(&mut trace, &stacks);
    crate::traceback::keep_as_places(&mut trace, &stacks);
    let analysis = desync_core::analyze_trace(&source.input(), trace, &options.sources);
    let (saved, save_error) = match &options.save_dir {
        Some(_) if saved.refusal().is_some() => (None, saved.refusal()),
        Some(dir) => {
            let folder = dir.join(format!("{}-{}", stamp(taken), key.category.as_str()));
            match crate::save::save(source, &analysis, &stacks, &attached, &folder, saved) {
                Ok(count) => (Some((folder, count)), None),
                Err(e) => (None, Some(e.to_string())),
            }
        }
        None => (None, None),
    };
    let stacks_attached = attached.len();
    Alert { analysis, key, held, snapshot_taken: taken, saved, save_error, stacks_attached }
}

fn status(
    a: &Analysis,
    expected: usize,
    unreachable: Vec<(u32, String)>,
    judgement: Judgement,
    at: SystemTime,
) -> Status {
    let t = &a.trace;
    // The alignment already holds each member's collectives per group, sorted by seq.
    let groups = a
        .alignment
        .groups
        .iter()
        .filter_map(|g| {
            let lasts: Vec<u64> = g
                .streams
                .iter()
                .filter_map(|s| {
                    let last = *s.entries.last()?;
                    Some(t.rank(s.rank)?.entries[last as usize].collective_seq_id)
                })
                .collect();
            let label = t.process_groups[g.pg].label();
            Some((label, *lasts.iter().min()?, *lasts.iter().max()?))
        })
        .collect();
    Status {
        at,
        took: Duration::ZERO,
        ranks_seen: t.ranks.len(),
        ranks_expected: expected,
        unreachable,
        groups,
        category: a.diagnosis.category,
        observed: a.diagnosis.category,
        headline: a.diagnosis.headline.clone(),
        judgement,
        active_only: false,
        confirmed: None,
        bytes: 0,
    }
}

/// `20261122T171502Z`: sortable, no characters a shell or a file system dislikes.
pub fn stamp(at: SystemTime) -> String {
    let secs = at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seq: u64) -> FindingKey {
        FindingKey {
            category: Category::Stall,
            process_group: Some("0".into()),
            seq: Some(seq),
            culprits: vec![3],
        }
    }

    #[test]
    fn a_job_is_gone_once_its_source_stays_down_after_answering() {
        let after = Duration::from_secs(5);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut gone = Gone::default();
        // Not started yet: down for a minute is not gone.
        for s in 0..60 {
            gone.observe(false, at(s));
        }
        assert!(!gone.is_gone(after, at(60)));
        gone.observe(true, at(61));
        gone.observe(false, at(62));
        // One failed poll, however long ago, is a hiccup.
        assert!(!gone.is_gone(after, at(100)));
        gone.observe(false, at(64));
        assert!(!gone.is_gone(after, at(64)), "down for 2 s only");
        // An answer in between starts the count again.
        gone.observe(true, at(65));
        gone.observe(false, at(66));
        gone.observe(false, at(70));
        assert!(!gone.is_gone(after, at(70)));
        gone.observe(false, at(71));
        assert!(gone.is_gone(after, at(71)));
    }

    #[test]
    fn progress_findings_alert_after_the_lag_and_once() {
        let lag = Duration::from_secs(5);
        let t0 = Instant::now();
        let mut judge = Judge::default();
        assert!(matches!(
            judge.judge(Urgency::Progress, &key(7), t0, lag),
            Judgement::Suspect { .. }
        ));
        // The ranks moved on: a new finding starts its own clock.
        let t1 = t0 + Duration::from_secs(4);
        assert!(matches!(
            judge.judge(Urgency::Progress, &key(8), t1, lag),
            Judgement::Suspect { .. }
        ));
        let t2 = t1 + Duration::from_secs(4);
        assert!(matches!(
            judge.judge(Urgency::Progress, &key(8), t2, lag),
            Judgement::Suspect { .. }
        ));
        let t3 = t1 + Duration::from_secs(5);
        assert_eq!(
            judge.judge(Urgency::Progress, &key(8), t3, lag),
            Judgement::Alert { key: key(8), held: Duration::from_secs(5) }
        );
        let t4 = t3 + Duration::from_secs(2);
        assert!(matches!(
            judge.judge(Urgency::Progress, &key(8), t4, lag),
            Judgement::Reported { .. }
        ));
        assert_eq!(judge.judge(Urgency::None, &key(8), t4, lag), Judgement::Quiet);
    }

    fn quiet(category: Category) -> FindingKey {
        FindingKey { category, process_group: None, seq: None, culprits: Vec::new() }
    }

    #[test]
    fn the_status_shows_alarms_once_they_alert_and_all_clears_at_once() {
        let lag = Duration::from_secs(5);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut judge = Judge::default();
        assert_eq!(judge.settled(), Category::Inconclusive, "nothing has settled yet");
        judge.judge(Urgency::None, &quiet(Category::Healthy), at(0), lag);
        assert_eq!(judge.settled(), Category::Healthy, "an all-clear shows at once");
        // Ranks caught a collective apart: a stall for one snapshot is not shown.
        judge.judge(Urgency::Progress, &key(7), at(1), lag);
        assert_eq!(judge.settled(), Category::Healthy);
        // A straggler or a missing rank for a moment is not shown either...
        judge.judge(Urgency::None, &quiet(Category::Straggler), at(2), lag);
        judge.judge(Urgency::None, &quiet(Category::Inconclusive), at(3), lag);
        judge.judge(Urgency::None, &quiet(Category::Straggler), at(4), lag);
        assert_eq!(judge.settled(), Category::Healthy);
        // ...until it has held for the lag.
        judge.judge(Urgency::None, &quiet(Category::Straggler), at(8), lag);
        assert_eq!(judge.settled(), Category::Healthy);
        judge.judge(Urgency::None, &quiet(Category::Straggler), at(9), lag);
        assert_eq!(judge.settled(), Category::Straggler);
        // A stall that holds alerts, and then it is what the status shows.
        judge.judge(Urgency::Progress, &key(9), at(10), lag);
        assert_eq!(judge.settled(), Category::Straggler);
        assert!(matches!(
            judge.judge(Urgency::Progress, &key(9), at(15), lag),
            Judgement::Alert { .. }
        ));
        assert_eq!(judge.settled(), Category::Stall);
        judge.judge(Urgency::None, &quiet(Category::Healthy), at(16), lag);
        assert_eq!(judge.settled(), Category::Healthy);
    }

    #[test]
    fn content_findings_alert_at_once() {
        let mut judge = Judge::default();
        let now = Instant::now();
        assert!(matches!(
            judge.judge(Urgency::Content, &key(3), now, Duration::from_mins(1)),
            Judgement::Alert { .. }
        ));
    }

    #[test]
    fn stamps() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_367_702);
        assert_eq!(stamp(at), "20261122T171502Z");
        assert_eq!(stamp(SystemTime::UNIX_EPOCH), "19700101T000000Z");
    }
}
