//! What to run next to confirm a verdict, per category, as data: the table below is the only
//! place that knows which tools and settings confirm what (NCCL's logging, the kernel log,
//! py-spy, torch's own consistency checks). Reports fill in the culprit ranks, the group and
//! the collective; nothing here describes what a rank without a dump did.

use crate::Analysis;
use crate::diagnose::{Category, DoubtKind, Position};
use crate::model::RankSet;

/// One step: what to do, the command or setting (placeholders filled in), and what it shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NextStep {
    pub title: String,
    /// A shell command or an environment setting; `None` for steps that are only advice.
    pub command: Option<String>,
    pub why: String,
}

/// A step of the table. Placeholders: `{culprits}` (rank set), `{culprit}` (the first culprit
/// rank), `{pg}` (group label), `{seq}`, `{op}` and `{input}` (the dumps analysed; quoted for a
/// shell as `{input_arg}`).
struct Template {
    title: &'static str,
    command: Option<&'static str>,
    why: &'static str,
    /// The step asks for the culprits' Python stacks: left out when their stacks files are
    /// already read (`Analysis::places`), which may be of a process that no longer exists.
    python_stack: bool,
}

const fn step(title: &'static str, command: &'static str, why: &'static str) -> Template {
    Template { title, command: Some(command), why, python_stack: false }
}

const fn advice(title: &'static str, why: &'static str) -> Template {
    Template { title, command: None, why, python_stack: false }
}

const fn stack_step(title: &'static str, command: &'static str, why: &'static str) -> Template {
    Template { title, command: Some(command), why, python_stack: true }
}

const PY_SPY_NATIVE: Template = step(
    "Dump the stuck rank's Python and native stacks",
    "py-spy dump --native --pid <pid of rank {culprit}>",
    "shows whether rank {culprit} is inside the NCCL kernel launch, a CUDA sync or Python code",
);

const PY_SPY_CULPRIT: Template = stack_step(
    "See where the late rank is",
    "py-spy dump --pid <pid of rank {culprit}>",
    "rank {culprit} is alive but has not issued {op} seq {seq}: its Python stack shows the \
     line it is on (data loading, checkpoint I/O, a lock, a rank-local loop)",
);

const TORCH_DEBUG_DETAIL: Template = step(
    "Let torch check every collective across ranks on the rerun",
    "TORCH_DISTRIBUTED_DEBUG=DETAIL",
    "before each collective, torch compares op, shapes and dtypes across the ranks of the \
     group and raises on the first mismatch with both sides' descriptions (slower; use it \
     on the rerun that reproduces the hang)",
);

const STEPS: &[(Category, &[Template])] = &[
    (
        Category::GpuHang,
        &[
            PY_SPY_NATIVE,
            step(
                "Look for GPU faults on rank {culprit}'s host",
                "sudo dmesg -T | grep -i -E 'xid|nvrm'",
                "an Xid error (79: fallen off the bus, 48/63/64: ECC, 13/31: a faulting kernel) \
                 explains a collective that never started or never finished",
            ),
            step(
                "Rerun with NCCL's own logging",
                "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL,NET",
                "NCCL logs each rank's transport and the collective it enqueues; a rank that \
                 logs no COLL line for {op} seq {seq} never reached NCCL",
            ),
            step(
                "Ask NCCL's RAS service which ranks are unresponsive (NCCL 2.24 and later)",
                "ncclras",
                "run on any node of the live job: NCCL reports dead or unresponsive peers and \
                 the collectives each communicator is stuck in",
            ),
            step(
                "Check the GPU's health on that host",
                "nvidia-smi -q -d ECC,PAGE_RETIREMENT,PERFORMANCE",
                "uncorrectable ECC errors, retired pages or a throttled GPU point at the hardware",
            ),
        ],
    ),
    (
        Category::Stall,
        &[
            PY_SPY_CULPRIT,
            step(
                "Find the last line the late rank logged",
                "grep -n -E 'step|epoch|Traceback' <log of rank {culprit}> | tail",
                "the step it stopped at, compared with its peers', dates the stall",
            ),
        ],
    ),
    (
        Category::Crash,
        &[
            step(
                "Find why rank {culprit}'s process ended",
                "grep -n -E 'Traceback|Error|Killed|out of memory|Signal' <log of rank {culprit}>",
                "rank(s) {culprits} left no dump: their own log (or torchrun's error file, \
                 TORCHELASTIC_ERROR_FILE) holds the exception or the signal",
            ),
            step(
                "Check rank {culprit}'s host for the OOM killer",
                "sudo dmesg -T | grep -i -E 'out of memory|killed process'",
                "a process killed for host memory leaves no Python traceback and no dump",
            ),
            step(
                "Record the exception on the next run",
                "decorate main with torch.distributed.elastic.multiprocessing.errors.record",
                "torchrun then writes the failing rank's traceback to its error file and \
                 reports it as the root cause",
            ),
        ],
    ),
    (
        Category::Deadlock,
        &[
            // Not TORCH_DISTRIBUTED_DEBUG: its per-group check would block the same way.
            advice(
                "Issue collectives of different groups in one order on every rank",
                "each rank blocks in a different group's collective: a rank-dependent branch \
                 or loop orders the groups differently (the probes log each rank's order)",
            ),
        ],
    ),
    (Category::Divergence, &[TORCH_DEBUG_DETAIL]),
    (Category::MetadataMismatch, &[TORCH_DEBUG_DETAIL]),
    (
        Category::Straggler,
        &[
            step(
                "Profile the slow rank while the job runs",
                "py-spy record --idle -d 60 -o rank{culprit}.svg --pid <pid of rank {culprit}>",
                "a flame graph of where rank {culprit} spends the time its peers wait (compare \
                 with one peer's)",
            ),
            step(
                "Compare the hosts' clocks",
                "chronyc tracking",
                "enqueue times come from each host's clock: a skew of the size of the lead \
                 can make a straggler of an on-time rank",
            ),
        ],
    ),
    (
        Category::Inconclusive,
        &[step(
            "Collect a dump from every rank",
            "TORCH_FR_DUMP_TEMP_FILE=<shared dir>/nccl_trace_rank_ TORCH_NCCL_DUMP_ON_TIMEOUT=1",
            "the verdict needs every rank's recorder; ranks whose dump is missing or \
             unreadable are listed under Warnings",
        )],
    ),
];

