//! Where the project's own exceptions can come from. A failing collective raises torch's
//! errors (`DistBackendError`, a `RuntimeError`), never a class the project defines, so a
//! handler that catches only the project's classes (`except UnifiedMemoryUnsupportedError:`)
//! runs only after code of the project raised one: a `raise` of the class or of a subclass,
//! in the `try` body or in a function of the project it calls (a library function reaches
//! the project only through a function of it passed as an argument, a callback). A
//! collective of the `try` body that runs before every such point is issued on every rank
//! whatever the handler does; so is a helper's collective that runs before the helper's
//! first such point (`create_unified_mempool()` all-gathers the compile state, then raises).
//!
//! Whatever the analysis cannot see through (a call it cannot resolve, `raise err`, a
//! recursion, a chain of helpers deeper than it follows) counts as raising any class: the
//! collectives after it stay skippable.

use std::sync::Arc;

use ruff_python_ast::{ExceptHandler, Expr, ExprCall, Stmt, StmtClassDef, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};
use rustc_hash::FxHashMap as HashMap;

use super::{Collectives, FnKey, MAX_HELPER_DEPTH};
use crate::names::bindings::{self, Binding, Scope, Source};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, Slot};
use crate::values::resolve::{ClassRef, FnRef, Sym, class_at, def_at};
use crate::values::value::Eval;
use crate::values::{ModuleKey, key_of};

/// A class of the project: its module and the start of its `class` statement.
type ClassKey = (ModuleKey, TextSize);

/// How many steps a class's bases, or where a value comes from, are followed.
const MAX_STEPS: usize = 8;

/// A class of the project some code raises, with the classes it derives from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Raisable {
    key: ClassKey,
    /// Its bases, transitively: the project's by key, the library's by qualified name.
    ancestors: Vec<ClassKey>,
    library_bases: Vec<String>,
}

/// What some code can raise of the project's classes; `unknown`: anything (it runs code the
/// analysis cannot see through).
#[derive(Clone, Debug, Default)]
pub(crate) struct Raised {
    classes: Vec<Raisable>,
    unknown: bool,
}

/// What an `except` clause catches, one entry per name it gives.
#[derive(Clone, Debug)]
enum Catch {
    /// A bare `except:`, `Exception`, `BaseException`.
    Everything,
    Project(ClassKey),
    Library(String),
}

impl Raised {
    fn anything() -> Raised {
        Raised { classes: Vec::new(), unknown: true }
    }

    fn merge(&mut self, other: &Raised) {
        self.unknown |= other.unknown;
        for c in &other.classes {
            if !self.classes.contains(c) {
                self.classes.push(c.clone());
            }
        }
    }

    /// What gets past handlers that catch `caught` (and pass nothing on).
    fn escaping(&self, caught: &[Catch]) -> Raised {
        if caught.iter().any(|c| matches!(c, Catch::Everything)) {
            return Raised::default();
        }
        Raised {
            classes: self.classes.iter().filter(|r| !r.caught_by(caught)).cloned().collect(),
            unknown: self.unknown,
        }
    }

    /// Whether a handler catching the project classes `caught` can catch any of it.
    fn reaches(&self, caught: &[ClassKey]) -> bool {
        self.unknown
            || self
                .classes
                .iter()
                .any(|r| caught.iter().any(|c| r.key == *c || r.ancestors.contains(c)))
    }
}

impl Raisable {
    fn caught_by(&self, caught: &[Catch]) -> bool {
        caught.iter().any(|c| match c {
            Catch::Everything => true,
            Catch::Project(k) => self.key == *k || self.ancestors.contains(k),
            Catch::Library(q) => self.library_bases.iter().any(|b| same_library_class(b, q)),
        })
    }
}

/// `builtins.ValueError` and `ValueError` name one class.
fn same_library_class(a: &str, b: &str) -> bool {
    let bare = |s: &str| s.strip_prefix("builtins.").unwrap_or(s).to_owned();
    bare(a) == bare(b)
}

/// What a function of the project raises of the project's classes: anywhere in its body,
/// and before its first collective.
#[derive(Clone, Debug, Default)]
pub(crate) struct RaiseSummary {
    all: Raised,
    before_first: Raised,
}

impl RaiseSummary {
    fn anything() -> RaiseSummary {
        RaiseSummary { all: Raised::anything(), before_first: Raised::anything() }
    }
}

/// One point of a walk, in the order the code runs (by where its node ends: a call's
/// arguments before the call): what it can raise, and for a collective site what the site
/// itself can raise before it issues its first collective.
struct Point {
    end: TextSize,
    line: u32,
    column: u32,
    raised: Raised,
    site: Option<Raised>,
}

