//! The project: the user's own Python files, so that a call of `shard_batches` imported from
//! the job's `common.py` can be followed into it. Only files under the project's roots count
//! (the `--source-root`, the `--path-map` targets, the directories of the frames' files, or
//! the paths given to `desync lint`); an import that resolves elsewhere is a library, known
//! only through the knowledge table.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::syntax::module::Module;

/// A memo a layer above keeps for the whole project (what the project's helpers issue, kept
/// by the sites layer for every file linted against it). The project holds it without knowing
/// its type, so that names stay below the layers that fill it.
#[derive(Default)]
pub struct MemoSlot(OnceLock<Box<dyn std::any::Any + Send + Sync>>);

impl MemoSlot {
    /// The memo of type `T`, made on first use; `None` when the slot holds another type.
    pub(crate) fn get<T: std::any::Any + Send + Sync + Default>(&self) -> Option<&T> {
        self.0.get_or_init(|| Box::new(T::default())).downcast_ref()
    }
}

impl std::fmt::Debug for MemoSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoSlot")
    }
}

/// Finds and parses the project's modules.
pub trait Project {
    /// The project module an import in `importer` names: `module` as written (`trainer.metrics`,
    /// empty for `from . import x`), `level` the number of leading dots.
    fn import(&self, importer: &Module, module: &str, level: u32) -> Option<Arc<Module>>;

    /// The project module read from `path` (parsed once).
    fn load(&self, path: &Path) -> Option<Arc<Module>>;

    /// Where what the project's functions issue is kept across analyses, if anywhere (the
    /// sites layer keeps its helper summaries in it).
    fn helper_memo(&self) -> Option<&MemoSlot> {
        None
    }

    /// The project's files whose text calls `name` (`name(` or `.name(`, as a word), when the
    /// project knows which files it is made of (a linted tree); `None` where it does not.
    fn files_calling(&self, name: &str) -> Option<Vec<PathBuf>> {
        let _ = name;
        None
    }
}

/// Imports already resolved, as written in a folder: importer's folder (its path's bytes up
/// to the last `/`; [`NO_FOLDER`] for a module read from no file) → level → module as
/// written → what it resolved to. Looked up without building a key: every name resolved
/// through an import asks again.
type ImportCache = HashMap<Vec<u8>, HashMap<u32, HashMap<String, Option<Arc<Module>>>>>;

/// The folder key of a module read from no file (no path holds a NUL byte).
const NO_FOLDER: &[u8] = b"\0";

/// The names of one folder's regular files and subfolders ([`FileProject::listing`]).
#[derive(Default)]
struct Listing {
    files: HashSet<std::ffi::OsString>,
    folders: HashSet<std::ffi::OsString>,
}

/// Python files are read from disk below a set of roots, each at most [`MAX_FILE_BYTES`].
pub struct FileProject {
    roots: Vec<PathBuf>,
    /// For a root that is a package (`desync lint colossalai`, its folder holding
    /// `__init__.py`), the folder above its outermost package: where Python would find it, so
    /// that `from colossalai.checkpoint_io import x` inside it resolves.
    package_parents: Vec<PathBuf>,
    /// The modules parsed, by canonical path. Every map of paths here is keyed by the path's
    /// bytes: a `Path` hashes and compares component by component, which was most of the
    /// cost of looking an import's folder up.
    cache: Mutex<HashMap<OsString, Option<Arc<Module>>>>,
    /// Imports already resolved (see [`ImportCache`]): the filesystem answers once.
    imports: Mutex<ImportCache>,
    /// What the loaded modules' functions issue (each file linted calls the same helpers).
    helpers: MemoSlot,
    /// Directories already resolved to their canonical form ([`FileProject::canonical`]).
    directories: Mutex<HashMap<OsString, Option<PathBuf>>>,
    /// Paths already resolved to their canonical form, by the path's bytes.
    files: Mutex<HashMap<OsString, Option<PathBuf>>>,
    /// Import candidates already probed: whether each is a file (by the path's bytes, which
    /// hash faster than a path's components).
    probed: Mutex<HashMap<OsString, bool>>,
    /// What each folder an import candidate was looked for in holds, read once
    /// ([`FileProject::is_file`]); empty for a folder that cannot be read.
    listings: Mutex<HashMap<OsString, Arc<Listing>>>,
    /// Absolute imports resolved from each folder ([`FileProject::absolute`]): folder →
    /// module → the file found. A folder's answer is its own candidates', else its parent's,
    /// so each folder of a tree probes only itself.
    absolute: Mutex<HashMap<OsString, HashMap<String, Option<PathBuf>>>>,
    /// The files the project is made of, when the caller listed them
    /// ([`FileProject::with_texts`]).
    listed: Vec<PathBuf>,
    /// Their texts, when the caller read them already ([`FileProject::with_texts`]): the
    /// index of called names is built from them instead of reading every file again.
    listed_texts: Vec<Option<Arc<str>>>,
    /// For each name some listed file calls, which files (indices into `listed`): built on
    /// the first question ([`Project::files_calling`]), one read of the tree.
    called: OnceLock<HashMap<Box<str>, Vec<u32>>>,
}

