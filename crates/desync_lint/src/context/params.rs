//! Parameters: the flow analysis leaves what a parameter depends on to its callers. The lint
//! asks them, in this order:
//!
//! 1. **Calls in the file** of the parameter's function ([`Collectives::arguments_for`],
//!    resolved calls, not name matches): what each passes is analysed at the call, and its own
//!    parameters followed further out, a few calls deep.
//! 2. **Process launchers of the table** (`torch.multiprocessing.spawn(worker, ...)` runs
//!    `worker(i, ...)` in process `i`): the parameter they fill with the process index is the
//!    rank.
//! 3. **Calls elsewhere in the tree**, found by the function's name where its own file does
//!    not resolve them (`self.engine.generate(requests)` in another file), when the linted
//!    tree has at most a few ([`Collectives::arguments_by_name`]): what each passes is
//!    analysed at the call, one call out. Asked only where rule 4 would guess.
//! 4. **Data sources**: a parameter no call in view decides, that its function iterates
//!    (`for batch in loader:`, `for i, (x, y) in enumerate(loader)`, the entries of a mapping,
//!    `for dtype, tensors in by_dtype.items()`, or a comprehension over it) in a function that
//!    issues collectives, is taken as the rank's own data (a loader over its shard), as the
//!    table's data sources are. The decision is about its *items*; how many
//!    there are (a counter over it) is left undecided: `DistributedSampler` gives every rank
//!    the same number.
//!
//! Anything else a parameter could be stays unknown and decides nothing.
//!
//! [`Collectives::arguments_for`]: desync_python::Collectives::arguments_for
//! [`Collectives::arguments_by_name`]: desync_python::Collectives::arguments_by_name

use desync_python::{Dependence, DependenceKind, Finding, Function, has_word};

use super::Context;

/// How many calls out a parameter is followed.
const MAX_CALLER_DEPTH: usize = 3;

/// `finding` (computed at `line`) with its parameters and length parameters replaced by what
/// the callers pass; one entry per kind, `Unknown` dropped.
pub(super) fn resolve(
    ctx: &Context<'_>,
    line: u32,
    finding: Finding,
    depth: usize,
) -> Vec<Dependence> {
    let mut out = Vec::new();
    for d in finding.dependence {
        push(&mut out, d);
    }
    if finding.parameters.is_empty() && finding.length_parameters.is_empty() {
        return out;
    }
    let Some(function) = ctx.module.function_at(line) else { return out };
    for p in &finding.parameters {
        // A test of the structure of what the caller passes (`p is None`, the type of an
        // item of `p`) is decided at the caller by the same rule: its choices, not its data
        // or values computed from its rank.
        let keys = finding.keyed_parameters.iter().find(|(q, _)| q == p).map(|(_, k)| k);
        let asked = if finding.structure_parameters.contains(p) {
            Asked::Structure
        } else if let Some(keys) = keys {
            Asked::Entries(keys.clone())
        } else if finding.field_parameters.contains(p) {
            Asked::Field
        } else if finding.read_parameters.contains(p) {
            Asked::Read
        } else {
            Asked::Value
        };
        // Reached only through a container's writes or a held object's fields: so is what the
        // callers pass.
        let indirect = finding.indirect_parameters.contains(p);
        for d in parameter(ctx, &function, p, depth, asked) {
            push(&mut out, Dependence { indirect: d.indirect || indirect, ..d });
        }
    }
    if depth < MAX_CALLER_DEPTH {
        for p in &finding.length_parameters {
            for arg in ctx.collectives.arguments_for(ctx.module, function.def_line, p) {
                if arg.process_index {
                    continue;
                }
                let f = ctx.analysis().length_dependence(ctx.module, arg.line, &arg.text);
                for d in resolve(ctx, arg.line, f, depth + 1) {
                    let evidence = format!(
                        "the length of `{p}` = `{}` (passed by `{}` at line {}) ← {}",
                        arg.text, arg.call, arg.line, d.evidence
                    );
                    push(&mut out, Dependence { evidence, groups: Vec::new(), ..d });
                }
            }
        }
    }
    out
}

/// What is asked of a parameter: its value, its structure (`p is None`), what reading what it
/// holds depends on (`p.size()`, `p[key]`), reading a plain attribute of it
/// (`p.requires_grad`), or reading its items under keys written out (`p["iter_num"]`: a
/// caller that passes a dict written out decides through those entries only).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) enum Asked {
    Value,
    Structure,
    Read,
    Field,
    Entries(Vec<String>),
}