impl Collectives<'_, '_> {
    /// For the handler on `handler_line` of the `try` on `try_line`: `None` when it catches
    /// anything but classes of the project (a bare `except`, a library class, a name that
    /// does not resolve); otherwise the first collective site of the `try` body, as (line,
    /// column), that a raise of one of those classes can come before (`Some(None)`: none).
    pub fn skipped_by_project_error(
        &self,
        module: &Module,
        try_line: u32,
        handler_line: u32,
    ) -> Option<Option<(u32, u32)>> {
        let (stmt, function) = try_on_line(module, try_line)?;
        let handler = stmt.handlers.iter().find_map(|h| {
            let ExceptHandler::ExceptHandler(h) = h;
            (module.line_of(h.start()) == handler_line).then_some(h)
        })?;
        let scope = Scope::of(module, function);
        let mut eval = Eval::new(self.cx, module, scope, 0);
        let caught = catches(&mut eval, module, handler.type_.as_deref()?);
        let project: Vec<ClassKey> = caught
            .iter()
            .map(|c| match c {
                Catch::Project(k) => Some(*k),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let mut before = Raised::default();
        for point in self.points(module, function, &stmt.body, 0) {
            if let Some(own) = &point.site {
                let mut first = before.clone();
                first.merge(own);
                if first.reaches(&project) {
                    return Some(Some((point.line, point.column)));
                }
            }
            before.merge(&point.raised);
        }
        Some(None)
    }

    /// What the project function `f` raises (memoised per analysis).
    fn raise_summary(&self, module: &Module, f: &FnRef, depth: usize) -> Arc<RaiseSummary> {
        if depth > MAX_HELPER_DEPTH {
            return Arc::new(RaiseSummary::anything());
        }
        let target: &Module = f.module.as_deref().unwrap_or(module);
        let key: FnKey = (key_of(target), f.def);
        if let Some(known) = self.raises.borrow().get(&key) {
            // `None`: being walked (a recursion), which can raise whatever the walk finds.
            return known.clone().unwrap_or_else(|| Arc::new(RaiseSummary::anything()));
        }
        let Some(def) = def_at(target, f.def) else {
            return Arc::new(RaiseSummary::anything());
        };
        self.raises.borrow_mut().insert(key, None);
        let mut summary = RaiseSummary::default();
        let mut first_seen = false;
        for point in self.points(target, Some(def), &def.body, depth) {
            if !first_seen {
                if let Some(own) = &point.site {
                    summary.before_first.merge(own);
                    first_seen = true;
                } else {
                    summary.before_first.merge(&point.raised);
                }
            }
            summary.all.merge(&point.raised);
        }
        if !first_seen {
            summary.before_first = summary.all.clone();
        }
        let summary = Arc::new(summary);
        self.raises.borrow_mut().insert(key, Some(summary.clone()));
        summary
    }

    /// The points of `suite` (a body of `function`, in `module`), in the order they run;
    /// what a `try` of the suite catches (and does not pass on) is left out of what its
    /// body's points raise.
    fn points(
        &self,
        module: &Module,
        function: Option<&StmtFunctionDef>,
        suite: &[Stmt],
        depth: usize,
    ) -> Vec<Point> {
        let scope = Scope::of(module, function);
        let mut eval = Eval::new(self.cx, module, scope, 0);
        let mut out = Vec::new();
        let mut stopped_by: HashMap<TextSize, Vec<Catch>> = HashMap::default();
        tree::walk_scope(suite, &mut |stmt, frames| {
            let mut here = Vec::new();
            let skip = match stmt {
                Stmt::Raise(r) => {
                    let raised = match r.exc.as_deref() {
                        Some(exc) => self.raised_by(&mut eval, module, exc),
                        None => Raised::anything(),
                    };
                    here.push(Point {
                        end: stmt.end(),
                        line: module.line_of(stmt.start()),
                        column: module.column_of(stmt.start()),
                        raised,
                        site: None,
                    });
                    // `raise Error(...)` builds the class it raises: not a call that raises.
                    r.exc.as_deref().filter(|e| e.is_call_expr()).map(Ranged::start)
                }
                _ => None,
            };
            for e in tree::header_exprs(stmt) {
                let mut callees = Vec::new();
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Call(c) = x {
                        callees.push(c.func.start());
                        if Some(c.start()) != skip {
                            here.push(self.call_point(&mut eval, module, scope, c, depth));
                        }
                    }
                });
                // A property read that issues a collective (`trainer.log_dir`) is a site too.
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Attribute(a) = x
                        && !callees.contains(&x.start())
                        && super::segments().properties.contains(a.attr.id.as_str())
                        && super::property_site(&mut eval, x).is_some()
                    {
                        here.push(Point {
                            end: x.end(),
                            line: module.line_of(x.start()),
                            column: module.column_of(x.start()),
                            raised: Raised::default(),
                            site: Some(Raised::default()),
                        });
                    }
                });
            }
            // Handlers of the `try` statements whose bodies hold this statement (what each
            // stops is worked out once per `try`, not once per statement of its body).
            for frame in frames.iter().rev() {
                if let (Stmt::Try(t), Slot::Body) = (frame.owner, frame.slot) {
                    let stopped = stopped_by.entry(t.start()).or_insert_with(|| {
                        t.handlers
                            .iter()
                            .filter_map(|h| {
                                let ExceptHandler::ExceptHandler(h) = h;
                                if passes_on(h) {
                                    return None;
                                }
                                Some(match h.type_.as_deref() {
                                    None => vec![Catch::Everything],
                                    Some(t) => catches(&mut eval, module, t),
                                })
                            })
                            .flatten()
                            .collect()
                    });
                    for p in &mut here {
                        p.raised = p.raised.escaping(stopped);
                    }
                }
            }
            out.extend(here);
        });
        out.sort_by_key(|p| p.end);
        out
    }

    /// A call as a point: what the function it calls raises, and for a collective site what
    /// the site raises before its first collective (nothing for a library collective).
    fn call_point(
        &self,
        eval: &mut Eval<'_, '_>,
        module: &Module,
        scope: Scope<'_>,
        c: &ExprCall,
        depth: usize,
    ) -> Point {
        let mut raised = Raised::default();
        let mut own_first = None;
        match eval.resolve(&c.func, c.start()) {
            Sym::Function(f) => {
                let summary = self.raise_summary(module, &f, depth + 1);
                raised.merge(&summary.all);
                own_first = Some(summary.before_first.clone());
            }
            Sym::Class(class) => raised.merge(&self.constructing(module, &class, depth)),
            Sym::Path(_) | Sym::Instance(ClassRef { local: None, .. }) => {}
            _ => {
                // A method of a value the analysis does not know: a library one only when
                // what it is called on comes from the library.
                let library = match &*c.func {
                    Expr::Attribute(a) => from_library(eval, module, scope, &a.value, 0),
                    _ => false,
                };
                if !library {
                    raised = Raised::anything();
                }
            }
        }
        // A function of the project handed to a library call can be called by it.
        for arg in c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value)) {
            if matches!(arg, Expr::Name(_) | Expr::Attribute(_))
                && let Sym::Function(f) = eval.resolve(arg, c.start())
            {
                raised.merge(&self.raise_summary(module, &f, depth + 1).all);
            }
        }
        // A library collective raises none of the project's classes itself.
        let site =
            self.call_site(eval, module, c, None, depth).map(|_| own_first.unwrap_or_default());
        Point {
            end: c.end(),
            line: module.line_of(c.start()),
            column: module.column_of(c.start()),
            raised,
            site,
        }
    }

    /// What building an instance of `class` raises: its `__init__` (its own or a base's of
    /// the project); nothing when only library classes define one.
    fn constructing(&self, module: &Module, class: &ClassRef, depth: usize) -> Raised {
        let Some(at) = class.local else { return Raised::default() };
        let home: &Module = class.module.as_deref().unwrap_or(module);
        let Some(def) = class_at(home, at) else { return Raised::anything() };
        let init = def.body.iter().find_map(|s| match s {
            Stmt::FunctionDef(d) if d.name.id.as_str() == "__init__" => Some(d),
            _ => None,
        });
        match init {
            Some(init) => {
                let f = FnRef { module: class.module.clone(), def: init.start(), is_method: true };
                self.raise_summary(module, &f, depth + 1).all.clone()
            }
            // Inherited: from a base of the project it could raise anything we did not follow.
            None if has_project_base(self, home, def) => Raised::anything(),
            None => Raised::default(),
        }
    }

    /// What `raise exc` raises of the project's classes.
    fn raised_by(&self, eval: &mut Eval<'_, '_>, module: &Module, exc: &Expr) -> Raised {
        let class = match exc {
            Expr::Call(c) => &*c.func,
            e => e,
        };
        match eval.resolve(class, exc.start()) {
            Sym::Class(ClassRef { local: Some(at), module: home, .. }) => {
                let home_module: &Module = home.as_deref().unwrap_or(module);
                let mut raisable = Raisable {
                    key: (key_of(home_module), at),
                    ancestors: Vec::new(),
                    library_bases: Vec::new(),
                };
                self.bases(home_module, at, &mut raisable, 0);
                Raised { classes: vec![raisable], unknown: false }
            }
            // A library class (`raise ValueError(...)`): none of the project's.
            Sym::Path(_) | Sym::Class(ClassRef { local: None, .. }) => Raised::default(),
            _ => Raised::anything(),
        }
    }

    /// Collects the bases of the project class at `at` of `home` into `into`.
    fn bases(&self, home: &Module, at: TextSize, into: &mut Raisable, depth: usize) {
        if depth > MAX_STEPS {
            return;
        }
        let Some(def) = class_at(home, at) else { return };
        let mut local = Eval::new(self.cx, home, Scope::module(home), 0);
        for b in def.bases() {
            match local.resolve(b, def.start()) {
                Sym::Class(ClassRef { local: Some(base_at), module: base_home, .. }) => {
                    let base_module: &Module = base_home.as_deref().unwrap_or(home);
                    into.ancestors.push((key_of(base_module), base_at));
                    self.bases(base_module, base_at, into, depth + 1);
                }
                Sym::Path(p) | Sym::Class(ClassRef { qualified: Some(p), .. }) => {
                    into.library_bases.push(p);
                }
                _ => {}
            }
        }
    }
}