/// Larger files are not training code worth following (and would slow every analysis).
pub const MAX_FILE_BYTES: u64 = 4 << 20;

impl FileProject {
    /// A project made of the Python files under `roots` (canonicalised; missing ones dropped).
    pub fn new(roots: impl IntoIterator<Item = PathBuf>) -> FileProject {
        let mut out: Vec<PathBuf> = Vec::new();
        for root in roots {
            if let Ok(canonical) = std::fs::canonicalize(&root)
                && !out.contains(&canonical)
            {
                out.push(canonical);
            }
        }
        let package_parents = out.iter().filter_map(|r| package_parent(r)).collect();
        FileProject {
            roots: out,
            package_parents,
            cache: Mutex::default(),
            imports: Mutex::default(),
            helpers: MemoSlot::default(),
            directories: Mutex::default(),
            files: Mutex::default(),
            probed: Mutex::default(),
            listings: Mutex::default(),
            absolute: Mutex::default(),
            listed: Vec::new(),
            listed_texts: Vec::new(),
            called: OnceLock::new(),
        }
    }

    /// The same project, told which files it is made of (`desync lint`'s files) and their
    /// texts as the caller read them (`None` for a file that could not be read as UTF-8,
    /// which is then read again if asked): calls of a function from any of them can then be
    /// found by its name ([`Project::files_calling`]).
    #[must_use]
    pub fn with_texts(mut self, files: Vec<(PathBuf, Option<Arc<str>>)>) -> FileProject {
        (self.listed, self.listed_texts) = files.into_iter().unzip();
        self
    }

    /// [`FileProject::called`], built: each listed file read once (or its text as given), the
    /// names it calls noted.
    fn called_index(&self) -> HashMap<Box<str>, Vec<u32>> {
        let mut index: HashMap<Box<str>, Vec<u32>> = HashMap::default();
        for (i, path) in self.listed.iter().enumerate() {
            let given = self.listed_texts.get(i).cloned().flatten();
            let Some(text) = given.or_else(|| read_python(path).map(Arc::from)) else {
                continue;
            };
            let i = i as u32;
            for name in called_names(&text) {
                // Files are visited in order: a file already noted for a name is its last.
                match index.get_mut(name) {
                    Some(files) if files.last() == Some(&i) => {}
                    Some(files) => files.push(i),
                    None => {
                        index.insert(name.into(), vec![i]);
                    }
                }
            }
        }
        index
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether `path` lies under one of the roots (after resolving links and `..`).
    pub fn contains(&self, path: &Path) -> bool {
        self.canonical(path).is_some_and(|p| self.roots.iter().any(|r| p.starts_with(r)))
    }

    /// What `std::fs::canonicalize` says of `path`, each path resolved once: the linted file,
    /// its imports and its loads all ask.
    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = lock(&self.files).get(path.as_os_str()) {
            return known.clone();
        }
        let resolved = self.canonical_uncached(path);
        lock(&self.files).insert(path.as_os_str().to_owned(), resolved.clone());
        resolved
    }

