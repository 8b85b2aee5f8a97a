//! Rank-dependence: why the value of an expression can differ from one rank to another.
//!
//! The [`Classifier`] walks an expression and records one [`Dependence`] per kind, with the
//! source text that shows it. Local names are followed to their bindings in the same function
//! (a few levels deep, [`MAX_TRACE`]), so `if not ok:` after `ok = torch.isfinite(loss)` and
//! `loss = model(batch)` reports rank-local data. `Unknown` is reported only when nothing more
//! specific was found and something opaque (a parameter, an unanalysed call) was involved;
//! an expression made of constants and loop counters has no dependence at all.

pub mod patterns;

pub(crate) mod bindings;
mod rules;
pub(crate) mod trace;

use ruff_python_ast::{ExceptHandler, Expr, Mod, Stmt};
use ruff_python_parser::{Mode, ParseOptions, parse_unchecked};
use ruff_text_size::{Ranged, TextSize};

use crate::module::Module;
use crate::tree::Slot;
use crate::types::{Dependence, DependenceKind};
use bindings::Scope;

/// How many bindings deep a name is followed (`a` ← `b` ← `c`).
pub(crate) const MAX_TRACE: usize = 3;

/// Collects the dependence of one or more expressions evaluated in one scope.
pub(crate) struct Classifier<'m> {
    module: &'m Module,
    scope: Scope<'m>,
    found: Vec<Dependence>,
    unknown: Option<String>,
    /// Starts of the bindings being followed, innermost last (depth limit and cycle guard).
    tracing: Vec<TextSize>,
    /// While positive, opaque parts are not worth an `Unknown` (receivers like `torch` in
    /// `torch.isfinite(x)`, whose result the call itself explains).
    quiet: u32,
    /// Parameters of the function the value flows from, in first-seen order: the caller's
    /// frame can follow them further.
    parameters: Vec<String>,
    /// Treat configuration reads (`args.x`, `cfg.y`, `sys.argv`) as rank-invariant.
    pub(crate) uniform_config: bool,
}

impl<'m> Classifier<'m> {
    /// A classifier for expressions in the innermost function around `line`.
    pub(crate) fn at_line(module: &'m Module, line: u32) -> Self {
        Self::new(module, Scope::at(module, line))
    }

    pub(crate) fn new(module: &'m Module, scope: Scope<'m>) -> Self {
        Classifier {
            module,
            scope,
            found: Vec::new(),
            unknown: None,
            tracing: Vec::new(),
            quiet: 0,
            parameters: Vec::new(),
            uniform_config: false,
        }
    }

    /// Classifies `expr`, whose ranges index into `src`, as evaluated at module offset `at`.
    pub(crate) fn expr(&mut self, expr: &Expr, src: &str, at: TextSize) {
        self.visit(expr, src, at, 0);
    }

    /// Records a kind once; the first evidence for a kind is the most direct one.
    pub(crate) fn add(&mut self, kind: DependenceKind, evidence: String) {
        if !self.found.iter().any(|d| d.kind == kind) {
            self.found.push(Dependence { kind, evidence });
        }
    }

    fn unknown(&mut self, evidence: String) {
        if self.quiet == 0 && self.unknown.is_none() {
            self.unknown = Some(evidence);
        }
    }

    /// The kinds found, or a lone `Unknown` when only opaque parts were seen.
    pub(crate) fn finish(self) -> Vec<Dependence> {
        self.finish_with_parameters().0
    }

    /// [`Self::finish`], plus the function parameters the value flows from.
    pub(crate) fn finish_with_parameters(self) -> (Vec<Dependence>, Vec<String>) {
        let found = match (self.found.is_empty(), self.unknown) {
            (true, Some(evidence)) => vec![Dependence { kind: DependenceKind::Unknown, evidence }],
            _ => self.found,
        };
        (found, self.parameters)
    }

    /// Runs `f` on a fresh result set and returns what it found, keeping the trace state.
    fn isolated(&mut self, f: impl FnOnce(&mut Self)) -> (Vec<Dependence>, Option<String>) {
        let found = std::mem::take(&mut self.found);
        let unknown = self.unknown.take();
        let quiet = std::mem::replace(&mut self.quiet, 0);
        f(self);
        let result = (
            std::mem::replace(&mut self.found, found),
            std::mem::replace(&mut self.unknown, unknown),
        );
        self.quiet = quiet;
        result
    }
}

/// Classifies `expr_source` (a Python expression) as if written at 1-based `line` of `module`:
/// names are followed to their assignments in the function around that line, and a line inside
/// an `except` body adds [`DependenceKind::Exception`]. Text that does not parse as an
/// expression is classified as far as the parser recovered it.
pub fn classify_expression(module: &Module, line: u32, expr_source: &str) -> Vec<Dependence> {
    classify_expression_with(module, line, expr_source, ClassifyOptions::default())
}

/// Assumptions [`classify_expression_with`] may make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassifyOptions {
    /// Configuration reads (`args.lr`, `cfg.log_every`, `sys.argv`) are the same on every
    /// rank: every rank parses the same command line and config file. A linter assumes so; a
    /// post-mortem should not (a node can be launched with another config), which is why
    /// [`classify_expression`] reports them as [`DependenceKind::Environment`].
    pub uniform_config: bool,
}

/// [`classify_expression`] under `options`.
pub fn classify_expression_with(
    module: &Module,
    line: u32,
    expr_source: &str,
    options: ClassifyOptions,
) -> Vec<Dependence> {
    if expr_source.trim().is_empty() {
        return Vec::new();
    }
    let parsed = parse_unchecked(expr_source, ParseOptions::from(Mode::Expression));
    let Mod::Expression(expr) = parsed.into_syntax() else { return Vec::new() };
    // A line outside the file classifies as at its end: every binding is visible.
    let end = TextSize::try_from(module.source().len()).unwrap_or_default();
    let at = module.line_range(line).map_or(end, ruff_text_size::TextRange::start);
    let mut classifier = Classifier::at_line(module, line);
    classifier.uniform_config = options.uniform_config;
    classifier.expr(&expr.body, expr_source, at);
    if let Some(evidence) = enclosing_handler(module, line) {
        classifier.add(DependenceKind::Exception, evidence);
    }
    classifier.finish()
}

/// "inside `except ValueError` at line 12" when `line` lies in an `except` body of its
/// function: only ranks that raised run that code.
pub(crate) fn enclosing_handler(module: &Module, line: u32) -> Option<String> {
    let path = module.path(line)?;
    path.scope_levels(module).iter().rev().find_map(|level| {
        let (Some(Stmt::Try(t)), Slot::Handler(i)) = (level.owner, level.slot) else { return None };
        let ExceptHandler::ExceptHandler(h) = t.handlers.get(i)?;
        let clause = h.type_.as_ref().map_or_else(
            || "except".to_owned(),
            |ty| format!("except {}", crate::expr::snippet(module.text(ty.range()))),
        );
        Some(format!("inside `{clause}` at line {}", module.line_of(h.start())))
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod trace_tests;
