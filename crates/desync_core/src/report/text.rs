//! The terminal report: verdict first, then the behavioural groups, the earliest mismatch,
//! the code, the probes, and what was odd in the input. Colour only when asked (the CLI
//! decides from the TTY and `NO_COLOR`); lines are kept under 100 columns where data allows.

use std::io::{self, Write};

use crate::Analysis;
use crate::align::{GroupAlignment, Mismatch, MismatchKind};
use crate::diagnose::{BehaviourGroup, Category, Position, short_path};
use crate::model::{Entry, RankSet, Trace};

/// Candidates after the best one shown as "also possible" (JSON `code.candidates` has them all).
const ALSO_POSSIBLE: usize = 2;

#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub color: bool,
    /// Mismatch rows listed per group before the rest are summarised.
    pub max_mismatches: usize,
    /// Terminal width to wrap lines at (`None`: lines stay whole, for pipes and files).
    pub width: Option<usize>,
}

struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
    fn bold(&self, t: &str) -> String {
        self.wrap("1", t)
    }
    fn red(&self, t: &str) -> String {
        self.wrap("1;31", t)
    }
    fn green(&self, t: &str) -> String {
        self.wrap("1;32", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.wrap("33", t)
    }
    fn dim(&self, t: &str) -> String {
        self.wrap("2", t)
    }
}

/// Writes the report; every string from the dumps or the file system (op names, frames,
/// paths, messages) reaches the terminal with its control characters escaped (see
/// [`escape_controls`]), so a dump cannot retitle, clear or rewrite the terminal.
pub fn write_text(a: &Analysis, options: TextOptions, out: &mut dyn Write) -> io::Result<()> {
    let Some(width) = options.width else {
        let mut escaping = Escaping { out, color: options.color };
        return write_report(a, options, &mut escaping);
    };
    let mut rendered = Vec::new();
    write_report(a, options, &mut Escaping { out: &mut rendered, color: options.color })?;
    for line in String::from_utf8_lossy(&rendered).lines() {
        for piece in wrap_line(line, width) {
            writeln!(out, "{piece}")?;
        }
    }
    Ok(())
}

/// Narrowest width wrapped to; below it a hanging indent leaves no room for words.
const MIN_WIDTH: usize = 40;

/// Splits a line longer than `width` columns at spaces, continuing under its own indent plus
/// four (a numbered code line continues under its code). Colour codes take no columns; a word
/// longer than the room is cut.
fn wrap_line(line: &str, width: usize) -> Vec<String> {
    let width = width.max(MIN_WIDTH);
    if visible_columns(line) <= width {
        return vec![line.to_owned()];
    }
    let rest = line.trim_start();
    let indent = &line[..line.len() - rest.len()];
    let hang = match line.find(" | ") {
        Some(bar) if line[..bar].trim().trim_start_matches('>').trim().parse::<u32>().is_ok() => {
            visible_columns(&line[..bar]) + 3
        }
        _ => indent.len() + 4,
    }
    .min(width / 2);
    let mut lines = Vec::new();
    let mut current = indent.to_owned();
    let mut used = visible_columns(indent);
    let mut line_empty = true;
    for word in rest.split(' ') {
        let columns = visible_columns(word);
        if !line_empty && used + 1 + columns > width {
            lines.push(std::mem::replace(&mut current, " ".repeat(hang)));
            used = hang;
            line_empty = true;
        }
        if line_empty && word.is_empty() && !lines.is_empty() {
            continue; // the spaces where the line was broken
        }
        if !line_empty {
            current.push(' ');
            used += 1;
        }
        let mut word = word;
        while used + visible_columns(word) > width {
            let cut = cut_at_columns(word, width.saturating_sub(used).max(1));
            current.push_str(&word[..cut]);
            lines.push(std::mem::replace(&mut current, " ".repeat(hang)));
            used = hang;
            word = &word[cut..];
        }
        current.push_str(word);
        used += visible_columns(word);
        line_empty = false;
    }
    lines.push(current);
    lines
}

/// Columns a string takes on a terminal: characters, not counting colour codes.
fn visible_columns(text: &str) -> usize {
    let mut columns = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => columns += 1,
        }
    }
    columns
}

