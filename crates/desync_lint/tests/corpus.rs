//! Two corpora of small Python files:
//!
//! - `tests/quiet/*.py`: correct patterns (rank-0 logging, consensus early stop, barriers on
//!   every rank, checkpoints on rank 0 with a barrier after, p2p, padded gathers...) that must
//!   produce no finding at all;
//! - `tests/fire/*.py`: buggy snippets, each opening with `# expect: DSY00N at line L`
//!   comments; the findings must be exactly those (rule and line), nothing more.

use std::path::{Path, PathBuf};

use desync_lint::{Options, Rule, lint_source};

fn corpus(name: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

/// `# expect: DSY001 at line 12` comments of a file.
fn expectations(source: &str) -> Vec<(Rule, u32)> {
    let mut out: Vec<(Rule, u32)> = source
        .lines()
        .filter_map(|l| l.strip_prefix("# expect: "))
        .map(|rest| {
            let (code, line) = rest.split_once(" at line ").expect("`# expect: CODE at line N`");
            (Rule::from_code(code).unwrap(), line.trim().parse().unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn quiet_corpus_has_no_findings() {
    let files = corpus("quiet");
    assert!(files.len() >= 10);
    for path in files {
        let source = std::fs::read_to_string(&path).unwrap();
        let findings = lint_source(&path, &source, &Options::default());
        assert!(
            findings.is_empty(),
            "{}: {:#?}",
            path.display(),
            findings.iter().map(|f| (f.line, f.rule, &f.message)).collect::<Vec<_>>()
        );
    }
}

/// A handler that catches only exceptions signalling the program's structure still counts,
/// as indirect evidence: hidden by default, shown with `--include-indirect`.
#[test]
fn structural_handlers_are_indirect_evidence() {
    assert_one_indirect("loop_bound_from_a_loader_without_len.py", Rule::LocalEarlyExit, 24);
}

/// A decision that rests on the host alone still counts, as indirect evidence: a loop over a
/// loader kept on `self` and built from a folder's listing, and a dict entry restored from a
/// marker file, followed through the call that passes the dict.
#[test]
fn decisions_on_the_host_alone_are_indirect_evidence() {
    // The `break` at line 24 tests the pass number (the same on every rank on the same pass);
    // what the host decides is how many passes the `for` makes.
    assert_one_indirect("local_loader_attribute.py", Rule::LocalEarlyExit, 22);
    assert_one_indirect("state_entry_restored_per_node.py", Rule::LocalEarlyExit, 26);
}

/// A method of an object held by another (`self.engine.is_decoupled()`) whose rank reached
/// one field of it only: still found, as indirect evidence, as a plain attribute of such an
/// object is.
#[test]
fn methods_of_held_objects_are_indirect_evidence() {
    assert_one_indirect(
        "method_of_an_engine_built_with_the_rank.py",
        Rule::RankConditionalCollective,
        40,
    );
}

/// The entries of a dict written out are kept apart, through a call too: the counter the loop
/// tests holds nothing of what the model's entry was built from, not even as indirect
/// evidence (before, every entry carried what any entry depended on).
#[test]
fn entries_of_a_dict_written_out_are_read_one_by_one() {
    let findings = with_indirect("state_entries_read_by_key.py");
    assert!(findings.is_empty(), "{findings:#?}");
}

/// The quiet fixture `name` has exactly one finding with `--include-indirect`: `rule` on
/// `line`, as indirect evidence.
fn assert_one_indirect(name: &str, rule: Rule, line: u32) {
    let findings = with_indirect(name);
    assert_eq!(
        findings.iter().map(|f| (f.rule, f.line, f.indirect)).collect::<Vec<_>>(),
        [(rule, line, true)],
        "{name}: {findings:#?}"
    );
}

/// The findings on the quiet fixture `name`, indirect ones included (`--include-indirect`).
fn with_indirect(name: &str) -> Vec<desync_lint::Finding> {
    let path = corpus("quiet").into_iter().find(|p| p.ends_with(name)).expect("the fixture");
    let source = std::fs::read_to_string(&path).unwrap();
    let options = Options { include_indirect: true, ..Options::default() };
    lint_source(&path, &source, &options)
}

#[test]
fn fire_corpus_fires_exactly_as_annotated() {
    let files = corpus("fire");
    assert!(files.len() >= 12);
    let mut rules_seen = Vec::new();
    for path in files {
        let source = std::fs::read_to_string(&path).unwrap();
        let expected = expectations(&source);
        assert!(!expected.is_empty(), "{} has no `# expect:` comment", path.display());
        let findings = lint_source(&path, &source, &Options::default());
        let mut got: Vec<(Rule, u32)> = findings.iter().map(|f| (f.rule, f.line)).collect();
        got.sort();
        assert_eq!(
            got,
            expected,
            "{}: {:#?}",
            path.display(),
            findings.iter().map(|f| (f.line, f.rule, &f.message)).collect::<Vec<_>>()
        );
        for f in &findings {
            assert!(f.column >= 1 && !f.source.is_empty() && !f.hint.is_empty());
        }
        rules_seen.extend(expected.into_iter().map(|(r, _)| r));
    }
    for rule in Rule::ALL {
        assert!(rules_seen.contains(&rule), "no fire example for {rule}");
    }
}

#[test]
fn suppression_comments_and_rule_selection() {
    // `main` passes `f` the rank and a data loader (whose batches are the rank's own data).
    let source = "\
import torch.distributed as dist

def f(x, rank, loader):
    if rank == 0:  # desync: ignore[DSY001]
        dist.all_reduce(x)
    if rank == 1:  # desync: ignore[DSY003]
        dist.all_reduce(x)
    if rank == 2:  # desync: ignore
        dist.barrier()
    for batch in loader:
        if not batch.isfinite().all():
            continue
        dist.all_reduce(batch)

def main(x, dataset):
    from torch.utils.data import DataLoader
    f(x, dist.get_rank(), DataLoader(dataset))
";
    let path = Path::new("t.py");
    let all = lint_source(path, source, &Options::default());
    let got: Vec<(Rule, u32)> = all.iter().map(|f| (f.rule, f.line)).collect();
    assert_eq!(got, [(Rule::RankConditionalCollective, 6), (Rule::LocalEarlyExit, 12)]);
    let only = Options { select: vec![Rule::LocalEarlyExit], ..Options::default() };
    assert_eq!(lint_source(path, source, &only).len(), 1);
    let ignore = Options { ignore: vec![Rule::LocalEarlyExit], ..Options::default() };
    assert_eq!(lint_source(path, source, &ignore)[0].rule, Rule::RankConditionalCollective);
}

#[test]
fn files_without_collectives_or_with_syntax_errors() {
    let path = Path::new("t.py");
    assert!(lint_source(path, "", &Options::default()).is_empty());
    assert!(lint_source(path, "if rank == 0:\n    print('hi')\n", &Options::default()).is_empty());
    // A half-edited file still gets checked as far as the parser recovered it.
    let broken = "import torch.distributed as dist\ndef f(x):\n    rank = dist.get_rank()\n    if rank == 0:\n        dist.all_reduce(x)\n    y = (\n";
    let findings = lint_source(path, broken, &Options::default());
    assert_eq!(findings.iter().map(|f| f.line).collect::<Vec<_>>(), [4]);
}

/// Names that refer to themselves, as real code writes them (`def __init__(self, dict: dict)`
/// in nanotron, a module `random.py` that imports `random`, `x = x.y`, classes and functions
/// that name each other): each used to be one cycle away from a resolver that never stops,
/// and a stack overflow aborts the whole lint. Every file must lint, and the real collectives
/// in them are still found.
#[test]
fn names_that_refer_to_themselves_terminate() {
    let sources: &[(&str, &str)] = &[
        (
            "annotation.py",
            "class R:\n    def __init__(self, dict: dict):\n        self._dict = dict.copy()\n    def __iter__(self):\n        return self._dict.__iter__()\n",
        ),
        (
            "random.py",
            "import random\nimport torch.distributed as dist\ndef f():\n    random.seed(dist.get_rank())\n",
        ),
        (
            "cycles.py",
            "import torch.distributed as dist\nx = x.y\nclass A(A):\n    C = A\n    def f(self, m: \"A\", n: m, o: A.f):\n        self.m = self.m.module\n        return self.f(m).f(m)\ndef a(v): return b(v)\ndef b(v): return a(v)\ndef g(loader=g):\n    for e in loader:\n        loader = [loader]\n        if a(e) or e.sum() > 0:\n            break\n        dist.barrier()\nfor q in q:\n    q = q[q]\n    dist.all_gather(q, q)\n",
        ),
    ];
    for (name, source) in sources {
        let _ = lint_source(Path::new(name), source, &Options::default());
    }
    let (_, cycles) = sources[2];
    let findings = lint_source(Path::new("cycles.py"), cycles, &Options::default());
    assert_eq!(
        findings.iter().map(|f| (f.rule, f.line)).collect::<Vec<_>>(),
        [(Rule::LocalEarlyExit, 14)]
    );
}

/// A handler of value errors around a `try` body every rank evaluates alike is quiet
/// (`quiet/key_error_from_settings_every_rank_shares.py`), but the values are followed back
/// only for a body of a bounded size: thousands of chained statements (generated code) keep
/// the finding rather than cost seconds (quadratic in the statements followed back).
#[test]
fn value_errors_of_a_huge_try_body_keep_their_finding() {
    let source = |statements: usize| {
        let mut s = String::from(
            "import torch\nimport torch.distributed as dist\nCFG = {}\nX = torch.zeros(3)\n\
             def g(a, b):\n    return a\ndef f():\n    try:\n        v0 = 0\n",
        );
        for i in 1..statements {
            s.push_str(&format!("        v{i} = g(CFG['k{i}'], v{})\n", i - 1));
        }
        s.push_str("        dist.all_reduce(X)\n    except ValueError:\n        return None\n");
        s
    };
    let small = lint_source(Path::new("small.py"), &source(20), &Options::default());
    assert!(small.is_empty(), "{small:#?}");
    let huge = lint_source(Path::new("huge.py"), &source(5000), &Options::default());
    assert_eq!(huge.iter().map(|f| f.rule).collect::<Vec<_>>(), [Rule::SwallowedException]);
}