/// An `inconclusive` verdict on a set that would otherwise read healthy names the gap in the
/// records (`diagnose/all_clear.rs`); these steps close that gap instead of the generic one.
const DOUBT_STEPS: &[(DoubtKind, &[Template])] = &[
    (
        DoubtKind::UnrecordedMembers,
        &[
            stack_step(
                "See where the ranks that never used the group are",
                "py-spy dump --pid <pid of rank {culprit}>",
                "if rank {culprit} is a member of {pg}, its Python stack shows the line that \
                 keeps it from {op} seq {seq} (a lock, I/O, data loading, another path)",
            ),
            advice(
                "Find the group's members in the code",
                "the new_group / new_subgroups / DeviceMesh call that created {pg} lists its \
                 members; NCCL dumps record them in pg_config, Gloo dumps do not once \
                 sub-groups exist",
            ),
        ],
    ),
    (
        DoubtKind::UnstatedWorld,
        &[step(
            "State the world size",
            "desync analyze {input_arg} --world-size <WORLD_SIZE of the job>",
            "with the world size known, ranks that left no file count as missing, and peers \
             waiting in {op} seq {seq} for them make the verdict a crash",
        )],
    ),
    (
        DoubtKind::NoneCompleted,
        &[
            advice(
                "Dump again while the job still runs",
                "a second set of dumps a minute later that still shows {op} seq {seq} in flight \
                 on every member means it hangs in the transport; one that moved on means the \
                 first dumps were taken while it ran",
            ),
            PY_SPY_NATIVE,
        ],
    ),
    (
        DoubtKind::StatusAhead,
        &[step(
            "Keep more entries in the recorder",
            "TORCH_FR_BUFFER_SIZE=20000",
            "rank {culprit}'s newest collectives were not recorded; a larger ring buffer and a \
             fresh dump show what it issued after the entries it kept",
        )],
    ),
    (
        DoubtKind::Contradiction,
        &[advice(
            "Dump again from every rank",
            "rank {culprit}'s entries and its pg_status disagree (a dump taken while the \
             recorder was being updated, or an edited or damaged file); a fresh dump settles \
             which is right",
        )],
    ),
];

