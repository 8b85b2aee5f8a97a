//! The HTML report: one self-contained file (inline CSS, JS and SVG, no network access) that
//! opens from a laptop or a shared drive. Verdict first, then the evidence, the behavioural
//! groups, a timeline per process group, the code at the branch point, the probes and the
//! warnings.
//!
//! Invariants: every string from the dumps or the sources goes through [`Esc`]; the timeline's
//! data is one JSON blob in `<script type="application/json" id="desync-data">` with `<`
//! written as `\u003c`, so no string from a dump can close the element; nothing refers to a
//! URL, so the file works offline and behind strict proxies. Without JavaScript everything
//! but the timeline still reads.

mod timeline;

use std::fmt;
use std::io::{self, Write};

use crate::Analysis;
use crate::diagnose::{BehaviourGroup, Position, short_path};
use crate::model::{RankSet, Trace, format_ranks};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("timeline.js");

/// How much of a large job the timeline draws; the defaults keep a 4,096-rank x 2,000-entry
/// job's report to a few megabytes and a browser responsive.
#[derive(Debug, Clone, Copy)]
pub struct HtmlOptions {
    /// Process groups with at most this many members get one lane per rank.
    pub rank_lanes: usize,
    /// Larger groups get one lane per stream class, at most this many.
    pub class_lanes: usize,
    /// The last seqs of each group that are always drawn.
    pub tail_seqs: usize,
    /// Seqs drawn on each side of the earliest mismatch and the stuck collective.
    pub context_seqs: usize,
    /// Process groups drawn, the interesting ones first.
    pub process_groups: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        Self {
            rank_lanes: 64,
            class_lanes: 64,
            tail_seqs: 200,
            context_seqs: 20,
            process_groups: 24,
        }
    }
}

/// Lanes past which the timeline is taller than a screen or so; then the code, where the ranks
/// are and the next steps are written right under the verdict.
const LONG_TIMELINE_LANES: usize = 24;

/// Writes the whole report as one HTML document.
pub fn write_html(a: &Analysis, options: &HtmlOptions, out: &mut dyn Write) -> io::Result<()> {
    let d = &a.diagnosis;
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"desync {}\">\n<link rel=\"icon\" href=\"data:,\">\n<title>desync: {} — {}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        d.category.as_str(),
        Esc(&a.input.display().to_string()),
    )?;
    let timeline = timeline::timeline(a, options);
    verdict(a, out)?;
    evidence(a, out)?;
    // A long timeline (hundreds of lanes at 512 ranks) pushed the code and what to do next
    // screens below the verdict: then they come first, the groups and timeline after.
    let long = timeline.lanes() > LONG_TIMELINE_LANES;
    if long {
        places(a, out)?;
        code(a, out)?;
        next_steps(a, out)?;
    }
    groups(a, out)?;
    timeline_section(a, out)?;
    if !long {
        places(a, out)?;
        code(a, out)?;
    }
    probes(a, out)?;
    if !long {
        next_steps(a, out)?;
    }
    log_section(a, out)?;
    warnings(a, out)?;
    footer(a, out)?;
    writeln!(out, "</main>\n<div id=\"tip\" role=\"tooltip\" hidden></div>")?;
    write!(out, "<script type=\"application/json\" id=\"desync-data\">")?;
    serde_json::to_writer(ScriptSafe(&mut *out), &timeline)?;
    writeln!(out, "</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>")
}

fn verdict(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let d = &a.diagnosis;
    let cat = d.category.as_str();
    writeln!(out, "<header id=\"verdict\" class=\"verdict cat-{cat}\" data-category=\"{cat}\">")?;
    writeln!(out, "<div class=\"brand\">desync report</div>")?;
    writeln!(
        out,
        "<h1><span id=\"category\" class=\"badge\">{}</span>",
        cat.replace('_', " ").to_uppercase()
    )?;
    if !d.culprit_ranks.is_empty() {
        write!(
            out,
            " <span class=\"fact\">culprit rank(s) {}</span>",
            RankCell { ranks: &d.culprit_ranks, id: Some("culprits") }
        )?;
    }
    if let Some(pg) = d.process_group {
        write!(out, " <span class=\"fact\">{}", Esc(&a.trace.process_groups[pg].label()))?;
        if let Some(seq) = d.collective_seq_id {
            write!(out, " seq <b>{seq}</b>")?;
        }
        write!(out, "</span>")?;
    }
    writeln!(out, "</h1>\n<p id=\"headline\">{}</p>", Esc(&d.headline))?;
    if let Some(c) = &a.code
        && !c.explanation.is_empty()
        && c.branch.is_some()
    {
        writeln!(out, "<p class=\"why\">{}</p>", Esc(&c.explanation))?;
    }
    writeln!(out, "</header>")
}

