//! Who calls a function, with what: the module's own calls of it (resolved, not matched by
//! name), and the process launchers of the table that run it once per rank
//! (`torch.multiprocessing.spawn(worker, args=(world,))` calls `worker(i, world)` in process
//! `i`). A parameter whose value the analysis leaves to the caller is decided by these. Also the
//! functions a rank-only decorator of the table guards (`@rank_zero_only`,
//! `@accelerator.on_main_process`): their bodies run on some ranks only.

use std::rc::Rc;
use std::sync::Arc;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::{Collectives, parameter_names, walk_scopes};
use crate::names::bindings::Scope;
use crate::names::knowledge::{Launcher, Role, knowledge};
use crate::syntax::expr::{self, last_segment};
use crate::syntax::module::{CallIndex, Module};
use crate::syntax::tree::{self, header_exprs};
use crate::values::key_of;
use crate::values::resolve::{Sym, def_at};
use crate::values::value::{Eval, argument_for};
use smallvec::SmallVec;

/// What one caller passes for a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument {
    /// 1-based line where the argument's expression starts (the call's line for a process
    /// index a launcher passes).
    pub line: u32,
    /// Source text of the argument; empty for a launcher's process index.
    pub text: String,
    /// The call, shortened (`train(model, loader, rank)`).
    pub call: String,
    /// The parameter receives the process index from a launcher of the table: it is the rank.
    pub process_index: bool,
}

/// What one call found by the function's name elsewhere in the project passes for a parameter
/// ([`Collectives::arguments_by_name`]).
#[derive(Debug, Clone)]
pub struct ArgumentElsewhere {
    /// The module holding the call.
    pub module: Arc<Module>,
    /// 1-based line where the argument's expression starts, in `module`.
    pub line: u32,
    /// Source text of the argument.
    pub text: String,
    /// The call, shortened.
    pub call: String,
}

/// Calls found by a function's name at most: a name called from more places than this is too
/// common (`step`, `update`) to tell its own callers from those of its namesakes.
const MAX_CALLS_BY_NAME: usize = 16;

/// A function whose body runs on some ranks only, because of a decorator of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankOnly {
    pub name: String,
    /// Line of the `def` keyword and last line of the body.
    pub def_line: u32,
    pub end_line: u32,
    /// Line and source text of the decorator.
    pub decorator_line: u32,
    pub decorator: String,
}

/// Where one call of a function is, kept by [`Collectives`] per function: the call's start,
/// the `def` of the function holding it (`None`: module level), and how it passes arguments.
pub(super) struct FoundCall {
    call: TextSize,
    scope: Option<TextSize>,
    is_method: bool,
    launcher: Option<&'static Launcher>,
}

/// One call of a function: where it is and how it passes arguments.
pub(super) struct CallOf<'m> {
    pub scope: Scope<'m>,
    pub call: &'m ExprCall,
    parameters: Vec<String>,
    is_method: bool,
    launcher: Option<&'static Launcher>,
}

impl<'m> CallOf<'m> {
    /// The expression passed for `parameter`; `None` when it is not passed (a default), is
    /// the launcher's process index, or comes through `*args`.
    pub fn argument(&self, parameter: &str) -> Option<&'m Expr> {
        match self.launcher {
            None => argument_for(&self.parameters, self.is_method, self.call, parameter),
            Some(l) => {
                let index = self.parameters.iter().position(|p| p == parameter)?;
                if index == l.rank_parameter {
                    return None;
                }
                // `spawn(fn, args=(a, b))` runs `fn(i, a, b)`.
                let args = self.call.arguments.keywords.iter().find_map(|k| {
                    (k.arg.as_ref().is_some_and(|a| a.id.as_str() == "args")).then_some(&k.value)
                })?;
                let Expr::Tuple(t) = args else { return None };
                let shift = usize::from(index > l.rank_parameter);
                t.elts.get(index - shift).filter(|e| !matches!(e, Expr::Starred(_)))
            }
        }
    }

    pub fn passes_process_index(&self, parameter: &str) -> bool {
        self.launcher.is_some_and(|l| {
            self.parameters.iter().position(|p| p == parameter) == Some(l.rank_parameter)
        })
    }
}

