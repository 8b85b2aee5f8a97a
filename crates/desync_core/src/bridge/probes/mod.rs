//! Minimal confirming probes at the branch point, as snippets and as a unified diff that
//! applies with `git apply` / `patch -p1` from the directory given as base ([`patch`]).
//!
//! 1. consensus: all ranks `all_reduce` MIN and MAX of the decision and assert they agree, so
//!    the job fails fast at the branch with a clear message instead of timing out;
//! 2. decision log: each rank prints the decision with a per-rank counter;
//!    for a `for` loop, a length consensus and a per-iteration count instead (a decision on
//!    `bool(loader)` says nothing);
//! 3. call log: before the collective, a structured "about to call" line with the CRC of the
//!    shape and dtype of the tensor it sends; an arrival log (no CRC) before a call that only
//!    issues collectives inside a library (`loss.backward()`).
//!
//! Placement comes from the syntax tree ([`desync_python::DecisionSite`]): probes are simple
//! statements inserted before the statement that evaluates the condition, at its indentation.
//! Source text never becomes part of a format string: the condition is pasted once as code (its
//! exact span, in parentheses) and shown as a string literal escaped here ([`literal`]). An
//! `elif`'s decision is evaluated before the whole `if` as `not (earlier tests) and (its
//! test)`; that is written into the patch only when those tests only read values, since
//! otherwise what they call would run once more, and before the `if` (the probe is then a
//! snippet only, and its description says why). Every probe at one place evaluates the
//! decision once (the patch shares the statement).

mod patch;

use std::path::PathBuf;

use desync_python::{DecisionSite, InsertionPoint, LoopSite, Module};

use super::{BranchPoint, CodeFinding, Resolver, SourceOptions};
use crate::diagnose::short_path;

pub use patch::probes_diff;

/// The first statement of every probe.
const PROBE_IMPORTS: &str = "import torch as _desync_torch, torch.distributed as _desync_dist";
/// The decision, evaluated once at a place however many probes there use it.
const DECISION: &str = "_desync_decision = ";
const RANK: &str = "str(_desync_dist.get_rank())";

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
    /// Written by [`probes_diff`]; `false` for a snippet the user must place (the description
    /// says why).
    #[serde(skip)]
    pub in_patch: bool,
    /// The snippet's statements, indented; one may span lines (a multi-line condition).
    #[serde(skip)]
    statements: Vec<String>,
}

/// The probes for a code finding; its file is read again through the same roots.
pub fn probes(code: &CodeFinding, sources: &SourceOptions) -> Vec<Probe> {
    let Some(b) = &code.branch else { return Vec::new() };
    let Some(local) = &b.local_path else { return Vec::new() };
    let Ok(text) = Resolver::new(sources).read_local(local) else { return Vec::new() };
    let module = Module::parse(&text);
    let writer = Writer { b, local, at: format!("{}:{}", short_path(&b.file), b.line) };
    let mut out = Vec::new();
    // An exception type is no condition to agree on; the call log still shows who skipped.
    let condition =
        b.condition.as_ref().filter(|_| b.handler_line.is_none() && b.construct != "except");
    if let Some(cond) = condition {
        if b.construct == "for" {
            if let Some(site) = module.loop_site(b.line) {
                out.extend(writer.loop_probes(&site, cond));
            }
        } else if let Some(site) = module.decision_site(b.condition_line.unwrap_or(b.line), cond) {
            out.extend(writer.decision_probes(&site, cond));
        }
    }
    let call_line = match b.construct.as_str() {
        "call" => Some(b.line),
        _ => b.skipped_line,
    };
    if let Some(line) = call_line
        && let Some(at) = module.statement_site(line)
    {
        out.push(writer.call_probe(&at, line, module.line_text(line).unwrap_or("").trim()));
    }
    out
}

/// Builds the probes of one branch.
struct Writer<'a> {
    b: &'a BranchPoint,
    local: &'a PathBuf,
    /// `train.py:12`, as the probes' messages name the branch.
    at: String,
}