/// The steps for this analysis: the category's table rows with the culprits filled in, then
/// the probes when the code is known.
pub fn next_steps(a: &Analysis) -> Vec<NextStep> {
    let d = &a.diagnosis;
    let by_doubt = d.doubt.and_then(|k| DOUBT_STEPS.iter().find(|(kind, _)| *kind == k));
    let row = by_doubt
        .map(|(_, t)| *t)
        .or_else(|| STEPS.iter().find(|(c, _)| *c == d.category).map(|(_, t)| *t));
    let Some(templates) = row else {
        return Vec::new();
    };
    let fill = |text: &str| fill_in(text, a);
    // A crash the log shows: its lines say why the process ended, so the steps that look for
    // it (the log, the OOM killer, torchrun's error file) give way to reading them.
    let known = a.log.as_ref().and_then(|l| l.upgrade.as_ref());
    let templates: &[Template] = if known.is_some() { &[] } else { templates };
    let stacks_known = !d.culprit_ranks.is_empty()
        && d.culprit_ranks.as_slice().iter().all(|&r| a.places.iter().any(|p| p.ranks.contains(r)));
    let mut steps: Vec<NextStep> = known.map(|u| read_crash(u, a)).unwrap_or_default();
    // The best candidate's path ends the rank (a framework raises there): py-spy would find
    // no process; how the rank ended is in its log.
    let ends_rank = a
        .code
        .as_ref()
        .and_then(|c| c.candidates.first())
        .and_then(|c| c.ends_rank.as_deref().map(|then| (c, then)));
    for t in templates {
        if t.python_stack && stacks_known {
            steps.extend(a.places.iter().take(3).map(read_stacks));
            continue;
        }
        if let (true, Some((candidate, then))) = (t.python_stack, ends_rank) {
            steps.push(read_how_it_ended(candidate, then, a));
            continue;
        }
        steps.push(NextStep {
            title: fill(t.title),
            command: t.command.map(fill),
            why: fill(t.why),
        });
    }
    if !a.probes.is_empty() {
        let mut sites: Vec<String> = a
            .probes
            .iter()
            .map(|p| format!("{}:{}", crate::diagnose::short_path(&p.file), p.line))
            .collect();
        sites.dedup();
        let probes = NextStep {
            title: "Apply the probes and rerun".into(),
            command: Some(format!(
                "desync analyze {}{} --emit-probes desync-probes.patch && git apply desync-probes.patch",
                shell_word(&a.input.to_string_lossy()),
                source_arguments(&a.sources)
            )),
            why: format!(
                "each probe ({}) logs what every rank does there; the first line where the \
                 ranks' logs differ is the cause",
                sites.join(", ")
            ),
        };
        // Where the code path is the suspect the probes come first; for a crash, a stall or a
        // GPU hang, what happened to the process or the device comes first.
        let code_path = matches!(
            d.category,
            Category::Divergence | Category::MetadataMismatch | Category::Deadlock
        );
        steps.insert(if code_path { 0 } else { steps.len() }, probes);
    }
    steps
}

/// In place of a py-spy dump when the best candidate's path ends the rank: read its log for
/// the traceback, which names the line and the exception.
fn read_how_it_ended(candidate: &crate::bridge::Candidate, then: &str, a: &Analysis) -> NextStep {
    let culprit = fill_in("{culprit}", a);
    NextStep {
        title: format!("Read how rank {culprit} ended"),
        command: Some(format!("grep -n -A40 'Traceback' <log of rank {culprit}>")),
        why: format!(
            "if rank {culprit} took the path at {}:{} ({}), {then}; it most likely died rather \
             than hung, so there is no live stack to dump: its traceback confirms it",
            crate::diagnose::short_path(&candidate.branch.file),
            candidate.branch.line,
            candidate.branch.construct,
        ),
    }
}

/// In place of a py-spy dump: the stacks file desync read, every thread of it (what the rank
/// waits for may be another thread: a loader, the holder of a lock).
fn read_stacks(place: &crate::bridge::RankPlace) -> NextStep {
    if place.origin == "live_stacks" {
        return NextStep {
            title: format!("See what rank(s) {} wait on, from their live stack", place.ranks),
            command: None,
            why: format!(
                "desync watch took it from the running rank's debug server (dump_traceback): \
                 its main thread is at {}; `desync watch --save DIR` keeps every thread in \
                 stacks/rank_<N>.txt",
                place.describe()
            ),
        };
    }
    NextStep {
        title: format!("Read rank(s) {}'s stacks, every thread", place.ranks),
        command: Some(format!("cat {}", shell_word(&place.stacks_file.to_string_lossy()))),
        why: format!(
            "taken when the rank dumped or desync stopped the job: its main thread was at {}; \
             the other threads show what it may wait for",
            place.describe()
        ),
    }
}

