//! From a frame's file name (a path on the training host) to a file on this machine, and the
//! one guarded way to read it.
//!
//! Lookup: `--path-map FROM=TO` prefixes first, then the file under `--source-root` whose path
//! shares the longest suffix with the frame's, then the path as written.
//!
//! Frame paths are text chosen by whoever wrote the dump. A file is read only when it is a
//! Python source (`*.py`, as named and after symlinks) and resolves (symlinks and `..`
//! followed) inside the *roots*: `--source-root` and every `--path-map` target; with neither,
//! the directory given as [`SourceOptions::fallback_root`] (the CLI's working directory unless
//! that is `/` or the home directory; none for MCP, which then reads nothing). Everything else
//! is refused with the reason, and no report, snippet, probe or MCP answer ever holds a byte of
//! it. A file that is read must also match the frame, for every frame: the code object the
//! frame names (a `def`, a class body, `<module>`, `<lambda>`, a comprehension) has to be at
//! the frame's line, or the local copy is not what ran (a stale checkout, a wrong root, or a
//! crafted frame naming a file that is no training code).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use desync_python::Module;

use crate::load::limits;

/// Python sources larger than this are not read (the largest hand-written modules are a few
/// hundred kB).
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;
/// The source root's index stops after this many Python files and this many directory levels
/// (a root pointed at `/` must not take the run with it).
const MAX_INDEXED_FILES: usize = 200_000;
const MAX_INDEX_DEPTH: usize = 64;

/// Where to look for the training code.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// `(FROM, TO)`: a frame path starting with FROM is read from TO + the rest.
    pub path_maps: Vec<(String, PathBuf)>,
    pub source_root: Option<PathBuf>,
    /// The root when neither `source_root` nor a path map is given: frame paths as written are
    /// read only inside it. The CLI passes its working directory; `None` reads nothing.
    pub fallback_root: Option<PathBuf>,
    /// The working directory the CLI did not take as the fallback root because it is `/`, the
    /// home directory or above it (where a frame could name `~/.ssh/id_rsa`): the report then
    /// says why no source was read.
    pub refused_fallback: Option<PathBuf>,
}

impl SourceOptions {
    /// Parses `FROM=TO` as given on the command line.
    pub fn parse_path_map(text: &str) -> Result<(String, PathBuf), crate::Error> {
        match text.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => {
                Ok((from.to_owned(), PathBuf::from(to)))
            }
            _ => Err(crate::Error::PathMap(text.to_owned())),
        }
    }

    /// The directories (or files) sources may come from, as given.
    fn roots(&self) -> Vec<&Path> {
        let explicit: Vec<&Path> = self
            .source_root
            .iter()
            .map(PathBuf::as_path)
            .chain(self.path_maps.iter().map(|(_, to)| to.as_path()))
            .collect();
        if explicit.is_empty() {
            self.fallback_root.iter().map(PathBuf::as_path).collect()
        } else {
            explicit
        }
    }
}

/// Resolves frame paths, indexing the source root's Python files once.
pub struct Resolver<'o> {
    options: &'o SourceOptions,
    index: OnceLock<Vec<PathBuf>>,
    /// The roots, with symlinks resolved, for containment checks.
    roots: OnceLock<Vec<PathBuf>>,
}

#[derive(Debug, Clone)]
pub struct Resolved {
    pub local_path: Option<PathBuf>,
    /// Every place looked at, for the report when nothing was found.
    pub tried: Vec<String>,
}

/// A frame's source, read and parsed.
pub struct LocalSource {
    pub path: PathBuf,
    pub module: Module,
}