impl Writer<'_> {
    fn probe(
        &self,
        name: &'static str,
        description: String,
        at: &InsertionPoint,
        body: Vec<String>,
    ) -> Probe {
        // The file may not import torch, or may bind `torch`/`dist` to something else: the
        // probe imports under private names (a plain `import torch` inside a function would
        // make `torch` local to all of it and break earlier uses).
        let statements: Vec<String> = std::iter::once(PROBE_IMPORTS.to_owned())
            .chain(body)
            .map(|s| format!("{}{s}", at.indent))
            .collect();
        let snippet = statements.iter().map(|s| format!("{s}\n")).collect();
        Probe {
            name,
            description,
            file: self.b.file.clone(),
            local_path: Some(self.local.clone()),
            line: at.line,
            snippet,
            in_patch: true,
            statements,
        }
    }

    /// `consensus` and `decision_log` before the statement that evaluates the condition.
    fn decision_probes(&self, site: &DecisionSite, cond: &str) -> Vec<Probe> {
        let at = &self.at;
        let shown = flat(cond);
        let decide = format!("{DECISION}bool({})", site.expression);
        let where_ = if site.elif {
            "# desync probe: evaluated before the `if`, as the decision to take its `elif`"
        } else {
            "# desync probe: evaluated right before the statement that tests it"
        };
        let mut consensus = self.probe(
            "consensus",
            format!("assert that every rank takes the same decision on `{shown}` (all_reduce MIN/MAX); fails fast at {at} instead of timing out"),
            &site.at,
            vec![
                "# desync probe: do all ranks take the same decision here?".into(),
                where_.into(),
                decide.clone(),
                "_desync_flag = _desync_torch.tensor([int(_desync_decision)], dtype=_desync_torch.int64)".into(),
                "_desync_lo, _desync_hi = _desync_flag.clone(), _desync_flag.clone()".into(),
                "_desync_dist.all_reduce(_desync_lo, op=_desync_dist.ReduceOp.MIN)".into(),
                "_desync_dist.all_reduce(_desync_hi, op=_desync_dist.ReduceOp.MAX)".into(),
                format!(
                    "assert _desync_lo.item() == _desync_hi.item(), {} + {RANK} + ': ' + str(_desync_decision) + ')'",
                    literal(&format!("desync probe {at}: ranks disagree on `{shown}` (rank "))
                ),
            ],
        );
        let mut log = self.probe(
            "decision_log",
            format!("log each rank's value of `{shown}` with a per-rank counter"),
            &site.at,
            vec![
                "# desync probe: per-rank decision log".into(),
                decide,
                "globals()['_desync_n'] = globals().get('_desync_n', 0) + 1".into(),
                format!(
                    "print('[desync-probe] rank=' + {RANK} + ' n=' + str(globals()['_desync_n']) + {} + str(_desync_decision), flush=True)",
                    literal(&format!(" {at} `{shown}`="))
                ),
            ],
        );
        let note = match (&site.effect, site.yields, site.elif) {
            (_, true, _) => {
                Some((false, "the condition yields, and the probe would yield again".to_owned()))
            }
            (Some(effect), false, true) => Some((
                false,
                format!(
                    "an `elif` is decided before the whole `if`, and its tests {effect}, which would run once more and even when an earlier clause is taken"
                ),
            )),
            (Some(effect), false, false) => Some((
                true,
                format!(
                    "the probe evaluates the condition once more: it {effect}, and that happens twice"
                ),
            )),
            (None, ..) => None,
        };
        for p in [&mut consensus, &mut log] {
            match &note {
                Some((true, why)) => p.description.push_str(&format!(" ({why})")),
                Some((false, why)) => {
                    p.in_patch = false;
                    p.description.push_str(&format!(
                        " (not in the patch: {why}; place it by hand where that is safe)"
                    ));
                }
                None => {}
            }
        }
        vec![consensus, log]
    }

    /// Probes for a `for` loop the sides left after different numbers of iterations: agreeing
    /// on `bool(loader)` says nothing, so the ranks agree on the iterable's *length* where it
    /// only reads values (evaluated again without side effects), and each iteration logs its
    /// per-rank count, which shows where the counts part.
    fn loop_probes(&self, site: &LoopSite, iterable: &str) -> Vec<Probe> {
        let at = &self.at;
        let shown = flat(iterable);
        let mut out = Vec::new();
        if site.effect.is_none() {
            // `operator.length_hint` is `len()` where it works, else the iterator's own hint,
            // else -1: a DataLoader over an IterableDataset has `__len__` and raises TypeError.
            // A rank without a length says so in its log; ranks that differ in having one fail
            // the assertion like a length mismatch.
            out.push(self.probe(
                "length_consensus",
                format!("assert that every rank iterates `{shown}` the same number of times (all_reduce MIN/MAX of its length; where it has none, each rank logs that and the iteration_log counts); fails fast at {at}"),
                &site.at,
                vec![
                    "# desync probe: do all ranks loop the same number of times?".into(),
                    "import operator as _desync_operator".into(),
                    format!("_desync_len = _desync_operator.length_hint({}, -1)", site.iterable),
                    format!(
                        "if _desync_len < 0: print('[desync-probe] rank=' + {RANK} + {}, flush=True)",
                        literal(&format!(" {at}: `{shown}` has no len(), so its length is not compared; count the iteration_log lines"))
                    ),
                    "_desync_count = _desync_torch.tensor([_desync_len], dtype=_desync_torch.int64)".into(),
                    "_desync_lo, _desync_hi = _desync_count.clone(), _desync_count.clone()".into(),
                    "_desync_dist.all_reduce(_desync_lo, op=_desync_dist.ReduceOp.MIN)".into(),
                    "_desync_dist.all_reduce(_desync_hi, op=_desync_dist.ReduceOp.MAX)".into(),
                    format!(
                        "assert _desync_lo.item() == _desync_hi.item(), {} + {RANK} + (': no len()' if _desync_len < 0 else ': ' + str(_desync_len)) + ')'",
                        literal(&format!("desync probe {at}: ranks iterate `{shown}` a different number of times (rank "))
                    ),
                ],
            ));
        }
        if let Some(body) = &site.body {
            out.push(self.probe(
                "iteration_log",
                format!("log each rank's iteration count of the loop at {at}"),
                body,
                vec![
                    "# desync probe: per-rank iteration count".into(),
                    "globals()['_desync_iter'] = globals().get('_desync_iter', 0) + 1".into(),
                    format!(
                        "print('[desync-probe] rank=' + {RANK} + {} + str(globals()['_desync_iter']), flush=True)",
                        literal(&format!(" {at} iteration="))
                    ),
                ],
            ));
        }
        out
    }

    /// `call_log` (or `arrival_log`) before the statement holding the collective call.
    fn call_probe(&self, at: &InsertionPoint, line: u32, call: &str) -> Probe {
        let place = format!("{}:{line}", short_path(&self.b.file));
        let counter = "globals()['_desync_calls'] = globals().get('_desync_calls', 0) + 1";
        let arrival = format!(
            "print('[desync-probe] rank=' + {RANK} + ' call=' + str(globals()['_desync_calls']) + {}",
            literal(&format!(" about to run `{}` at {place}", flat(call)))
        );
        // The collective's own tensor: its shape and dtype are what peers must match. Only an
        // expression that reads values is evaluated again.
        match collective_input(call).filter(|input| reads_only(input)) {
            Some(input) => self.probe(
                "call_log",
                format!("log every rank's arrival at {place} with a counter and a CRC of `{input}`'s shape and dtype"),
                at,
                vec![
                    "# desync probe: about to call a collective".into(),
                    "import zlib as _desync_zlib".into(),
                    counter.into(),
                    format!("_desync_meta = (tuple(getattr({input}, 'shape', ())), str(getattr({input}, 'dtype', '')))"),
                    // crc32, not hash(): str hashes are salted per process, so ranks would differ.
                    format!("{arrival} + ' meta=' + str(_desync_meta) + ' crc=' + format(_desync_zlib.crc32(str(_desync_meta).encode()), '08x'), flush=True)"),
                ],
            ),
            // A call that issues collectives inside a library (`loss.backward()`): no tensor
            // here to describe, so only who arrives, and how often.
            None => self.probe(
                "arrival_log",
                format!("log every rank's arrival at {place} with a per-rank counter"),
                at,
                vec![
                    "# desync probe: about to run code that issues collectives".into(),
                    counter.into(),
                    format!("{arrival}, flush=True)"),
                ],
            ),
        }
    }
}

