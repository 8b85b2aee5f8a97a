//! The probes as one unified diff that `git apply` / `patch -p1` takes from the base directory.
//!
//! Only insertions: each probe's statements go before its line. The file's bytes are kept as
//! they are: every context line with its own ending (`\r\n` stays `\r\n`), inserted lines with
//! the ending of the line they precede, and a last line without a newline marked as such
//! (`\ No newline at end of file`), so the patch applies to the file as it is on disk. A file
//! ending lines with a lone `\r` (which Python reads as a newline but `git apply` does not)
//! gets no patch: its probes stay snippets.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{DECISION, PROBE_IMPORTS, Probe};
use crate::bridge::{Resolver, SourceOptions};

/// Lines of context around each insertion.
const CONTEXT: usize = 3;

/// A unified diff inserting every probe meant for the patch, per file, paths relative to
/// `base` when possible. Files are read through `sources`' roots, like every source file.
pub fn probes_diff(probes: &[Probe], base: &Path, sources: &SourceOptions) -> String {
    let resolver = Resolver::new(sources);
    let mut by_file: Vec<(&PathBuf, Vec<&Probe>)> = Vec::new();
    for p in probes.iter().filter(|p| p.in_patch) {
        let Some(path) = &p.local_path else { continue };
        match by_file.iter_mut().find(|(f, _)| *f == path) {
            Some((_, list)) => list.push(p),
            None => by_file.push((path, vec![p])),
        }
    }
    let mut out = String::new();
    for (path, mut list) in by_file {
        let Ok(text) = resolver.read_local(path) else { continue };
        let Some(lines) = split_lines(&text) else { continue };
        list.sort_by_key(|p| p.line);
        let name = relative(path, base);
        let _ = writeln!(out, "--- a/{name}\n+++ b/{name}");
        out.push_str(&hunks(&lines, &list));
    }
    out
}

fn relative(path: &Path, base: &Path) -> String {
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (p, b) = (absolute(path), absolute(base));
    p.strip_prefix(&b).map_or_else(|_| path.display().to_string(), |r| r.display().to_string())
}

/// A line of the file and its ending (`""` for a last line without one).
struct Line<'a> {
    text: &'a str,
    end: &'a str,
}

/// The file's lines with their endings; `None` when a lone `\r` ends a line.
fn split_lines(text: &str) -> Option<Vec<Line<'_>>> {
    let mut lines = Vec::new();
    for raw in text.split_inclusive('\n') {
        let body = raw.strip_suffix('\n').unwrap_or(raw);
        let text = body.strip_suffix('\r').unwrap_or(body);
        if text.contains('\r') || (!raw.ends_with('\n') && body.len() != text.len()) {
            return None;
        }
        lines.push(Line { text, end: &raw[text.len()..] });
    }
    Some(lines)
}

/// Insertions as unified-diff hunks with [`CONTEXT`] lines of context; insertion points closer
/// than that share a hunk so that hunks never overlap (git apply rejects overlaps).
fn hunks(lines: &[Line<'_>], probes: &[&Probe]) -> String {
    let default_end = lines.iter().map(|l| l.end).find(|e| !e.is_empty()).unwrap_or("\n");
    // Insertion points (1-based line the text goes before) with their statements, in order.
    let mut points: Vec<(usize, Vec<&str>)> = Vec::new();
    for p in probes {
        let line = p.line as usize;
        if line == 0 || line > lines.len() {
            continue;
        }
        if points.last().is_none_or(|(l, _)| *l != line) {
            points.push((line, Vec::new()));
        }
        let Some((_, body)) = points.last_mut() else { continue };
        for s in &p.statements {
            // The imports and the decision are stated once per place: the condition is
            // evaluated once however many probes there use it.
            let shared =
                s.trim_start().starts_with(PROBE_IMPORTS) || s.trim_start().starts_with(DECISION);
            if !(shared && body.contains(&s.as_str())) {
                body.push(s);
            }
        }
    }
    let mut out = String::new();
    let mut added_before = 0usize;
    let mut i = 0;
    while i < points.len() {
        let mut j = i;
        while j + 1 < points.len() && points[j + 1].0 - points[j].0 <= 2 * CONTEXT {
            j += 1;
        }
        let start = points[i].0.saturating_sub(CONTEXT).max(1);
        let end = (points[j].0 + CONTEXT - 1).min(lines.len());
        let mut body = String::new();
        let mut inserted = 0;
        let mut next = i;
        for n in start..=end {
            let line = &lines[n - 1];
            if next <= j && points[next].0 == n {
                let ending = if line.end.is_empty() { default_end } else { line.end };
                for statement in &points[next].1 {
                    for l in statement.split('\n') {
                        let _ = write!(body, "+{l}{ending}");
                        inserted += 1;
                    }
                }
                next += 1;
            }
            let _ = write!(body, " {}{}", line.text, line.end);
            if line.end.is_empty() {
                body.push_str("\n\\ No newline at end of file\n");
            }
        }
        let old_len = end - start + 1;
        let _ = writeln!(
            out,
            "@@ -{start},{old_len} +{},{} @@",
            start + added_before,
            old_len + inserted
        );
        out.push_str(&body);
        added_before += inserted;
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(line: u32, statements: &[&str]) -> Probe {
        Probe {
            name: "consensus",
            description: String::new(),
            file: "t.py".into(),
            local_path: None,
            line,
            snippet: String::new(),
            in_patch: true,
            statements: statements.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn endings_and_a_missing_final_newline_are_kept() {
        let lines = split_lines("a\r\nb\r\nc").unwrap();
        let diff = hunks(&lines, &[&probe(3, &["x = (1 +\n  2)"])]);
        assert_eq!(
            diff,
            "@@ -1,3 +1,5 @@\n a\r\n b\r\n+x = (1 +\r\n+  2)\r\n c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn shared_statements_are_written_once_per_place() {
        let lines = split_lines("if c:\n    pass\n").unwrap();
        let decide = format!("{DECISION}bool((c))");
        let a = probe(1, &[PROBE_IMPORTS, &decide, "a()"]);
        let b = probe(1, &[PROBE_IMPORTS, &decide, "b()"]);
        let diff = hunks(&lines, &[&a, &b]);
        assert_eq!(diff.matches(DECISION).count(), 1, "{diff}");
        assert!(diff.contains("+a()\n+b()\n"), "{diff}");
    }

    #[test]
    fn a_lone_carriage_return_gets_no_patch() {
        assert!(split_lines("a\rb\n").is_none());
        assert!(split_lines("a\r").is_none());
    }
}