fn evidence(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let t = &a.trace;
    let d = &a.diagnosis;
    writeln!(out, "<section id=\"evidence\">\n<h2>Evidence</h2>\n<ul>")?;
    for fact in d.evidence.iter().take(SHOWN_FACTS) {
        writeln!(out, "<li>{}</li>", Esc(fact))?;
    }
    if d.evidence.is_empty() {
        writeln!(out, "<li class=\"dim\">no further evidence beyond the headline</li>")?;
    }
    writeln!(out, "</ul>")?;
    if d.evidence.len() > SHOWN_FACTS {
        writeln!(
            out,
            "<details class=\"more\"><summary>{} more fact(s)</summary><ul>",
            d.evidence.len() - SHOWN_FACTS
        )?;
        for fact in &d.evidence[SHOWN_FACTS..] {
            writeln!(out, "<li>{}</li>", Esc(fact))?;
        }
        writeln!(out, "</ul></details>")?;
    }
    if let Some(earliest) = &d.earliest {
        let m = &earliest.mismatch;
        let group = &a.alignment.groups[m.pg];
        writeln!(
            out,
            "<div id=\"earliest\"><h3>Earliest mismatch: {} seq {} <span class=\"dim\">({} mismatch; {})</span></h3>",
            Esc(&t.process_groups[m.pg].label()),
            m.seq,
            m.kind.as_str(),
            earliest.departure.describe()
        )?;
        writeln!(
            out,
            "<table class=\"sides\"><thead><tr><th>ranks</th><th>role</th><th>op</th><th>input sizes</th><th>dtypes</th><th>state</th><th>call site</th></tr></thead><tbody>"
        )?;
        for (i, side) in m.sides.iter().enumerate() {
            let role = if i == earliest.reference {
                "reference"
            } else if earliest.departed.contains(&i) {
                "departed"
            } else {
                "other"
            };
            let entry = side.holder.and_then(|h| group.entries_at(t, h, m.seq).first().copied());
            write!(
                out,
                "<tr class=\"{role}\"><td>{}</td><td>{role}</td>",
                RankCell { ranks: &side.ranks, id: None }
            )?;
            match entry {
                Some(entry) => write!(
                    out,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                    Esc(&entry.op().name),
                    Esc(&crate::diagnose::sizes_text(entry.input_sizes())),
                    Esc(&crate::diagnose::dtypes_text(entry.input_dtypes())),
                    entry.state.as_str(),
                    Esc(&entry_site(entry)),
                )?,
                None => write!(out, "<td colspan=\"5\" class=\"dim\">not issued</td>")?,
            }
            writeln!(out, "</tr>")?;
        }
        writeln!(out, "</tbody></table>\n</div>")?;
    }
    if let Some((pg, seq)) = d.stuck_at {
        let same =
            d.earliest.as_ref().is_some_and(|e| (e.mismatch.pg, e.mismatch.seq) == (pg, seq));
        let note = if d.earliest.is_some() && !same { ": not where it went wrong" } else { "" };
        writeln!(
            out,
            "<p id=\"stuck\">Stuck at {} seq {seq}{note}.</p>",
            Esc(&t.process_groups[pg].label())
        )?;
    }
    writeln!(out, "</section>")
}

/// Rows shown before the rest fold into a `<details>`: a 512-rank partial hang can have dozens
/// of groups and facts (one per culprit group, repeating the table), and the timeline must
/// start within the first screen.
const SHOWN_GROUPS: usize = 4;
const SHOWN_FACTS: usize = 3;

