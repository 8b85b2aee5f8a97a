//! The checks, one module per family, over one file's [`Context`]. Each check returns raw
//! findings (rule, line, message); this module fills in columns, hints and source lines,
//! removes duplicates and applies rule selection.

mod conditional;
mod decorated;
mod except;
mod file_probe;
mod jumps;
mod loops;
mod metadata;
mod order;
mod paths;
mod setup;
mod turns;

use std::collections::HashSet;
use std::path::Path;

use desync_python::{Dependence, DependenceKind};

use crate::Finding;
use crate::context::Context;
use crate::rule::Rule;

/// A finding before it gets a column, hint and source line.
pub(crate) struct Raw {
    pub rule: Rule,
    pub line: u32,
    /// 1-based column; `None`: the first occurrence of `keyword` on the line, or the first
    /// non-blank character.
    pub column: Option<u32>,
    pub keyword: Option<&'static str>,
    pub message: String,
    /// The evidence reaches the decision only indirectly ([`indirect`]).
    pub indirect: bool,
}

pub(crate) fn run(ctx: &Context<'_>, file: &Path, enabled: &dyn Fn(Rule) -> bool) -> Vec<Finding> {
    let mut raw = Vec::new();
    let wants = |rules: &[Rule]| rules.iter().any(|r| enabled(*r));
    // Setup for later collectives (a comm hook) can sit in a file that issues none itself.
    if wants(&[Rule::RaggedGather, Rule::RankDependentDtype]) {
        raw.extend(setup::check(ctx));
    }
    if ctx.sites.is_empty() {
        return finish(ctx, file, enabled, raw);
    }
    if wants(&[Rule::RankConditionalCollective, Rule::RankDependentOrder]) {
        raw.extend(conditional::check(ctx));
    }
    if enabled(Rule::RankConditionalCollective) {
        raw.extend(decorated::check(ctx));
    }
    if wants(&[Rule::RankConditionalCollective, Rule::LocalEarlyExit]) {
        raw.extend(jumps::check(ctx));
    }
    if enabled(Rule::LocalEarlyExit) {
        raw.extend(loops::check(ctx));
    }
    if enabled(Rule::SwallowedException) {
        raw.extend(except::check(ctx));
    }
    if enabled(Rule::PerRankFileTest) {
        raw.extend(file_probe::check(ctx));
    }
    if enabled(Rule::RankDependentOrder) {
        raw.extend(order::check(ctx));
    }
    if wants(&[Rule::RaggedGather, Rule::RankDependentDtype]) {
        raw.extend(metadata::check(ctx));
    }
    finish(ctx, file, enabled, raw)
}

/// Columns, hints and source lines; duplicates removed, rule selection applied, sorted.
fn finish(
    ctx: &Context<'_>,
    file: &Path,
    enabled: &dyn Fn(Rule) -> bool,
    raw: Vec<Raw>,
) -> Vec<Finding> {
    let mut seen = HashSet::new();
    let mut out: Vec<Finding> = raw
        .into_iter()
        .filter(|r| enabled(r.rule) && seen.insert((r.rule, r.line)))
        .map(|r| {
            let text = ctx.module.line_text(r.line).unwrap_or("");
            let column = r.column.unwrap_or_else(|| keyword_column(text, r.keyword));
            Finding {
                file: file.to_path_buf(),
                line: r.line,
                column,
                rule: r.rule,
                message: r.message,
                hint: r.rule.hint().to_owned(),
                source: text.trim().to_owned(),
                indirect: r.indirect,
            }
        })
        .collect();
    out.sort_by_key(|f| (f.line, f.column, f.rule));
    out
}

/// 1-based character column of `keyword` as a whole word in `text`, else of the first
/// non-blank character.
fn keyword_column(text: &str, keyword: Option<&str>) -> u32 {
    let chars = |byte: usize| text[..byte].chars().count() as u32 + 1;
    if let Some(k) = keyword {
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        let mut from = 0;
        while let Some(i) = text[from..].find(k).map(|i| i + from) {
            let before = text[..i].chars().next_back().is_none_or(|c| !is_word(c));
            let after = text[i + k.len()..].chars().next().is_none_or(|c| !is_word(c));
            if before && after {
                return chars(i);
            }
            from = i + k.len();
        }
    }
    chars(text.len() - text.trim_start().len())
}

