//! [`Module`]: one parsed Python file with its line index. Parsing recovers from syntax errors
//! (Ruff's `parse_unchecked`), so a half-edited or truncated training script still yields every
//! statement the parser could make sense of; the errors are kept as strings.
//!
//! Lines are 1-based and follow Python's rules (`\n`, `\r\n` and a lone `\r` all end a line),
//! the same numbering `CPython` puts in tracebacks and Flight Recorder puts in frames.
//!
//! Length: about 640 lines of code (one type's parsing, line index and caches) and 180 of tests.

use std::sync::Arc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use ruff_python_ast::ModModule;
use ruff_python_ast::{Expr, ExprCall, PySourceType, Stmt};
use ruff_python_parser::{Parsed, parse_unchecked_source};
use ruff_source_file::{LineIndex, OneIndexed};
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::syntax::tree::{self, Path};
use crate::syntax::types::Function;

/// Syntax errors kept as text per module: a file of garbage has one per byte, and the first
/// few say what is wrong.
pub const MAX_KEPT_ERRORS: usize = 100;

/// Why `source` is not given to the parser, if it is not: bytes `CPython` refuses to compile
/// (NUL), or more nesting or tokens than the parser and the walks of its tree can hold
/// ([`crate::syntax::nesting`]).
fn not_parsable(source: &str) -> Option<String> {
    if let Some(at) = memchr::memchr(0, source.as_bytes()) {
        return Some(format!(
            "holds a NUL byte at byte {at} (CPython refuses such source: \"source code string cannot contain null bytes\"); not parsed"
        ));
    }
    match crate::syntax::nesting::past_limits(source, crate::MAX_NESTING, crate::MAX_TOKENS)? {
        crate::syntax::nesting::Past::Nesting { line, depth } => Some(format!(
            "nested {depth}+ levels deep at line {line}, past the limit of {} (CPython refuses such code too); not parsed",
            crate::MAX_NESTING
        )),
        crate::syntax::nesting::Past::Tokens { line } => Some(format!(
            "more than {} tokens (passed at line {line}): generated data, not training code; not parsed",
            crate::MAX_TOKENS
        )),
    }
}

/// Stack of the thread each parse runs on: the parser recurses per level of nesting (3,000
/// levels take under 2 MiB), and a tree the scan let through may still nest deeper than it
/// counted (Ruff's error recovery nests in ways no scan of the text can follow exactly).
const PARSE_STACK_BYTES: usize = 16 << 20;

/// Levels a tree may nest past [`MAX_NESTING`](crate::MAX_NESTING): a statement or two and an
/// expression statement around its value, which the scan does not count.
const TREE_SLACK: u32 = 8;

/// Parses `source` on a thread with a large stack and measures the tree there: a tree deeper
/// than the walks of this crate can take (on 2 MiB threads) is dropped there and refused, and a
/// panic in the parser is a refusal, not the end of the process.
fn parse_bounded(source: &str) -> Result<Parsed<ModModule>, String> {
    std::thread::scope(|scope| {
        let parse = std::thread::Builder::new().stack_size(PARSE_STACK_BYTES).spawn_scoped(scope, || {
            let parsed = parse_unchecked_source(source, PySourceType::Python);
            let depth = crate::syntax::nesting::tree_depth(parsed.suite());
            if depth > crate::MAX_NESTING + TREE_SLACK {
                drop(parsed);
                return Err(format!(
                    "nested {depth} levels deep once parsed (syntax errors the parser recovered from), past the limit of {}; not parsed",
                    crate::MAX_NESTING
                ));
            }
            Ok(parsed)
        });
        match parse {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err("the Python parser failed on this file; not parsed".into())
            }),
            Err(e) => Err(format!("no thread to parse on ({e}); not parsed")),
        }
    })
}

/// A parsed Python source file. Building one never fails.
pub struct Module {
    /// Shared by the copies [`Module::relabel`] makes, like the tree.
    source: Arc<str>,
    index: LineIndex,
    /// Shared by the copies [`Module::relabel`] makes: the tree is never changed.
    body: Arc<Vec<Stmt>>,
    /// The first [`MAX_KEPT_ERRORS`] syntax errors, formatted; `error_count` counts them all.
    errors: Vec<String>,
    error_count: usize,
    /// Where the file was read from, when it was: imports are resolved relative to it.
    path: Option<std::path::PathBuf>,
    /// Why the file was not parsed at all (too large, nested too deep), if it was not.
    refused: Option<String>,
    /// What the text and tree alone say, built on first use and shared by relabelled copies.
    derived: Arc<Derived>,
}