/// The byte offset after `columns` visible characters of `text` (at least one character).
fn cut_at_columns(text: &str, columns: usize) -> usize {
    let mut seen = 0;
    let mut in_escape = false;
    for (at, c) in text.char_indices() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => {
                if seen == columns.max(1) {
                    return at;
                }
                seen += 1;
            }
        }
    }
    text.len()
}

/// The first `max` characters of `s`, with `…` when cut (exception lines run for paragraphs).
pub fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// Control characters as visible escapes: C0 (ESC, BEL, CR, NUL...) but newline and tab,
/// DEL, and C1 (U+0080 to U+009F, which some terminals also obey). `\x1b` stays text.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let is_control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if is_control(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The colours this report writes; with colour on, these exact sequences pass through
/// whole, and every other control character is escaped. A dump can at most repeat one of
/// them (bold, a colour, a reset): never move the cursor, clear, retitle or ring.
const PALETTE: &[&str] = &["\x1b[0m", "\x1b[1m", "\x1b[1;31m", "\x1b[1;32m", "\x1b[33m", "\x1b[2m"];

/// A writer that escapes control characters in what passes through. Each `write` is one
/// formatted piece (a colour code is always written whole by [`Paint`]).
struct Escaping<'w> {
    out: &'w mut dyn Write,
    color: bool,
}