impl Collectives<'_, '_> {
    /// What the calls of the function whose `def` is on `def_line` pass for `parameter`, for
    /// every such call in `module` (and launchers that run it per rank).
    pub fn arguments_for(&self, module: &Module, def_line: u32, parameter: &str) -> Vec<Argument> {
        let Some(def) = def_on_line(module, def_line) else { return Vec::new() };
        let mut out = Vec::new();
        for call in self.calls_of(module, def) {
            let text = crate::syntax::expr::snippet(module.text(call.call.range()));
            if call.passes_process_index(parameter) {
                out.push(Argument {
                    line: module.line_of(call.call.start()),
                    text: String::new(),
                    call: text,
                    process_index: true,
                });
            } else if let Some(arg) = call.argument(parameter) {
                out.push(Argument {
                    line: module.line_of(arg.start()),
                    text: module.text(arg.range()).to_owned(),
                    call: text,
                    process_index: false,
                });
            }
        }
        out
    }

    /// What the calls of the function whose `def` is on `def_line` that its own module does
    /// not resolve pass for `parameter`, found by the function's name across the project
    /// (`self.controller.generate(requests)` in another file calls the method `generate`;
    /// a method is called on an attribute, a function by its name or a module's): one entry
    /// per call that passes it (a call that leaves it to its default passes nothing to
    /// follow). `None` when the project does not know its files, or when more than
    /// `MAX_CALLS_BY_NAME` (16) calls spell the name. The function's calls of itself are not
    /// its callers.
    pub fn arguments_by_name(
        &self,
        module: &Module,
        def_line: u32,
        parameter: &str,
    ) -> Option<Vec<ArgumentElsewhere>> {
        let project = self.cx.project?;
        let def = def_on_line(module, def_line)?;
        let name = def.name.id.as_str();
        let parameters = parameter_names(def);
        // A method is bound where it is called: its first parameter is the object.
        let is_method = module.is_method(def_line);
        let (first, last) = tree::lines_of(module, def);
        let mut calls = 0;
        let mut out = Vec::new();
        for path in project.files_calling(name)? {
            let Some(other) = project.load(&path) else { continue };
            let in_own_file = same_file(other.file_path(), module.file_path());
            let index = other.calls().get_or_init(|| call_index(&other));
            for &(scope, start) in index.of(name) {
                let Some(call) = tree::call_starting_at(other.body(), start) else { continue };
                let spelled = match &*call.func {
                    Expr::Attribute(a) => a.attr.id.as_str() == name,
                    Expr::Name(n) => !is_method && n.id.as_str() == name,
                    _ => false,
                };
                let in_itself =
                    in_own_file && (first..=last).contains(&other.line_of(call.start()));
                if !spelled || in_itself || !fits(def, is_method, call) {
                    continue;
                }
                // A call the analysis resolves to another function is that function's.
                let scope = match scope {
                    Some(at) => match def_at(&other, at) {
                        Some(d) => function_scope(d),
                        None => continue,
                    },
                    None => Scope::module(&other),
                };
                let mut eval = Eval::new(self.cx, &other, scope, 0);
                if let Sym::Function(f) = eval.resolve(&call.func, call.start()) {
                    let ours = match &f.module {
                        None => in_own_file,
                        Some(m) => same_file(m.file_path(), module.file_path()),
                    };
                    if f.def != def.start() || !ours {
                        continue;
                    }
                }
                calls += 1;
                if calls > MAX_CALLS_BY_NAME {
                    return None;
                }
                if let Some(arg) = argument_for(&parameters, is_method, call, parameter) {
                    out.push(ArgumentElsewhere {
                        module: Arc::clone(&other),
                        line: other.line_of(arg.start()),
                        text: other.text(arg.range()).to_owned(),
                        call: crate::syntax::expr::snippet(other.text(call.range())),
                    });
                }
            }
        }
        Some(out)
    }