/// Facts about a module's text and tree, whatever path it is labelled with.
#[derive(Default)]
struct Derived {
    /// How often each identifier-like word occurs in the source, counted on first use.
    words: std::sync::OnceLock<HashMap<u64, u32>>,
    /// Per scope (first statement, length), its [`ScopeIndex`], built on first use.
    scopes: std::sync::Mutex<HashMap<(TextSize, usize), Arc<ScopeIndex>>>,
    /// Which calls of the module are worth resolving as collective sites, built on first use.
    gate: std::sync::OnceLock<Gate>,
    /// Whether the source has a `:=` (else no statement binds a walrus target).
    walrus: std::sync::OnceLock<bool>,
    /// The module's calls by the names they may call, built on first use ([`CallIndex`]).
    calls: std::sync::OnceLock<CallIndex>,
}

/// Cheap facts about a module that say which calls are worth resolving as collective sites
/// (kept in the [`Module`] and filled by the sites layer on first use, built once: every
/// linted file that reaches into a large imported module rebuilt them).
#[derive(Default)]
pub(crate) struct Gate {
    /// Names of every `def` of the module.
    pub(crate) defs: HashSet<String>,
    /// Names bound by the module's imports.
    pub(crate) imported: HashSet<String>,
    /// Attributes assigned a name (`self.gather_fn = _gather_objects`, or one of two: `f if
    /// c else None`): a call of one may run a function of the module or an import.
    pub(crate) held: HashSet<String>,
    /// Whether the module's text mentions a wrapper of the table (so a model it calls may be
    /// wrapped).
    pub(crate) wrappers: bool,
}

/// The call a frame's line points at. Frames name the line where the call starts, so calls
/// starting on `line` come first, collectives before implicit ones (`backward`) before any
/// other; failing that, the innermost call spanning the line.
pub(crate) fn call_at(module: &Module, line: u32) -> Option<&ExprCall> {
    let stmt = module.path(line)?.leaf();
    let mut calls = Vec::new();
    for e in tree::header_exprs(stmt) {
        crate::syntax::expr::walk(e, &mut |x| {
            if let Expr::Call(c) = x {
                calls.push(c);
            }
        });
    }
    let starting: Vec<&ExprCall> =
        calls.iter().copied().filter(|c| module.line_of(c.start()) == line).collect();
    if starting.is_empty() {
        return calls.into_iter().rev().find(|c| {
            let (first, last) = tree::lines_of(module, *c);
            first <= line && line <= last
        });
    }
    let named = |list: &[&str]| {
        starting
            .iter()
            .copied()
            .find(|c| crate::syntax::expr::last_segment(&c.func).is_some_and(|s| list.contains(&s)))
    };
    named(crate::syntax::patterns::COLLECTIVES)
        .or_else(|| named(crate::syntax::patterns::IMPLICIT_COLLECTIVES))
        .or_else(|| starting.first().copied())
}

/// Every call of a module under the last name of its callee and of each argument (`f(...)`,
/// `self.f(...)`, `spawn(f, ...)` under `f`): (start of the innermost `def` around it, or
/// `None` at module level; start of the call), in source order. Its readers check each
/// call's callee (see [`NamedBy`]).
pub(crate) type CallIndex = NamedBy<(Option<TextSize>, TextSize)>;

/// For one scope, name -> start offsets of statements, in source order. Its readers check
/// what each statement does with the name they asked for (see [`NamedBy`]).
pub(crate) type NameIndex = NamedBy<TextSize>;

/// Places in a module noted under names, kept by the names' hashes: two names that share one
/// only add places to look at, which every reader checks anyway. (Keyed by the names
/// themselves, building an index allocated a string per name at every place noted.)
pub(crate) struct NamedBy<T>(HashMap<u64, Vec<T>>);

impl<T> Default for NamedBy<T> {
    fn default() -> Self {
        NamedBy(HashMap::default())
    }
}

impl<T> NamedBy<T> {
    /// The places noted under `name` (and under any name of the same hash), in order noted.
    pub(crate) fn of(&self, name: &str) -> &[T] {
        self.0.get(&word_hash(name.as_bytes())).map_or(&[], Vec::as_slice)
    }