    /// [`FileProject::canonical`], with each directory resolved once: a path that is not
    /// itself a link is its directory's canonical form joined with its name. (Resolving every
    /// linted file and import from scratch took one `readlink` per path component: 40,000
    /// system calls on transformers.)
    fn canonical_uncached(&self, path: &Path) -> Option<PathBuf> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return std::fs::canonicalize(path).ok();
        };
        if std::fs::symlink_metadata(path).ok()?.file_type().is_symlink() {
            return std::fs::canonicalize(path).ok();
        }
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        let known = lock(&self.directories).get(parent.as_os_str()).cloned();
        let directory = known.unwrap_or_else(|| {
            let resolved = std::fs::canonicalize(parent).ok();
            lock(&self.directories).insert(parent.as_os_str().to_owned(), resolved.clone());
            resolved
        });
        Some(directory?.join(name))
    }

    /// Whether the import candidate `path` is a file, asked of the filesystem once. Its
    /// folder is listed once instead of probing each candidate: most candidates do not exist
    /// (`a/b.py` or `a/b/__init__.py`, under every folder an import can start from), and a
    /// failed `stat` per candidate was 3% of the linter's time on `DeepSpeed`.
    fn is_file(&self, path: &Path) -> bool {
        if let Some(&known) = lock(&self.probed).get(path.as_os_str()) {
            return known;
        }
        let found = match (path.parent(), path.file_name()) {
            (Some(folder), Some(name)) => {
                let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
                self.listing(folder).files.contains(name)
            }
            _ => path.is_file(),
        };
        lock(&self.probed).insert(path.as_os_str().to_owned(), found);
        found
    }

    /// What `folder` holds (links count as what they lead to). A folder its parent's listing
    /// does not hold is empty without asking: most candidates' folders do not exist either.
    fn listing(&self, folder: &Path) -> Arc<Listing> {
        if let Some(known) = lock(&self.listings).get(folder.as_os_str()) {
            return Arc::clone(known);
        }
        let missing = match (folder.parent(), folder.file_name()) {
            (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
                !self.listing(parent).folders.contains(name)
            }
            _ => false,
        };
        let mut listing = Listing::default();
        let entries = if missing { None } else { std::fs::read_dir(folder).ok() };
        for entry in entries.into_iter().flatten().flatten() {
            let (is_file, is_folder) = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => {
                    let path = entry.path();
                    (path.is_file(), path.is_dir())
                }
                Ok(kind) => (kind.is_file(), kind.is_dir()),
                Err(_) => (false, false),
            };
            if is_file {
                listing.files.insert(entry.file_name());
            } else if is_folder {
                listing.folders.insert(entry.file_name());
            }
        }
        let listing = Arc::new(listing);
        lock(&self.listings).insert(folder.as_os_str().to_owned(), Arc::clone(&listing));
        listing
    }

    /// `path`'s module as [`Module::parse_file`] would make it from `text`, when the project
    /// already parsed that file from the same text (it was imported by a file linted before):
    /// the tree is shared, not parsed again.
    pub fn parsed(&self, path: &Path, text: &str) -> Option<Module> {
        let canonical = self.canonical(path)?;
        let cache = lock(&self.cache);
        let module = cache.get(canonical.as_os_str())?.as_ref()?;
        (module.source() == text).then(|| module.relabel(path))
    }

    /// Keeps `module` (parsed from its file's whole text, read as UTF-8) for later imports of
    /// that file, as [`Project::load`] would have parsed it: linted files are imported by the
    /// files linted after them, and parsing took a third of the linter's time.
    pub fn share(&self, module: &Module) {
        let Some(canonical) = module.file_path().and_then(|p| self.canonical(p)) else {
            return;
        };
        if module.refusal().is_some()
            || module.source().len() as u64 > MAX_FILE_BYTES
            || !self.roots.iter().any(|r| canonical.starts_with(r))
        {
            return;
        }
        let shared = Arc::new(module.relabel(&canonical));
        lock(&self.cache).entry(canonical.into_os_string()).or_insert(Some(shared));
    }

    /// The file an import names: `module` as written, `level` leading dots.
    fn resolve(&self, importer: &Module, module: &str, level: u32) -> Option<PathBuf> {
        let relative: PathBuf = module.split('.').filter(|s| !s.is_empty()).collect();
        // Canonical, as the roots are: a linted file's path is as the user wrote it
        // (`./pkg/train.py`), and its parents must be compared with the roots.
        let here = importer
            .file_path()
            .and_then(|p| self.canonical(p))
            .and_then(|p| p.parent().map(Path::to_path_buf));
        if level == 0 {
            return match here {
                Some(folder) => self.absolute(&folder, module, &relative),
                None => self.outermost(module, &relative),
            };
        }
        let mut base = here?;
        for _ in 1..level {
            base = base.parent()?.to_path_buf();
        }
        self.module_in(&base, module, &relative)
    }

    /// An absolute import from `folder`: the importer's folder (a script's own folder is on
    /// `sys.path`) and its parents up to a root, then the roots themselves and the folders
    /// above the packages they are ([`FileProject::outermost`]). Remembered per folder, so
    /// the parents' answers are shared by every folder below them.
    fn absolute(&self, folder: &Path, module: &str, relative: &Path) -> Option<PathBuf> {
        if let Some(known) =
            lock(&self.absolute).get(folder.as_os_str()).and_then(|m| m.get(module))
        {
            return known.clone();
        }
        let found = self.module_in(folder, module, relative).or_else(|| {
            let parent = folder
                .parent()
                .filter(|_| !self.roots.iter().any(|r| r == folder))
                .filter(|p| self.roots.iter().any(|r| p.starts_with(r)));
            match parent {
                Some(parent) => self.absolute(parent, module, relative),
                None => self.outermost(module, relative),
            }
        });
        lock(&self.absolute)
            .entry(folder.as_os_str().to_owned())
            .or_default()
            .insert(module.to_owned(), found.clone());
        found
    }

    /// An absolute import found in none of the importer's folders: under a root, or under the
    /// folder above a root that is a package.
    fn outermost(&self, module: &str, relative: &Path) -> Option<PathBuf> {
        self.roots
            .iter()
            .chain(&self.package_parents)
            .find_map(|base| self.module_in(base, module, relative))
    }

    /// `module` (`relative`: its segments as a path) as a file under `base`: `a/b.py` or
    /// `a/b/__init__.py` (`base/__init__.py` for the empty module of `from . import x`).
    fn module_in(&self, base: &Path, module: &str, relative: &Path) -> Option<PathBuf> {
        if module.is_empty() {
            let init = base.join("__init__.py");
            return self.is_file(&init).then_some(init);
        }
        // Most candidates miss at their first segment (`torch` is in no folder of the
        // project): the base's listing says so without building their paths.
        let mut segments = module.split('.').filter(|s| !s.is_empty());
        let first = segments.next()?;
        let listing = self.listing(base);
        let may_be_file = segments.next().is_none()
            && listing.files.contains(std::ffi::OsStr::new(&format!("{first}.py")));
        if !may_be_file && !listing.folders.contains(std::ffi::OsStr::new(first)) {
            return None;
        }
        let file = base.join(relative).with_extension("py");
        if self.is_file(&file) {
            return Some(file);
        }
        let init = base.join(relative).join("__init__.py");
        self.is_file(&init).then_some(init)
    }
}