/// Why a frame's source was not used. Each reads as the end of "source of FILE not used: ".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceProblem {
    /// No candidate exists on this machine.
    NotFound { tried: Vec<String> },
    /// The candidate resolves outside every root.
    Outside { path: PathBuf, roots: Vec<PathBuf> },
    /// It is not a Python source file (`*.py`, as named and after symlinks).
    NotPython { path: PathBuf },
    /// It could not be read (not a regular file, too large, an I/O error).
    Unreadable { path: PathBuf, why: String },
    /// The local file does not hold what ran there: the frame's function is not defined
    /// around the frame's line.
    Differs { path: PathBuf, why: String },
}

impl SourceProblem {
    /// What to tell the user, to follow "source of FILE ".
    pub fn describe(&self) -> String {
        match self {
            Self::NotFound { .. } => {
                "not found on this machine; pass --source-root DIR or --path-map FROM=TO".into()
            }
            Self::Outside { path, roots } if roots.is_empty() => format!(
                "not read: {}: no source root (pass --source-root DIR, the job's checkout, or --path-map FROM=TO)",
                path.display()
            ),
            Self::Outside { path, roots } => format!(
                "not read: {} is outside the source roots ({})",
                path.display(),
                roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
            Self::NotPython { path } => format!(
                "not read: {} is not a Python source file (only *.py files are read)",
                path.display()
            ),
            Self::Unreadable { path, why } => format!("not read: {} ({why})", path.display()),
            Self::Differs { path, why } => format!(
                "not used: the local source differs from what ran: {why} in {} (a stale checkout or the wrong --source-root?), so no branch is reported from it",
                path.display()
            ),
        }
    }

    /// Places looked at (for `not_found` in reports).
    pub fn tried(&self) -> Vec<String> {
        match self {
            Self::NotFound { tried } => tried.clone(),
            Self::Outside { path, .. }
            | Self::NotPython { path }
            | Self::Unreadable { path, .. }
            | Self::Differs { path, .. } => {
                vec![path.display().to_string()]
            }
        }
    }

    /// Whether the user should be warned (a file existed but was not used), as opposed to
    /// simply not found.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, Self::NotFound { .. })
    }
}

impl<'o> Resolver<'o> {
    pub fn new(options: &'o SourceOptions) -> Self {
        Self { options, index: OnceLock::new(), roots: OnceLock::new() }
    }

    /// The first local candidate for a frame path; not yet checked against the roots (see
    /// [`Resolver::read`]).
    pub fn resolve(&self, frame_file: &str) -> Resolved {
        let mut tried = Vec::new();
        for (from, to) in &self.options.path_maps {
            if let Some(rest) = frame_file.strip_prefix(from.as_str()) {
                let candidate = to.join(rest.trim_start_matches('/'));
                tried.push(candidate.display().to_string());
                if candidate.is_file() {
                    return Resolved { local_path: Some(candidate), tried };
                }
            }
        }
        // An explicit source root wins over a path that merely exists here too (a stale
        // checkout on a shared machine).
        if let Some(root) = &self.options.source_root {
            tried.push(format!("{}/**/{}", root.display(), file_name(frame_file)));
            if let Some(found) = self.best_suffix_match(frame_file) {
                return Resolved { local_path: Some(found), tried };
            }
        }
        let as_written = Path::new(frame_file);
        tried.push(frame_file.to_owned());
        if as_written.is_file() {
            return Resolved { local_path: Some(as_written.to_path_buf()), tried };
        }
        Resolved { local_path: None, tried }
    }

    /// The roots with symlinks resolved; a root that does not exist contains nothing.
    pub fn roots(&self) -> &[PathBuf] {
        self.roots.get_or_init(|| {
            self.options.roots().iter().filter_map(|r| std::fs::canonicalize(r).ok()).collect()
        })
    }

