//! Collective sites a line issues directly, and the calls that change what later collectives
//! carry (the table's `payload` rows): questions the bridge asks of one line or one file.

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

use crate::names::bindings::Scope;
use crate::syntax::module::Module;
use crate::values::resolve::Sym;
use crate::values::{Analysis, Finding, value};

impl Analysis<'_> {
    /// The collective a line calls directly (`dist.all_reduce(x)`, `self.all_gather(t)`,
    /// `accelerator.gather(t)`): its qualified name and table row.
    pub fn collective_at(
        &self,
        module: &Module,
        line: u32,
    ) -> Option<(String, &'static crate::names::knowledge::Api)> {
        let scope = Scope::at(module, line);
        let mut eval = value::Eval::new(self, module, scope, 0);
        module.calls_at(line).into_iter().find_map(|c| match eval.resolve(&c.func, c.start()) {
            Sym::Path(p) => {
                let api = crate::names::knowledge::knowledge().api(&p)?;
                (api.role == crate::names::knowledge::Role::Collective).then_some((p, api))
            }
            _ => None,
        })
    }

    /// Calls of `module` that change what later collectives carry (the table's `payload` rows:
    /// comm hooks, autocast, mixed-precision policies, device meshes), with the line of each.
    pub fn setup_calls(&self, module: &Module) -> Vec<SetupCall> {
        static WORDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let words = WORDS.get_or_init(|| {
            crate::names::knowledge::knowledge().role_words(crate::names::knowledge::Role::Payload)
        });
        // Resolving every call of the file found nothing in most files (a fifth of the
        // linter's time): a payload row's name is built from words of the file.
        if !words.iter().any(|w| crate::syntax::expr::has_word(module.source(), w)) {
            return Vec::new();
        }
        // A call names its row by its last segment (`ddp.register_comm_hook(...)`,
        // `autocast(...)`) or through an import (`from torch import autocast as ac`):
        // `", ".join(parts)` passes the word gate above but cannot be `DDP.join`, and
        // `len(x)` cannot be a row at all.
        let is_word = |name: &str| words.iter().any(|w| w == name);
        let may_be_row = |func: &Expr| match func {
            Expr::Attribute(a) => is_word(a.attr.id.as_str()),
            Expr::Name(n) => {
                is_word(n.id.as_str()) || super::Collectives::imported_by(module, n.id.as_str())
            }
            _ => true,
        };
        let mut calls: Vec<&ruff_python_ast::ExprCall> = Vec::new();
        // The blocks of `with <call>:` statements, by the call's position.
        let mut blocks: Vec<(TextSize, SetupBlock)> = Vec::new();
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            if let Stmt::With(w) = stmt
                && let (Some(first), Some(last)) = (w.body.first(), w.body.last())
            {
                let block = SetupBlock {
                    first: module.line_of(first.start()),
                    last: module.line_of(last.end()),
                    yields: yields_in(&w.body),
                };
                for item in &w.items {
                    if let Expr::Call(c) = &item.context_expr {
                        blocks.push((c.start(), block));
                    }
                }
            }
            for e in crate::syntax::tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Call(c) = x
                        && may_be_row(&c.func)
                    {
                        calls.push(c);
                    }
                });
            }
        });
        let mut out = Vec::new();
        // Calls come in source order, several to a line: the scope is found once per line.
        let mut scope: Option<(u32, Scope<'_>)> = None;
        for c in calls {
            let line = module.line_of(c.start());
            let scope = match scope {
                Some((l, s)) if l == line => s,
                _ => scope.insert((line, Scope::at(module, line))).1,
            };
            let mut eval = value::Eval::new(self, module, scope, 0);
            if let Sym::Path(p) = eval.resolve(&c.func, c.start())
                && let Some(api) = crate::names::knowledge::knowledge().api(&p)
                && api.role == crate::names::knowledge::Role::Payload
            {
                // `torch.set_default_dtype(saved)` of a `saved` the reader gave before a change
                // (here or in the helper that made it): the ranks that changed the setting put
                // it back, and every rank has its earlier one again.
                if let Some(reader) = api.restored_by.as_deref()
                    && let Some(first) = c.arguments.args.first()
                    && eval.comes_from_call_of(first, c.start(), reader, 0)
                {
                    continue;
                }
                let arguments = eval.value(&Expr::Call(c.clone()), c.start()).whole;
                out.push(SetupCall {
                    line,
                    qualified: p,
                    affects: api.affects.clone().unwrap_or_default(),
                    source: module.text(c.range()).to_owned(),
                    arguments: Finding::from_deps(&arguments),
                    block: blocks.iter().find(|(at, _)| *at == c.start()).map(|(_, b)| *b),
                });
            }
        }
        out
    }
}

/// A call that changes what later collectives carry ([`Analysis::setup_calls`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupCall {
    pub line: u32,
    /// Its qualified name (`torch.nn.parallel.DistributedDataParallel.register_comm_hook`).
    pub qualified: String,
    /// What it changes, as the table says (`dtype`, `size`, `group`).
    pub affects: String,
    /// The call's source text.
    pub source: String,
    /// What its arguments depend on.
    pub arguments: Finding,
    /// The block of the `with` statement the call opens (`with torch.autocast(...):`), whose
    /// setting holds inside it only; `None` for a call made as a statement.
    pub block: Option<SetupBlock>,
}

/// The lines of a `with` statement's block, and whether it yields: a context manager written
/// as a generator applies its block's setting to whatever its caller runs at the `yield`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupBlock {
    pub first: u32,
    pub last: u32,
    pub yields: bool,
}

/// Whether `body` yields (nested scopes aside).
fn yields_in(body: &[Stmt]) -> bool {
    let mut found = false;
    crate::syntax::tree::walk_scope(body, &mut |stmt, _| {
        for e in crate::syntax::tree::header_exprs(stmt) {
            crate::syntax::expr::walk(e, &mut |x| {
                found |= matches!(x, Expr::Yield(_) | Expr::YieldFrom(_));
            });
        }
    });
    found
}
