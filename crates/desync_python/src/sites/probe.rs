//! Files each rank asks about on its own, and who reads them (DSY007).
//!
//! `if train_state_path.exists():` is answered by each rank from its own view of the file
//! system: a node-local disk, a shared file system's cached attributes, a write another rank
//! has not flushed yet. Whether a path names a file is shown, not guessed from its spelling:
//! a probe of the table's `file_probes` (`os.path.exists(p)`, `p.exists()`) asks about it, and
//! a read of the table's `file_reads` (`torch.load(p)`, `open(p)`, `p.read_text()`) opens it.

use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::parameter_names;
use crate::Module;
use crate::names::bindings::Scope;
use crate::names::knowledge::{FileCalls, knowledge};
use crate::syntax::tree::{header_exprs, lines_of, walk_all};
use crate::values::resolve::{Sym, def_at};
use crate::values::value::{Eval, argument_for};
use crate::values::{Analysis, Deps};

/// A file-system probe in a test: the call as written and the path it asks about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProbe {
    pub probe: String,
    pub path: String,
}

impl Analysis<'_> {
    /// The file-system probes of the test `expr_source` at `line` of `module` (`os.path.exists(p)`,
    /// `p.is_file()`), each with the path it asks about as written.
    pub fn file_probes(&self, module: &Module, line: u32, expr_source: &str) -> Vec<FileProbe> {
        let probes = &knowledge().file_probes;
        let mut out = Vec::new();
        self.parsed(module, line, expr_source, |e, expr, at| {
            crate::syntax::expr::walk(expr, &mut |x| {
                let Expr::Call(c) = x else { return };
                if let Some(path) = path_of(e, c, at, probes) {
                    let probe =
                        FileProbe { probe: e.text(x).to_owned(), path: normal(e.text(path)) };
                    out.push(probe);
                }
            });
            Deps::default()
        });
        out
    }

    /// The first read of the file `path` (as written) on lines `first..=last` of `module`
    /// (`torch.load(path)`, `open(path)`, `path.read_text()`, or a call of a project function
    /// that reads the file its argument names, `MAX_READ_DEPTH` calls deep): its line and the
    /// call as written.
    pub fn file_read(
        &self,
        module: &Module,
        first: u32,
        last: u32,
        path: &str,
    ) -> Option<(u32, String)> {
        self.file_read_within(module, first, last, path, 0)
    }

    fn file_read_within(
        &self,
        module: &Module,
        first: u32,
        last: u32,
        path: &str,
        depth: usize,
    ) -> Option<(u32, String)> {
        let scope = Scope::at(module, first);
        let suite = scope.suite;
        let mut eval = Eval::new(self, module, scope, 0);
        let reads = &knowledge().file_reads;
        let mut found = None;
        walk_all(suite, &mut |stmt: &Stmt| {
            if found.is_some() {
                return;
            }
            let (start, _) = lines_of(module, stmt);
            if !(first..=last).contains(&start) {
                return;
            }
            for header in header_exprs(stmt) {
                crate::syntax::expr::walk(header, &mut |x| {
                    let Expr::Call(c) = x else { return };
                    if found.is_some() {
                        return;
                    }
                    let reads_path = path_of(&mut eval, c, c.start(), reads)
                        .is_some_and(|p| normal(eval.text(p)) == path)
                        || self.helper_reads(&mut eval, c, path, depth);
                    if reads_path {
                        found = Some((module.line_of(c.start()), eval.text(x).to_owned()));
                    }
                });
            }
        });
        found
    }

    /// Whether `c` calls a project function that reads the file named by the argument `c`
    /// passes as `path` (`load_state(path)` where `def load_state(p): return torch.load(p)`).
    fn helper_reads(&self, e: &mut Eval<'_, '_>, c: &ExprCall, path: &str, depth: usize) -> bool {
        if depth >= MAX_READ_DEPTH
            || !c
                .arguments
                .args
                .iter()
                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                .any(|a| names_file(e, a, c.start(), path))
        {
            return false;
        }
        let Sym::Function(f) = e.resolve(&c.func, c.start()) else { return false };
        let home: &Module = f.module.as_deref().unwrap_or(e.module);
        let Some(def) = def_at(home, f.def) else { return false };
        let (Some(body_first), Some(body_last)) = (def.body.first(), def.body.last()) else {
            return false;
        };
        let (first, _) = lines_of(home, body_first);
        let (_, last) = lines_of(home, body_last);
        let through_instance = f.is_method && matches!(&*c.func, Expr::Attribute(_));
        let parameters = parameter_names(def);
        parameters.iter().any(|p| {
            argument_for(&parameters, through_instance, c, p)
                .is_some_and(|a| names_file(e, a, c.start(), path))
                && self.file_read_within(home, first, last, p, depth + 1).is_some()
        })
    }
}

