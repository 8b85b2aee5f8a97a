//! `desync lint`: static checks that find collectives under rank- or data-dependent control
//! flow in `PyTorch` training code, before the job ever runs and hangs.
//!
//! [`lint_paths`] discovers Python files (recursively, skipping virtual environments and
//! caches), lints them in parallel and returns a [`Report`]; [`lint_source`] lints one file's
//! text. Rules are listed in [`Rule`]; a finding is silenced by `# desync: ignore[DSY001]` (or
//! `# desync: ignore` for every rule) on its line. Reports are written by [`write_text`]
//! (Ruff-style lines), [`write_json`] and [`write_sarif`] (SARIF 2.1.0).
//!
//! ```
//! use desync_lint::{Options, Rule, lint_source};
//!
//! let train = "\
//! import torch.distributed as dist
//!
//! def log_loss(loss):
//!     rank = dist.get_rank()
//!     if rank == 0:
//!         dist.all_reduce(loss)
//! ";
//! let findings = lint_source("train.py".as_ref(), train, &Options::default());
//! assert_eq!(findings[0].rule, Rule::RankConditionalCollective);
//! assert_eq!((findings[0].line, findings[0].column), (5, 5));
//! ```
//!
//! Collectives and dependence come from `desync_python`'s flow analysis and its knowledge
//! table (the same ones `desync analyze` uses): a test depends on the rank only when the
//! data shows it (`dist.get_rank()`, `LOCAL_RANK`, a framework's rank property, the process
//! index a launcher passes, rank-local batches, caught exceptions...), parameters are decided
//! by the calls of their function in the file (and, where the analysis would otherwise guess,
//! by calls in the other linted files found by its name), and configuration reads
//! (`args.x`, `cfg.y`) are assumed identical on every rank.

mod checks;
mod context;
mod discover;
mod report;
mod rule;
mod suppress;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

pub use report::{write_json, write_sarif, write_text};
pub use rule::{Rule, UnknownRule, parse_selectors};

/// Which rules run, and which findings are reported. Empty `select` means every rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub select: Vec<Rule>,
    pub ignore: Vec<Rule>,
    /// Report findings whose evidence is indirect too ([`Finding::indirect`]); by default
    /// they are only counted ([`Report::indirect_hidden`]).
    pub include_indirect: bool,
    /// The process exits once the report is written: the modules parsed for the call are
    /// left to the operating system instead of being freed one node at a time (about 10% of
    /// the CPU time on a large tree, measured on transformers). Off for long-lived callers
    /// (the MCP server), which would keep that memory.
    pub exit_after: bool,
}

impl Options {
    pub fn enabled(&self, rule: Rule) -> bool {
        (self.select.is_empty() || self.select.contains(&rule)) && !self.ignore.contains(&rule)
    }
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, as given or as found under a given directory.
    pub file: PathBuf,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    pub rule: Rule,
    pub message: String,
    /// How to fix it.
    pub hint: String,
    /// The line's source text, trimmed.
    pub source: String,
    /// The evidence reaches the decision only indirectly: through what is written into a
    /// container, a field of an object whose fields could not be kept apart, or what is read
    /// of an item the rank picked. Reviewed on real projects, such findings were misreads or
    /// harmless, so they are reported only on request (`--include-indirect`).
    pub indirect: bool,
}

/// A path that could not be linted.
#[derive(Debug, thiserror::Error)]
pub enum LintError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Read but not parsed (see [`desync_python::Module::refusal`]): a warning, not a failure.
    #[error("{}: not linted: {why}", path.display())]
    NotParsed { path: PathBuf, why: String },
    /// Parsed with syntax errors and linted as far as the parser recovered (a half-edited
    /// file): a warning, the file's findings are still reported, but code past the error
    /// may be missing from them.
    #[error(
        "{}: syntax error at {first}{}; linted as far as the parser recovered",
        path.display(),
        if *more > 0 { format!(" (and {more} more)") } else { String::new() }
    )]
    Syntax { path: PathBuf, first: String, more: usize },
}

impl LintError {
    pub fn path(&self) -> &Path {
        match self {
            LintError::Read { path, .. }
            | LintError::NotParsed { path, .. }
            | LintError::Syntax { path, .. } => path,
        }
    }

    /// Whether the path could not even be read (the CLI's exit status 2), as opposed to a
    /// file skipped with a warning.
    pub fn is_read_error(&self) -> bool {
        matches!(self, LintError::Read { .. })
    }
}