/// For each crash the log shows, the lines to read: the traceback (from its first frame to a
/// few lines past the exception, whose message may go on), or the one line it rests on.
fn read_crash(u: &crate::logs::merge::Upgrade, a: &Analysis) -> Vec<NextStep> {
    let mut steps = Vec::new();
    for &rank in &u.culprit_ranks {
        let place = a.places.iter().find(|p| p.ranks.contains(rank) && p.log_lines.is_some());
        let (file, from, to, what) = if let Some(p) = place {
            let (from, to) = p.log_lines.unwrap_or_default();
            (p.stacks_file.to_string_lossy().into_owned(), from, to + 5, p.describe())
        } else if let Some(cite) = a.log.as_ref().and_then(|l| {
            l.verdict
                .claims
                .iter()
                .find(|c| c.kind == crate::logs::ClaimKind::Raised && c.ranks.contains(&rank))
                .and_then(|c| c.evidence.first())
        }) {
            (cite.file.clone(), cite.line, cite.line, crate::report::clip_chars(&cite.text, 100))
        } else {
            continue;
        };
        if steps.len() == 3 {
            break;
        }
        steps.push(NextStep {
            title: format!("Read rank {rank}'s error in the job's log"),
            command: Some(format!("sed -n '{from},{to}p' {}", shell_word(&file))),
            why: format!(
                "rank {rank} ended on its own error ({what}); its peers' timeouts and closed \
                 connections follow from it. The line it raised at is where its path left \
                 its peers' (see Code and Where the late ranks are)"
            ),
        });
    }
    steps
}

fn fill_in(text: &str, a: &Analysis) -> String {
    let d = &a.diagnosis;
    // A sentence: 40 scattered culprits read as their count and first ranks.
    let culprits = if d.culprit_ranks.is_empty() {
        "?".to_owned()
    } else {
        d.culprit_ranks.brief().to_string()
    };
    let culprit = d.culprit_ranks.as_slice().first().map_or("?".to_owned(), ToString::to_string);
    let pg = d.process_group.map(|pg| a.trace.process_groups[pg].label()).unwrap_or_default();
    let seq = d.collective_seq_id.map_or_else(|| "?".into(), |s| s.to_string());
    let op = match d.missing_p2p {
        // The seq of a p2p op is the collective it follows.
        Some(missing) => format!("the {missing} its peer waits in, after"),
        None => stuck_op(a, &d.culprit_ranks).unwrap_or_else(|| "the collective".into()),
    };
    text.replace("{culprits}", &culprits)
        .replace("{culprit}", &culprit)
        .replace("{pg}", &pg)
        .replace("{seq}", &seq)
        .replace("{op}", &op)
        .replace("{input_arg}", &shell_word(&a.input.to_string_lossy()))
        .replace("{input}", &a.input.to_string_lossy())
}

/// The op the other ranks wait in (the one the culprits did not issue or did not finish).
fn stuck_op(a: &Analysis, culprits: &RankSet) -> Option<String> {
    let d = &a.diagnosis;
    d.groups
        .iter()
        .filter(|g| g.stuck || !g.ranks.as_slice().iter().any(|&r| culprits.contains(r)))
        .find_map(|g| match &g.position {
            Position::At(at) if Some(at.seq) == d.collective_seq_id => Some(at.op.to_string()),
            _ => None,
        })
}

/// `--source-root`/`--path-map` as the analysis was given them.
fn source_arguments(sources: &crate::bridge::SourceOptions) -> String {
    let mut args = String::new();
    if let Some(root) = &sources.source_root {
        args.push_str(&format!(" --source-root {}", shell_word(&root.to_string_lossy())));
    }
    for (from, to) in &sources.path_maps {
        let map = format!("{from}={}", to.to_string_lossy());
        args.push_str(&format!(" --path-map {}", shell_word(&map)));
    }
    args
}

/// Quotes a path for a shell when it holds anything but plain path characters.
fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_category_has_steps_and_healthy_has_none() {
        for (category, templates) in STEPS {
            assert!(category.is_problem());
            assert!(!templates.is_empty());
        }
        assert!(!STEPS.iter().any(|(c, _)| *c == Category::Healthy));
    }

    #[test]
    fn placeholders_are_all_known() {
        let known = ["{culprits}", "{culprit}", "{pg}", "{seq}", "{op}", "{input}"];
        for (_, templates) in STEPS {
            for t in *templates {
                for text in [Some(t.title), t.command, Some(t.why)].into_iter().flatten() {
                    let mut rest = text;
                    while let Some(at) = rest.find('{') {
                        let end = rest[at..].find('}').map_or(rest.len(), |e| at + e + 1);
                        assert!(known.contains(&&rest[at..end]), "{text}");
                        rest = &rest[end..];
                    }
                }
            }
        }
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("runs/job-1/dumps"), "runs/job-1/dumps");
        assert_eq!(shell_word("my dumps/it's"), "'my dumps/it'\\''s'");
    }
}