fn groups(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let all = &a.diagnosis.groups;
    writeln!(
        out,
        "<section id=\"groups\">\n<h2>Behavioural groups <span class=\"dim\">({})</span></h2>",
        all.len()
    )?;
    let head = "<table class=\"groups\"><colgroup><col class=\"c-ranks\"><col class=\"c-n\"><col><col class=\"c-wait\"><col class=\"c-site\"></colgroup><thead><tr><th>ranks</th><th>n</th><th>where</th><th>waiting for</th><th>call site</th></tr></thead><tbody>";
    writeln!(out, "{head}")?;
    for g in all.iter().take(SHOWN_GROUPS) {
        group_row(a, g, out)?;
    }
    writeln!(out, "</tbody></table>")?;
    if all.len() > SHOWN_GROUPS {
        let ranks: usize = all[SHOWN_GROUPS..].iter().map(|g| g.ranks.len()).sum();
        writeln!(
            out,
            "<details class=\"more\"><summary>{} more group(s), {ranks} rank(s)</summary>{head}",
            all.len() - SHOWN_GROUPS
        )?;
        for g in &all[SHOWN_GROUPS..] {
            group_row(a, g, out)?;
        }
        writeln!(out, "</tbody></table></details>")?;
    }
    writeln!(out, "</section>")
}

fn group_row(a: &Analysis, g: &BehaviourGroup, out: &mut dyn Write) -> io::Result<()> {
    let mut class = Vec::new();
    if g.culprit {
        class.push("culprit");
    }
    if g.stuck {
        class.push("stuck");
    }
    writeln!(
        out,
        "<tr class=\"{}\"><td class=\"ranks\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        class.join(" "),
        RankCell { ranks: &g.ranks, id: None },
        g.ranks.len(),
        Esc(&where_text(&a.trace, g)),
        RankCell { ranks: &g.waiting_for, id: None },
        Esc(&site_text(a, g)),
    )
}

/// A rank set as it fits a cell: whole when short, else its count and start, the whole set one
/// click away (a 400-character list would push everything else off the screen).
struct RankCell<'r> {
    ranks: &'r RankSet,
    id: Option<&'static str>,
}

/// Characters of a rank list shown before it folds.
const RANKS_SHOWN: usize = 48;

impl fmt::Display for RankCell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.ranks.to_string();
        let id = self.id.map(|id| format!(" id=\"{id}\"")).unwrap_or_default();
        if text.len() <= RANKS_SHOWN {
            return write!(f, "<b{id} class=\"rankset\">{text}</b>");
        }
        let cut = text[..RANKS_SHOWN].rfind(',').unwrap_or(RANKS_SHOWN);
        write!(
            f,
            "<details class=\"rankset\"><summary>{} ranks: {}…</summary><b{id}>{text}</b></details>",
            self.ranks.len(),
            &text[..cut]
        )
    }
}

fn where_text(t: &Trace, g: &BehaviourGroup) -> String {
    match &g.position {
        Position::NoDump => "left no readable dump".into(),
        Position::Idle => "recorded no collective".into(),
        Position::At(at) => {
            let verb = match (g.stuck, at.completed) {
                (true, _) => "wait in",
                (false, Some(true)) => "completed",
                (false, _) => "last issued",
            };
            format!(
                "{verb} {} seq {} of {} {} {}",
                at.op,
                at.seq,
                t.process_groups[at.pg].label(),
                crate::diagnose::sizes_text(&at.input_sizes),
                crate::diagnose::dtypes_text(&at.dtypes)
            )
        }
    }
}

fn site_text(a: &Analysis, g: &BehaviourGroup) -> String {
    let Position::At(at) = &g.position else { return String::new() };
    a.alignment.groups[at.pg]
        .entries_at(&a.trace, g.ranks.as_slice()[0], at.seq)
        .first()
        .map(|e| entry_site(e))
        .unwrap_or_default()
}

/// `train.py:28 main ⟶ torch backward → … → _engine_run_backward`: the user's frame, then the
/// library path below it.
fn entry_site(e: &crate::model::Entry) -> String {
    let Some(f) = e.call_site() else { return String::new() };
    let via = e.library_path().map(|p| format!(" ⟶ {p}")).unwrap_or_default();
    format!("{}:{} {}{via}", short_path(&f.file), f.line, f.function)
}