    /// `local` with symlinks and `..` resolved, when that lies inside a root and is a Python
    /// source file both as named and as resolved (a `train.py` linking to `.env` is not).
    pub fn contain(&self, local: &Path) -> Result<PathBuf, SourceProblem> {
        if !is_python(local) {
            return Err(SourceProblem::NotPython { path: local.into() });
        }
        let real = std::fs::canonicalize(local)
            .map_err(|e| SourceProblem::Unreadable { path: local.into(), why: e.to_string() })?;
        if !self.roots().iter().any(|root| real.starts_with(root)) {
            let roots = self.options.roots().iter().map(|r| r.to_path_buf()).collect();
            return Err(SourceProblem::Outside { path: local.into(), roots });
        }
        if !is_python(&real) {
            return Err(SourceProblem::NotPython { path: local.into() });
        }
        Ok(real)
    }

    /// Where a frame's file is on this machine, when it lies inside the roots (not yet read).
    pub fn locate(&self, frame_file: &str) -> Result<PathBuf, SourceProblem> {
        let resolved = self.resolve(frame_file);
        let Some(path) = resolved.local_path else {
            return Err(SourceProblem::NotFound { tried: resolved.tried });
        };
        self.contain(&path)?;
        Ok(path)
    }

    /// Checks that `local` resolves inside a root and reads it (a regular file, at most
    /// [`MAX_SOURCE_BYTES`]). Every read of a source file outside the project (see
    /// `desync_python::FileProject`, whose roots are these) goes through here.
    pub fn read_local(&self, local: &Path) -> Result<String, SourceProblem> {
        let real = self.contain(local)?;
        let bytes = limits::read_regular(&real, MAX_SOURCE_BYTES)
            .map_err(|e| SourceProblem::Unreadable { path: local.into(), why: e.to_string() })?;
        // Python source is UTF-8; a stray byte should not hide the rest of the file.
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Finds, reads and parses a frame's file, if it lies inside the roots.
    pub fn read(&self, frame_file: &str) -> Result<LocalSource, SourceProblem> {
        let path = self.locate(frame_file)?;
        let text = self.read_local(&path)?;
        let module = Module::parse(&text);
        if let Some(refused) = module.refusal() {
            return Err(SourceProblem::Unreadable { path, why: refused.to_owned() });
        }
        Ok(LocalSource { path, module })
    }

    /// [`Resolver::read`], then checks that the file holds what ran: `function` (as the frame
    /// names it) is defined around every one of `lines`.
    pub fn read_frame(
        &self,
        frame_file: &str,
        function: &str,
        lines: &[u32],
    ) -> Result<LocalSource, SourceProblem> {
        let source = self.read(frame_file)?;
        for &line in lines {
            if let Err(why) = matches_frame(&source.module, function, line) {
                return Err(SourceProblem::Differs { path: source.path, why });
            }
        }
        Ok(source)
    }

    fn best_suffix_match(&self, frame_file: &str) -> Option<PathBuf> {
        let root = self.options.source_root.as_ref()?;
        let index = self.index.get_or_init(|| python_files(root));
        let wanted: Vec<&str> = frame_file.split('/').filter(|c| !c.is_empty()).rev().collect();
        index
            .iter()
            .map(|p| {
                let have: Vec<String> = p
                    .components()
                    .rev()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                let common =
                    wanted.iter().zip(&have).take_while(|(w, h)| **w == h.as_str()).count();
                (common, std::cmp::Reverse(p.as_os_str().len()), p)
            })
            .filter(|(common, _, _)| *common >= 1)
            .max_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(_, _, p)| p.clone())
    }
}

/// Whether a file is a Python source by its name: `*.py`, any case (the only sources the
/// bridge reads; `.env`, `.netrc`, keys and credentials are not).
fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("py"))
}

