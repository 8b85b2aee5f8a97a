//! The JSON report (`--format json`), schema version 1, documented in docs/json-schema.md.
//! Field names and meanings are a contract: add fields, never rename or repurpose them.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::Analysis;
use crate::align::{Alignment, GroupAlignment, Mismatch, MismatchKind, P2pMismatch, Progress};
use crate::bridge::{BranchPoint, Candidate, NotFound, Probe, SideStack, Snippet};
use crate::diagnose::{Departure, Position};
use crate::model::{Entry, ProcessGroup, Trace, Warning, format_ranks};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct Report<'a> {
    schema_version: u32,
    desync_version: &'static str,
    input: Input,
    verdict: Verdict,
    evidence: &'a [String],
    groups: Vec<Group>,
    earliest_mismatch: Option<Earliest>,
    stuck_at: Option<At>,
    /// For `straggler`: the measurements behind it and where the time goes.
    straggler: Option<&'a crate::diagnose::Straggler>,
    process_groups: Vec<PgView>,
    mismatches: Vec<MismatchView>,
    p2p_mismatches: Vec<P2pView<'a>>,
    code: Option<Code<'a>>,
    /// For `stall`, `straggler`, `crash` and `inconclusive`: where each culprit rank that left
    /// a stacks file was (`crate::bridge::places`).
    where_ranks_are: &'a [crate::bridge::RankPlace],
    probes: &'a [Probe],
    /// What to run to confirm the verdict (`crate::next_steps`), probes first when code is known.
    next_steps: Vec<crate::next_steps::NextStep>,
    warnings: &'a [Warning],
    /// The job's log given with `--log` (absent without one): its own verdict, claims and
    /// what it shows (docs/json-schema.md, "Log reports").
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<crate::logs::report::LogSection<'a>>,
}

#[derive(Serialize)]
struct Input {
    #[serde(serialize_with = "crate::report::serialize_path")]
    path: PathBuf,
    files: usize,
    ranks_loaded: Vec<u32>,
    world_size: u32,
    missing_ranks: Vec<u32>,
    formats: Vec<&'static str>,
    fr_versions: Vec<String>,
    backends: Vec<String>,
}

#[derive(Serialize, Clone)]
struct PgRef {
    name: String,
    desc: String,
}

#[derive(Serialize)]
struct Verdict {
    category: &'static str,
    culprit_ranks: Vec<u32>,
    process_group: Option<PgRef>,
    collective_seq_id: Option<u64>,
    headline: String,
}

#[derive(Serialize)]
struct Group {
    ranks: Vec<u32>,
    ranks_text: String,
    culprit: bool,
    stuck: bool,
    /// "`at_collective`", "`no_dump`" or "idle".
    state: &'static str,
    process_group: Option<PgRef>,
    collective_seq_id: Option<u64>,
    op: Option<String>,
    input_sizes: Option<Vec<Vec<i64>>>,
    dtypes: Option<Vec<String>>,
    completed: Option<bool>,
    call_site: Option<Site>,
    waiting_for: Vec<u32>,
}

#[derive(Serialize)]
struct Site {
    file: String,
    line: u32,
    function: String,
    /// The library frames between this user frame and the collective, compacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<String>,
}

#[derive(Serialize)]
struct Earliest {
    process_group: PgRef,
    collective_seq_id: u64,
    kind: MismatchKind,
    departure: Departure,
    reference_ranks: Vec<u32>,
    departed_ranks: Vec<u32>,
    time_created_ns: Option<i64>,
    /// When the call paths parted before the first conflict (`kind` is then `call_path`).
    symptom: Option<crate::diagnose::Symptom>,
}

#[derive(Serialize)]
struct At {
    process_group: PgRef,
    collective_seq_id: u64,
}

#[derive(Serialize)]
struct PgView {
    name: String,
    desc: String,
    members: Vec<u32>,
    membership: crate::model::Membership,
    window_start: u64,
    classes: Vec<ClassView>,
}

#[derive(Serialize)]
struct ClassView {
    ranks: Vec<u32>,
    #[serde(flatten)]
    progress: Progress,
}

#[derive(Serialize)]
struct MismatchView {
    process_group: PgRef,
    collective_seq_id: u64,
    kind: MismatchKind,
    ranks: Vec<u32>,
    sides: Vec<SideView>,
}

#[derive(Serialize)]
struct SideView {
    ranks: Vec<u32>,
    issued: bool,
    op: Option<String>,
    input_sizes: Option<Vec<Vec<i64>>>,
    output_sizes: Option<Vec<Vec<i64>>>,
    input_dtypes: Option<Vec<String>>,
    output_dtypes: Option<Vec<String>>,
    state: Option<&'static str>,
    call_site: Option<Site>,
}

