//! Finding the Python files to lint. Directories are walked recursively in a stable (sorted)
//! order; virtual environments, installed packages, VCS and cache folders are skipped, and
//! symbolic links to directories are not followed (no cycles). Paths given explicitly are
//! linted whatever their name.

use std::path::{Path, PathBuf};

use crate::LintError;

/// Folder names never descended into.
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "venv",
    ".venv",
    "site-packages",
    "__pycache__",
    "node_modules",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
];

/// Files to lint, and the paths that could not be read.
pub(crate) fn python_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<LintError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => walk(path, &mut files, &mut errors),
            Ok(meta) if meta.is_file() => files.push(path.clone()),
            // Opening a FIFO blocks until a writer comes; a device never ends.
            Ok(_) => errors.push(LintError::Read {
                path: path.clone(),
                source: std::io::Error::other("not a regular file (a FIFO, socket or device)"),
            }),
            Err(source) => errors.push(LintError::Read { path: path.clone(), source }),
        }
    }
    // Overlapping arguments (`pkg/mod.py pkg`, `./pkg pkg`) name a file more than once: each
    // is linted once, where it first appears.
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(lexical(f)));
    (files, errors)
}

/// `path` without its `.` components: `./pkg/mod.py` and `pkg/./mod.py` are `pkg/mod.py`.
fn lexical(path: &Path) -> PathBuf {
    path.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, errors: &mut Vec<LintError>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(source) => {
                errors.push(LintError::Read { path: dir, source });
                continue;
            }
        };
        let mut children: Vec<(PathBuf, std::fs::FileType)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
            .collect();
        children.sort_by(|a, b| a.0.cmp(&b.0));
        // Sub-directories are pushed in reverse so they pop in sorted order.
        let mut subdirs = Vec::new();
        for (path, kind) in children {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name) {
                    subdirs.push(path);
                }
            } else if is_python(&path) && (kind.is_file() || path.is_file()) {
                files.push(path);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
}

fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("py"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_sorted_and_skips_environments() {
        let root =
            std::env::temp_dir().join(format!("desync-lint-discover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["a/b", ".venv/lib", "site-packages/x", "__pycache__", "c"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "a/b/train.py",
            "a/z.py",
            "a/notes.txt",
            ".venv/lib/m.py",
            "site-packages/x/m.py",
            "__pycache__/m.py",
            "c/run.py",
        ] {
            std::fs::write(root.join(file), "x = 1\n").unwrap();
        }
        let (files, errors) =
            python_files(&[root.clone(), root.join("a/notes.txt"), root.join("missing.py")]);
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"))
            .collect();
        assert_eq!(names, ["a/z.py", "a/b/train.py", "c/run.py", "a/notes.txt"]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].path().ends_with("missing.py"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn overlapping_arguments_name_each_file_once() {
        let root = std::env::temp_dir().join(format!("desync-lint-overlap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        for file in ["pkg/a.py", "pkg/b.py"] {
            std::fs::write(root.join(file), "x = 1\n").unwrap();
        }
        let (files, errors) = python_files(&[
            root.join("pkg/b.py"),
            root.join("pkg"),
            root.join("./pkg"),
            root.join("pkg/./a.py"),
        ]);
        let names: Vec<String> = files
            .iter()
            .map(|f| lexical(f.strip_prefix(&root).unwrap()).to_string_lossy().replace('\\', "/"))
            .collect();
        assert_eq!(names, ["pkg/b.py", "pkg/a.py"]);
        assert!(errors.is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