/// Python files larger than this are not linted (the largest hand-written modules are a few
/// hundred kB; generated ones are not training code).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The result of linting some paths.
#[derive(Debug, Default)]
pub struct Report {
    /// Sorted by file, line, column and rule.
    pub findings: Vec<Finding>,
    pub files_checked: usize,
    pub errors: Vec<LintError>,
    /// Findings with indirect evidence left out of `findings` (see
    /// [`Options::include_indirect`]).
    pub indirect_hidden: usize,
}

/// Lints one file's source text. `path` labels findings and places the file in its project:
/// imports are followed into the Python files of its directory (a script's own folder is on
/// `sys.path`) and of its project ([`file_roots`]).
pub fn lint_source(path: &Path, source: &str, options: &Options) -> Vec<Finding> {
    let project = desync_python::FileProject::new(file_roots(path));
    let module = desync_python::Module::parse_file(source, path);
    reported(lint_in(&project, path, &module, options), options)
}

/// Lints one file's source text given whole (standard input, an editor's buffer), as
/// [`lint_paths`] lints a file: `path` labels the findings and its folder is where imports are
/// resolved from (the text given wins over the file at `path`, if any).
pub fn lint_text(path: &Path, source: &str, options: &Options) -> Report {
    let project = desync_python::FileProject::new(file_roots(path));
    let module = desync_python::Module::parse_file(source, path);
    let mut report = Report::default();
    if let Some(why) = module.refusal() {
        report.errors.push(LintError::NotParsed { path: path.to_path_buf(), why: why.to_owned() });
        return report;
    }
    report.errors.extend(syntax_warning(path, &module));
    let findings = lint_in(&project, path, &module, options);
    let before = findings.len();
    report.findings = reported(findings, options);
    report.indirect_hidden = before - report.findings.len();
    report.files_checked = 1;
    report.findings.sort_by_key(|f| (f.line, f.column, f.rule));
    report
}

/// Files that mark the top folder of a Python project (a repository, an installable package).
const PROJECT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg", ".git"];

/// How many folders above a file are searched for its project's top ([`PROJECT_MARKERS`]).
const MAX_PROJECT_DEPTH: usize = 8;

/// Where the imports of a file linted on its own are looked for: its folder (a script's own
/// folder is on `sys.path`; `train.py` given bare is in `.`), and the top folder of the project
/// it is part of, the nearest folder above it holding one of [`PROJECT_MARKERS`] (the project's
/// own packages are importable from its scripts, as they are once it is installed). Linting
/// the file then follows what linting its folder or its project would.
fn file_roots(path: &Path) -> Vec<PathBuf> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut roots = vec![folder.to_path_buf()];
    let Ok(start) = std::fs::canonicalize(folder) else { return roots };
    let top = start
        .ancestors()
        .take(MAX_PROJECT_DEPTH)
        .find(|dir| PROJECT_MARKERS.iter().any(|m| dir.join(m).exists()));
    if let Some(top) = top
        && top != start
    {
        roots.push(top.to_path_buf());
    }
    roots
}

/// The warning for a file linted despite syntax errors, if it has any.
fn syntax_warning(path: &Path, module: &desync_python::Module) -> Option<LintError> {
    module.syntax_errors().first().map(|first| LintError::Syntax {
        path: path.to_path_buf(),
        first: first.clone(),
        more: module.syntax_error_count() - 1,
    })
}

/// Lints one parsed file against a project (whose modules its imports may reach).
fn lint_in(
    project: &desync_python::FileProject,
    path: &Path,
    module: &desync_python::Module,
    options: &Options,
) -> Vec<Finding> {
    let analysis = desync_python::Analysis::new(Some(project));
    let collectives = desync_python::Collectives::new(&analysis);
    let sites = collectives.sites(module);
    let setups = if options.enabled(Rule::RaggedGather) || options.enabled(Rule::RankDependentDtype)
    {
        analysis.setup_calls(module)
    } else {
        Vec::new()
    };
    // Every check is about a collective or a setup call; most files have neither, and their
    // outline would cost more than finding that out.
    if sites.is_empty() && setups.is_empty() {
        return Vec::new();
    }
    // Only the sites' calls are looked up in the outline.
    let positions = sites.iter().map(|s| (s.line, s.column)).collect();
    let mut outline = module.outline_with_calls_at(&positions);
    // An `except` that calls a helper that never returns passes the error on too.
    analysis.mark_dying_handlers(module, &mut outline);
    let ctx = context::Context::new(module, &outline, &collectives, sites, setups);
    let findings = checks::run(&ctx, path, &|rule| options.enabled(rule));
    findings
        .into_iter()
        .filter(|f| !suppress::is_suppressed(module.line_text(f.line).unwrap_or(""), f.rule))
        .collect()
}