    /// Notes `place` under `name`.
    pub(crate) fn note(&mut self, name: &str, place: T) {
        self.0.entry(word_hash(name.as_bytes())).or_default().push(place);
    }
}

/// What one scope's statements say about names, indexed once: looking a name up by walking
/// its whole scope made a file with many uses of one name quadratic.
#[derive(Default)]
pub(crate) struct ScopeIndex {
    /// The statements that may bind each name.
    pub binders: NameIndex,
    /// The expression statements `f(name, ...)` that call something with the name first, or
    /// pass it by keyword (`f(x, t=name)`).
    pub first_argument_calls: NameIndex,
    /// The `continue`, `break`, `return` and `raise` statements.
    pub jumps: Vec<TextSize>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("bytes", &self.source.len())
            .field("statements", &self.body.len())
            .field("syntax_errors", &self.errors)
            .finish_non_exhaustive()
    }
}

impl Module {
    /// Parses `source` with error recovery. A file nested deeper than
    /// [`MAX_NESTING`](crate::MAX_NESTING) levels (which `CPython` itself refuses to compile) is
    /// not parsed: its tree would overflow the stack of every recursive walk, drop included.
    /// It is kept as text with an empty tree, and [`Module::refusal`] says why.
    pub fn parse(source: &str) -> Module {
        Module::parse_shared(Arc::from(source))
    }

    /// [`Module::parse`] of a text the caller holds too (shared, not copied).
    fn parse_shared(source: Arc<str>) -> Module {
        // Ruff's offsets are u32; a file past 4 GiB is not training code, so keep an empty tree
        // rather than letting the parser's assertion fire.
        if u32::try_from(source.len()).is_err() {
            return Module::refused(Arc::from(""), "file is larger than 4 GiB; not parsed".into());
        }
        if let Some(why) = not_parsable(&source) {
            return Module::refused(source, why);
        }
        let parsed = match parse_bounded(&source) {
            Ok(parsed) => parsed,
            Err(why) => return Module::refused(source, why),
        };
        let index = LineIndex::from_source_text(&source);
        let error_count = parsed.errors().len();
        let errors = parsed
            .errors()
            .iter()
            .take(MAX_KEPT_ERRORS)
            .map(|e| {
                let line = index.line_index(e.location.start()).get();
                format!("line {line}: {}", e.error)
            })
            .collect();
        Module {
            source,
            index,
            body: Arc::new(parsed.into_suite().into()),
            errors,
            error_count,
            path: None,
            refused: None,
            derived: Arc::default(),
        }
    }

    /// Parses `source`, read from `path`: the path anchors relative imports and the sibling
    /// modules a [`Project`](crate::Project) looks for.
    pub fn parse_file(source: &str, path: &std::path::Path) -> Module {
        Module::parse_file_shared(Arc::from(source), path)
    }

    /// [`Module::parse_file`] of a text the caller holds too (shared, not copied).
    pub fn parse_file_shared(source: Arc<str>, path: &std::path::Path) -> Module {
        let mut module = Module::parse_shared(source);
        module.path = Some(path.to_path_buf());
        module
    }

    /// The same parse labelled as read from `path` (the text, the tree and what was derived
    /// from them are shared, not copied: none depends on the path): what
    /// [`Module::parse_file`] of the same text at `path` would give.
    pub(crate) fn relabel(&self, path: &std::path::Path) -> Module {
        Module {
            source: Arc::clone(&self.source),
            index: self.index.clone(),
            body: Arc::clone(&self.body),
            errors: self.errors.clone(),
            error_count: self.error_count,
            path: Some(path.to_path_buf()),
            refused: self.refused.clone(),
            derived: Arc::clone(&self.derived),
        }
    }

    /// The file this module was read from ([`Module::parse_file`]).
    pub fn file_path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    fn refused(source: Arc<str>, why: String) -> Module {
        Module {
            index: LineIndex::from_source_text(&source),
            source,
            body: Arc::default(),
            errors: vec![why.clone()],
            error_count: 1,
            path: None,
            refused: Some(why),
            derived: Arc::default(),
        }
    }