/// Whether the frame's code object can be the code at `line` of `module`: `Err` says what is
/// there instead. Every name is checked: a `def` must hold the line; a class body is named
/// after its class; `<module>` must be a module-level statement; `<lambda>`, `<genexpr>` and
/// the comprehensions must span the line; any other `<...>` name is no code `CPython` makes
/// from a source file.
pub(crate) fn matches_frame(module: &Module, function: &str, line: u32) -> Result<(), String> {
    let Some(text) = module.line_text(line) else {
        let lines = module.line_count();
        return Err(format!("the frame is at line {line}, but the file has {lines} lines"));
    };
    let code = text.trim();
    if code.is_empty() {
        return Err(format!("the frame is at line {line}, which is blank here"));
    }
    if code.starts_with('#') {
        return Err(format!("the frame is at line {line}, which is a comment here"));
    }
    let found = module.function_at(line);
    match (function, found) {
        ("<module>", _) if module.runs_at_module_level(line) => Ok(()),
        ("<module>", Some(f)) => Err(format!(
            "line {line} is inside `{}`, not at module level as the frame says",
            f.name
        )),
        ("<module>", None) => match module.class_at(line) {
            Some(class) => Err(format!(
                "line {line} is inside class `{class}`, not at module level as the frame says"
            )),
            None => {
                Err(format!("line {line} holds no statement, not module code as the frame says"))
            }
        },
        // Lambdas, comprehensions and generator expressions are code objects of their own,
        // named by kind, that run wherever their expression is.
        (name, _) if name.starts_with('<') => {
            if module.expression_code_at(line).contains(&name) {
                Ok(())
            } else {
                Err(format!("line {line} holds no `{name}` as the frame says"))
            }
        }
        (name, Some(f)) if f.name == name => Ok(()),
        (name, Some(f)) => {
            Err(format!("line {line} is inside `{}`, not `{name}` as the frame says", f.name))
        }
        // A class body runs as a code object named after the class.
        (name, None) if module.class_at(line).is_some_and(|c| c == name) => Ok(()),
        (name, None) => Err(format!("line {line} is not inside `{name}` as the frame says")),
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The Python files under `root`. Directory symlinks are not followed (two `-> .` links would
/// make the walk endless), and the walk is bounded in depth and size.
fn python_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(items) = std::fs::read_dir(&dir) else { continue };
        for item in items.flatten() {
            let Ok(kind) = item.file_type() else { continue };
            let path = item.path();
            let name = item.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if depth < MAX_INDEX_DEPTH
                    && !name.starts_with('.')
                    && name != "__pycache__"
                    && name != "node_modules"
                {
                    stack.push((path, depth + 1));
                }
            } else if name.ends_with(".py") && out.len() < MAX_INDEXED_FILES {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rooted(root: &Path) -> SourceOptions {
        SourceOptions { source_root: Some(root.into()), ..SourceOptions::default() }
    }

    #[test]
    fn suffix_match_prefers_longest_common_tail() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/job")).unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("a/job/train.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("b/train.py"), "x = 2\n").unwrap();
        let options = rooted(dir.path());
        let r = Resolver::new(&options).resolve("/workspace/job/train.py");
        assert_eq!(r.local_path.unwrap(), dir.path().join("a/job/train.py"));
        assert!(Resolver::new(&options).resolve("/x/missing.py").local_path.is_none());
    }

    #[test]
    fn path_map_rewrites_prefix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.py"), "x = 1\n").unwrap();
        let options = SourceOptions {
            path_maps: vec![("/workspace/job".into(), dir.path().into())],
            ..SourceOptions::default()
        };
        let r = Resolver::new(&options).resolve("/workspace/job/train.py");
        assert_eq!(r.local_path.unwrap(), dir.path().join("train.py"));
        assert!(Resolver::new(&options).read("/workspace/job/train.py").is_ok());
        assert!(SourceOptions::parse_path_map("nonsense").is_err());
    }

    #[test]
    fn nothing_is_read_outside_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("train.py"), "x = 1\n").unwrap();
        let secret = dir.path().join("secret.py");
        std::fs::write(&secret, "password = 1\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&secret, root.join("link.py")).unwrap();
        let options = rooted(&root);
        let resolver = Resolver::new(&options);
        let outside =
            |file: &str| matches!(resolver.read(file), Err(SourceProblem::Outside { .. }));
        assert!(outside(&secret.display().to_string()));
        assert!(matches!(resolver.read("/etc/passwd"), Err(SourceProblem::NotPython { .. })));
        let climb = format!("{}/../secret.py", root.display());
        assert!(outside(&climb));
        #[cfg(unix)]
        assert!(outside("/elsewhere/link.py"), "a symlink in the root pointing out");
        assert!(resolver.read("/job/train.py").is_ok());
        // A path map whose target climbs out is no way out either.
        let mapped = SourceOptions {
            path_maps: vec![("/job".into(), root.clone())],
            ..SourceOptions::default()
        };
        assert!(matches!(
            Resolver::new(&mapped).read("/job/../secret.py"),
            Err(SourceProblem::Outside { .. })
        ));
        // With no root at all, only the fallback root is readable; without one, nothing.
        let none = SourceOptions::default();
        assert!(matches!(
            Resolver::new(&none).read(&secret.display().to_string()),
            Err(SourceProblem::Outside { .. })
        ));
        let fallback =
            SourceOptions { fallback_root: Some(dir.path().into()), ..SourceOptions::default() };
        assert!(Resolver::new(&fallback).read(&secret.display().to_string()).is_ok());
    }

    #[test]
    fn the_frame_must_match_the_local_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = "import torch\n\ndef build_mesh(shape):\n    return shape\n\ndef step(x):\n    lambda: x\n    return x\n";
        std::fs::write(dir.path().join("train.py"), text).unwrap();
        let options = rooted(dir.path());
        let r = Resolver::new(&options);
        assert!(r.read_frame("/j/train.py", "step", &[8]).is_ok());
        assert!(r.read_frame("/j/train.py", "<lambda>", &[7]).is_ok());
        assert!(r.read_frame("/j/train.py", "<module>", &[1]).is_ok());
        let differs =
            |function: &str, line: u32| match r.read_frame("/j/train.py", function, &[line]) {
                Err(SourceProblem::Differs { why, .. }) => why,
                other => panic!("{function}:{line}: {:?}", other.map(|s| s.path)),
            };
        assert!(differs("step", 4).contains("inside `build_mesh`"));
        assert!(differs("<module>", 4).contains("not at module level"));
        assert!(differs("step", 40).contains("has 8 lines"));
        assert!(differs("step", 2).contains("blank"));
        // Every code object is checked, the unnamed ones too.
        assert!(differs("<lambda>", 8).contains("no `<lambda>`"));
        assert!(differs("<genexpr>", 7).contains("no `<genexpr>`"));
        assert!(differs("<string>", 1).contains("no `<string>`"));
        assert!(differs("<module>", 7).contains("inside `step`"));
    }

    #[test]
    fn only_python_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        // Credentials parse as Python (`[default]`, `key = value`): the name must say Python.
        std::fs::write(dir.path().join("credentials"), "[default]\nkey = canary\n").unwrap();
        std::fs::write(dir.path().join(".env"), "TOKEN = 1\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join(".env"), dir.path().join("env.py")).unwrap();
        let options = rooted(dir.path());
        let resolver = Resolver::new(&options);
        let not_python = |file: &str| {
            matches!(
                resolver.read_frame(file, "<module>", &[1]),
                Err(SourceProblem::NotPython { .. })
            )
        };
        assert!(not_python(&dir.path().join("credentials").display().to_string()));
        assert!(not_python(&dir.path().join(".env").display().to_string()));
        #[cfg(unix)]
        assert!(not_python(&dir.path().join("env.py").display().to_string()), "a link to .env");
        let text = resolver.read_local(&dir.path().join(".env"));
        assert!(matches!(text, Err(SourceProblem::NotPython { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_in_the_root_end() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("b")).unwrap();
        assert_eq!(python_files(dir.path()), [dir.path().join("train.py")]);
    }
}