#[derive(Serialize)]
struct P2pView<'a> {
    process_group: PgRef,
    #[serde(flatten)]
    mismatch: &'a P2pMismatch,
}

#[derive(Serialize)]
struct Code<'a> {
    branch: Option<&'a BranchPoint>,
    candidates: &'a [Candidate],
    explanation: &'a str,
    snippet: Option<&'a Snippet>,
    stacks: &'a [SideStack],
    not_found: &'a [NotFound],
}

fn pg_ref(pg: &ProcessGroup) -> PgRef {
    PgRef { name: pg.name.to_string(), desc: pg.desc.to_string() }
}

fn site(e: &Entry) -> Option<Site> {
    e.call_site().map(|f| Site {
        file: f.file.to_string(),
        line: f.line,
        function: f.function.to_string(),
        via: e.library_path(),
    })
}

pub fn to_json(a: &Analysis) -> Report<'_> {
    let t = &a.trace;
    let d = &a.diagnosis;
    Report {
        schema_version: SCHEMA_VERSION,
        desync_version: env!("CARGO_PKG_VERSION"),
        input: input(a),
        verdict: Verdict {
            category: d.category.as_str(),
            culprit_ranks: d.culprit_ranks.as_slice().to_vec(),
            process_group: d.process_group.map(|i| pg_ref(&t.process_groups[i])),
            collective_seq_id: d.collective_seq_id,
            headline: d.headline.clone(),
        },
        evidence: &d.evidence,
        straggler: d.straggler.as_ref(),
        groups: d.groups.iter().map(|g| group(t, &a.alignment, g)).collect(),
        earliest_mismatch: d.earliest.as_ref().map(|e| Earliest {
            process_group: pg_ref(&t.process_groups[e.mismatch.pg]),
            collective_seq_id: e.mismatch.seq,
            kind: e.mismatch.kind,
            departure: e.departure,
            reference_ranks: e.mismatch.sides[e.reference].ranks.as_slice().to_vec(),
            departed_ranks: e
                .departed
                .iter()
                .flat_map(|&i| e.mismatch.sides[i].ranks.as_slice().to_vec())
                .collect(),
            time_created_ns: e.time_ns,
            symptom: e.symptom,
        }),
        stuck_at: d.stuck_at.map(|(pg, seq)| At {
            process_group: pg_ref(&t.process_groups[pg]),
            collective_seq_id: seq,
        }),
        process_groups: a.alignment.groups.iter().map(|g| pg_view(t, g)).collect(),
        mismatches: a
            .alignment
            .groups
            .iter()
            .flat_map(|g| g.mismatches.iter().map(move |m| mismatch(t, g, m)))
            .collect(),
        p2p_mismatches: a
            .alignment
            .groups
            .iter()
            .flat_map(|g| {
                g.p2p_mismatches.iter().map(move |m| P2pView {
                    process_group: pg_ref(&t.process_groups[g.pg]),
                    mismatch: m,
                })
            })
            .collect(),
        code: a.code.as_ref().map(|c| Code {
            branch: c.branch.as_ref(),
            candidates: &c.candidates,
            explanation: &c.explanation,
            snippet: c.snippet.as_ref(),
            stacks: &c.stacks,
            not_found: &c.not_found,
        }),
        where_ranks_are: &a.places,
        probes: &a.probes,
        next_steps: crate::next_steps::next_steps(a),
        warnings: &t.warnings,
        log: a.log.as_ref().map(crate::logs::report::log_section),
    }
}

fn input(a: &Analysis) -> Input {
    let t = &a.trace;
    let mut formats: Vec<&'static str> = t
        .ranks
        .iter()
        .map(|r| match r.format {
            crate::model::DumpFormat::Pickle => "pickle",
            crate::model::DumpFormat::Json => "json",
        })
        .collect();
    formats.sort_unstable();
    formats.dedup();
    let mut versions: Vec<String> = t.ranks.iter().map(|r| r.version.to_string()).collect();
    versions.sort();
    versions.dedup();
    let mut backends: Vec<String> =
        t.ranks.iter().filter_map(|r| r.backend().map(str::to_owned)).collect();
    backends.sort();
    backends.dedup();
    Input {
        path: a.input.clone(),
        files: t.files_seen,
        ranks_loaded: t.ranks.iter().map(|r| r.rank).collect(),
        world_size: t.world_size,
        missing_ranks: t.missing_ranks.clone(),
        formats,
        fr_versions: versions,
        backends,
    }
}