fn timeline_section(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<section id=\"timeline\">\n<h2>Timeline</h2>\n<p class=\"hint\">Per process group, one lane per rank (or per class of ranks with identical streams), \
         collectives along the sequence id, coloured by op. Hover a collective for its details; click to pin them with its stack. \
         <span class=\"key earliest\">earliest mismatch</span> <span class=\"key stuck\">stuck</span> \
         <span class=\"key mismatch\">other mismatch</span> <span class=\"key culprit\">departed ranks</span> \
         <span class=\"key gap\">elided seqs</span></p>"
    )?;
    writeln!(
        out,
        "<div id=\"legend\" class=\"legend\"></div>\n<div id=\"pgs\"></div>\n<aside id=\"detail\" hidden></aside>"
    )?;
    writeln!(
        out,
        "<noscript><p class=\"dim\">The timeline needs JavaScript; everything else in this report reads without it.</p></noscript>"
    )?;
    writeln!(
        out,
        "<p class=\"dim\">{} collective(s) in {} process group(s).</p>",
        a.alignment.groups.iter().map(|g| g.seqs.len()).sum::<usize>(),
        a.trace.process_groups.len()
    )?;
    writeln!(out, "</section>")
}

/// Where the late ranks were, from their stacks files (`bridge/place.rs`); nothing without.
fn places(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    if a.places.is_empty() {
        return Ok(());
    }
    let from = if a.places.iter().any(|p| p.exception.is_some()) {
        "their stacks, or the traceback in the log"
    } else {
        "their stacks"
    };
    writeln!(
        out,
        "<section id=\"where\">\n<h2>Where the late ranks are <span class=\"dim\">({from})</span></h2>\n<ul>"
    )?;
    for place in &a.places {
        let raised = place.exception.as_ref().map_or_else(
            || ":".to_owned(),
            |e| format!(" raised <code>{}</code> at", Esc(&crate::report::clip_chars(e, 160))),
        );
        write!(
            out,
            "<li data-origin=\"{}\"><b>rank(s) {}</b>{raised} <code>{}:{}</code> in {}()",
            place.origin,
            Esc(&place.ranks.to_string()),
            Esc(&place.file),
            place.line,
            Esc(&place.function)
        )?;
        if let Some(source) = &place.source {
            write!(out, " <code>{}</code>", Esc(source))?;
        }
        for w in &place.within {
            write!(
                out,
                "<br>inside <span class=\"construct\">{}</span> at line {} <code>{}</code>",
                Esc(&w.construct),
                w.line,
                Esc(&w.source)
            )?;
            for dep in &w.dependence {
                write!(
                    out,
                    " <span class=\"dim\">({}: {})</span>",
                    Esc(&dep.kind),
                    Esc(&dep.evidence)
                )?;
            }
        }
        for f in place.frames.iter().skip(1) {
            write!(
                out,
                "<br><span class=\"dim\">called from {}:{} in {}()</span>",
                Esc(&f.file),
                f.line,
                Esc(&f.function)
            )?;
        }
        let from = match place.log_lines {
            Some((first, last)) => {
                format!("traceback: {} lines {first}-{last}", place.stacks_file.display())
            }
            None => format!("stacks: {}", place.stacks_file.display()),
        };
        writeln!(out, "<br><span class=\"dim\">{}</span></li>", Esc(&from))?;
    }
    writeln!(out, "</ul>\n</section>")
}

/// The job's log (`--log`, or found in the dump directory): its claims, each with the lines
/// it rests on, as in the text and JSON reports.
fn log_section(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let Some(log) = &a.log else { return Ok(()) };
    let files: Vec<String> = log.evidence.files.iter().map(|p| p.display().to_string()).collect();
    writeln!(
        out,
        "<section id=\"log\">\n<h2>From the log <span class=\"dim\">({}{})</span></h2>",
        Esc(&files.join(", ")),
        if log.found_beside { ", found in the dump directory" } else { "" }
    )?;
    writeln!(
        out,
        "<p id=\"log-verdict\" data-category=\"{}\">{}</p>",
        log.verdict.category.as_str(),
        Esc(&log.verdict.headline)
    )?;
    if let Some(u) = &log.upgrade {
        writeln!(
            out,
            "<p id=\"log-upgrade\">The log made the dumps' verdict (<b>{}</b>: {}) a {} of rank(s) {}.</p>",
            u.from,
            Esc(&u.from_headline),
            u.to,
            Esc(&crate::model::format_ranks(&u.culprit_ranks))
        )?;
    }
    writeln!(out, "<ul class=\"claims\">")?;
    for c in &log.verdict.claims {
        write!(out, "<li data-kind=\"{}\">{}", claim_kind(c.kind), Esc(&c.text))?;
        for cite in &c.evidence {
            write!(
                out,
                "<br><span class=\"dim\"><code>{}:{}</code></span> <code>{}</code>",
                Esc(&cite.file),
                cite.line,
                Esc(&cite.text)
            )?;
        }
        writeln!(out, "</li>")?;
    }
    writeln!(out, "</ul>\n</section>")
}