/// The findings `options` asks to report (those with indirect evidence only on request).
fn reported(findings: Vec<Finding>, options: &Options) -> Vec<Finding> {
    findings.into_iter().filter(|f| options.include_indirect || !f.indirect).collect()
}

/// One file's findings, and the syntax errors it was linted despite, if any.
type Linted = (Vec<Finding>, Option<LintError>);

/// Lints every Python file under `paths` (files are linted whatever their extension;
/// directories are searched for `*.py`), in parallel.
pub fn lint_paths(paths: &[PathBuf], options: &Options) -> Report {
    let (files, mut errors) = discover::python_files(paths);
    // The project: the directories given, and the folders of the files given with the
    // projects they belong to.
    let roots: Vec<PathBuf> = paths
        .iter()
        .flat_map(|p| if p.is_dir() { vec![p.clone()] } else { file_roots(p) })
        .collect();
    // Every file is read first: the project's index of the names each file calls is then
    // built from these texts, not by reading the whole tree a second time.
    let texts: Vec<Result<Text, LintError>> =
        files.par_iter().map(|path| read_text(path)).collect();
    let listed = files
        .iter()
        .zip(&texts)
        .map(|(path, text)| {
            let whole = text.as_ref().ok().filter(|t| t.intact).map(|t| Arc::clone(&t.text));
            (path.clone(), whole)
        })
        .collect();
    // One project for every worker thread: the modules it parsed (linted or imported) and the
    // summaries of their helpers are shared by every file that imports them.
    // It knows its files: a function's callers in other files can be found by its name.
    let project = desync_python::FileProject::new(roots).with_texts(listed);
    let results: Vec<Result<Linted, LintError>> = files
        .par_iter()
        .zip(texts)
        .map(|(path, text)| {
            let project = &project;
            let Text { text, intact } = text?;
            let module = project.parsed(path, &text).unwrap_or_else(|| {
                desync_python::Module::parse_file_shared(Arc::clone(&text), path)
            });
            if let Some(why) = module.refusal() {
                return Err(LintError::NotParsed { path: path.clone(), why: why.to_owned() });
            }
            // Files linted later import this one: the project reuses the parse (its
            // files are read as UTF-8, so only an intact text is the same).
            if intact {
                project.share(&module);
            }
            Ok((lint_in(project, path, &module, options), syntax_warning(path, &module)))
        })
        .collect();
    // The parsed modules are not kept past the call (nor freed, when the process ends next).
    if options.exit_after {
        std::mem::forget(project);
    } else {
        drop(project);
    }
    let mut findings = Vec::new();
    let mut files_checked = 0;
    let mut indirect_hidden = 0;
    for result in results {
        match result {
            Ok((f, syntax)) => {
                files_checked += 1;
                errors.extend(syntax);
                let before = f.len();
                let shown = reported(f, options);
                indirect_hidden += before - shown.len();
                findings.extend(shown);
            }
            Err(e) => errors.push(e),
        }
    }
    errors.sort_by(|a, b| a.path().cmp(b.path()));
    findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
    Report { findings, files_checked, errors, indirect_hidden }
}

/// A file's text as linted, and whether it is the file's whole text (valid UTF-8) rather than
/// one with stray bytes replaced.
struct Text {
    text: Arc<str>,
    intact: bool,
}

/// `path`'s text: Python source is UTF-8, and a stray byte should not hide the rest of the
/// file (validating first is the fast path: the lossy decoder's scan is slower).
fn read_text(path: &Path) -> Result<Text, LintError> {
    let bytes =
        read_source(path).map_err(|source| LintError::Read { path: path.to_path_buf(), source })?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => Text { text: Arc::from(text), intact: true },
        Err(e) => Text { text: Arc::from(String::from_utf8_lossy(e.as_bytes())), intact: false },
    })
}

/// A regular file of at most [`MAX_FILE_BYTES`]: a FIFO named on the command line would block
/// the read forever, a device would never end.
fn read_source(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "{} bytes, larger than the limit of {MAX_FILE_BYTES} for a Python file",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}
