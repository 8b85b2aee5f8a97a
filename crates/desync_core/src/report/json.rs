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
use crate::report::RankFields;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct Report<'a> {
    schema_version: u32,
    desync_version: &'static str,
    input: Input<'a>,
    verdict: Verdict<'a>,
    evidence: &'a [String],
    groups: Vec<Group<'a>>,
    earliest_mismatch: Option<Earliest<'a>>,
    stuck_at: Option<At>,
    /// For `straggler`: the measurements behind it and where the time goes.
    straggler: Option<&'a crate::diagnose::Straggler>,
    /// At most [`PROCESS_GROUP_LIMIT`], the interesting ones kept (docs/json-schema.md).
    process_groups: Vec<PgView<'a>>,
    /// How many process groups the job has; more than `process_groups` lists when it was cut.
    process_groups_total: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    process_groups_truncated: bool,
    /// At most [`MISMATCH_LIMIT`], the earliest mismatch always among them.
    mismatches: Vec<MismatchView<'a>>,
    mismatches_total: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    mismatches_truncated: bool,
    p2p_mismatches: Vec<P2pView<'a>>,
    p2p_mismatches_total: usize,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    p2p_mismatches_truncated: bool,
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
struct Input<'a> {
    #[serde(serialize_with = "crate::report::serialize_path")]
    path: PathBuf,
    files: usize,
    #[serde(flatten)]
    ranks_loaded: RankFields<'a>,
    world_size: u32,
    #[serde(flatten)]
    missing_ranks: RankFields<'a>,
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
struct Verdict<'a> {
    category: &'static str,
    #[serde(flatten)]
    culprit_ranks: RankFields<'a>,
    process_group: Option<PgRef>,
    collective_seq_id: Option<u64>,
    headline: String,
}

#[derive(Serialize)]
struct Group<'a> {
    #[serde(flatten)]
    ranks: RankFields<'a>,
    /// The same as `ranks_ranges` (kept: it came first).
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
    #[serde(flatten)]
    waiting_for: RankFields<'a>,
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
struct Earliest<'a> {
    process_group: PgRef,
    collective_seq_id: u64,
    kind: MismatchKind,
    departure: Departure,
    #[serde(flatten)]
    reference_ranks: RankFields<'a>,
    #[serde(flatten)]
    departed_ranks: RankFields<'a>,
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
struct PgView<'a> {
    name: String,
    desc: String,
    #[serde(flatten)]
    members: RankFields<'a>,
    membership: crate::model::Membership,
    window_start: u64,
    classes: Vec<ClassView<'a>>,
}

#[derive(Serialize)]
struct ClassView<'a> {
    #[serde(flatten)]
    ranks: RankFields<'a>,
    #[serde(flatten)]
    progress: Progress,
}

#[derive(Serialize)]
struct MismatchView<'a> {
    process_group: PgRef,
    collective_seq_id: u64,
    kind: MismatchKind,
    #[serde(flatten)]
    ranks: RankFields<'a>,
    sides: Vec<SideView<'a>>,
}

#[derive(Serialize)]
struct SideView<'a> {
    #[serde(flatten)]
    ranks: RankFields<'a>,
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

/// Process groups the report lists at most; past it, the ones that hold a mismatch, more than
/// one stream class, a culprit or the verdict come first (docs/json-schema.md, "Bounded
/// lists"). A 100,000-rank job with tensor parallelism of 8 has 12,500 groups.
pub const PROCESS_GROUP_LIMIT: usize = 1_000;
/// Collective and point-to-point mismatches the report lists at most, each; the earliest
/// mismatch is always among them.
pub const MISMATCH_LIMIT: usize = 200;