/// How many project calls deep a read of a probed file is followed.
const MAX_READ_DEPTH: usize = 2;

/// The names a file-system probe can be spelled with in `module`: the table's own, and the
/// names its top-level imports bind them to (`from os.path import isfile as have`). A test that
/// spells none of them calls no probe (a cheap question before [`Analysis::file_probes`]).
pub fn file_probe_spellings(module: &Module) -> Vec<String> {
    let probes = &knowledge().file_probes;
    let aliases = module.body().iter().flat_map(|stmt| match stmt {
        Stmt::ImportFrom(i) => i.names.as_slice(),
        Stmt::Import(i) => i.names.as_slice(),
        _ => &[],
    });
    let renamed = aliases.filter_map(|alias| {
        let asname = alias.asname.as_ref()?;
        let last = alias.name.id.rsplit('.').next()?;
        probes.words().any(|w| w == last).then_some(asname.id.as_str())
    });
    probes.words().chain(renamed).map(str::to_owned).collect()
}

/// The path `c` asks about or opens, when it is one of `calls`, through any wrapper that names
/// the same file (`torch.load(Path(p))` opens `p`).
fn path_of<'a>(
    e: &mut Eval<'_, '_>,
    c: &'a ExprCall,
    at: TextSize,
    calls: &FileCalls,
) -> Option<&'a Expr> {
    called_on(e, c, at, calls).map(|p| same_file(e, p, at))
}

/// What `path` names the file of, through the table's `path_wrappers` (`Path(p)`, `str(p)`,
/// `p.resolve()` name the file `p` names).
fn same_file<'a>(e: &mut Eval<'_, '_>, path: &'a Expr, at: TextSize) -> &'a Expr {
    let wrappers = &knowledge().path_wrappers;
    let mut path = path;
    for _ in 0..MAX_WRAPPERS {
        let Expr::Call(c) = path else { break };
        let single = c.arguments.keywords.is_empty() && c.arguments.args.len() <= 1;
        match called_on(e, c, at, wrappers) {
            Some(inner) if single => path = inner,
            _ => break,
        }
    }
    path
}

/// Whether `expr` names the file `path` (as [`normal`] writes it), through wrappers.
fn names_file(e: &mut Eval<'_, '_>, expr: &Expr, at: TextSize, path: &str) -> bool {
    let expr = same_file(e, expr, at);
    normal(e.text(expr)) == path
}

/// How many wrappers deep a path is unwrapped (`str(Path(p).resolve())`).
const MAX_WRAPPERS: usize = 4;

/// What `c` is called on, when it is one of `calls`: the first argument of a function of the
/// table (resolved through the file's imports), or the object a method of the table is called
/// on (`p.exists()`: a method of that name on a path; the caller shows it is one when it needs
/// to).
fn called_on<'a>(
    e: &mut Eval<'_, '_>,
    c: &'a ExprCall,
    at: TextSize,
    calls: &FileCalls,
) -> Option<&'a Expr> {
    let method = match &*c.func {
        Expr::Attribute(a) => Some((a.attr.id.as_str(), &*a.value)),
        _ => None,
    };
    match e.resolve(&c.func, at) {
        Sym::Path(p) if calls.is_function(&p) => c.arguments.args.first(),
        // `pathlib.Path(...).exists()`: the table's method of a value of known type.
        Sym::Path(p) => {
            let (name, on) = method?;
            (p.ends_with(&format!(".{name}")) && calls.is_method(name)).then_some(on)
        }
        // A function or method of the project is not the library's.
        Sym::Function(_) => None,
        _ => {
            let (name, on) = method?;
            calls.is_method(name).then_some(on)
        }
    }
}

/// A path expression as written, without the spaces that do not change it.
fn normal(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
