//! The loader shares one entry head (ids, call, state) between every rank whose entry says the
//! same, and keeps only the clocks per rank (load/intern.rs). That is a change of
//! representation, never of answer: on generated jobs of several shapes, the JSON report from
//! shared heads is byte for byte the one from every rank's entries kept apart.

use std::path::Path;

use desync_core::load::LoadOptions;
use desync_core::{Config, NoProgress};
use desync_synth::{Fault, Format, Plan, Spec, TailState, parse_groups, write_dir};

fn report(dir: &Path, per_rank_entries: bool) -> String {
    let config = Config {
        input: dir.to_path_buf(),
        load: LoadOptions { per_rank_entries, ..LoadOptions::default() },
        ..Config::default()
    };
    let analysis = desync_core::analyze(&config, &NoProgress).unwrap();
    serde_json::to_string_pretty(&desync_core::report::to_json(&analysis)).unwrap()
}

fn job(world: u32, groups: &str, fault: &str, format: Format) -> tempfile::TempDir {
    let mut spec = Spec::new(world, 400);
    // The ring buffer wrapped, as in a long job: the oldest seqs are gone.
    spec.history = Some(1200);
    spec.groups = parse_groups(groups).unwrap();
    spec.frames = matches!(format, Format::Pickle);
    spec.seed = 11;
    spec.fault = fault.parse::<Fault>().unwrap();
    if matches!(spec.fault, Fault::None) {
        spec.tail = TailState::Completed;
    }
    let plan = Plan::new(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_dir(&plan, dir.path(), "nccl_trace_rank_", format).unwrap();
    dir
}

#[test]
fn shared_heads_give_the_report_of_per_rank_entries() {
    let shapes = [
        (32, "tp=4,dp", "none"),
        (32, "tp=4,dp", "divergence:ranks=19,seq=40"),
        (32, "tp=4,dp", "stall:ranks=5,seq=40"),
        (48, "tp=2,pp=3,dp", "divergence:ranks=7,seq=60"),
        (24, "tp=2,pp=2,dp", "stall:ranks=3,seq=60"),
        (64, "tp=2,dp", "divergence:ranks=40,seq=40"),
    ];
    for (world, groups, fault) in shapes {
        for format in [Format::Pickle, Format::Json] {
            let dir = job(world, groups, fault, format);
            let shared = report(dir.path(), false);
            let apart = report(dir.path(), true);
            assert!(shared.contains("\"verdict\""), "{fault}: no report");
            assert!(
                shared == apart,
                "{world} ranks, {groups}, {fault} ({format:?}): the reports differ\n--- shared\n{shared}\n--- per rank\n{apart}"
            );
        }
    }
}