/// What the parameter `p` of `function` depends on, from its callers (or as a data source),
/// as `asked`. Memoised in the context.
fn parameter(
    ctx: &Context<'_>,
    function: &Function,
    p: &str,
    depth: usize,
    asked: Asked,
) -> Vec<Dependence> {
    let key = (function.def_line, p.to_owned(), depth, asked);
    if let Some(known) = ctx.parameters.borrow().get(&key) {
        return known.clone();
    }
    let found = parameter_uncached(ctx, function, p, depth, &key.3);
    ctx.parameters.borrow_mut().insert(key, found.clone());
    found
}

fn parameter_uncached(
    ctx: &Context<'_>,
    function: &Function,
    p: &str,
    depth: usize,
    asked: &Asked,
) -> Vec<Dependence> {
    let structural = *asked == Asked::Structure;
    // A function that tells torch its parameter is this process's rank: the rank, whoever
    // started it (its only number that differs: as a structure it is a number everywhere).
    if let Some((line, call)) = ctx.collectives.declared_rank(ctx.module, function.def_line, p) {
        if structural {
            return Vec::new();
        }
        let evidence = format!("`{p}` (passed as the rank to `{call}` at line {line})");
        return vec![Dependence::new(DependenceKind::RankId, evidence)];
    }
    let args = ctx.collectives.arguments_for(ctx.module, function.def_line, p);
    if args.is_empty() {
        // Items of a loader have the same structure on every rank.
        if structural {
            return Vec::new();
        }
        let Some(guess) = data_source(ctx, function, p) else { return Vec::new() };
        // Callers the tree names decide instead of the guess (the function is no entry point),
        // when what they pass is decided at the call.
        if let Some(calls) = ctx.collectives.arguments_by_name(ctx.module, function.def_line, p)
            && let Some(passed) = passed_elsewhere(ctx, p, &calls, asked)
        {
            return passed;
        }
        // A plain attribute of an item of what was only guessed to be a loader
        // (`p.requires_grad`, `info.world_size`) is more often a setting of a parameter or
        // state object than the rank's data: shown only as indirect evidence.
        let field = *asked == Asked::Field;
        return vec![Dependence { indirect: guess.indirect || field, ..guess }];
    }
    let mut out = Vec::new();
    for arg in args {
        if arg.process_index {
            // A process index is a number on every rank: only its value is the rank's own.
            if !structural {
                let evidence = format!(
                    "`{p}` (the process index `{}` at line {} passes: each process gets its \
                     rank)",
                    arg.call, arg.line
                );
                push(&mut out, Dependence::new(DependenceKind::RankId, evidence));
            }
            continue;
        }
        if depth >= MAX_CALLER_DEPTH {
            continue;
        }
        let found = asked_of(ctx, ctx.module, arg.line, &arg.text, asked);
        for d in found.into_iter().flat_map(|f| resolve(ctx, arg.line, f, depth + 1)) {
            let evidence = format!(
                "`{p}` = `{}` (passed by `{}` at line {}) ← {}",
                arg.text, arg.call, arg.line, d.evidence
            );
            push(&mut out, Dependence { evidence, groups: Vec::new(), ..d });
        }
    }
    out
}

/// What `text` at `line` of `module` (an argument a caller passes) depends on, as `asked`.
fn asked_of(
    ctx: &Context<'_>,
    module: &desync_python::Module,
    line: u32,
    text: &str,
    asked: &Asked,
) -> Vec<Finding> {
    let analysis = ctx.analysis();
    match asked {
        Asked::Structure => vec![analysis.structure_dependence(module, line, text)],
        Asked::Read => vec![analysis.read_dependence(module, line, text)],
        Asked::Field => vec![analysis.field_dependence(module, line, text)],
        Asked::Value => vec![analysis.dependence(module, line, text)],
        // `(arg)["iter_num"]` at the caller: the entry when `arg` is a dict written out with
        // that key, a read of what it holds otherwise.
        Asked::Entries(keys) => keys
            .iter()
            .map(|k| analysis.read_dependence(module, line, &format!("({text})[{k:?}]")))
            .collect(),
    }
}