    /// How many times `word` occurs in the source as a whole identifier-like word (comments
    /// and strings included: an upper bound on its uses).
    ///
    /// Words are counted by their hash: two words sharing one only add up, so the count stays
    /// an upper bound. Bytes past ASCII count as word characters: in code an identifier is
    /// delimited by ASCII (operators, brackets, blanks), so only text in strings and comments
    /// can run together.
    pub(crate) fn word_count(&self, word: &str) -> u32 {
        let words = self.derived.words.get_or_init(|| {
            let mut counts: HashMap<u64, u32> = HashMap::default();
            let words = self
                .source
                .as_bytes()
                .split(|&b| !crate::syntax::nesting::WORD_BYTES[usize::from(b)]);
            for w in words.filter(|w| !w.is_empty()) {
                *counts.entry(word_hash(w)).or_default() += 1;
            }
            counts
        });
        words.get(&word_hash(word.as_bytes())).copied().unwrap_or(0)
    }

    /// Which calls of the module are worth resolving as collective sites, built on first use.
    pub(crate) fn gate(&self) -> &std::sync::OnceLock<Gate> {
        &self.derived.gate
    }

    /// The module's calls by name, built on first use (see [`CallIndex`]).
    pub(crate) fn calls(&self) -> &std::sync::OnceLock<CallIndex> {
        &self.derived.calls
    }

    /// Per scope (first statement, length), its [`ScopeIndex`]: the cache the names layer
    /// fills ([`Module::scope_index`]).
    pub(crate) fn scope_cache(
        &self,
    ) -> &std::sync::Mutex<HashMap<(TextSize, usize), Arc<ScopeIndex>>> {
        &self.derived.scopes
    }

    /// Whether the source has a `:=` anywhere (else no statement binds a walrus target).
    pub(crate) fn has_walrus(&self) -> bool {
        *self.derived.walrus.get_or_init(|| self.source.contains(":="))
    }