impl Write for Escaping<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let mut rest: &str = &text;
        while !rest.is_empty() {
            let Some(at) = rest.find('\x1b').filter(|_| self.color) else {
                self.out.write_all(escape_controls(rest).as_bytes())?;
                break;
            };
            self.out.write_all(escape_controls(&rest[..at]).as_bytes())?;
            rest = &rest[at..];
            if let Some(code) = PALETTE.iter().find(|code| rest.starts_with(**code)) {
                self.out.write_all(code.as_bytes())?;
                rest = &rest[code.len()..];
            } else {
                self.out.write_all(b"\\x1b")?;
                rest = &rest[1..];
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

fn write_report(a: &Analysis, options: TextOptions, out: &mut dyn Write) -> io::Result<()> {
    let p = Paint { on: options.color };
    let t = &a.trace;
    let d = &a.diagnosis;
    let label = d.category.as_str().to_uppercase();
    let label = if d.category == Category::Healthy { p.green(&label) } else { p.red(&label) };
    let mut title = format!("{} {label}", p.bold("desync:"));
    if !d.culprit_ranks.is_empty() {
        title.push_str(&format!("  culprit rank(s) {}", p.bold(&d.culprit_ranks.to_string())));
    }
    if let Some(pg) = d.process_group {
        title.push_str(&format!("  {}", t.process_groups[pg].label()));
        if let Some(seq) = d.collective_seq_id {
            title.push_str(&format!(" seq {seq}"));
        }
    }
    writeln!(out, "{title}")?;
    writeln!(out, "  {}", d.headline)?;
    for e in &d.evidence {
        writeln!(out, "  {} {e}", p.dim("·"))?;
    }

    writeln!(out, "\n{}", p.bold("Behavioural groups"))?;
    let lines: Vec<String> = d.groups.iter().map(|g| group_line(t, a, g)).collect();
    for (i, (g, line)) in d.groups.iter().zip(&lines).enumerate() {
        let twins: Vec<&BehaviourGroup> = d
            .groups
            .iter()
            .zip(&lines)
            .enumerate()
            .filter(|(j, (_, other))| *j != i && *other == line)
            .map(|(_, (other, _))| other)
            .collect();
        let who = format!("{:>12}", ranks_label(&g.ranks));
        let who = if g.culprit { p.red(&who) } else { who };
        writeln!(out, "  {who}  {line}{}", how_it_differs(g, &twins))?;
    }

    if let Some(e) = &d.earliest {
        let m = &e.mismatch;
        writeln!(
            out,
            "\n{} {} seq {} ({}; {})",
            p.bold("Earliest mismatch:"),
            t.process_groups[m.pg].label(),
            m.seq,
            m.kind.as_str(),
            e.departure.describe()
        )?;
        if let Some((pg, seq)) = d.stuck_at
            && (pg, seq) != (m.pg, m.seq)
        {
            writeln!(out, "{} {} seq {seq}", p.bold("Stuck at:"), t.process_groups[pg].label())?;
        }
    }

    if !a.places.is_empty() {
        let title = if a.places.iter().any(|p| p.exception.is_some()) {
            "Where the late ranks are (their stacks, or the traceback in the log)"
        } else {
            "Where the late ranks are (their stacks)"
        };
        writeln!(out, "\n{}", p.bold(title))?;
        for place in &a.places {
            let function = format!(" in {}()", place.function);
            let source = place.source.as_ref().map(|s| format!(": `{s}`")).unwrap_or_default();
            let raised = place.exception.as_ref().map_or_else(
                || ":".to_owned(),
                |e| format!(" raised `{}` at", escape_controls(&clip_chars(e, 100))),
            );
            writeln!(
                out,
                "  rank(s) {}{raised} {}:{}{function}{source}",
                place.ranks,
                short_path(&place.file),
                place.line
            )?;
            for w in &place.within {
                let why: Vec<String> = w
                    .dependence
                    .iter()
                    .filter(|d| d.kind != "unknown")
                    .map(|d| d.kind.clone())
                    .collect();
                let why =
                    if why.is_empty() { String::new() } else { format!(" ({})", why.join(", ")) };
                writeln!(
                    out,
                    "    inside the `{}` at line {}: `{}`{why}",
                    w.construct, w.line, w.source
                )?;
            }
            for f in place.frames.iter().skip(1).take(3) {
                writeln!(
                    out,
                    "    {}",
                    p.dim(&format!(
                        "called from {}:{} in {}()",
                        short_path(&f.file),
                        f.line,
                        f.function
                    ))
                )?;
            }
            let from = match place.log_lines {
                Some((first, last)) => {
                    format!("traceback: {} lines {first}-{last}", place.stacks_file.display())
                }
                None => format!("stacks: {}", place.stacks_file.display()),
            };
            writeln!(out, "    {}", p.dim(&escape_controls(&from)))?;
        }
    }

    if a.code.is_none() && d.category != Category::Healthy {
        writeln!(out, "\n{}", p.bold("Code"))?;
        writeln!(out, "  {}", p.dim(&format!("no code: {}", super::no_code_reason(a))))?;
    }
    if let Some(code) = &a.code {
        writeln!(out, "\n{}", p.bold("Code"))?;
        if let Some(b) = &code.branch {
            let function = b.function.as_deref().map(|f| format!(" in {f}()")).unwrap_or_default();
            writeln!(
                out,
                "  {}:{}{function}: `{}` ({})",
                short_path(&b.file),
                b.line,
                b.source,
                b.construct
            )?;
            if let Some(local) = &b.local_path {
                writeln!(out, "  {}", p.dim(&local.display().to_string()))?;
            }
        }
        if let Some(s) = &code.snippet {
            for (i, line) in s.lines.iter().enumerate() {
                let n = s.start_line + i as u32;
                let marker = if n == s.marked_line { p.red(">") } else { " ".into() };
                writeln!(out, "  {marker} {n:>5} | {line}")?;
            }
        }
        if !code.explanation.is_empty() {
            writeln!(out, "  {}", p.yellow(&code.explanation))?;
        }
        for c in code.candidates.iter().skip(1).take(ALSO_POSSIBLE) {
            let b = &c.branch;
            let why = c.evidence_for.first().map(|e| format!(": {e}")).unwrap_or_default();
            writeln!(
                out,
                "  {} {}:{} `{}` ({}){why}",
                p.dim("also possible:"),
                short_path(&b.file),
                b.line,
                b.source,
                b.construct
            )?;
        }
        // A file refused on purpose is explained above and listed among the warnings.
        for nf in code.not_found.iter().filter(|nf| nf.reason.is_none()) {
            writeln!(
                out,
                "  {} {} (tried: {})",
                p.dim("not found:"),
                nf.file,
                nf.tried.join(", ")
            )?;
        }
        if code.branch.is_none() {
            for s in &code.stacks {
                let top: Vec<String> = s
                    .frames
                    .iter()
                    .take(3)
                    .map(|f| format!("{}:{} {}", short_path(&f.file), f.line, f.function))
                    .collect();
                let side = match s.role {
                    "departed" => "culprits",
                    "waiting" => "waiting",
                    _ => "normal path",
                };
                writeln!(out, "  {side}, rank(s) {}: {}", s.ranks, top.join(" < "))?;
            }
        }
    }

    if !a.probes.is_empty() {
        writeln!(
            out,
            "\n{} {}",
            p.bold("Probes"),
            p.dim("(--emit-probes FILE writes them as a patch)")
        )?;
        for probe in &a.probes {
            writeln!(
                out,
                "  {} before {}:{}: {}",
                p.bold(probe.name),
                short_path(&probe.file),
                probe.line,
                probe.description
            )?;
        }
    }

    let steps = crate::next_steps::next_steps(a);
    if !steps.is_empty() {
        writeln!(out, "\n{}", p.bold("Next steps"))?;
        for (i, step) in steps.iter().enumerate() {
            writeln!(out, "  {}. {}", i + 1, step.title)?;
            if let Some(command) = &step.command {
                writeln!(out, "       {}", p.bold(command))?;
            }
            writeln!(out, "       {}", p.dim(&step.why))?;
        }
    }

    write_mismatches(a, options, &p, out)?;

    if !t.warnings.is_empty() {
        writeln!(out, "\n{} ({})", p.bold("Warnings"), t.warnings.len())?;
        for w in &t.warnings {
            let place = w.path.as_ref().map(|x| format!("{}: ", x.display())).unwrap_or_default();
            writeln!(out, "  {} {place}{}", p.yellow("!"), w.message)?;
        }
    }
    // Briefly: with ranks missing here and there, the loaded set of a large job is a long list.
    let ranks: RankSet = t.ranks.iter().map(|r| r.rank).collect();
    let entries: usize = t.ranks.iter().map(|r| r.entries.len()).sum();
    writeln!(
        out,
        "\n{}",
        p.dim(&format!(
            "{} dump(s) for rank(s) {} of world size {}, {} entries, {} process group(s), from {}",
            t.ranks.len(),
            ranks.brief(),
            t.world_size,
            entries,
            t.process_groups.len(),
            a.input.display()
        ))
    )?;
    if let Some(log) = &a.log {
        crate::logs::report::write_text_section(log, out)?;
    }
    Ok(())
}

/// What a group's ranks are doing, without the ranks.
fn group_line(t: &Trace, a: &Analysis, g: &BehaviourGroup) -> String {
    match &g.position {
        Position::NoDump => "left no readable dump".to_owned(),
        Position::Idle => "recorded no collective".to_owned(),
        Position::At(at) => {
            let pg = t.process_groups[at.pg].label();
            let verb = match (g.stuck, at.completed) {
                (true, _) => "wait in",
                (false, Some(true)) => "completed",
                (false, _) => "last issued",
            };
            let site = a.alignment.groups[at.pg]
                .entries_at(t, g.ranks.as_slice()[0], at.seq)
                .first()
                .and_then(|e| {
                    let via = e.library_path().map(|p| format!(" ⟶ {p}")).unwrap_or_default();
                    e.call_site().map(|f| format!(" at {}:{}{via}", short_path(&f.file), f.line))
                })
                .unwrap_or_default();
            let waiting = if g.waiting_for.is_empty() {
                String::new()
            } else {
                format!(", waiting for {}", g.waiting_for)
            };
            format!("{verb} {} seq {} of {pg}{site}{waiting}", at.op, at.seq)
        }
    }
}

/// Groups are split on everything their position records; when two print the same line, the
/// hidden difference (completion flag, NCCL state, sizes, dtypes, stack) is said.
fn how_it_differs(g: &BehaviourGroup, twins: &[&BehaviourGroup]) -> String {
    let Position::At(at) = &g.position else { return String::new() };
    let others: Vec<&crate::diagnose::At> = twins
        .iter()
        .filter_map(|t| if let Position::At(o) = &t.position { Some(o) } else { None })
        .collect();
    if others.is_empty() {
        return String::new();
    }
    let mut notes = Vec::new();
    if others.iter().any(|o| o.completed != at.completed) {
        notes.push(match at.completed {
            Some(true) => "its dump marks the collective completed".to_owned(),
            Some(false) => "its dump marks the collective not completed".to_owned(),
            None => "its dump does not say whether it completed".to_owned(),
        });
    }
    if others.iter().any(|o| o.state != at.state) {
        notes.push(format!("state {}", at.state.as_str()));
    }
    if others.iter().any(|o| o.input_sizes != at.input_sizes) {
        notes.push(format!("sizes {}", crate::diagnose::sizes_text(&at.input_sizes)));
    }
    if others.iter().any(|o| o.dtypes != at.dtypes) {
        notes.push(format!("dtype {}", crate::diagnose::dtypes_text(&at.dtypes)));
    }
    if notes.is_empty() && others.iter().any(|o| o.token != at.token) {
        notes.push("called through another stack".to_owned());
    }
    if notes.is_empty() { String::new() } else { format!(" ({})", notes.join(", ")) }
}

fn ranks_label(r: &RankSet) -> String {
    if r.len() == 1 { format!("rank {r}") } else { format!("ranks {r}") }
}

fn write_mismatches(
    a: &Analysis,
    options: TextOptions,
    p: &Paint,
    out: &mut dyn Write,
) -> io::Result<()> {
    let total: usize =
        a.alignment.groups.iter().map(|g| g.mismatches.len() + g.p2p_mismatches.len()).sum();
    if total == 0 {
        return Ok(());
    }
    writeln!(out, "\n{} ({total})", p.bold("Mismatches"))?;
    let limit = if options.max_mismatches == 0 { 5 } else { options.max_mismatches };
    let dumped: RankSet = a.trace.ranks.iter().map(|r| r.rank).collect();
    for g in &a.alignment.groups {
        let pg = a.trace.process_groups[g.pg].label();
        let rows = mismatch_rows(a, g, &dumped);
        for (seqs, kind, sides) in rows.iter().take(limit) {
            writeln!(out, "  {pg} seq {seqs:<6} {kind:<8} {sides}")?;
        }
        if rows.len() > limit {
            writeln!(out, "  {pg}: {} more row(s) (see --format json)", rows.len() - limit)?;
        }
        for m in g.p2p_mismatches.iter().take(limit) {
            writeln!(out, "  {pg} p2p {}->{} #{}: {:?}", m.src, m.dst, m.index, m.kind)?;
        }
    }
    Ok(())
}

/// Mismatch rows of one group as (seqs, kind, sides): consecutive seqs that the same ranks
/// never issued collapse into one row; every other row shows, side by side, the fields that
/// differ between the sides (op and sizes always, dtypes, output sizes and call sites when
/// they differ).
fn mismatch_rows(
    a: &Analysis,
    g: &GroupAlignment,
    dumped: &RankSet,
) -> Vec<(String, &'static str, String)> {
    let not_issued = |m: &Mismatch| -> RankSet {
        m.sides
            .iter()
            .filter(|s| s.holder.is_none())
            .flat_map(|s| s.ranks.as_slice())
            .copied()
            .collect()
    };
    let absent_text = |ranks: &RankSet| {
        let no_dump = ranks.as_slice().iter().all(|&r| !dumped.contains(r));
        format!("{ranks}: not issued{}", if no_dump { " (no dump)" } else { "" })
    };
    let mut rows = Vec::new();
    let mut i = 0;
    while i < g.mismatches.len() {
        let m = &g.mismatches[i];
        let mut end = i + 1;
        if m.kind == MismatchKind::Missing {
            let absent = not_issued(m);
            while end < g.mismatches.len()
                && g.mismatches[end].kind == MismatchKind::Missing
                && g.mismatches[end].seq == g.mismatches[end - 1].seq + 1
                && not_issued(&g.mismatches[end]) == absent
            {
                end += 1;
            }
            if end - i > 1 {
                let run = &g.mismatches[i..end];
                let issued: RankSet = m
                    .sides
                    .iter()
                    .filter(|s| s.holder.is_some())
                    .flat_map(|s| s.ranks.as_slice())
                    .copied()
                    .collect();
                let ops = op_counts(run.iter().filter_map(|m| {
                    let holder = m.sides.iter().find_map(|s| s.holder)?;
                    Some(g.entries_at(&a.trace, holder, m.seq).first()?.op().name.clone())
                }));
                rows.push((
                    format!("{}–{}", m.seq, run[run.len() - 1].seq),
                    m.kind.as_str(),
                    format!("{} | {issued}: issued {ops}", absent_text(&absent)),
                ));
                i = end;
                continue;
            }
        }
        let entries: Vec<Option<&Entry>> = m
            .sides
            .iter()
            .map(|s| s.holder.and_then(|h| g.entries_at(&a.trace, h, m.seq).first().copied()))
            .collect();
        let issued: Vec<&Entry> = entries.iter().flatten().copied().collect();
        let differs = |f: &dyn Fn(&Entry) -> String| issued.windows(2).any(|w| f(w[0]) != f(w[1]));
        let dtypes = |e: &Entry| crate::diagnose::dtypes_text(e.input_dtypes());
        let outputs = |e: &Entry| crate::diagnose::sizes_text(e.output_sizes());
        let site = |e: &Entry| {
            e.call_site().map(|f| format!("{}:{}", short_path(&f.file), f.line)).unwrap_or_default()
        };
        let (show_dtypes, show_outputs, show_sites) = (
            m.kind == MismatchKind::Dtype || differs(&dtypes),
            // Output sizes say something of their own for gathers, scatters and splits.
            m.kind == MismatchKind::Numel
                || differs(&outputs)
                    && issued
                        .iter()
                        .any(|e| outputs(e) != crate::diagnose::sizes_text(e.input_sizes())),
            differs(&site),
        );
        let sides: Vec<String> = m
            .sides
            .iter()
            .zip(&entries)
            .map(|(s, e)| match e {
                None => absent_text(&s.ranks),
                Some(e) => {
                    let mut what =
                        format!("{} {}", e.op().name, crate::diagnose::sizes_text(e.input_sizes()));
                    if show_outputs {
                        what.push_str(&format!(" -> {}", outputs(e)));
                    }
                    if show_dtypes {
                        what.push_str(&format!(" {}", dtypes(e)));
                    }
                    if show_sites && !site(e).is_empty() {
                        what.push_str(&format!(" at {}", site(e)));
                    }
                    format!("{}: {what}", s.ranks)
                }
            })
            .collect();
        rows.push((m.seq.to_string(), m.kind.as_str(), sides.join(" | ")));
        i = end;
    }
    rows
}

/// Op names in order of first appearance with their counts: `broadcast ×4, all_reduce ×5`.
fn op_counts(names: impl Iterator<Item = std::sync::Arc<str>>) -> String {
    let mut counts: Vec<(std::sync::Arc<str>, usize)> = Vec::new();
    for name in names {
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(n, c)| if *c == 1 { n.to_string() } else { format!("{n} ×{c}") })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_stay_whole() {
        assert_eq!(wrap_line("  a short line", 80), vec!["  a short line"]);
    }

    #[test]
    fn long_lines_break_at_spaces_under_a_hanging_indent() {
        let line = format!("  {}", "word ".repeat(30).trim_end());
        let wrapped = wrap_line(&line, 40);
        assert!(wrapped.len() > 1);
        assert!(wrapped.iter().all(|l| l.chars().count() <= 40), "{wrapped:#?}");
        assert!(wrapped[1..].iter().all(|l| l.starts_with("      word")), "{wrapped:#?}");
        let words: usize = wrapped.iter().map(|l| l.split_whitespace().count()).sum();
        assert_eq!(words, 30);
    }

    #[test]
    fn code_lines_continue_under_their_code_and_long_words_are_cut() {
        let line = format!("  >    43 |     {}", "x".repeat(100));
        let wrapped = wrap_line(&line, 50);
        assert!(wrapped.iter().all(|l| l.chars().count() <= 50), "{wrapped:#?}");
        let hang = "  >    43 | ".len();
        assert!(wrapped[1..].iter().all(|l| l[..hang].trim().is_empty()), "{wrapped:#?}");
        assert_eq!(wrapped.concat().matches('x').count(), 100);
    }

    #[test]
    fn colour_codes_take_no_columns() {
        let red = "\x1b[1;31mred\x1b[0m";
        assert_eq!(visible_columns(red), 3);
        let line = format!("{red} {}", "y ".repeat(20));
        assert!(wrap_line(&line, 40).iter().all(|l| visible_columns(l) <= 40));
    }
}