/// What the calls found by name elsewhere pass for `p`, one call out; `None` when there are
/// none, or when one forwards a parameter of its own function (`f(tensors)` inside
/// `def g(self, tensors)`): the same data then comes from one call further out, which is not
/// followed from another file, so the question stays open and the guess stands. A value a
/// caller builds is decided at the call; what it depends on through the caller's own
/// parameters decides nothing, as past the last caller followed in the file.
fn passed_elsewhere(
    ctx: &Context<'_>,
    p: &str,
    calls: &[desync_python::ArgumentElsewhere],
    asked: &Asked,
) -> Option<Vec<Dependence>> {
    if calls.is_empty() {
        return None;
    }
    let forwards = |arg: &desync_python::ArgumentElsewhere| {
        let function = arg.module.function_at(arg.line);
        function.is_some_and(|f| f.parameters.iter().any(|q| q == arg.text.trim()))
    };
    if calls.iter().any(forwards) {
        return None;
    }
    let mut out = Vec::new();
    for arg in calls {
        let file = arg
            .module
            .file_path()
            .and_then(|f| f.file_name())
            .map_or_else(|| "another file".to_owned(), |name| name.to_string_lossy().into_owned());
        let found = asked_of(ctx, &arg.module, arg.line, &arg.text, asked);
        for d in found.into_iter().flat_map(|f| f.dependence) {
            let evidence = format!(
                "`{p}` = `{}` (passed by `{}` at line {} of {file}) ← {}",
                arg.text, arg.call, arg.line, d.evidence
            );
            push(&mut out, Dependence { evidence, groups: Vec::new(), ..d });
        }
    }
    Some(out)
}

/// A parameter its function iterates, in a function that issues collectives: the rank's own
/// data (the structure of its items decides nothing: `item is None`, `isinstance(item, T)`).
fn data_source(ctx: &Context<'_>, function: &Function, p: &str) -> Option<Dependence> {
    let issues = ctx.sites.iter().any(|s| s.function() == Some(function.def_line));
    if !issues {
        return None;
    }
    let line = (function.def_line..=function.end_line)
        .find(|l| ctx.module.line_text(*l).is_some_and(|t| iterates(t, p)))?;
    let evidence = format!(
        "the items of `{p}`, a parameter `{}` iterates at line {line} and no call in view \
         passes (taken as the rank's own data)",
        function.name
    );
    Some(Dependence { guessed: true, ..Dependence::new(DependenceKind::LocalData, evidence) })
}

/// Whether a line iterates `p` itself: `for x in p`, `for i, x in enumerate(p)`, or the same
/// in a comprehension (`... for x in p)`).
fn iterates(line: &str, p: &str) -> bool {
    let mut rest = line;
    while let Some(i) = rest.find(" in ") {
        let before = &rest[..i];
        let after = rest[i + 4..].trim_start();
        rest = &rest[i + 4..];
        if !has_word(before, "for") {
            continue;
        }
        let iterable = after
            .strip_prefix("enumerate(")
            .or_else(|| after.strip_prefix("tqdm("))
            .unwrap_or(after);
        let end =
            iterable.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(iterable.len());
        // `for k, v in p.items()`: the entries of a mapping of the rank's own data.
        let rest = &iterable[end..];
        let rest =
            [".items()", ".values()"].iter().find_map(|m| rest.strip_prefix(m)).unwrap_or(rest);
        let next = rest.trim_start().chars().next();
        if &iterable[..end] == p && matches!(next, None | Some(':' | ')' | ',' | ']' | '}')) {
            return true;
        }
    }
    false
}

/// Adds `d` unless a dependence of the same kind is already there (the first is the most
/// direct, unless it is indirect and `d` is not); a rank id then stays the rank within a group
/// only if both were, and a rank passed in by a caller (its groups are written in the caller's
/// names) counts as the world rank.
fn push(out: &mut Vec<Dependence>, d: Dependence) {
    if d.kind == DependenceKind::Unknown {
        return;
    }
    match out.iter_mut().find(|o| o.kind == d.kind) {
        Some(o) => {
            let groups = desync_python::merge_groups(&o.groups, &d.groups);
            // Shown evidence wins over indirect evidence, and direct evidence over a guess.
            if (o.indirect, o.guessed) > (d.indirect, d.guessed) {
                *o = d;
            }
            o.groups = groups;
        }
        None => out.push(d),
    }
}

#[cfg(test)]
mod tests {
    use super::iterates;

    #[test]
    fn iteration_of_a_name() {
        assert!(iterates("    for batch in loader:", "loader"));
        assert!(iterates("    for i, (x, y) in enumerate(loader):", "loader"));
        assert!(iterates("    v = sum(m(x) for x in val_loader)", "val_loader"));
        assert!(iterates("    v = [m(x) for x in loader]", "loader"));
        assert!(!iterates("    for p in model.parameters():", "model"));
        assert!(!iterates("    for batch in loader2:", "loader"));
        assert!(!iterates("    if x in loader:", "loader"));
        assert!(!iterates("    for x in loader.dataset:", "loader"));
        assert!(iterates("    for dtype, tensors in by_dtype.items():", "by_dtype"));
        assert!(iterates("    for tensors in by_dtype.values():", "by_dtype"));
        assert!(!iterates("    for dtype in by_dtype.keys():", "by_dtype"));
    }
}
