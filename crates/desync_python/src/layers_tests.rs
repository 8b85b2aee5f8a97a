//! The crate's layers, checked: each top-level module belongs to one layer of [`LAYERS`], and
//! no module's code names a module of a higher layer (through `crate::...`, through `super::`
//! paths that climb to the crate root, or through a name the crate root re-exports). Test code
//! (`*tests*.rs` files and what follows `#[cfg(test)]` at the top level of a file) may use the
//! whole crate and is not checked; comments are not code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module → layer, lowest first. A new top-level module must be placed here.
const LAYERS: &[(&str, u8)] =
    &[("syntax", 1), ("names", 2), ("values", 3), ("sites", 4), ("control", 5)];

/// Files at the crate root outside the layers: the public surface, and the robustness tests.
const ROOT_FILES: &[&str] = &["lib.rs", "layers_tests.rs", "robustness.rs"];

fn layer_of(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == module).map(|(_, layer)| *layer)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code outside tests and comments, by line number.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        // An inline `#[cfg(test)] mod tests { ... }` ends a file's code; any other
        // `#[cfg(test)]` item is checked like code.
        let next = lines[i + 1..].iter().find(|l| !l.trim().is_empty());
        if line.starts_with("#[cfg(test)]")
            && next.is_some_and(|l| l.starts_with("mod ") && l.trim_end().ends_with('{'))
        {
            break;
        }
        let code = line.split("//").next().unwrap_or_default().trim();
        if !code.is_empty() {
            out.push((i + 1, code.to_owned()));
        }
    }
    out
}

/// Names the crate root re-exports (`pub use values::{Analysis, ...}`), with their layer.
fn root_reexports(lib: &str) -> BTreeMap<String, u8> {
    let mut out = BTreeMap::new();
    let code: String = code_lines(lib).into_iter().map(|(_, l)| l + " ").collect();
    for statement in code.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else { continue };
        let Some(layer) = path.split("::").next().and_then(layer_of) else { continue };
        let last = path.rsplit("::").next().unwrap_or_default();
        for name in last.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() {
                out.insert(name.to_owned(), layer);
            }
        }
    }
    out
}

fn identifier_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules (or root re-exports, as their layer's module) a line of code names.
fn named_top_modules(
    code: &str,
    module_path: &[String],
    reexports: &BTreeMap<String, u8>,
) -> Vec<(String, u8)> {
    let mut out = Vec::new();
    let layer_name = |layer: u8| LAYERS.iter().find(|(_, l)| *l == layer).unwrap().0.to_owned();
    let push = |rest: &str, out: &mut Vec<(String, u8)>| {
        // `crate::{A, b::C}`: every item of the group.
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.split(',').map(str::trim).collect(),
            None => vec![rest],
        };
        for item in items {
            let name = identifier_at(item);
            if let Some(layer) = layer_of(name) {
                out.push((name.to_owned(), layer));
            } else if let Some(&layer) = reexports.get(name) {
                out.push((layer_name(layer), layer));
            }
        }
    };
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        push(&code[at + "crate::".len()..], &mut out);
    }
    // `super::` climbs one module per segment; only a climb to the crate root names another
    // top-level module.
    let mut search = 0;
    while let Some(found) = code[search..].find("super::") {
        let start = search + found;
        search = start + 1;
        if code[..start].ends_with("super::") {
            continue;
        }
        let mut rest = &code[start..];
        let mut climbed = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
            climbed += 1;
        }
        if climbed >= module_path.len() {
            push(rest, &mut out);
        }
    }
    out
}

/// The module path of a file below `src` (`values/mod.rs` → [values], `values/value.rs` →
/// [values, value]).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        relative.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

#[test]
fn no_module_imports_from_a_higher_layer_and_the_top_level_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    let mut unplaced = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let path = module_path(relative);
        let name = relative.to_string_lossy().replace('\\', "/");
        let Some(top) = path.first() else { continue };
        if relative.components().count() == 1 && ROOT_FILES.contains(&name.as_str()) {
            continue;
        }
        let Some(own) = layer_of(top) else {
            unplaced.push(name);
            continue;
        };
        if name.contains("tests") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (line, code) in code_lines(&text) {
            for (other, layer) in named_top_modules(&code, &path, &reexports) {
                if other != *top {
                    edges.entry(top.clone()).or_default().insert(other.clone());
                }
                if layer > own {
                    upward.push(format!(
                        "{name}:{line}: {top} (layer {own}) -> {other} (layer {layer}): {code}"
                    ));
                }
            }
        }
    }
    assert!(unplaced.is_empty(), "modules in no layer of LAYERS: {unplaced:?}");
    assert!(upward.is_empty(), "imports from a higher layer:\n{}", upward.join("\n"));
    // No cycle between top-level modules (the rule above already forbids one between layers;
    // this also holds should two modules ever share a layer).
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        on_path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(node) {
            return;
        }
        assert!(!on_path.iter().any(|n| n == node), "import cycle: {on_path:?} -> {node}");
        on_path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, on_path, done);
        }
        on_path.pop();
        done.insert(node.to_owned());
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, &edges, &mut Vec::new(), &mut done);
    }
    // The check itself sees imports: the values layer reads the syntax layer.
    assert!(edges.get("values").is_some_and(|e| e.contains("syntax")), "{edges:?}");
}

#[test]
fn the_check_finds_an_upward_import_through_each_kind_of_path() {
    let reexports =
        root_reexports("pub use values::{Analysis, Finding};\npub use syntax::module::Module;");
    let at = |code: &str, path: &[&str]| {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        named_top_modules(code, &path, &reexports)
    };
    assert_eq!(
        at("use crate::control::branch::find;", &["syntax", "module"]),
        [("control".into(), 5)]
    );
    assert_eq!(at("let a = crate::Analysis::default();", &["names"]), [("values".into(), 3)]);
    assert_eq!(
        at("use crate::{Module, Analysis};", &["syntax"]),
        [("syntax".into(), 1), ("values".into(), 3)]
    );
    // From `values/mod.rs`, `super::` is the crate root; from `values/value.rs` it is `values`.
    assert_eq!(at("use super::sites::Collectives;", &["values"]), [("sites".into(), 4)]);
    assert!(at("use super::resolve::Sym;", &["values", "value"]).is_empty());
    assert_eq!(at("use super::super::sites::X;", &["values", "value"]), [("sites".into(), 4)]);
    assert!(
        code_lines("// crate::control::x\n#[cfg(test)]\nmod tests {\nuse crate::control;")
            .is_empty()
    );
    assert_eq!(code_lines("#[cfg(test)]\nuse crate::control;").len(), 2);
}