impl Project for FileProject {
    fn import(&self, importer: &Module, module: &str, level: u32) -> Option<Arc<Module>> {
        let folder = folder_key(importer);
        let known = lock(&self.imports)
            .get(folder)
            .and_then(|levels| levels.get(&level))
            .and_then(|modules| modules.get(module))
            .cloned();
        if let Some(hit) = known {
            return hit;
        }
        let found = self.resolve(importer, module, level).and_then(|path| self.load(&path));
        // Another thread may have resolved it meanwhile: the same module either way.
        lock(&self.imports)
            .entry(folder.to_vec())
            .or_default()
            .entry(level)
            .or_default()
            .entry(module.to_owned())
            .or_insert(found)
            .clone()
    }

    fn load(&self, path: &Path) -> Option<Arc<Module>> {
        let canonical = self.canonical(path)?;
        if !self.roots.iter().any(|r| canonical.starts_with(r)) {
            return None;
        }
        if let Some(hit) = lock(&self.cache).get(canonical.as_os_str()) {
            return hit.clone();
        }
        let parsed =
            read_python(&canonical).map(|text| Arc::new(Module::parse_file(&text, &canonical)));
        // Parsed outside the lock; when another thread parsed it meanwhile, its copy stays
        // (one module per file: analyses key their caches by the module's address).
        lock(&self.cache).entry(canonical.into_os_string()).or_insert(parsed).clone()
    }

