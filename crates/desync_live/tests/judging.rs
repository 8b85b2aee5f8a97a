//! The watch loop's judging over snapshots of a real hung job (the committed `stalled_rank`
//! Gloo dumps), without any network: a stall must hold for `--lag` before it alerts, also when
//! the source brings nothing new (a dump directory written once, by FR's pipe trigger).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use desync_core::diagnose::Category;
use desync_core::model::Trace;
use desync_live::watch::{Event, Flow, WatchOptions};
use desync_live::{Snapshot, Source, SourceError};

fn stalled_rank() -> Trace {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/stalled_rank/dumps");
    desync_core::load::load(
        &dir,
        &desync_core::load::LoadOptions::default(),
        &desync_core::NoProgress,
    )
    .unwrap()
}

/// One snapshot of the hung job, then nothing new.
struct WrittenOnce(Option<Trace>);

impl Source for WrittenOnce {
    fn input(&self) -> PathBuf {
        PathBuf::from("written-once")
    }

    fn snapshot(&mut self) -> Result<Snapshot, SourceError> {
        Ok(match self.0.take() {
            Some(trace) => {
                Snapshot::Taken { trace, expected: 4, unreachable: Vec::new(), slow: Vec::new() }
            }
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
