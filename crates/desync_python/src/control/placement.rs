//! Where a probe can be written into a file, read from the syntax tree: before which statement,
//! with which indentation, and the deciding expression as its exact source span.
//!
//! A probe is a run of simple statements inserted on their own lines right before a statement
//! that starts its line, at that statement's indentation (tabs and spaces as written), so it
//! lands in the same block and never between an `if` body and its `elif`/`else`. The
//! expressions handed out are the tree's spans, wrapped in parentheses so a condition written
//! over several lines (brackets, a backslash continuation, comments between its parts, a
//! triple-quoted string) stays one expression wherever it is pasted; line endings inside them
//! are `\n` (the writer of the patch puts the file's own endings back).

use ruff_python_ast::{Expr, Stmt, StmtIf};
use ruff_text_size::{Ranged, TextSize};

use crate::syntax::expr::{children, snippet};
use crate::syntax::module::Module;
use crate::syntax::tree::{MAX_DEPTH, header_exprs, walk_all};

/// A place where lines can be inserted: before 1-based `line`, indented by `indent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsertionPoint {
    pub line: u32,
    /// The whitespace before the statement on its line, as written (tabs kept).
    pub indent: String,
}

/// Where a branch's decision can be evaluated again, and as what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionSite {
    /// Before the statement that evaluates the condition (for an `elif`: the whole `if`).
    pub at: InsertionPoint,
    /// One Python expression, true exactly when the branch is taken: the condition's span in
    /// parentheses; for the k-th `elif`, `not (test) and ... and (its test)` over the tests
    /// before it, short-circuited as the `if` statement evaluates them.
    pub expression: String,
    /// The clause is an `elif`: the probe evaluates the earlier tests too, before the `if`.
    pub elif: bool,
    /// What running the expression once more would repeat, as a phrase naming the part as
    /// written ("calls `f(x)`", "binds `n`", "iterates `(b for b in x)`", "awaits",
    /// "yields"); `None` when it only reads names, attributes, items and constants.
    pub effect: Option<String>,
    /// The expression yields: evaluating it again would hand the caller an extra value.
    pub yields: bool,
}

/// A `for` loop's places: its iterable, before the loop, and the start of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopSite {
    pub at: InsertionPoint,
    /// The iterable's span in parentheses.
    pub iterable: String,
    /// See [`DecisionSite::effect`].
    pub effect: Option<String>,
    /// Before the first statement of the body; `None` when the body shares the header's line
    /// (`for x in y: f(x)`).
    pub body: Option<InsertionPoint>,
}

impl Module {
    /// The place and expression for the condition written `condition` whose span starts on
    /// `condition_line`: the test of an `if`, an `elif`, a `while`, or of a conditional
    /// expression a statement always evaluates (`order = [a, b] if c else [b, a]`,
    /// `for g in enumerate(x if c else y)`, `with a if c else b:`). `None` when no such test
    /// is found, or its statement does not start its line (`x = 1; y = a if c else b`).
    pub fn decision_site(&self, condition_line: u32, condition: &str) -> Option<DecisionSite> {
        let is_it = |e: &Expr| {
            self.line_of(e.start()) == condition_line && self.text(e.range()) == condition
        };
        let mut found = None;
        walk_all(self.body(), &mut |stmt| {
            if found.is_none() {
                found = self.decision_in(stmt, &is_it);
            }
        });
        found
    }

    fn decision_in(&self, stmt: &Stmt, is_it: &dyn Fn(&Expr) -> bool) -> Option<DecisionSite> {
        let test = match stmt {
            Stmt::If(s) => return self.if_decision(s, is_it),
            Stmt::While(s) => Some(&*s.test).filter(|t| is_it(t)),
            // The header of a compound statement (a `for` iterable, `with` items, a `match`
            // subject) or the whole of a simple one: what runs before the statement's blocks.
            _ => header_exprs(stmt).into_iter().find_map(|e| chosen_test(e, is_it, 0)),
        }?;
        Some(DecisionSite {
            at: self.before(stmt)?,
            expression: self.parenthesized(test),
            elif: false,
            effect: self.effect(test),
            yields: yields(test),
        })
    }

