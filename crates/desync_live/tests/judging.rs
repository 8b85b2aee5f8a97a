//! The watch loop's judging over snapshots of a real hung job (the committed `stalled_rank`
//! Gloo dumps), without any network: a stall must hold for `--lag` before it alerts, also when
//! the source brings nothing new (a dump directory written once, by FR's pipe trigger).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use desync_core::diagnose::Category;
use desync_core::model::Trace;
use desync_live::watch::{Event, Flow, WatchOptions};
use desync_live::{Detail, Reading, Snapshot, Source, SourceError};

fn stalled_rank() -> Trace {
    scenario("stalled_rank")
}

fn scenario(name: &str) -> Trace {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/scenarios")
        .join(name)
        .join("dumps");
    desync_core::load::load(
        &dir,
        &desync_core::load::LoadOptions::default(),
        &desync_core::NoProgress,
    )
    .unwrap()
}

fn taken(trace: Trace, active_only: bool) -> Snapshot {
    Snapshot::Taken {
        trace,
        reading: Reading { expected: 4, active_only, bytes: 1, ..Reading::default() },
    }
}

/// One snapshot of the hung job, then nothing new.
struct WrittenOnce(Option<Trace>);

impl Source for WrittenOnce {
    fn input(&self) -> PathBuf {
        PathBuf::from("written-once")
    }

    fn snapshot(&mut self, _: Detail) -> Result<Snapshot, SourceError> {
        Ok(match self.0.take() {
            Some(trace) => taken(trace, false),
            None => Snapshot::Unchanged,
        })
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        BTreeMap::new()
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        Vec::new()
    }
}

fn options(lag: Duration) -> WatchOptions {
    WatchOptions {
        interval: Duration::from_millis(20),
        lag,
        duration: Some(Duration::from_secs(5)),
        exit_on_alert: true,
        until_gone: None,
        save_dir: None,
        sources: desync_core::bridge::SourceOptions::default(),
    }
}

#[test]
fn a_stall_alerts_once_it_has_held_for_the_lag_even_without_new_data() {
    let lag = Duration::from_millis(300);
    let started = Instant::now();
    let mut statuses = 0;
    let mut alerted = Vec::new();
    let alerts =
        desync_live::watch(&mut WrittenOnce(Some(stalled_rank())), &options(lag), &mut |e| {
            match e {
                Event::Status(_) => statuses += 1,
                Event::Alert(a) => {
                    alerted.push((a.analysis.diagnosis.category, a.held, started.elapsed()));
                }
                Event::SourceDown(why) => panic!("{why}"),
            }
            Flow::Continue
        });
    assert_eq!(alerts, 1);
    let (category, held, at) = alerted[0];
    assert_eq!(category, Category::Stall);
    assert!(held >= lag, "alerted after {held:?}, before the lag");
    assert!(at < Duration::from_secs(3), "alerted only after {at:?}");
    assert!(statuses > 5, "a status per snapshot while the finding was young");
}

#[test]
fn a_front_end_can_stop_the_watch() {
    let mut seen = 0;
    let alerts = desync_live::watch(
        &mut WrittenOnce(Some(stalled_rank())),
        &options(Duration::from_mins(1)),
        &mut |_| {
            seen += 1;
            Flow::Stop
        },
    );
    assert_eq!((alerts, seen), (0, 1));
}

/// Answers every poll with `scenario`'s dumps, marked active-only when asked for active
/// entries, and records what each poll asked for.
struct Recording {
    scenario: &'static str,
    asked: Vec<Detail>,
}

impl Source for Recording {
    fn input(&self) -> PathBuf {
        PathBuf::from(self.scenario)
    }

    fn snapshot(&mut self, detail: Detail) -> Result<Snapshot, SourceError> {
        self.asked.push(detail);
        Ok(taken(scenario(self.scenario), detail == Detail::Active))
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        BTreeMap::new()
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        Vec::new()
    }
}

/// What each poll asked for, what each status said it fetched and saw, and how many alerts
/// came, over three polls.
fn three_polls(
    scenario: &'static str,
    lag: Duration,
) -> (Vec<Detail>, Vec<(bool, u64, Category)>, usize) {
    let mut source = Recording { scenario, asked: Vec::new() };
    let mut statuses = Vec::new();
    let mut options = options(lag);
    options.exit_on_alert = false;
    let alerts = desync_live::watch(&mut source, &options, &mut |e| {
        if let Event::Status(s) = e {
            statuses.push((s.active_only, s.bytes, s.observed));
        }
        if statuses.len() == 3 { Flow::Stop } else { Flow::Continue }
    });
    (source.asked, statuses, alerts)
}

#[test]
fn active_only_polls_are_judged_and_alerts_are_decided_on_whole_recorders() {
    let (asked, statuses, alerts) = three_polls("healthy", Duration::ZERO);
    assert_eq!(asked, [Detail::Active; 3], "a healthy job is polled cheaply");
    assert!(statuses.iter().all(|s| *s == (true, 1, Category::Healthy)), "{statuses:?}");
    assert_eq!(alerts, 0);

    // A stall younger than the lag: suspected on active entries alone.
    let (asked, statuses, alerts) = three_polls("stalled_rank", Duration::from_mins(1));
    assert_eq!(asked, [Detail::Active; 3]);
    assert!(statuses.iter().all(|s| *s == (true, 1, Category::Stall)), "{statuses:?}");
    assert_eq!(alerts, 0);

    // Due at once: the poll that would alert is taken again whole, and the alert comes from it.
    let (asked, statuses, alerts) = three_polls("stalled_rank", Duration::ZERO);
    assert_eq!(asked[..2], [Detail::Active, Detail::Full], "{asked:?}");
    assert_eq!(statuses[0], (false, 2, Category::Stall), "both fetches counted, judged whole");
    assert_eq!(alerts, 1, "one alert, not one per poll");
}