fn has_project_base(c: &Collectives<'_, '_>, home: &Module, def: &StmtClassDef) -> bool {
    let mut eval = Eval::new(c.cx, home, Scope::module(home), 0);
    def.bases().iter().any(|b| {
        matches!(eval.resolve(b, def.start()), Sym::Class(ClassRef { local: Some(_), .. }))
    })
}

/// Whether the value of `e` comes from the library: a literal, a library name, what a
/// library call returns, an attribute or item of such a value, a name bound to one.
fn from_library(
    eval: &mut Eval<'_, '_>,
    module: &Module,
    scope: Scope<'_>,
    e: &Expr,
    depth: usize,
) -> bool {
    if depth > MAX_STEPS {
        return false;
    }
    match eval.resolve(e, e.start()) {
        Sym::Path(_) | Sym::Instance(ClassRef { local: None, .. }) => return true,
        Sym::Unknown => {}
        _ => return false,
    }
    match e {
        Expr::StringLiteral(_)
        | Expr::FString(_)
        | Expr::NumberLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::List(_)
        | Expr::Dict(_)
        | Expr::Set(_)
        | Expr::Tuple(_) => true,
        Expr::Call(c) => match &*c.func {
            Expr::Attribute(a) => from_library(eval, module, scope, &a.value, depth + 1),
            f => matches!(
                eval.resolve(f, c.start()),
                Sym::Path(_) | Sym::Class(ClassRef { local: None, .. })
            ),
        },
        Expr::Attribute(a) => from_library(eval, module, scope, &a.value, depth + 1),
        Expr::Subscript(s) => from_library(eval, module, scope, &s.value, depth + 1),
        Expr::Name(n) => match bindings::lookup(module, scope, n.id.as_str(), n.start()) {
            Some(Binding { source: Source::Value(v), scope: home, .. }) => {
                from_library(eval, module, home, v, depth + 1)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The `try` statement on `line` and the function around it (found along the statements
/// that cover the line, not by walking the module: asked once per handler of every file).
fn try_on_line(
    module: &Module,
    line: u32,
) -> Option<(&ruff_python_ast::StmtTry, Option<&StmtFunctionDef>)> {
    let path = module.path(line)?;
    let function = path.innermost_function(module);
    path.scope_levels(module).iter().find_map(|level| match level.stmt() {
        Stmt::Try(t) if module.line_of(t.start()) == line => Some((t, function)),
        _ => None,
    })
}

/// Whether a handler can pass on what it caught: a bare `raise`, or `raise` of its own name.
fn passes_on(h: &ruff_python_ast::ExceptHandlerExceptHandler) -> bool {
    let name = h.name.as_ref().map(|n| n.id.as_str());
    let mut found = false;
    tree::walk_all(&h.body, &mut |s| {
        if let Stmt::Raise(r) = s {
            found |= match r.exc.as_deref() {
                None => true,
                Some(Expr::Name(n)) => Some(n.id.as_str()) == name,
                _ => false,
            };
        }
    });
    found
}

/// What an `except` clause's type catches.
fn catches(eval: &mut Eval<'_, '_>, module: &Module, type_: &Expr) -> Vec<Catch> {
    let names: Vec<&Expr> = match type_ {
        Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    };
    names
        .into_iter()
        .map(|n| match eval.resolve(n, n.start()) {
            Sym::Class(ClassRef { local: Some(at), module: home, .. }) => {
                Catch::Project((key_of(home.as_deref().unwrap_or(module)), at))
            }
            Sym::Path(p) | Sym::Class(ClassRef { qualified: Some(p), .. })
                if matches!(
                    p.strip_prefix("builtins.").unwrap_or(&p),
                    "Exception" | "BaseException"
                ) =>
            {
                Catch::Everything
            }
            Sym::Path(p) | Sym::Class(ClassRef { qualified: Some(p), .. }) => Catch::Library(p),
            // A name we cannot resolve: a library class the analysis has no row for.
            _ => Catch::Library(crate::syntax::expr::dotted(n).unwrap_or_default()),
        })
        .collect()
}