pub fn to_json(a: &Analysis) -> Report<'_> {
    let t = &a.trace;
    let d = &a.diagnosis;
    let pgs = kept_process_groups(a);
    let all_mismatches: Vec<(&GroupAlignment, &Mismatch)> =
        a.alignment.groups.iter().flat_map(|g| g.mismatches.iter().map(move |m| (g, m))).collect();
    let earliest_at = d.earliest.as_ref().map(|e| (e.mismatch.pg, e.mismatch.seq));
    let mismatches = kept_in_order(all_mismatches.len(), MISMATCH_LIMIT, |i| {
        earliest_at == Some((all_mismatches[i].1.pg, all_mismatches[i].1.seq))
    });
    let all_p2p: Vec<(&GroupAlignment, &P2pMismatch)> = a
        .alignment
        .groups
        .iter()
        .flat_map(|g| g.p2p_mismatches.iter().map(move |m| (g, m)))
        .collect();
    let p2p = kept_in_order(all_p2p.len(), MISMATCH_LIMIT, |_| false);
    Report {
        schema_version: SCHEMA_VERSION,
        desync_version: env!("CARGO_PKG_VERSION"),
        input: input(a),
        verdict: Verdict {
            category: d.category.as_str(),
            culprit_ranks: RankFields::new("culprit_ranks", d.culprit_ranks.as_slice()),
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
            reference_ranks: RankFields::new(
                "reference_ranks",
                e.mismatch.sides[e.reference].ranks.as_slice(),
            ),
            departed_ranks: RankFields::owned(
                "departed_ranks",
                e.departed
                    .iter()
                    .flat_map(|&i| e.mismatch.sides[i].ranks.as_slice())
                    .copied()
                    .collect(),
            ),
            time_created_ns: e.time_ns,
            symptom: e.symptom,
        }),
        stuck_at: d.stuck_at.map(|(pg, seq)| At {
            process_group: pg_ref(&t.process_groups[pg]),
            collective_seq_id: seq,
        }),
        process_groups: pgs.iter().map(|&i| pg_view(t, &a.alignment.groups[i])).collect(),
        process_groups_total: a.alignment.groups.len(),
        process_groups_truncated: pgs.len() < a.alignment.groups.len(),
        mismatches_total: all_mismatches.len(),
        mismatches_truncated: mismatches.len() < all_mismatches.len(),
        mismatches: mismatches
            .iter()
            .map(|&i| mismatch(t, all_mismatches[i].0, all_mismatches[i].1))
            .collect(),
        p2p_mismatches_total: all_p2p.len(),
        p2p_mismatches_truncated: p2p.len() < all_p2p.len(),
        p2p_mismatches: p2p
            .iter()
            .map(|&i| P2pView {
                process_group: pg_ref(&t.process_groups[all_p2p[i].0.pg]),
                mismatch: all_p2p[i].1,
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

/// Indices `0..len` to keep, in order: all of them up to `limit`; past it, the ones `first`
/// picks (up to `limit`), then the others in order until `limit`.
fn kept_in_order(len: usize, limit: usize, first: impl Fn(usize) -> bool) -> Vec<usize> {
    if len <= limit {
        return (0..len).collect();
    }
    let mut keep = vec![false; len];
    let mut kept = 0;
    for i in (0..len).filter(|&i| first(i)).take(limit) {
        keep[i] = true;
        kept += 1;
    }
    for slot in &mut keep {
        if kept == limit {
            break;
        }
        if !*slot {
            *slot = true;
            kept += 1;
        }
    }
    (0..len).filter(|&i| keep[i]).collect()
}

/// The alignment's groups the report lists (indices into `a.alignment.groups`): every one up to
/// [`PROCESS_GROUP_LIMIT`], else those where something happened first.
fn kept_process_groups(a: &Analysis) -> Vec<usize> {
    let d = &a.diagnosis;
    let groups = &a.alignment.groups;
    kept_in_order(groups.len(), PROCESS_GROUP_LIMIT, |i| {
        let g = &groups[i];
        let pg = &a.trace.process_groups[g.pg];
        d.process_group == Some(g.pg)
            || d.stuck_at.is_some_and(|(p, _)| p == g.pg)
            || !g.mismatches.is_empty()
            || !g.p2p_mismatches.is_empty()
            || g.classes.len() > 1
            || pg.members.iter().any(|&r| d.culprit_ranks.contains(r))
    })
}

fn input(a: &Analysis) -> Input<'_> {
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
        ranks_loaded: RankFields::owned("ranks_loaded", t.ranks.iter().map(|r| r.rank).collect()),
        world_size: t.world_size,
        missing_ranks: RankFields::owned("missing_ranks", t.missing_ranks.clone()),
        formats,
        fr_versions: versions,
        backends,
    }
}

fn group<'a>(
    t: &Trace,
    alignment: &Alignment,
    g: &'a crate::diagnose::BehaviourGroup,
) -> Group<'a> {
    let mut out = Group {
        ranks: RankFields::new("ranks", g.ranks.as_slice()),
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
        waiting_for: RankFields::new("waiting_for", g.waiting_for.as_slice()),
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

fn pg_view<'a>(t: &'a Trace, g: &'a GroupAlignment) -> PgView<'a> {
    let pg = &t.process_groups[g.pg];
    let members = if pg.members.is_sorted() {
        RankFields::new("members", &pg.members)
    } else {
        RankFields::owned("members", pg.members.clone())
    };
    PgView {
        name: pg.name.to_string(),
        desc: pg.desc.to_string(),
        members,
        membership: pg.membership,
        window_start: g.window_start,
        classes: g
            .classes
            .iter()
            .map(|c| ClassView {
                ranks: RankFields::new("ranks", c.ranks.as_slice()),
                progress: c.progress,
            })
            .collect(),
    }
}

fn mismatch<'a>(t: &Trace, g: &GroupAlignment, m: &'a Mismatch) -> MismatchView<'a> {
    let ranks = m.sides.iter().flat_map(|s| s.ranks.as_slice()).copied().collect();
    MismatchView {
        process_group: pg_ref(&t.process_groups[m.pg]),
        collective_seq_id: m.seq,
        kind: m.kind,
        ranks: RankFields::owned("ranks", ranks),
        sides: m
            .sides
            .iter()
            .map(|s| {
                let e = s.holder.and_then(|h| g.entries_at(t, h, m.seq).first().copied());
                let strings =
                    |v: &[std::sync::Arc<str>]| v.iter().map(ToString::to_string).collect();
                SideView {
                    ranks: RankFields::new("ranks", s.ranks.as_slice()),
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