/// A claim's kind as JSON writes it (`claims[].kind`).
fn claim_kind(kind: crate::logs::ClaimKind) -> String {
    serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

fn code(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<section id=\"code\">\n<h2>Code</h2>")?;
    let Some(c) = &a.code else {
        let why = super::no_code_reason(a);
        return writeln!(out, "<p class=\"dim\">No code: {why}.</p>\n</section>");
    };
    if let Some(b) = &c.branch {
        let function = b.function.as_deref().map(|f| format!(" in {f}()")).unwrap_or_default();
        writeln!(
            out,
            "<p id=\"branch\"><code>{}:{}</code>{} <span class=\"construct\">{}</span> <code>{}</code></p>",
            Esc(&b.file),
            b.line,
            Esc(&function),
            Esc(&b.construct),
            Esc(&b.source)
        )?;
        if let Some(local) = &b.local_path {
            writeln!(out, "<p class=\"dim\">read from {}</p>", Esc(&local.display().to_string()))?;
        }
    }
    if let Some(s) = &c.snippet {
        write!(out, "<pre class=\"snippet\" id=\"snippet\">")?;
        for (i, line) in s.lines.iter().enumerate() {
            let n = s.start_line + i as u32;
            if n == s.marked_line {
                write!(
                    out,
                    "<span class=\"line marked\" id=\"marked-line\"><span class=\"ln\">{n:>5} ▶</span> {}\n</span>",
                    Esc(line)
                )?;
            } else {
                write!(
                    out,
                    "<span class=\"line\"><span class=\"ln\">{n:>5}  </span> {}\n</span>",
                    Esc(line)
                )?;
            }
        }
        writeln!(out, "</pre>")?;
    }
    if !c.explanation.is_empty() {
        writeln!(out, "<p id=\"explanation\">{}</p>", Esc(&c.explanation))?;
    }
    if let Some(b) = &c.branch
        && !b.dependence.is_empty()
    {
        writeln!(out, "<ul class=\"dependence\">")?;
        for dep in &b.dependence {
            writeln!(out, "<li><b>{}</b>: {}</li>", Esc(&dep.kind), Esc(&dep.evidence))?;
        }
        writeln!(out, "</ul>")?;
    }
    if c.candidates.len() > 1 {
        writeln!(
            out,
            "<details class=\"candidates\" id=\"candidates\"><summary>also possible ({})</summary><ol>",
            c.candidates.len() - 1
        )?;
        for cand in c.candidates.iter().skip(1) {
            let b = &cand.branch;
            write!(
                out,
                "<li><code>{}:{}</code> <code>{}</code> ({})",
                Esc(short_path(&b.file)),
                b.line,
                Esc(&b.source),
                Esc(&b.construct)
            )?;
            for e in &cand.evidence_for {
                write!(out, "<br>+ {}", Esc(e))?;
            }
            for e in &cand.evidence_against {
                write!(out, "<br>− {}", Esc(e))?;
            }
            writeln!(out, "</li>")?;
        }
        writeln!(out, "</ol></details>")?;
    }
    for s in &c.stacks {
        writeln!(
            out,
            "<details class=\"stack\"><summary>{} rank(s) {}: user stack</summary><ol>",
            s.role, s.ranks
        )?;
        for f in &s.frames {
            writeln!(
                out,
                "<li><code>{}:{}</code> {}</li>",
                Esc(&f.file),
                f.line,
                Esc(&f.function)
            )?;
        }
        writeln!(out, "</ol></details>")?;
    }
    for nf in c.not_found.iter().filter(|nf| nf.reason.is_none()) {
        writeln!(
            out,
            "<p class=\"dim\">not found: {} (tried: {})</p>",
            Esc(&nf.file),
            Esc(&nf.tried.join(", "))
        )?;
    }
    writeln!(out, "</section>")
}