    /// The `if` test or the k-th `elif` test: before the whole statement, the earlier tests
    /// negated in front of it.
    fn if_decision(&self, s: &StmtIf, is_it: &dyn Fn(&Expr) -> bool) -> Option<DecisionSite> {
        let mut tests: Vec<&Expr> = vec![&s.test];
        tests.extend(s.elif_else_clauses.iter().filter_map(|c| c.test.as_ref()));
        let k = tests.iter().position(|t| is_it(t))?;
        let mut parts: Vec<String> =
            tests[..k].iter().map(|t| format!("not {}", self.parenthesized(t))).collect();
        parts.push(self.parenthesized(tests[k]));
        let evaluated = &tests[..=k];
        Some(DecisionSite {
            at: self.before_stmt_at(s.start())?,
            expression: parts.join(" and "),
            elif: k > 0,
            effect: evaluated.iter().find_map(|t| self.effect(t)),
            yields: evaluated.iter().any(|t| yields(t)),
        })
    }

    /// The places of the `for` loop whose header starts on `for_line`.
    pub fn loop_site(&self, for_line: u32) -> Option<LoopSite> {
        let mut found = None;
        walk_all(self.body(), &mut |stmt| {
            if let (None, Stmt::For(s)) = (&found, stmt)
                && self.line_of(s.start()) == for_line
            {
                found = Some(s);
            }
        });
        let s = found?;
        Some(LoopSite {
            at: self.before_stmt_at(s.start())?,
            iterable: self.parenthesized(&s.iter),
            effect: self.effect(&s.iter),
            body: s.body.first().and_then(|first| self.before(first)),
        })
    }

    /// Before the innermost statement holding `line` (a call's line may be a continuation of
    /// its statement): `None` when that statement does not start its line.
    pub fn statement_site(&self, line: u32) -> Option<InsertionPoint> {
        let path = self.path(line)?;
        self.before(path.leaf())
    }

    fn before(&self, stmt: &Stmt) -> Option<InsertionPoint> {
        self.before_stmt_at(stmt.start())
    }

    /// The statement starting at `start` must be the first thing on its line, and that line
    /// no continuation of the one above (`a = 1; \`): lines inserted before it then run right
    /// before it, in its block.
    fn before_stmt_at(&self, start: TextSize) -> Option<InsertionPoint> {
        let line = self.line_of(start);
        let line_start = self.line_starts().get(line as usize - 1).copied()?;
        let indent = self.source().get(line_start.to_usize()..start.to_usize())?;
        let continued = line > 1
            && self.line_text(line - 1).is_some_and(|above| above.trim_end().ends_with('\\'));
        (!continued && indent.chars().all(|c| c == ' ' || c == '\t' || c == '\x0c'))
            .then(|| InsertionPoint { line, indent: indent.to_owned() })
    }

    /// The exact span of `expr` in parentheses, line endings as `\n`.
    fn parenthesized(&self, expr: &Expr) -> String {
        let text = self.text(expr.range()).replace("\r\n", "\n").replace('\r', "\n");
        format!("({text})")
    }

    /// The first part of `expr` whose evaluation does more than read (see
    /// [`DecisionSite::effect`]).
    fn effect(&self, expr: &Expr) -> Option<String> {
        let mut found = None;
        crate::syntax::expr::walk(expr, &mut |e| {
            if found.is_some() {
                return;
            }
            found = match e {
                Expr::Call(c) => Some(format!("calls `{}`", snippet(self.text(c.range())))),
                Expr::Named(n) => Some(format!("binds `{}`", snippet(self.text(n.target.range())))),
                Expr::Await(_) => Some("awaits".to_owned()),
                Expr::Yield(_) | Expr::YieldFrom(_) => Some("yields".to_owned()),
                // A comprehension calls `iter()` on what it walks: a second DataLoader
                // iterator, or a consumed generator.
                Expr::Generator(_) | Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) => {
                    Some(format!("iterates `{}`", snippet(self.text(e.range()))))
                }
                _ => None,
            };
        });
        found
    }
}

