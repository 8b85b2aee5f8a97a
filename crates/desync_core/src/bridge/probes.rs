//! Minimal confirming probes at the branch point, as snippets and as a unified diff that
//! applies with `git apply` / `patch -p1` from the directory given as base.
//!
//! 1. consensus: all ranks `all_reduce` MIN and MAX of the decision and assert they agree, so
//!    the job fails fast at the branch with a clear message instead of timing out;
//! 2. decision log: each rank prints the condition's value with a per-rank counter;
//! 3. call log: before the collective, a structured "about to call" line with a metadata hash.
//!
//! Probes evaluate the condition once more; conditions with side effects need care, and the
//! snippet says so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{CodeFinding, Resolver, SourceOptions};
use crate::diagnose::short_path;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Probe {
    pub name: &'static str,
    pub description: String,
    /// As in the frames.
    pub file: String,
    #[serde(serialize_with = "crate::report::serialize_opt_path")]
    pub local_path: Option<PathBuf>,
    /// The probe goes right before this line.
    pub line: u32,
    pub snippet: String,
}

/// The probes for a code finding; its file is read again through the same roots.
pub fn probes(code: &CodeFinding, sources: &SourceOptions) -> Vec<Probe> {
    let Some(b) = &code.branch else { return Vec::new() };
    let Some(local) = &b.local_path else { return Vec::new() };
    let Ok(text) = Resolver::new(sources).read_local(local) else { return Vec::new() };
    let lines: Vec<&str> = text.lines().collect();
    let indent_of = |line: u32| -> String {
        let text = lines.get(line as usize - 1).copied().unwrap_or("");
        text[..text.len() - text.trim_start().len()].to_owned()
    };
    let at = format!("{}:{}", short_path(&b.file), b.line);
    let rank = "torch.distributed.get_rank()";
    let mut out = Vec::new();
    let probe = |name, description: String, line: u32, body: Vec<String>| {
        let indent = indent_of(line);
        let snippet = body.iter().map(|l| format!("{indent}{l}\n")).collect::<String>();
        Probe {
            name,
            description,
            file: b.file.clone(),
            local_path: Some(local.clone()),
            line,
            snippet,
        }
    };
    // An exception type is no condition to agree on; the call log still shows who skipped.
    let condition =
        b.condition.as_ref().filter(|_| b.handler_line.is_none() && b.construct != "except");
    if let (Some(cond), Some(cond_line)) = (condition, b.condition_line.or(Some(b.line))) {
        let quoted = cond.replace('"', "'").replace('{', "{{").replace('}', "}}");
        out.push(probe(
            "consensus",
            format!("assert that every rank takes the same decision on `{cond}` (all_reduce MIN/MAX); fails fast at {at} instead of timing out"),
            cond_line,
            vec![
                "# desync probe: do all ranks take the same decision here?".into(),
                format!("_desync_flag = torch.tensor([int(bool({cond}))], dtype=torch.int64)"),
                "_desync_lo, _desync_hi = _desync_flag.clone(), _desync_flag.clone()".into(),
                "torch.distributed.all_reduce(_desync_lo, op=torch.distributed.ReduceOp.MIN)".into(),
                "torch.distributed.all_reduce(_desync_hi, op=torch.distributed.ReduceOp.MAX)".into(),
                format!(
                    "assert _desync_lo.item() == _desync_hi.item(), f\"desync probe {at}: ranks disagree on `{quoted}` (rank {{{rank}}}: {{bool(_desync_flag.item())}})\""
                ),
            ],
        ));
        out.push(probe(
            "decision_log",
            format!("log each rank's value of `{cond}` with a per-rank counter"),
            cond_line,
            vec![
                "# desync probe: per-rank decision log".into(),
                "globals()['_desync_n'] = globals().get('_desync_n', 0) + 1".into(),
                format!(
                    "print(f\"[desync-probe] rank={{{rank}}} n={{globals()['_desync_n']}} {at} `{quoted}`={{bool({cond})}}\", flush=True)"
                ),
            ],
        ));
    }
    let call_line = match b.construct.as_str() {
        "call" => Some(b.line),
        _ => b.skipped_line,
    };
    if let Some(line) = call_line {
        let call = lines
            .get(line as usize - 1)
            .map_or("", |l| l.trim())
            .replace('"', "'")
            .replace('{', "{{")
            .replace('}', "}}");
        let first_arg = first_argument(lines.get(line as usize - 1).copied().unwrap_or(""));
        let meta = first_arg.map_or_else(
            || "None".to_owned(),
            |a| format!("(tuple(getattr({a}, 'shape', ())), str(getattr({a}, 'dtype', '')))"),
        );
        out.push(probe(
            "call_log",
            format!("log every rank's arrival at {}:{line} with a counter and a hash of the collective's metadata", short_path(&b.file)),
            line,
            vec![
                "# desync probe: about to call a collective".into(),
                "globals()['_desync_calls'] = globals().get('_desync_calls', 0) + 1".into(),
                format!("_desync_meta = {meta}"),
                format!(
                    "print(f\"[desync-probe] rank={{{rank}}} call={{globals()['_desync_calls']}} about to run `{call}` at {}:{line} meta={{_desync_meta}} hash={{hash(str(_desync_meta)) & 0xffffffff:08x}}\", flush=True)",
                    short_path(&b.file)
                ),
            ],
        ));
    }
    out
}

