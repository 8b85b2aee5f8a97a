//! From a frame's file name (a path on the training host) to a file on this machine:
//! `--path-map FROM=TO` prefixes first, then the file under `--source-root` whose path shares
//! the longest suffix with the frame's, then the path as written.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where to look for the training code.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// `(FROM, TO)`: a frame path starting with FROM is read from TO + the rest.
    pub path_maps: Vec<(String, PathBuf)>,
    pub source_root: Option<PathBuf>,
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
}

/// Resolves frame paths, indexing the source root's Python files once.
pub struct Resolver<'o> {
    options: &'o SourceOptions,
    index: OnceLock<Vec<PathBuf>>,
}

#[derive(Debug, Clone)]
pub struct Resolved {
    pub local_path: Option<PathBuf>,
    /// Every place looked at, for the report when nothing was found.
    pub tried: Vec<String>,
}

impl<'o> Resolver<'o> {
    pub fn new(options: &'o SourceOptions) -> Self {
        Self { options, index: OnceLock::new() }
    }

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

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn python_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(items) = std::fs::read_dir(&dir) else { continue };
        for item in items.flatten() {
            let path = item.path();
            let name = item.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !name.starts_with('.') && name != "__pycache__" && name != "node_modules" {
                    stack.push(path);
                }
            } else if name.ends_with(".py") {
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

    #[test]
    fn suffix_match_prefers_longest_common_tail() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/job")).unwrap();
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::write(dir.path().join("a/job/train.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("b/train.py"), "x = 2\n").unwrap();
        let options = SourceOptions { path_maps: Vec::new(), source_root: Some(dir.path().into()) };
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
            source_root: None,
        };
        let r = Resolver::new(&options).resolve("/workspace/job/train.py");
        assert_eq!(r.local_path.unwrap(), dir.path().join("train.py"));
        assert!(SourceOptions::parse_path_map("nonsense").is_err());
    }
}