/// Source text on one line, for descriptions and messages.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as a Python string literal, ASCII only: quotes, backslashes and control characters
/// escaped, anything past ASCII as `\u`/`\U` escapes (valid whatever the file's encoding).
fn literal(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if u32::from(c) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if u32::from(c) < 0x1_0000 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\U{:08x}", u32::from(c));
            }
        }
    }
    out.push('\'');
    out
}

/// Whether an argument written `text` only reads values (no call, walrus, `await`, `yield`
/// or `lambda`): evaluating it again changes nothing.
fn reads_only(text: &str) -> bool {
    !text.contains(['(', '\'', '"', '#', '\\'])
        && !text.contains(":=")
        && !text
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| matches!(w, "await" | "yield" | "lambda"))
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
    fn only_inputs_that_read_values_are_evaluated_again() {
        assert!(reads_only("t[:n]") && reads_only("self.grads[0]"));
        assert!(!reads_only("f(a, b)") && !reads_only("(n := t)") && !reads_only("await t"));
    }

    #[test]
    fn literals_escape_everything_python_would_read_as_code() {
        assert_eq!(literal("a 'b' \"c\" {d} %s"), r#"'a \'b\' "c" {d} %s'"#);
        assert_eq!(literal("x\\\ny\r\t"), r"'x\\\ny\r\t'");
        assert_eq!(literal("é\u{1}😀"), r"'\xe9\x01\U0001f600'");
    }
}