/// The test of a conditional expression (`a if test else b`) inside `expr` that is the one
/// looked for, where the statement evaluates it whenever it runs: not behind the right-hand
/// operands of `and`/`or`, inside another conditional's branches, a `lambda` or a
/// comprehension (those may not run, or bind names of their own), so evaluating it before the
/// statement asks what the statement asks.
fn chosen_test<'a>(
    expr: &'a Expr,
    is_it: &dyn Fn(&Expr) -> bool,
    depth: usize,
) -> Option<&'a Expr> {
    if depth > MAX_DEPTH {
        return None;
    }
    match expr {
        Expr::If(e) if is_it(&e.test) => Some(&e.test),
        Expr::If(e) => chosen_test(&e.test, is_it, depth + 1),
        Expr::BoolOp(b) => b.values.first().and_then(|v| chosen_test(v, is_it, depth + 1)),
        Expr::Lambda(_)
        | Expr::Generator(_)
        | Expr::ListComp(_)
        | Expr::SetComp(_)
        | Expr::DictComp(_) => None,
        _ => children(expr).into_iter().find_map(|c| chosen_test(c, is_it, depth + 1)),
    }
}

fn yields(expr: &Expr) -> bool {
    let mut found = false;
    crate::syntax::expr::walk(expr, &mut |e| {
        found |= matches!(e, Expr::Yield(_) | Expr::YieldFrom(_));
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
def f(mode, it, loader):
\tif mode == \"eval\":
\t\tpass
\telif (step > 3 and  # late
\t      step % 2):
\t\tpass
\tfor b in loader: g(b)
\tfor b in it:
\t\t# first
\t\tg(b)
\tx = 1; y = 2 if go() else 3
\tdist.all_reduce(
\t\tt)
";

    #[test]
    fn an_elif_is_decided_before_the_whole_if_with_the_earlier_tests_negated() {
        let m = Module::parse(SRC);
        let site = m.decision_site(4, "step > 3 and  # late\n\t      step % 2").unwrap();
        assert_eq!(site.at, InsertionPoint { line: 2, indent: "\t".into() });
        assert_eq!(
            site.expression,
            "not (mode == \"eval\") and (step > 3 and  # late\n\t      step % 2)"
        );
        assert!(site.elif && site.effect.is_none());
    }

    #[test]
    fn a_conditional_expression_not_starting_its_line_has_no_site() {
        let m = Module::parse(SRC);
        assert_eq!(m.decision_site(11, "go()"), None);
        assert_eq!(m.decision_site(2, "mode == 'eval'"), None, "the text must match exactly");
    }

    #[test]
    fn loops_and_calls_are_placed_at_their_statements() {
        let m = Module::parse(SRC);
        let one_line = m.loop_site(7).unwrap();
        assert_eq!(one_line.body, None, "the body shares the header's line");
        let site = m.loop_site(8).unwrap();
        assert_eq!(site.body, Some(InsertionPoint { line: 10, indent: "\t\t".into() }));
        assert_eq!(site.iterable, "(it)");
        assert_eq!(m.statement_site(13), Some(InsertionPoint { line: 12, indent: "\t".into() }));
        let continued = Module::parse("a = 1; \\\nb = 2\n");
        assert_eq!(continued.statement_site(2), None, "line 2 continues line 1");
    }

    #[test]
    fn a_conditional_expression_is_decided_before_its_statement_where_it_always_runs() {
        let m = Module::parse(
            "for g in enumerate(a if c else b):\n    pass\nx = y and (a if d else b)\nwith (p if e else q):\n    pass\n",
        );
        let site = m.decision_site(1, "c").unwrap();
        assert_eq!((site.at.line, site.expression.as_str()), (1, "(c)"));
        assert_eq!(m.decision_site(3, "d"), None, "behind `and`: it may not be evaluated");
        assert_eq!(m.decision_site(4, "e").map(|s| s.at.line), Some(4));
    }

    #[test]
    fn effects_are_named() {
        let m = Module::parse(
            "while (n := next(it)) > 0:\n    pass\nfor b in [x for x in y]:\n    f()\n",
        );
        let site = m.decision_site(1, "(n := next(it)) > 0").unwrap();
        assert_eq!(site.effect.as_deref(), Some("binds `n`"));
        assert!(!site.yields);
        assert_eq!(m.loop_site(3).unwrap().effect.as_deref(), Some("iterates `[x for x in y]`"));
    }
}