    /// Where the function whose `def` is on `def_line` passes `parameter` as this process's
    /// rank to a call of the table (`dist.init_process_group(..., rank=proc_id)`): that call,
    /// shortened, and its line. The function says its parameter is its rank.
    pub fn declared_rank(
        &self,
        module: &Module,
        def_line: u32,
        parameter: &str,
    ) -> Option<(u32, String)> {
        // A call resolves to a row only through the row's own last word, which the source
        // then spells (under any alias, the import names it): most files never do.
        if !knowledge().rank_argument_words().any(|w| module.word_count(w) > 0) {
            return None;
        }
        let def = def_on_line(module, def_line)?;
        let mut candidates: Vec<&ExprCall> = Vec::new();
        tree::walk_all(&def.body, &mut |stmt| {
            for e in header_exprs(stmt) {
                expr::walk(e, &mut |x| {
                    if let Expr::Call(c) = x
                        && c.arguments
                            .args
                            .iter()
                            .chain(c.arguments.keywords.iter().map(|k| &k.value))
                            .any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == parameter))
                    {
                        candidates.push(c);
                    }
                });
            }
        });
        let scope = function_scope(def);
        for c in candidates {
            let mut eval = Eval::new(self.cx, module, scope, 0);
            let Sym::Path(p) = eval.resolve(&c.func, c.start()) else { continue };
            let Some(row) = knowledge().rank_argument(&p) else { continue };
            let passed = c
                .arguments
                .find_keyword(&row.keyword)
                .map(|k| &k.value)
                .or_else(|| row.position.and_then(|i| c.arguments.args.get(i)));
            if matches!(passed, Some(Expr::Name(n)) if n.id.as_str() == parameter) {
                return Some((
                    module.line_of(c.start()),
                    crate::syntax::expr::snippet(module.text(c.range())),
                ));
            }
        }
        None
    }

    /// The calls of `def` (a function of `module`) in `module`, found once per function.
    pub(super) fn calls_of<'m>(
        &self,
        module: &'m Module,
        def: &'m StmtFunctionDef,
    ) -> Vec<CallOf<'m>> {
        let key = (key_of(module), def.start());
        let known = self.calls_found.borrow().get(&key).cloned();
        let found = known.unwrap_or_else(|| {
            let found = Rc::new(self.find_calls_of(module, def));
            self.calls_found.borrow_mut().insert(key, Rc::clone(&found));
            found
        });
        let parameters = parameter_names(def);
        found
            .iter()
            .filter_map(|f| {
                let scope = match f.scope {
                    Some(at) => function_scope(def_at(module, at)?),
                    None => Scope::module(module),
                };
                Some(CallOf {
                    scope,
                    call: tree::call_starting_at(module.body(), f.call)?,
                    parameters: parameters.clone(),
                    is_method: f.is_method,
                    launcher: f.launcher,
                })
            })
            .collect()
    }

    /// [`Collectives::calls_of`], walking the module.
    fn find_calls_of(&self, module: &Module, def: &StmtFunctionDef) -> Vec<FoundCall> {
        let name = def.name.id.as_str();
        // Most functions are never called in their own module (methods called from elsewhere):
        // a name the source spells only once, in its `def`, has no call to find.
        if module.word_count(name) < 2 {
            return Vec::new();
        }
        let index = module.calls().get_or_init(|| call_index(module));
        let mut found: Vec<(Scope<'_>, &ExprCall)> = Vec::new();
        for &(scope, call) in index.of(name) {
            let scope = match scope {
                Some(at) => match def_at(module, at) {
                    Some(d) => function_scope(d),
                    None => continue,
                },
                None => Scope::module(module),
            };
            // Only the calls that name it (the index keeps names by their hash).
            if let Some(c) = tree::call_starting_at(module.body(), call)
                && indexed_names(c).any(|n| n == name)
            {
                found.push((scope, c));
            }
        }
        let mut out = Vec::new();
        for (scope, c) in found {
            let mut eval = Eval::new(self.cx, module, scope, 0);
            match eval.resolve(&c.func, c.start()) {
                Sym::Function(f) if f.module.is_none() && f.def == def.start() => {
                    out.push(FoundCall {
                        call: c.start(),
                        scope: scope.function.map(Ranged::start),
                        is_method: f.is_method,
                        launcher: None,
                    });
                }
                Sym::Path(p) => {
                    let Some(l) = knowledge().launcher(&p) else { continue };
                    let target = l
                        .target_keyword
                        .as_deref()
                        .and_then(|k| {
                            c.arguments
                                .keywords
                                .iter()
                                .find(|kw| kw.arg.as_ref().is_some_and(|a| a.id.as_str() == k))
                                .map(|kw| &kw.value)
                        })
                        .or_else(|| c.arguments.args.get(l.target));
                    let Some(target) = target else { continue };
                    if matches!(eval.resolve(target, c.start()), Sym::Function(f) if f.module.is_none() && f.def == def.start())
                    {
                        out.push(FoundCall {
                            call: c.start(),
                            scope: scope.function.map(Ranged::start),
                            is_method: false,
                            launcher: Some(l),
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Functions of `module` decorated with a rank-only decorator of the table.
    pub fn rank_only(&self, module: &Module) -> Vec<RankOnly> {
        let mut defs: Vec<(&StmtFunctionDef, Scope<'_>)> = Vec::new();
        walk_scopes(module.body(), None, 0, &mut |stmt, function| {
            if let Stmt::FunctionDef(d) = stmt
                && !d.decorator_list.is_empty()
            {
                defs.push((d, Scope::of(module, function)));
            }
        });
        let mut out = Vec::new();
        for (def, scope) in defs {
            let mut eval = Eval::new(self.cx, module, scope, 0);
            for decorator in &def.decorator_list {
                let callee = match &decorator.expression {
                    Expr::Call(c) => &*c.func,
                    e => e,
                };
                let Sym::Path(p) = eval.resolve(callee, decorator.start()) else { continue };
                if knowledge().api(&p).is_some_and(|a| a.role == Role::RankOnly) {
                    out.push(RankOnly {
                        name: def.name.id.to_string(),
                        def_line: module.line_of(def.name.start()),
                        end_line: tree::lines_of(module, def).1,
                        decorator_line: module.line_of(decorator.start()),
                        decorator: crate::syntax::expr::snippet(module.text(decorator.range())),
                    });
                    break;
                }
            }
        }
        out
    }
}

/// The scope of a function's body.
pub(super) fn function_scope(def: &StmtFunctionDef) -> Scope<'_> {
    Scope { function: Some(def), suite: &def.body }
}

/// The names a call is indexed under in [`CallIndex`]: the last name of its callee and of
/// each argument.
fn indexed_names(c: &ExprCall) -> impl Iterator<Item = &str> {
    let arguments = c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value));
    std::iter::once(&*c.func).chain(arguments).filter_map(last_segment)
}

/// Builds [`CallIndex`] for `module`: one walk, instead of one per function whose callers
/// are asked for.
fn call_index(module: &Module) -> CallIndex {
    let mut index = CallIndex::default();
    walk_scopes(module.body(), None, 0, &mut |stmt, function| {
        for e in header_exprs(stmt) {
            expr::walk(e, &mut |x| {
                let Expr::Call(c) = x else { return };
                let mut names: SmallVec<[&str; 4]> = SmallVec::new();
                for name in indexed_names(c) {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                for name in names {
                    index.note(name, (function.map(Ranged::start), c.start()));
                }
            });
        }
    });
    index
}

/// Whether `call` could be a call of `def` by its arguments: every keyword names one of its
/// parameters and the positional ones fit, unless it takes `**kwargs` or `*args`. Namesakes
/// (an engine's `allreduce_no_retain(bucket, dp_group=g)` beside an optimizer's
/// `allreduce_no_retain(bucket, group=g)`) mostly differ there.
fn fits(def: &StmtFunctionDef, is_method: bool, call: &ExprCall) -> bool {
    let parameters = &def.parameters;
    let named = |name: &str| {
        parameters.iter_non_variadic_params().any(|p| p.parameter.name.id.as_str() == name)
    };
    let keywords_fit = parameters.kwarg.is_some()
        || call
            .arguments
            .keywords
            .iter()
            .all(|k| k.arg.as_ref().is_none_or(|a| named(a.id.as_str())));
    let positional = (parameters.posonlyargs.len() + parameters.args.len())
        .saturating_sub(usize::from(is_method));
    let positional_fit = parameters.vararg.is_some() || call.arguments.args.len() <= positional;
    keywords_fit && positional_fit
}

/// Whether two modules' paths name one file (the project's loads are canonical, a linted
/// file's path is as given).
fn same_file(a: Option<&std::path::Path>, b: Option<&std::path::Path>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a == b
                || std::fs::canonicalize(a)
                    .ok()
                    .zip(std::fs::canonicalize(b).ok())
                    .is_some_and(|(a, b)| a == b)
        }
        _ => false,
    }
}

/// The `def` whose name is on `line`.
pub(super) fn def_on_line(module: &Module, line: u32) -> Option<&StmtFunctionDef> {
    // The statements around the line include the `def` whose name is on it: a descent per
    // question, where walking the whole module was one walk per parameter asked about.
    module.path(line)?.levels.iter().find_map(|level| match level.stmt() {
        Stmt::FunctionDef(d) if module.line_of(d.name.start()) == line => Some(d),
        _ => None,
    })
}