fn probes(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<section id=\"probes\">\n<h2>Probes</h2>")?;
    if a.probes.is_empty() {
        return writeln!(
            out,
            "<p class=\"dim\">No probes: they need a branch point found in local sources (--source-root, --path-map).</p>\n</section>"
        );
    }
    writeln!(
        out,
        "<p class=\"hint\"><code>desync analyze … --emit-probes FILE</code> writes them as a patch.</p>"
    )?;
    for p in &a.probes {
        writeln!(
            out,
            "<article class=\"probe\" id=\"probe-{}\"><h3>{} <span class=\"dim\">before {}:{}</span></h3><p>{}</p><pre>{}</pre></article>",
            p.name,
            p.name,
            Esc(short_path(&p.file)),
            p.line,
            Esc(&p.description),
            Esc(&p.snippet)
        )?;
    }
    writeln!(out, "</section>")
}

fn next_steps(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let steps = crate::next_steps::next_steps(a);
    if steps.is_empty() {
        return Ok(());
    }
    writeln!(out, "<section id=\"next-steps\">\n<h2>Next steps</h2>\n<ol>")?;
    for step in &steps {
        let command =
            step.command.as_ref().map(|c| format!("<pre>{}</pre>", Esc(c))).unwrap_or_default();
        writeln!(
            out,
            "<li><strong>{}</strong>{command}<p class=\"dim\">{}</p></li>",
            Esc(&step.title),
            Esc(&step.why)
        )?;
    }
    writeln!(out, "</ol>\n</section>")
}

fn warnings(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let w = &a.trace.warnings;
    writeln!(
        out,
        "<section id=\"warnings\">\n<h2>Warnings <span class=\"dim\">({})</span></h2>",
        w.len()
    )?;
    if w.is_empty() {
        return writeln!(out, "<p class=\"dim\">Nothing odd in the input.</p>\n</section>");
    }
    writeln!(out, "<ul>")?;
    for x in w {
        let place = x.path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default();
        // The JSON report's snake_case names, so both reports say the same thing.
        let kind = serde_json::to_value(x.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        writeln!(
            out,
            "<li><span class=\"kind\">{kind}</span> {}{}</li>",
            Esc(&place),
            Esc(&x.message)
        )?;
    }
    writeln!(out, "</ul>\n</section>")
}

fn footer(a: &Analysis, out: &mut dyn Write) -> io::Result<()> {
    let t = &a.trace;
    let ranks: Vec<u32> = t.ranks.iter().map(|r| r.rank).collect();
    let entries: usize = t.ranks.iter().map(|r| r.entries.len()).sum();
    writeln!(
        out,
        "<footer>{} dump(s) for rank(s) {} of world size {}, {entries} entries, {} process group(s), from <code>{}</code>. desync {}.</footer>",
        t.ranks.len(),
        format_ranks(&ranks),
        t.world_size,
        t.process_groups.len(),
        Esc(&a.input.display().to_string()),
        env!("CARGO_PKG_VERSION")
    )
}

/// HTML-escapes text for element content and double-quoted attributes.
struct Esc<'a>(&'a str);

impl fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                _ => "&#39;",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// Passes JSON through, writing `<` as `\u003c`: inside a `<script>` element the text
/// `</script>` or `<!--` in a string (a file path, an op name) would otherwise end or
/// confuse the element. `<` only occurs inside JSON strings, where the escape is equivalent.
struct ScriptSafe<'a>(&'a mut dyn Write);

impl Write for ScriptSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'<') {
            self.0.write_all(&rest[..i])?;
            self.0.write_all(b"\\u003c")?;
            rest = &rest[i + 1..];
        }
        self.0.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(Esc("a<b>&\"c'").to_string(), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(Esc("plain").to_string(), "plain");
    }

    #[test]
    fn script_safe_hides_closing_tags() {
        let mut buf = Vec::new();
        serde_json::to_writer(ScriptSafe(&mut buf), &"</script><!--").unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(!text.contains('<'), "{text}");
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), "</script><!--");
    }
}