    /// Why the file was not parsed (its tree is empty), when it was not.
    pub fn refusal(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// The innermost `class` whose body holds `line` (a frame of a class body is named after
    /// its class).
    pub fn class_at(&self, line: u32) -> Option<String> {
        let path = self.path(line)?;
        path.levels.iter().rev().find_map(|level| match level.stmt() {
            Stmt::ClassDef(class) => Some(class.name.id.to_string()),
            _ => None,
        })
    }

    /// Whether the `def` on `def_line` is a method: a statement of a class body, whose first
    /// parameter receives the instance (or the class), not a caller's argument.
    pub fn is_method(&self, def_line: u32) -> bool {
        let Some(path) = self.path(def_line) else { return false };
        let Some(level) = path.function_level(self) else { return false };
        let decorated_static = match path.levels[level].stmt() {
            Stmt::FunctionDef(def) => def
                .decorator_list
                .iter()
                .any(|d| matches!(&d.expression, Expr::Name(n) if n.id.as_str() == "staticmethod")),
            _ => false,
        };
        level > 0 && matches!(path.levels[level - 1].stmt(), Stmt::ClassDef(_)) && !decorated_static
    }

    /// The line of the next `return` or `raise` (with `iteration`, the next `continue`) in the
    /// block holding the compound statement whose header is on `line`: the code that runs
    /// after that statement and leaves the function (the iteration). What comes between may
    /// be anything that cannot leave another way (no `break` or `continue` in it, nor, with
    /// `iteration`, a `return`), at most [`MAX_STATEMENTS_TO_EXIT`] statements. `None`
    /// otherwise (such a jump first, or the block ends).
    pub fn exit_after(&self, line: u32, iteration: bool) -> Option<u32> {
        let path = self.path(line)?;
        let level = path.levels.last()?;
        if self.line_of(level.stmt().start()) != line {
            return None;
        }
        let after = level.suite.get(level.index + 1..)?;
        for stmt in after.iter().take(MAX_STATEMENTS_TO_EXIT) {
            match stmt {
                Stmt::Return(_) | Stmt::Raise(_) if !iteration => {
                    return Some(self.line_of(stmt.start()));
                }
                Stmt::Continue(_) if iteration => return Some(self.line_of(stmt.start())),
                Stmt::Return(_) | Stmt::Raise(_) | Stmt::Continue(_) | Stmt::Break(_) => {
                    return None;
                }
                _ if leaves_another_way(stmt, iteration) => return None,
                _ => {}
            }
        }
        None
    }

    /// Syntax errors the parser recovered from, as `line N: message`: the first
    /// [`MAX_KEPT_ERRORS`] of them ([`Module::syntax_error_count`] counts them all).
    pub fn syntax_errors(&self) -> &[String] {
        &self.errors
    }

    /// How many syntax errors the parser recovered from.
    pub fn syntax_error_count(&self) -> usize {
        self.error_count
    }

    /// The text of 1-based `line` without its line terminator; `None` past the end.
    pub fn line_text(&self, line: u32) -> Option<&str> {
        let range = self.line_range(line)?;
        let text = &self.source[range];
        Some(text.trim_end_matches(['\n', '\r']))
    }

    /// The innermost `def` whose body or header holds `line`; `None` at module or class level.
    pub fn function_at(&self, line: u32) -> Option<Function> {
        let path = self.path(line)?;
        let def = path.innermost_function(self)?;
        let p = &def.parameters;
        let parameters = p
            .posonlyargs
            .iter()
            .chain(&p.args)
            .map(|a| &a.parameter)
            .chain(p.vararg.as_deref())
            .chain(p.kwonlyargs.iter().map(|a| &a.parameter))
            .chain(p.kwarg.as_deref())
            .map(|a| a.name.id.to_string())
            .collect();
        Some(Function {
            name: def.name.id.to_string(),
            def_line: self.line_of(def.name.start()),
            end_line: self.line_of(def.end()),
            parameters,
        })
    }

    /// Lines where a function or method named `name` is called (`name(...)`, `x.name(...)`),
    /// in every scope of the file.
    pub fn call_lines(&self, name: &str) -> Vec<u32> {
        let mut out = Vec::new();
        crate::syntax::tree::walk_all(self.body(), &mut |stmt| {
            for e in crate::syntax::tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    if let ruff_python_ast::Expr::Call(c) = x
                        && crate::syntax::expr::last_segment(&c.func) == Some(name)
                    {
                        out.push(self.line_of(c.start()));
                    }
                });
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The expressions the statements starting on lines `first..=last` evaluate, each with the
    /// line it starts on: every simple statement's values (targets only where they read what
    /// holds them: `d[k] = v`, `d[k] += 1`, `del d[k]`) and compound statements' headers (`if`
    /// tests, `for` iterables, `with` contexts), at any depth of nesting (a nested `def`'s body
    /// too: more than runs, never less), and within them what every call is given (its
    /// arguments, and the object a method is called on): a call's result can be agreed
    /// (`all_gather`) where what it read on the way (`path`) is not.
    pub fn evaluated_in(&self, first: u32, last: u32) -> Vec<(u32, &str)> {
        let (Some(from), Some(to)) = (self.line_range(first), self.line_range(last)) else {
            return Vec::new();
        };
        let lines = TextRange::new(from.start(), to.end());
        let mut out = Vec::new();
        self.collect_evaluated(self.body(), lines, 0, &mut out);
        out
    }

    fn collect_evaluated<'s>(
        &'s self,
        suite: &'s [Stmt],
        lines: TextRange,
        depth: usize,
        out: &mut Vec<(u32, &'s str)>,
    ) {
        if depth > tree::MAX_DEPTH {
            return;
        }
        for stmt in suite.iter().filter(|s| s.range().intersect(lines).is_some()) {
            if lines.contains(stmt.start()) {
                // Plain names are written, not read; an item or attribute target reads what
                // holds it (`d[k] = v` reads `d` and `k`; `d[k] += 1` and `del d[k]`, `d[k]`).
                let read: tree::HeaderExprs<'_> = match stmt {
                    Stmt::Assign(a) => a
                        .targets
                        .iter()
                        .filter(|t| matches!(t, Expr::Subscript(_) | Expr::Attribute(_)))
                        .chain([&*a.value])
                        .collect(),
                    Stmt::AnnAssign(a) => a.value.as_deref().into_iter().collect(),
                    Stmt::For(f) => smallvec::smallvec![&*f.iter],
                    Stmt::With(w) => w.items.iter().map(|i| &i.context_expr).collect(),
                    Stmt::Delete(d) => d.targets.iter().filter(|t| !t.is_name_expr()).collect(),
                    _ => tree::header_exprs(stmt),
                };
                for e in read {
                    out.push((self.line_of(e.start()), self.text(e.range())));
                    crate::syntax::expr::walk(e, &mut |sub| {
                        let Expr::Call(call) = sub else { return };
                        let receiver = match &*call.func {
                            Expr::Attribute(method) => Some(&*method.value),
                            _ => None,
                        };
                        let given = call.arguments.args.iter().chain(receiver);
                        for g in given.chain(call.arguments.keywords.iter().map(|k| &k.value)) {
                            out.push((self.line_of(g.start()), self.text(g.range())));
                        }
                    });
                }
            }
            for block in tree::blocks(stmt) {
                self.collect_evaluated(block.suite, lines, depth + 1, out);
            }
        }
    }

    // ---- crate-internal accessors -------------------------------------------------------

    /// The calls in the statement at `line` that start on that line (frames name the line
    /// a call starts on), outermost first.
    pub(crate) fn calls_at(&self, line: u32) -> Vec<&ruff_python_ast::ExprCall> {
        let Some(stmt) = self.path(line).map(|p| p.leaf()) else { return Vec::new() };
        let mut out = Vec::new();
        for e in crate::syntax::tree::header_exprs(stmt) {
            crate::syntax::expr::walk(e, &mut |x| {
                if let ruff_python_ast::Expr::Call(c) = x
                    && self.line_of(c.start()) == line
                {
                    out.push(c);
                }
            });
        }
        out
    }

    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    pub(crate) fn body(&self) -> &[Stmt] {
        &self.body
    }

    /// Number of real lines (a trailing line terminator does not open a new line).
    pub fn line_count(&self) -> u32 {
        let count = self.index.line_count();
        let phantom = self.source.ends_with(['\n', '\r']) || self.source.is_empty();
        (if phantom { count - 1 } else { count }) as u32
    }

    /// Byte range of 1-based `line`, terminator included.
    pub(crate) fn line_range(&self, line: u32) -> Option<TextRange> {
        if line == 0 || line > self.line_count() {
            return None;
        }
        let one = OneIndexed::new(line as usize)?;
        Some(TextRange::new(
            self.index.line_start(one, &self.source),
            self.index.line_end(one, &self.source),
        ))
    }

    /// Where each line starts, in order (line 1 at 0).
    pub(crate) fn line_starts(&self) -> &[TextSize] {
        self.index.line_starts()
    }

    /// 1-based line holding byte `offset`.
    pub(crate) fn line_of(&self, offset: TextSize) -> u32 {
        self.index.line_index(offset).get() as u32
    }

    /// 1-based column (in characters) of byte `offset`.
    pub(crate) fn column_of(&self, offset: TextSize) -> u32 {
        self.index.line_column(offset, &self.source).column.get() as u32
    }

    /// Source text of a node of this module.
    pub(crate) fn text(&self, range: TextRange) -> &str {
        self.source.get(range.start().to_usize()..range.end().to_usize()).unwrap_or("")
    }

    /// Trimmed text of the line holding `offset`.
    pub(crate) fn trimmed_line_at(&self, offset: TextSize) -> String {
        self.line_text(self.line_of(offset)).unwrap_or("").trim().to_owned()
    }

    /// The chain of statements around `line`, outermost first; `None` when no statement
    /// covers the line (blank lines or comments between statements, out-of-range lines).
    pub(crate) fn path(&self, line: u32) -> Option<Path<'_>> {
        if line == 0 || line > self.line_count() {
            return None;
        }
        tree::path_to(self, line)
    }
}