    fn helper_memo(&self) -> Option<&MemoSlot> {
        Some(&self.helpers)
    }

    fn files_calling(&self, name: &str) -> Option<Vec<PathBuf>> {
        if self.listed.is_empty() {
            return None;
        }
        let index = self.called.get_or_init(|| self.called_index());
        let files = index.get(name).map(Vec::as_slice).unwrap_or_default();
        Some(files.iter().map(|&i| self.listed[i as usize].clone()).collect())
    }
}

/// The names `text` calls: each identifier followed at once by `(`, comments and strings
/// included (a name found there only costs a look at the file's calls).
fn called_names(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let word = |b: u8| b == b'_' || b.is_ascii_alphanumeric();
    memchr::memchr_iter(b'(', bytes).filter_map(move |paren| {
        let start = bytes[..paren].iter().rposition(|&b| !word(b)).map_or(0, |i| i + 1);
        // A run that starts with a digit is a number (`2e5(`), not a name.
        (start < paren && !bytes[start].is_ascii_digit()).then(|| &text[start..paren])
    })
}

/// The folder above the outermost package holding `root` (each folder from `root` up holds an
/// `__init__.py`), when `root` is a package.
fn package_parent(root: &Path) -> Option<PathBuf> {
    let mut package = root;
    if !package.join("__init__.py").is_file() {
        return None;
    }
    while let Some(parent) = package.parent() {
        if !parent.join("__init__.py").is_file() {
            return Some(parent.to_path_buf());
        }
        package = parent;
    }
    None
}

/// The key of the folder `module` was read from in [`ImportCache`]: its path's bytes up to
/// the last `/` (two spellings of one folder only miss the cache).
fn folder_key(module: &Module) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    let Some(path) = module.file_path() else { return NO_FOLDER };
    let bytes = path.as_os_str().as_bytes();
    bytes.iter().rposition(|&b| b == b'/').map_or(&[][..], |slash| &bytes[..slash])
}