fn group(t: &Trace, alignment: &Alignment, g: &crate::diagnose::BehaviourGroup) -> Group {
    let mut out = Group {
        ranks: g.ranks.as_slice().to_vec(),
        ranks_text: format_ranks(g.ranks.as_slice()),
        culprit: g.culprit,
        stuck: g.stuck,
        state: "idle",
        process_group: None,
        collective_seq_id: None,
        op: None,
        input_sizes: None,
        dtypes: None,
        completed: None,
        call_site: None,
        waiting_for: g.waiting_for.as_slice().to_vec(),
    };
    match &g.position {
        Position::NoDump => out.state = "no_dump",
        Position::Idle => {}
        Position::At(at) => {
            out.state = "at_collective";
            out.process_group = Some(pg_ref(&t.process_groups[at.pg]));
            out.collective_seq_id = Some(at.seq);
            out.op = Some(at.op.to_string());
            out.input_sizes = Some(at.input_sizes.to_vec());
            out.dtypes = Some(at.dtypes.iter().map(ToString::to_string).collect());
            out.completed = at.completed;
            let rank = g.ranks.as_slice()[0];
            out.call_site =
                alignment.groups[at.pg].entries_at(t, rank, at.seq).first().and_then(|e| site(e));
        }
    }
    out
}

fn pg_view(t: &Trace, g: &GroupAlignment) -> PgView {
    let pg = &t.process_groups[g.pg];
    PgView {
        name: pg.name.to_string(),
        desc: pg.desc.to_string(),
        members: pg.members.clone(),
        membership: pg.membership,
        window_start: g.window_start,
        classes: g
            .classes
            .iter()
            .map(|c| ClassView { ranks: c.ranks.as_slice().to_vec(), progress: c.progress })
            .collect(),
    }
}

fn mismatch(t: &Trace, g: &GroupAlignment, m: &Mismatch) -> MismatchView {
    let mut ranks: Vec<u32> = m.sides.iter().flat_map(|s| s.ranks.as_slice().to_vec()).collect();
    ranks.sort_unstable();
    MismatchView {
        process_group: pg_ref(&t.process_groups[m.pg]),
        collective_seq_id: m.seq,
        kind: m.kind,
        ranks,
        sides: m
            .sides
            .iter()
            .map(|s| {
                let e = s.holder.and_then(|h| g.entries_at(t, h, m.seq).first().copied());
                let strings =
                    |v: &[std::sync::Arc<str>]| v.iter().map(ToString::to_string).collect();
                SideView {
                    ranks: s.ranks.as_slice().to_vec(),
                    issued: s.holder.is_some(),
                    op: e.map(|e| e.op().name.to_string()),
                    input_sizes: e.map(|e| e.input_sizes().to_vec()),
                    output_sizes: e.map(|e| e.output_sizes().to_vec()),
                    input_dtypes: e.map(|e| strings(e.input_dtypes())),
                    output_dtypes: e.map(|e| strings(e.output_dtypes())),
                    state: s.state.map(crate::model::State::as_str),
                    call_site: e.and_then(site),
                }
            })
            .collect(),
    }
}

/// Writes the report as pretty JSON followed by a newline. JSON itself escapes only C0
/// controls; DEL and the C1 controls (U+0080 to U+009F; U+009B is a CSI to many terminals)
/// from dump strings are written as `\u` escapes too, so the JSON is safe to print.
pub fn write_json(a: &Analysis, out: &mut dyn Write) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    serde_json::to_writer_pretty(&mut bytes, &to_json(a))?;
    out.write_all(&escape_c1(&bytes))?;
    writeln!(out)
}

/// Serialized JSON with DEL and C1 controls escaped. They can only occur inside strings (the
/// rest of JSON is printable ASCII), and in UTF-8 a C1 control is 0xC2 then 0x80..=0x9F, where
/// 0xC2 is always a lead byte.
fn escape_c1(json: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let needs = |w: &[u8]| w[0] == 0x7f || (w[0] == 0xc2 && (0x80..=0x9f).contains(&w[1]));
    if !json.windows(2).any(needs) && json.last() != Some(&0x7f) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = Vec::with_capacity(json.len() + 64);
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            0x7f => out.extend_from_slice(b"\\u007f"),
            0xc2 if json.get(i + 1).is_some_and(|b| (0x80..=0x9f).contains(b)) => {
                out.extend_from_slice(format!("\\u{:04x}", json[i + 1]).as_bytes());
                i += 1;
            }
            b => out.push(b),
        }
        i += 1;
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn c1_controls_and_del_are_escaped() {
        let json = serde_json::to_vec(&"a\u{9b}2J\u{7f}é\u{85}").unwrap();
        let out = super::escape_c1(&json);
        assert_eq!(std::str::from_utf8(&out).unwrap(), "\"a\\u009b2J\\u007fé\\u0085\"");
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, "a\u{9b}2J\u{7f}é\u{85}");
    }
}