/// How far [`Module::exit_after`] looks for the exit.
const MAX_STATEMENTS_TO_EXIT: usize = 64;

/// Whether `stmt` holds a `break` or `continue` (or, for an `iteration`, a `return`) that
/// could take a rank out of the block some other way (nested functions and classes aside).
fn leaves_another_way(stmt: &Stmt, iteration: bool) -> bool {
    let mut found = false;
    tree::walk_scope(std::slice::from_ref(stmt), &mut |s, _| {
        found |= matches!(s, Stmt::Break(_) | Stmt::Continue(_))
            || (iteration && matches!(s, Stmt::Return(_)));
    });
    found
}

/// The key [`Module::word_count`] counts a word under, and [`NamedBy`] notes a name under.
#[inline]
fn word_hash(word: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_in_lists_every_kind_of_target_in_the_lines_only() {
        let m = Module::parse(
            "\
to = 0
def f(self, pairs):
    if self.rank == to:
        src += 1
        self.rank = r
        a, [b, *c] = pairs
        n: int = 0
        for i, (k, v) in pairs:
            pass
        with open(p) as fh:
            pass
        if (w := g()) == 0:
            pass
        try:
            pass
        except OSError as e:
            del d[k]
        import os.path
        from x import y as z
    done = True
",
        );
        assert_eq!(
            m.bound_in(3, 19),
            [
                "src",
                "self.rank",
                "a",
                "b",
                "c",
                "n",
                "i",
                "k",
                "v",
                "fh",
                "w",
                "e",
                "d[k]",
                "os",
                "z"
            ]
        );
        // Comparisons and calls bind nothing; lines outside the range are not read.
        assert!(m.bound_in(3, 3).is_empty());
        assert_eq!(m.bound_in(1, 2), ["to", "f"]);
        assert!(m.bound_in(30, 40).is_empty());
    }

    #[test]
    fn evaluated_in_lists_values_headers_and_what_calls_are_given() {
        let m = Module::parse(
            "\
def f(self, path, shard):
    try:
        rows = read(path)[\"rows\"]
        self.total += rows
        seen[path] = rows
        del cache[path], old
        if rows < 0:
            out = shard.pop(name, None)
        for x in xs:
            pass
    except ValueError:
        pass
",
        );
        let texts: Vec<&str> = m.evaluated_in(3, 10).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            texts,
            [
                "read(path)[\"rows\"]",
                "path",
                "self.total",
                "rows",
                "seen[path]",
                "rows",
                "cache[path]",
                "rows < 0",
                "shard.pop(name, None)",
                "name",
                "None",
                "shard",
                "xs",
            ]
        );
        // Plain assignment targets (`rows`, `out`) and loop targets (`x`) are written, not
        // read; the handler's lines are outside the range.
        assert!(!texts.contains(&"out") && !texts.contains(&"x"));
        assert!(m.evaluated_in(11, 12).is_empty());
        assert_eq!(m.evaluated_in(7, 7), [(7, "rows < 0")]);
    }

    #[test]
    fn methods_take_their_receiver_first() {
        let m = Module::parse(
            "\
class A:
    def run(self, x):
        def inner(y):
            return y
        return inner(x)

    @staticmethod
    def make(x):
        return x

def free(x):
    return x
",
        );
        assert!(m.is_method(2));
        assert!(!m.is_method(3), "a function nested in a method");
        assert!(!m.is_method(8), "a static method");
        assert!(!m.is_method(11));
    }

    #[test]
    fn line_text_handles_terminators_and_bounds() {
        let m = Module::parse("a = 1\r\nb = 2\rc = 3\n");
        assert_eq!(m.line_text(1), Some("a = 1"));
        assert_eq!(m.line_text(2), Some("b = 2"));
        assert_eq!(m.line_text(3), Some("c = 3"));
        assert_eq!(m.line_text(4), None);
        assert_eq!(m.line_text(0), None);
        let m = Module::parse("x = 1");
        assert_eq!(m.line_text(1), Some("x = 1"));
        assert_eq!(m.line_text(2), None);
        assert_eq!(Module::parse("").line_text(1), None);
    }

    #[test]
    fn syntax_errors_are_recovered() {
        let m = Module::parse("def f(:\n    pass\nx = (\n");
        assert!(!m.syntax_errors().is_empty());
        assert!(m.syntax_errors()[0].starts_with("line "));
        assert!(Module::parse("x = 1\n").syntax_errors().is_empty());
    }

    #[test]
    fn function_at_finds_innermost_def() {
        let src = "\
import torch

class Trainer:
    @torch.no_grad()
    def evaluate(self):
        def inner():
            return 1
        return inner()

def train(rank):
    x = 1

    return x
";
        let m = Module::parse(src);
        assert_eq!(m.function_at(1), None);
        assert_eq!(m.function_at(3), None);
        let f = m.function_at(7).unwrap();
        assert_eq!((f.name.as_str(), f.def_line, f.end_line), ("inner", 6, 7));
        let f = m.function_at(8).unwrap();
        assert_eq!((f.name.as_str(), f.def_line, f.end_line), ("evaluate", 5, 8));
        assert_eq!(m.function_at(4), None, "a decorator line belongs to the enclosing scope");
        let f = m.function_at(12).unwrap();
        assert_eq!((f.name.as_str(), f.def_line, f.end_line), ("train", 10, 13));
        assert_eq!(f.parameters, ["rank"]);
        let m = Module::parse("def f(a, /, b, *c, d, **e):\n    pass\n");
        assert_eq!(m.function_at(2).unwrap().parameters, ["a", "b", "c", "d", "e"]);
        assert_eq!(m.function_at(99), None);
    }
}
