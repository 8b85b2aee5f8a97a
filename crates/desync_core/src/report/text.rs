//! The terminal report: verdict first, then the behavioural groups, the earliest mismatch,
//! the code, the probes, and what was odd in the input. Colour only when asked (the CLI
//! decides from the TTY and `NO_COLOR`); lines are kept under 100 columns where data allows.

use std::io::{self, Write};

use crate::Analysis;
use crate::diagnose::{BehaviourGroup, Category, Position, short_path};
use crate::model::{RankSet, Trace, format_ranks};

/// Candidates after the best one shown as "also possible" (JSON `code.candidates` has them all).
const ALSO_POSSIBLE: usize = 2;

#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub color: bool,
    /// Mismatch rows listed per group before the rest are summarised.
    pub max_mismatches: usize,
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
    let mut escaping = Escaping { out, color: options.color };
    write_report(a, options, &mut escaping)
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
    for g in &d.groups {
        writeln!(out, "{}", group_line(t, a, g, &p))?;
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
                writeln!(out, "  {} rank(s) {}: {}", s.role, s.ranks, top.join(" < "))?;
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

    write_mismatches(a, options, &p, out)?;

    if !t.warnings.is_empty() {
        writeln!(out, "\n{} ({})", p.bold("Warnings"), t.warnings.len())?;
        for w in &t.warnings {
            let place = w.path.as_ref().map(|x| format!("{}: ", x.display())).unwrap_or_default();
            writeln!(out, "  {} {place}{}", p.yellow("!"), w.message)?;
        }
    }
    let ranks: Vec<u32> = t.ranks.iter().map(|r| r.rank).collect();
    let entries: usize = t.ranks.iter().map(|r| r.entries.len()).sum();
    writeln!(
        out,
        "\n{}",
        p.dim(&format!(
            "{} dump(s) for rank(s) {} of world size {}, {} entries, {} process group(s), from {}",
            t.ranks.len(),
            format_ranks(&ranks),
            t.world_size,
            entries,
            t.process_groups.len(),
            a.input.display()
        ))
    )?;
    Ok(())
}

fn group_line(t: &Trace, a: &Analysis, g: &BehaviourGroup, p: &Paint) -> String {
    let who = format!("{:>12}", ranks_label(&g.ranks));
    let who = if g.culprit { p.red(&who) } else { who };
    let what = match &g.position {
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
    };
    format!("  {who}  {what}")
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
    for g in &a.alignment.groups {
        let pg = a.trace.process_groups[g.pg].label();
        for m in g.mismatches.iter().take(limit) {
            let sides: Vec<String> = m
                .sides
                .iter()
                .map(|s| {
                    let what = s
                        .holder
                        .and_then(|h| g.entries_at(&a.trace, h, m.seq).first().copied())
                        .map_or("not issued".to_owned(), |e| {
                            format!(
                                "{} {}",
                                e.op().name,
                                crate::diagnose::sizes_text(e.input_sizes())
                            )
                        });
                    format!("{}: {what}", s.ranks)
                })
                .collect();
            writeln!(out, "  {pg} seq {:<6} {:<8} {}", m.seq, m.kind.as_str(), sides.join(" | "))?;
        }
        if g.mismatches.len() > limit {
            writeln!(out, "  {pg}: {} more (see --format json)", g.mismatches.len() - limit)?;
        }
        for m in g.p2p_mismatches.iter().take(limit) {
            writeln!(out, "  {pg} p2p {}->{} #{}: {:?}", m.src, m.dst, m.index, m.kind)?;
        }
    }
    Ok(())
}