/// The guarded map, also after a panic in another thread (a cache stays valid: entries are
/// inserted whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A regular file's text, when it is small enough and UTF-8.
fn read_python(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn called_names_are_words_followed_by_a_parenthesis() {
        let text =
            "x = self.engine.generate(batch)\nprint (y)\n# see run_step(\n2e5(\nf(g(h), k)\n";
        let names: Vec<&str> = called_names(text).collect();
        assert_eq!(names, ["generate", "run_step", "f", "g"]);
    }

    /// A linted file's parse is reused by a later import of it, and an imported file's by a
    /// later lint of it, each labelled with its own path; a changed text is parsed anew.
    #[test]
    fn linted_and_imported_files_share_one_parse() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("common.py"), "def shard():\n    pass\n").unwrap();
        let project = FileProject::new([root.clone()]);
        let given = root.join(".").join("common.py");
        let text = "def shard():\n    pass\n";
        assert!(project.parsed(&given, text).is_none(), "nothing parsed yet");
        let linted = Module::parse_file(text, &given);
        project.share(&linted);
        let imported = project.load(&root.join("common.py")).unwrap();
        assert!(std::ptr::eq(imported.body(), linted.body()), "the tree is shared");
        assert_eq!(imported.file_path(), Some(root.join("common.py").as_path()));
        let again = project.parsed(&given, text).unwrap();
        assert_eq!(again.file_path(), Some(given.as_path()));
        assert!(project.parsed(&given, "def other():\n    pass\n").is_none());
    }

    /// An import that resolves (through `..` or a link) to a file outside the roots is not
    /// followed: its text never reaches an analysis, a report or an MCP answer.
    #[test]
    fn imports_never_leave_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("job"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secrets.py"), "TOKEN = 'canary'\n").unwrap();
        std::fs::write(root.join("settings.py"), "DTYPE = 'bf16'\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secrets.py"), root.join("linked.py")).unwrap();
        let train = root.join("pkg").join("train.py");
        std::fs::write(&train, "import settings\n").unwrap();

        let project = FileProject::new([root.clone()]);
        let importer = project.load(&train).unwrap();
        assert!(project.import(&importer, "settings", 0).is_some(), "inside the root: followed");
        assert!(project.import(&importer, "linked", 0).is_none(), "a link leading outside");
        // `from ...elsewhere import secrets` from job/pkg/train.py climbs out of the root.
        assert!(
            project.import(&importer, "elsewhere.secrets", 3).is_none(),
            "`..` out of the root"
        );
        assert!(project.load(&outside.join("secrets.py")).is_none());
    }

    /// An absolute import is looked for in the importer's folder, then each folder above it
    /// up to the root: the nearest wins, and folders that share a parent share its answer.
    #[test]
    fn absolute_imports_take_the_nearest_folder_that_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in ["a/b", "a/c", "d"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        std::fs::write(root.join("common.py"), "WHERE = 'root'\n").unwrap();
        std::fs::write(root.join("a").join("common.py"), "WHERE = 'a'\n").unwrap();
        let importer = |folder: &str| {
            let path = root.join(folder).join("train.py");
            std::fs::write(&path, "import common\n").unwrap();
            path
        };
        let project = FileProject::new([root.clone()]);
        let found = |folder: &str| {
            let module = project.load(&importer(folder)).unwrap();
            project.import(&module, "common", 0).map(|m| m.file_path().unwrap().to_path_buf())
        };
        assert_eq!(found("a/b"), Some(root.join("a").join("common.py")), "the parent's");
        assert_eq!(found("a/c"), Some(root.join("a").join("common.py")), "a sibling's parent");
        assert_eq!(found("d"), Some(root.join("common.py")), "the root's");
        let module = project.load(&importer("d")).unwrap();
        assert!(project.import(&module, "common.sub", 0).is_none(), "a module is no package");
    }

    /// Import candidates are looked up in their folder's listing: a module, a package's
    /// `__init__.py`, a link to a module and a package inside a linked folder resolve; a
    /// folder that does not exist and a folder named like a module do not.
    #[test]
    fn candidates_are_found_through_folder_listings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real").join("pkg")).unwrap();
        std::fs::create_dir_all(root.join("folder.py")).unwrap();
        std::fs::write(root.join("real").join("pkg").join("__init__.py"), "X = 1\n").unwrap();
        std::fs::write(root.join("common.py"), "Y = 2\n").unwrap();
        std::os::unix::fs::symlink(root.join("common.py"), root.join("alias.py")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("linked")).unwrap();
        let train = root.join("train.py");
        std::fs::write(&train, "import common\n").unwrap();

        let project = FileProject::new([root.clone()]);
        let importer = project.load(&train).unwrap();
        assert!(project.import(&importer, "common", 0).is_some(), "a module");
        assert!(project.import(&importer, "alias", 0).is_some(), "a link to a module");
        assert!(project.import(&importer, "real.pkg", 0).is_some(), "a package");
        assert!(project.import(&importer, "linked.pkg", 0).is_some(), "through a linked folder");
        assert!(project.import(&importer, "missing.pkg", 0).is_none(), "no such folder");
        assert!(project.import(&importer, "folder", 0).is_none(), "a folder is not a module");
    }
}