/// "rank id: `rank` (assigned from `ctx.rank` at line 57)"; kinds joined with "; ".
pub(crate) fn explain(deps: &[Dependence]) -> String {
    deps.iter()
        .map(|d| format!("{}: {}", d.kind.as_str(), d.evidence))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether every reason in `deps` reaches the value only indirectly (through a container's
/// writes, a field of an object whose fields were not kept apart, or what is read of an item
/// the rank picked: [`Dependence::indirect`]). Such a finding is shown with
/// `--include-indirect`.
pub(crate) fn indirect<'d>(deps: impl IntoIterator<Item = &'d Dependence>) -> bool {
    some_and_all(deps, |d| d.indirect)
}

/// [`indirect`] for a decision (which way a `continue`/`break`/`return`, a `while` or a
/// loop's order goes): a reason from the environment or the host alone (an environment
/// variable, a file's existence, a folder's listing, an installed package) counts as indirect
/// too, as it already decides nothing for a collective under an `if` (DSY001 counts the rank
/// id only). What configures a job is set alike on every node by the launcher, the image and
/// the shared file system far more often than not; the rank's own id, data, errors and clock
/// differ by construction. Measured on the real-code bench: every decision reported on the
/// environment alone was safe or a misread (a feature flag read from the environment, a
/// checkpoint folder's listing, a logger's run name carried into the trainer's object), and
/// no bug of the real-bug corpus needs one. The size and dtype rules keep the environment: a
/// payload chosen per node is what a per-node misconfiguration looks like
/// (docs/lint.md, "Seventeenth session").
pub(crate) fn decision_indirect<'d>(deps: impl IntoIterator<Item = &'d Dependence>) -> bool {
    some_and_all(deps, |d| d.indirect || d.kind == DependenceKind::Environment)
}

/// Whether there is a reason and every reason is `weak`.
fn some_and_all<'d>(
    deps: impl IntoIterator<Item = &'d Dependence>,
    weak: impl Fn(&Dependence) -> bool,
) -> bool {
    let mut deps = deps.into_iter().peekable();
    deps.peek().is_some() && deps.all(weak)
}

/// A condition's text on one line, cut to a readable length.
pub(crate) fn short(text: &str) -> String {
    const MAX: usize = 70;
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= MAX {
        return flat;
    }
    let mut cut: String = flat.chars().take(MAX - 1).collect();
    cut.push('…');
    cut
}

/// The parts of `clause`'s test (a conjunction) that no rank decides differently, each with
/// whether it holds when the clause is taken (`not x` written: `x` fails); `None` when the
/// test is not a conjunction with such a part beside a part that does differ. Such a part
/// holds on every rank whenever the rest splits them (`not self.use_zero and dp_rank != 0`:
/// `use_zero` is false everywhere once any replica takes the clause).
///
/// A test that is an `or` (written so, or a name bound once to one: `takes_part = is_main or
/// self.spread_eval`) splits the ranks only where each of its uniform operands fails: were
/// one true, the test would hold on every rank. Those operands are then known false
/// (`if self.spread_eval: all_reduce(...)` inside is issued by no rank there).
pub(crate) fn uniform_parts(
    ctx: &Context<'_>,
    clause: &desync_python::Clause,
) -> Option<Vec<(String, bool)>> {
    let test_line = clause.test_line?;
    if clause.conjuncts.len() < 2 {
        let test = clause.test.as_deref()?;
        let uniform: Vec<(String, bool)> = ctx
            .analysis()
            .disjuncts(ctx.module, test_line, test)
            .into_iter()
            .filter(|(text, _)| ctx.dependence(test_line, text).is_empty())
            .collect();
        return (!uniform.is_empty()).then_some(uniform);
    }
    let uniform: Vec<(String, bool)> = clause
        .conjuncts
        .iter()
        .filter(|c| ctx.dependence(test_line, &c.text).is_empty())
        .map(|c| (c.text.clone(), !c.negated))
        .collect();
    (!uniform.is_empty() && uniform.len() < clause.conjuncts.len()).then_some(uniform)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_characters_and_whole_words() {
        assert_eq!(keyword_column("        break", Some("break")), 9);
        assert_eq!(keyword_column("    if x: continue", Some("continue")), 11);
        assert_eq!(keyword_column("    breaker = 1; break", Some("break")), 18);
        assert_eq!(keyword_column("  é = 1; break", Some("break")), 10);
        assert_eq!(keyword_column("    x = 1", Some("if")), 5);
        assert_eq!(keyword_column("", None), 1);
    }
}
