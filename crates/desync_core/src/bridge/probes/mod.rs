//! Minimal confirming probes at the branch point, as snippets and as a unified diff that
//! applies with `git apply` / `patch -p1` from the directory given as base.
//!
//! 1. consensus: all ranks `all_reduce` MIN and MAX of the decision and assert they agree, so
//!    the job fails fast at the branch with a clear message instead of timing out;
//! 2. decision log: each rank prints the condition's value with a per-rank counter;
//!    for a `for` loop, a length consensus and a per-iteration count instead (a decision on
//!    `bool(loader)` says nothing);
//! 3. call log: before the collective, a structured "about to call" line with the hash of the
//!    shape and dtype of the tensor it sends; an arrival log (no hash) before a call that only
//!    issues collectives inside a library (`loss.backward()`).
//!
//! Probes evaluate the condition once more; conditions with side effects need care, and the
//! snippet says so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{CodeFinding, Resolver, SourceOptions};
use crate::diagnose::short_path;

/// The first line of every probe.
const PROBE_IMPORTS: &str = "import torch as _desync_torch, torch.distributed as _desync_dist";

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
    let rank = "_desync_dist.get_rank()";
    let mut out = Vec::new();
    let probe = |name, description: String, line: u32, body: Vec<String>| {
        let indent = indent_of(line);
        // The file may not import torch, or may bind `torch`/`dist` to something else: the
        // probe imports under private names (a plain `import torch` inside a function would
        // make `torch` local to all of it and break earlier uses).
        let snippet = std::iter::once(PROBE_IMPORTS)
            .chain(body.iter().map(String::as_str))
            .map(|l| format!("{indent}{l}\n"))
            .collect::<String>();
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
    let is_loop_over = b.construct == "for";
    if let (true, Some(iterable)) = (is_loop_over, condition) {
        out.extend(loop_probes(&lines, b.line, iterable, &at, &probe));
    } else if let (Some(cond), Some(cond_line)) = (condition, b.condition_line.or(Some(b.line))) {
        let quoted = cond.replace('"', "'").replace('{', "{{").replace('}', "}}");
        out.push(probe(
            "consensus",
            format!("assert that every rank takes the same decision on `{cond}` (all_reduce MIN/MAX); fails fast at {at} instead of timing out"),
            cond_line,
            vec![
                "# desync probe: do all ranks take the same decision here?".into(),
                format!("_desync_flag = _desync_torch.tensor([int(bool({cond}))], dtype=_desync_torch.int64)"),
                "_desync_lo, _desync_hi = _desync_flag.clone(), _desync_flag.clone()".into(),
                "_desync_dist.all_reduce(_desync_lo, op=_desync_dist.ReduceOp.MIN)".into(),
                "_desync_dist.all_reduce(_desync_hi, op=_desync_dist.ReduceOp.MAX)".into(),
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
        let text = lines.get(line as usize - 1).copied().unwrap_or("");
        let call = text.trim().replace('"', "'").replace('{', "{{").replace('}', "}}");
        let place = format!("{}:{line}", short_path(&b.file));
        let counter = "globals()['_desync_calls'] = globals().get('_desync_calls', 0) + 1";
        let arrival = format!(
            "print(f\"[desync-probe] rank={{{rank}}} call={{globals()['_desync_calls']}} about to run `{call}` at {place}"
        );
        out.push(match collective_input(text) {
            // The collective's own tensor: its shape and dtype are what peers must match.
            Some(input) => probe(
                "call_log",
                format!("log every rank's arrival at {place} with a counter and a hash of `{input}`'s shape and dtype"),
                line,
                vec![
                    "# desync probe: about to call a collective".into(),
                    counter.into(),
                    format!("_desync_meta = (tuple(getattr({input}, 'shape', ())), str(getattr({input}, 'dtype', '')))"),
                    format!("{arrival} meta={{_desync_meta}} hash={{hash(str(_desync_meta)) & 0xffffffff:08x}}\", flush=True)"),
                ],
            ),
            // A call that issues collectives inside a library (`loss.backward()`): no tensor
            // here to describe, so only who arrives, and how often.
            None => probe(
                "arrival_log",
                format!("log every rank's arrival at {place} with a per-rank counter"),
                line,
                vec![
                    "# desync probe: about to run code that issues collectives".into(),
                    counter.into(),
                    format!("{arrival}\", flush=True)"),
                ],
            ),
        });
    }
    out
}

/// Probes for a `for` loop the sides left after different numbers of iterations: agreeing on
/// `bool(loader)` says nothing, so the ranks agree on the iterable's *length* where it has
/// one (a name or attribute, evaluated again without side effects), and each iteration logs
/// its per-rank count, which shows where the counts part.
fn loop_probes(
    lines: &[&str],
    for_line: u32,
    iterable: &str,
    at: &str,
    probe: &dyn Fn(&'static str, String, u32, Vec<String>) -> Probe,
) -> Vec<Probe> {
    let rank = "_desync_dist.get_rank()";
    let quoted = iterable.replace('"', "'").replace('{', "{{").replace('}', "}}");
    let mut out = Vec::new();
    let plain = iterable.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if plain {
        out.push(probe(
            "length_consensus",
            format!("assert that every rank iterates `{iterable}` the same number of times (all_reduce MIN/MAX of its length, where it has one); fails fast at {at}"),
            for_line,
            vec![
                "# desync probe: do all ranks loop the same number of times?".into(),
                format!("_desync_len = _desync_torch.tensor([len({iterable}) if hasattr({iterable}, '__len__') else -1], dtype=_desync_torch.int64)"),
                "_desync_lo, _desync_hi = _desync_len.clone(), _desync_len.clone()".into(),
                "_desync_dist.all_reduce(_desync_lo, op=_desync_dist.ReduceOp.MIN)".into(),
                "_desync_dist.all_reduce(_desync_hi, op=_desync_dist.ReduceOp.MAX)".into(),
                format!("assert _desync_lo.item() == _desync_hi.item(), f\"desync probe {at}: ranks iterate `{quoted}` a different number of times (rank {{{rank}}}: {{_desync_len.item()}})\""),
            ],
        ));
    }
    if let Some(body_line) = first_body_line(lines, for_line) {
        out.push(probe(
            "iteration_log",
            format!("log each rank's iteration count of the loop at {at}"),
            body_line,
            vec![
                "# desync probe: per-rank iteration count".into(),
                "globals()['_desync_iter'] = globals().get('_desync_iter', 0) + 1".into(),
                format!("print(f\"[desync-probe] rank={{{rank}}} {at} iteration={{globals()['_desync_iter']}}\", flush=True)"),
            ],
        ));
    }
    out
}

/// The first line of the block a header on `header_line` opens (deeper indented, not blank
/// or a comment); `None` for a one-line body (`for x in y: f(x)`).
fn first_body_line(lines: &[&str], header_line: u32) -> Option<u32> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let header = lines.get(header_line as usize - 1)?;
    let mut i = header_line as usize - 1;
    // A header may span lines; the block starts after the line that ends with ':'.
    while !lines.get(i)?.split('#').next()?.trim_end().ends_with(':') {
        i += 1;
    }
    let base = indent(header);
    lines.iter().enumerate().skip(i + 1).find_map(|(n, l)| {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            return None;
        }
        Some(if indent(l) > base { Some(n as u32 + 1) } else { None })
    })?
}

/// The tensor a collective call on this line sends, whose shape and dtype its peers must
/// match: the second argument of the gathers and scatters whose first is the output, else
/// the first. `None` when the line calls no torch.distributed collective by name.
fn collective_input(line: &str) -> Option<String> {
    const OUTPUT_FIRST: &[&str] = &[
        "all_gather",
        "all_gather_into_tensor",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all_single",
        "all_to_all",
    ];
    const INPUT_FIRST: &[&str] = &["all_reduce", "broadcast", "reduce", "gather", "scatter"];
    let open = line.find('(')?;
    let callee = line[..open].trim_end().rsplit(['.', ' ', '=']).next()?;
    let position = if OUTPUT_FIRST.contains(&callee) {
        1
    } else if INPUT_FIRST.contains(&callee) {
        0
    } else {
        return None;
    };
    positional_arguments(&line[open + 1..]).into_iter().nth(position)
}

/// The positional arguments at the start of a call's argument text, up to the first keyword.
fn positional_arguments(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ',' | ')' if depth == 0 => {
                let arg = rest[start..i].trim();
                if arg.is_empty() || arg.contains('=') {
                    break;
                }
                out.push(arg.to_owned());
                if c == ')' {
                    break;
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    out
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
    fn the_collective_input_is_the_tensor_peers_must_match() {
        assert_eq!(collective_input("    dist.all_reduce(grad, op=SUM)").as_deref(), Some("grad"));
        assert_eq!(collective_input("dist.all_gather(out, t[:n])").as_deref(), Some("t[:n]"));
        assert_eq!(collective_input("x = d.broadcast(f(a, b), src=0)").as_deref(), Some("f(a, b)"));
        assert_eq!(collective_input("dist.barrier()"), None);
        assert_eq!(collective_input("loss.backward()"), None, "no collective by name");
        assert_eq!(collective_input("logger.log_metrics(m)"), None);
    }

    #[test]
    fn the_loop_body_starts_after_the_header() {
        let lines =
            ["    for x in (a,", "              b):  # pairs", "", "        # c", "        f(x)"];
        assert_eq!(first_body_line(&lines, 1), Some(5));
        assert_eq!(first_body_line(&["for x in y: f(x)", "g()"], 1), None);
    }
}