/// The first argument of the call on a line: `dist.all_reduce(grad, op=...)` -> `grad`.
fn first_argument(line: &str) -> Option<String> {
    let open = line.find('(')?;
    let rest = &line[open + 1..];
    let mut depth = 0;
    let end = rest.char_indices().find(|&(_, c)| {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ',' | ')' if depth == 0 => return true,
            _ => {}
        }
        false
    })?;
    let arg = rest[..end.0].trim();
    (!arg.is_empty() && !arg.contains('=')).then(|| arg.to_owned())
}

/// A unified diff inserting every probe, per file, paths relative to `base` when possible.
/// Files are read through `sources`' roots, like every source file.
pub fn probes_diff(probes: &[Probe], base: &Path, sources: &SourceOptions) -> String {
    let resolver = Resolver::new(sources);
    let mut by_file: Vec<(&PathBuf, Vec<&Probe>)> = Vec::new();
    for p in probes {
        let Some(path) = &p.local_path else { continue };
        match by_file.iter_mut().find(|(f, _)| *f == path) {
            Some((_, list)) => list.push(p),
            None => by_file.push((path, vec![p])),
        }
    }
    let mut out = String::new();
    for (path, mut list) in by_file {
        let Ok(text) = resolver.read_local(path) else { continue };
        list.sort_by_key(|p| p.line);
        let name = relative(path, base);
        let _ = writeln!(out, "--- a/{name}\n+++ b/{name}");
        out.push_str(&hunks(&text, &list));
    }
    out
}

fn relative(path: &Path, base: &Path) -> String {
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (p, b) = (absolute(path), absolute(base));
    p.strip_prefix(&b).map_or_else(|_| path.display().to_string(), |r| r.display().to_string())
}

/// Insertions as unified-diff hunks with three lines of context; insertion points closer
/// than that share a hunk so that hunks never overlap (git apply rejects overlaps).
fn hunks(text: &str, probes: &[&Probe]) -> String {
    const CONTEXT: usize = 3;
    let lines: Vec<&str> = text.lines().collect();
    // Insertion points (1-based line the text goes before) with their lines, in order.
    let mut points: Vec<(usize, Vec<String>)> = Vec::new();
    for p in probes {
        let line = (p.line as usize).clamp(1, lines.len().max(1));
        match points.last_mut() {
            Some((l, body)) if *l == line => body.extend(p.snippet.lines().map(str::to_owned)),
            _ => points.push((line, p.snippet.lines().map(str::to_owned).collect())),
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
        let first = points[i].0;
        let last = points[j].0;
        let start = first.saturating_sub(CONTEXT).max(1);
        let end = (last + CONTEXT - 1).min(lines.len());
        let mut body = String::new();
        let mut inserted = 0;
        let mut next = i;
        for line in start..=end.max(start) {
            if next <= j && points[next].0 == line {
                for l in &points[next].1 {
                    let _ = writeln!(body, "+{l}");
                    inserted += 1;
                }
                next += 1;
            }
            if let Some(l) = lines.get(line - 1) {
                let _ = writeln!(body, " {l}");
            }
        }
        let old_len = if lines.is_empty() { 0 } else { end.max(start) - start + 1 };
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

    #[test]
    fn first_argument_of_call() {
        assert_eq!(first_argument("    dist.all_reduce(grad, op=SUM)").as_deref(), Some("grad"));
        assert_eq!(first_argument("dist.all_gather(out, t[:n])").as_deref(), Some("out"));
        assert_eq!(first_argument("dist.barrier()"), None);
    }
}
