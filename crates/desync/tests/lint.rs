//! `desync lint` through the real binary: exit codes (0 clean, 1 findings, 2 unreadable path
//! or bad arguments), the three output formats, suppression comments, rule selection and
//! directory discovery.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn train(scenario: &str) -> PathBuf {
    repo().join("tests/scenarios").join(scenario).join("src/train.py")
}

fn lint() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.arg("lint");
    cmd
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `log` is only ever called with the rank (`dist.get_rank()`), so `if rank == 0:` is a rank
/// test and the `all_reduce` under it runs on rank 0 alone.
const BUGGY: &str = "\
import torch.distributed as dist

def log(x, rank):
    if rank == 0:
        dist.all_reduce(x)

def step(x):
    log(x, dist.get_rank())
";

#[test]
fn exit_codes_and_text_format() {
    let out = lint().arg(train("healthy")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("All checks passed (1 file checked)."));

    let path = train("early_stop");
    let out = lint().arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with(&format!("{}:101:17: DSY002 `break`", path.display())), "{first}");
    assert!(text.lines().nth(1).unwrap().starts_with("    help: agree on the decision first"));
    assert!(text.ends_with("Found 1 finding (DSY002: 1) in 1 file.\n"), "{text}");
}

/// A file named again by a folder around it (`scenario/src/train.py scenario/src`) is
/// linted and reported once.
#[test]
fn a_file_named_twice_is_reported_once() {
    let path = train("early_stop");
    let folder = path.parent().unwrap();
    let alone = stdout(&lint().arg(folder).output().unwrap());
    let out = lint().arg(&path).arg(folder).arg(folder.join(".")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert_eq!(text.matches("DSY002 `break`").count(), 1, "{text}");
    // The same summary line as the folder alone: one finding, each file counted once.
    assert_eq!(text.lines().last(), alone.lines().last(), "{text}");
    assert!(text.ends_with("Found 1 finding (DSY002: 1) in 3 files.\n"), "{text}");
}

#[test]
fn unreadable_paths_exit_2_but_still_report_the_rest() {
    let out = lint().arg("/definitely/not/here.py").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/definitely/not/here.py"));

    let out =
        lint().arg(train("early_stop")).arg("/nope").args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), 1);
    assert_eq!(json["errors"][0]["path"], "/nope");

    // Bad arguments are usage errors (2) too.
    assert_eq!(lint().output().unwrap().status.code(), Some(2));
    let out = lint().arg(train("healthy")).args(["--select", "E501"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown rule selector `E501`"));
    let out = lint().arg(train("healthy")).args(["--format", "xml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A half-edited file is linted as far as the parser recovered, its findings reported, and
/// a warning says where the syntax broke: on stderr, in JSON `errors`, as a SARIF warning
/// notification (the run still succeeded). The exit status is the findings'.
#[test]
fn a_file_with_a_syntax_error_is_linted_with_a_warning() {
    let dir = std::env::temp_dir().join(format!("desync-lint-syntax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("half_edited.py");
    let mut source = BUGGY.to_owned();
    source.push_str("\ndef later(x:\n    return x\n");
    std::fs::write(&path, source).unwrap();

    let out = lint().arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("DSY001"), "{}", stdout(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let warning = format!("desync: warning: {}: syntax error at line 11", path.display());
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(stderr.contains("linted as far as the parser recovered"), "{stderr}");

    let out = lint().arg(&path).args(["--format", "json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["files_checked"], 1);
    assert_eq!(json["findings"].as_array().unwrap().len(), 1);
    assert!(json["errors"][0]["message"].as_str().unwrap().contains("syntax error at line 11"));

    let out = lint().arg(&path).args(["--format", "sarif"]).output().unwrap();
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], true);
    assert_eq!(invocation["toolExecutionNotifications"][0]["level"], "warning");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `desync lint -` lints one file from standard input (an editor's buffer), reported as
/// `--stdin-filename`, whose folder its imports are resolved from; `-` among other paths, or
/// the label without `-`, is a usage error.
#[test]
fn standard_input_is_linted_as_the_file_it_is_named() {
    let dir = std::env::temp_dir().join(format!("desync-lint-stdin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("helpers.py"),
        "import torch.distributed as dist\n\ndef sync(x):\n    dist.all_reduce(x)\n",
    )
    .unwrap();
    let buffer = "import torch.distributed as dist\nfrom helpers import sync\n\n\
                  def step(x):\n    if dist.get_rank() == 0:\n        sync(x)\n";
    let label = dir.join("train.py");

    let out = lint()
        .args(["--format", "json", "--stdin-filename"])
        .arg(&label)
        .arg("-")
        .write_stdin(buffer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["files_checked"], 1);
    let finding = &json["findings"][0];
    assert_eq!(finding["file"], label.display().to_string());
    assert_eq!(finding["line"], 5);
    // The helper was found in the label's folder.
    assert!(finding["message"].as_str().unwrap().contains("of helpers.py"), "{finding}");

    let out = lint().arg("-").write_stdin("x = 1\n").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("All checks passed (1 file checked)."));

    let out = lint().arg("-").arg(&label).write_stdin(buffer).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be the only path"));
    let out = lint().arg("--stdin-filename").arg(&label).arg(&label).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_over_every_scenario() {
    let dir = repo().join("tests/scenarios");
    let out = lint().arg(&dir).args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema_version"], 1);
    let jobs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("src/train.py").is_file())
        .count();
    assert!(json["files_checked"].as_u64().unwrap() >= jobs as u64);
    assert_eq!(json["errors"].as_array().unwrap().len(), 0);
    let findings = json["findings"].as_array().unwrap();
    for f in findings {
        for key in ["file", "message", "hint", "source", "rule"] {
            assert!(f[key].is_string(), "{key} in {f}");
        }
        assert!(f["line"].as_u64().unwrap() >= 1 && f["column"].as_u64().unwrap() >= 1);
    }
    let at = |scenario: &str, line: u64| {
        findings.iter().any(|f| {
            f["file"].as_str().unwrap().contains(&format!("/{scenario}/")) && f["line"] == line
        })
    };
    assert!(at("pg_order", 67) && at("extra_collective", 77) && at("except_skip", 89));
    assert!(!findings.iter().any(|f| f["file"].as_str().unwrap().contains("/healthy/")));
}

#[test]
fn sarif_has_the_required_keys() {
    let out = lint().arg(train("ragged_allgather")).args(["--format", "sarif"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(sarif["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "desync");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["id"] == "DSY005"));
    // The designed ragged gather (the strided shard's extra batch is a DSY002 on its loop).
    let results = run["results"].as_array().unwrap();
    let result = results.iter().find(|r| r["ruleId"] == "DSY005").expect("a DSY005 result");
    assert!(result["message"]["text"].as_str().unwrap().contains("all_gather"));
    let location = &result["locations"][0]["physicalLocation"];
    assert!(
        location["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("ragged_allgather/src/train.py")
    );
    assert_eq!(location["region"]["startLine"], 58);
    assert_eq!(location["region"]["startColumn"], 9);
}

#[test]
fn suppression_selection_and_discovery() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("train.py");
    std::fs::write(&file, BUGGY).unwrap();
    assert_eq!(lint().arg(&file).output().unwrap().status.code(), Some(1));

    std::fs::write(
        &file,
        BUGGY.replace("if rank == 0:", "if rank == 0:  # desync: ignore[DSY001]"),
    )
    .unwrap();
    let out = lint().arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    std::fs::write(
        &file,
        BUGGY.replace("if rank == 0:", "if rank == 0:  # desync: ignore[DSY002]"),
    )
    .unwrap();
    assert_eq!(lint().arg(&file).output().unwrap().status.code(), Some(1));
    std::fs::write(&file, BUGGY.replace("if rank == 0:", "if rank == 0:  # desync: ignore"))
        .unwrap();
    assert_eq!(lint().arg(&file).output().unwrap().status.code(), Some(0));

    std::fs::write(&file, BUGGY).unwrap();
    assert_eq!(
        lint().arg(&file).args(["--ignore", "DSY001"]).output().unwrap().status.code(),
        Some(0)
    );
    assert_eq!(
        lint().arg(&file).args(["--select", "DSY002,DSY003"]).output().unwrap().status.code(),
        Some(0)
    );
    assert_eq!(
        lint().arg(&file).args(["--select", "DSY00"]).output().unwrap().status.code(),
        Some(1)
    );

    // Directories are searched recursively; virtual environments are skipped.
    for skipped in
        ["venv/lib", ".venv", "site-packages/pkg", "__pycache__", "node_modules/x", ".git"]
    {
        let d = dir.path().join("env").join(skipped);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bad.py"), BUGGY).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("pkg/sub")).unwrap();
    std::fs::write(dir.path().join("pkg/sub/ok.py"), "x = 1\n").unwrap();
    std::fs::write(dir.path().join("pkg/notes.txt"), BUGGY).unwrap();
    let out = lint()
        .arg(dir.path().join("env"))
        .arg(dir.path().join("pkg"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["files_checked"], 1);
}

/// Rank 0 alone appends to `keys`; the barrier's test reads the list. The rank reaches the
/// test only through what is written into a container, which is indirect evidence: counted by
/// default, reported with `--include-indirect` (JSON `evidence`, SARIF level `note`).
const THROUGH_A_CONTAINER: &str = "\
import torch.distributed as dist

def save(state):
    keys = []
    if dist.get_rank() == 0:
        keys.append(\"model\")
    if len(keys) > 0:
        dist.barrier()
";

#[test]
fn indirect_evidence_is_counted_and_shown_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("save.py");
    std::fs::write(&file, THROUGH_A_CONTAINER).unwrap();

    let out = lint().arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains(
        "All checks passed (1 file checked) (1 more finding with indirect evidence not shown: \
         --include-indirect shows it)."
    ));
    let out = lint().arg(&file).args(["--format", "json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), 0);
    assert_eq!(json["indirect_hidden"], 1);

    let out = lint().arg(&file).args(["--include-indirect", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &json["findings"][0];
    assert_eq!((f["rule"].as_str(), f["line"].as_u64()), (Some("DSY001"), Some(7)));
    assert_eq!(f["evidence"], "indirect");
    assert_eq!(json["indirect_hidden"], 0);
    let out = lint().arg(&file).args(["--include-indirect"]).output().unwrap();
    assert!(stdout(&out).contains(":7:5: DSY001 [indirect evidence] `dist.barrier`"));
    let out = lint().arg(&file).args(["--include-indirect", "--format", "sarif"]).output().unwrap();
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["level"], "note");
    assert_eq!(result["properties"]["evidence"], "indirect");

    // Direct evidence is reported by default, marked as such.
    let out = lint().arg(train("extra_collective")).args(["--format", "json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["findings"][0]["evidence"], "direct");
}

/// The JSON findings of `desync lint <arg>` run in `cwd`, as (file name, rule, line).
fn findings_in(cwd: &Path, arg: &Path) -> Vec<(String, String, u64)> {
    let out = lint().current_dir(cwd).arg(arg).args(["--format", "json"]).output().unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = Path::new(f["file"].as_str().unwrap());
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            (name, f["rule"].as_str().unwrap().to_owned(), f["line"].as_u64().unwrap())
        })
        .collect()
}

/// A `src` layout: `loop.py` calls, on rank 0 only, a helper that `src/trainer/sync.py`
/// defines and that calls `all_reduce`. `desync lint .` from the repository, the same folder by its
/// absolute path, and the package folder given on its own all follow the absolute import
/// `from trainer.sync import ...` into the helper (Python finds `trainer` in `src`), so they
/// report the same finding.
#[test]
fn imports_resolve_however_the_path_is_spelled() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    let package = repo.join("src/trainer");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("__init__.py"), "").unwrap();
    std::fs::write(
        package.join("sync.py"),
        "import torch.distributed as dist\n\n\ndef mean_over_ranks(t):\n    \
         dist.all_reduce(t)\n    return t / dist.get_world_size()\n",
    )
    .unwrap();
    std::fs::write(
        package.join("loop.py"),
        "import torch.distributed as dist\n\nfrom trainer.sync import mean_over_ranks\n\n\n\
         def log_loss(loss):\n    if dist.get_rank() == 0:\n        print(mean_over_ranks(loss))\n",
    )
    .unwrap();
    let expected = vec![("loop.py".to_owned(), "DSY001".to_owned(), 7)];
    assert_eq!(findings_in(&repo, Path::new(".")), expected, "relative path");
    assert_eq!(findings_in(&repo, &repo), expected, "absolute path");
    assert_eq!(findings_in(&repo, Path::new("src/trainer")), expected, "the package alone");
    assert_eq!(findings_in(&package, Path::new(".")), expected, "from inside the package");
}

/// Linting a framework's own source (the `deepspeed/comm` package wraps its collectives in
/// calls of a backend chosen at run time, `cdb.all_reduce`): `from deepspeed import comm as
/// dist` is still the table's `deepspeed.comm`, whose `all_reduce` is a collective, not the
/// project's wrapper module whose code does not show one.
#[test]
fn the_tables_collectives_win_over_the_frameworks_own_source() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let comm = root.join("deepspeed/comm");
    std::fs::create_dir_all(&comm).unwrap();
    std::fs::write(root.join("deepspeed/__init__.py"), "").unwrap();
    std::fs::write(
        comm.join("__init__.py"),
        "cdb = None\n\n\ndef all_reduce(tensor, group=None):\n    \
         return cdb.all_reduce(tensor, group=group)\n\n\ndef get_rank():\n    \
         return cdb.get_rank()\n",
    )
    .unwrap();
    std::fs::write(
        root.join("deepspeed/engine.py"),
        "from deepspeed import comm as dist\n\n\ndef report(loss):\n    \
         if dist.get_rank() == 0:\n        dist.all_reduce(loss)\n",
    )
    .unwrap();
    let expected = vec![("engine.py".to_owned(), "DSY001".to_owned(), 5)];
    assert_eq!(findings_in(&root, Path::new(".")), expected, "relative path");
    assert_eq!(findings_in(&root, &root), expected, "absolute path");
}

/// DSY007 through the binary: the real-bug corpus' resume case (every rank tests the file, only
/// rank 0 reads it before the broadcast) in SARIF, and its fixed version clean; `--ignore
/// DSY007` turns it off.
#[test]
fn a_file_every_rank_tests_but_one_reads_is_reported_in_sarif() {
    let case = repo().join("crates/desync_lint/tests/real_bugs/resume_exists_broadcast");
    let out = lint().arg(case.join("buggy.py")).args(["--format", "sarif"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let rule = rules.iter().find(|r| r["id"] == "DSY007").expect("DSY007 in the rules");
    assert_eq!(rule["name"], "per-rank-file-test");
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["ruleId"], "DSY007");
    let text = results[0]["message"]["text"].as_str().unwrap();
    assert!(text.contains("`train_state_path.exists()`") && text.contains("torch.load"), "{text}");
    assert_eq!(results[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 31);
    let fixed = lint().arg(case.join("fixed.py")).output().unwrap();
    assert_eq!(fixed.status.code(), Some(0), "{}", stdout(&fixed));
    let ignored = lint().arg(case.join("buggy.py")).args(["--ignore", "DSY007"]).output().unwrap();
    assert_eq!(ignored.status.code(), Some(0), "{}", stdout(&ignored));
}

/// A method that iterates its parameter and skips a collective on an empty item is guessed to
/// be an entry point fed the rank's own batches while no caller is in view. Called by its name
/// from another file of the linted tree (`self.generator.generate(pending)`, which the method's
/// own file cannot resolve), the caller decides instead: a value it builds from its own state
/// carries no rank dependence; a caller that forwards its own parameter moves the question one
/// call out, where it is not followed, so the guess stands; a namesake whose arguments do not fit
/// the method (`model.generate(prompt, temperature=0.7)`), or a call the analysis resolves to
/// another class's method, is no caller.
#[test]
fn callers_in_other_files_decide_what_a_method_iterates() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("generator.py"),
        "import torch.distributed as dist\n\n\nclass Generator:\n    def generate(self, batches):\n        \
         for batch in batches:\n            if batch.numel() == 0:\n                continue\n            \
         dist.all_reduce(batch)\n        return batches\n",
    )
    .unwrap();
    let guessed = vec![("generator.py".to_owned(), "DSY002".to_owned(), 8)];
    assert_eq!(findings_in(&root, Path::new(".")), guessed, "no caller in view");

    std::fs::write(
        root.join("sampling.py"),
        "def sample(model, prompt):\n    return model.generate(prompt, temperature=0.7)\n",
    )
    .unwrap();
    assert_eq!(findings_in(&root, Path::new(".")), guessed, "a namesake is no caller");
    std::fs::write(
        root.join("sampler.py"),
        "class Sampler:\n    def generate(self, batches):\n        return batches\n\n\n\
         def draw(pending):\n    return Sampler().generate(pending.snapshot())\n",
    )
    .unwrap();
    assert_eq!(findings_in(&root, Path::new(".")), guessed, "a call resolved to another method");

    std::fs::write(
        root.join("relay.py"),
        "class Relay:\n    def __init__(self, generator):\n        self.generator = generator\n\n    \
         def step(self, batches):\n        return self.generator.generate(batches)\n",
    )
    .unwrap();
    assert_eq!(findings_in(&root, Path::new(".")), guessed, "a forwarding caller");
    std::fs::remove_file(root.join("relay.py")).unwrap();

    std::fs::write(
        root.join("server.py"),
        "class Server:\n    def __init__(self, generator, queue):\n        self.generator = generator\n        \
         self.queue = queue\n\n    def run(self):\n        pending = self.queue.snapshot()\n        \
         return self.generator.generate(pending)\n",
    )
    .unwrap();
    assert_eq!(findings_in(&root, Path::new(".")), vec![], "the caller builds what it passes");
    // The file alone is linted as before: its folder is its project, but no file list is given
    // for standard input, so no caller is searched for.
    let out = lint()
        .current_dir(&root)
        .args(["--format", "json", "--stdin-filename", "generator.py", "-"])
        .write_stdin(std::fs::read(root.join("generator.py")).unwrap())
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), 1, "{json}");
}

/// A script linted alone follows its imports as its folder linted whole does: `desync lint
/// train.py` from the script's own folder (whose path has no folder part) reads the sibling
/// module `common.py`, so a loop over the rank's own shard is seen; `desync lint
/// scripts/train.py` from the repository (a `pyproject.toml` marks it) also finds the project's
/// package `trainer` at the repository's top, as an installed project's scripts import it.
#[test]
fn a_file_linted_alone_follows_its_imports() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    let scripts = repo.join("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::create_dir_all(repo.join("trainer")).unwrap();
    std::fs::write(repo.join("pyproject.toml"), "[project]\nname = \"trainer\"\n").unwrap();
    std::fs::write(repo.join("trainer/__init__.py"), "").unwrap();
    let shard = "import torch.distributed as dist\n\n\ndef shard_batches(batches):\n    \
                 return batches[dist.get_rank()::dist.get_world_size()]\n";
    std::fs::write(scripts.join("common.py"), shard).unwrap();
    std::fs::write(repo.join("trainer/data.py"), shard).unwrap();
    let script = |import: &str| {
        format!(
            "import torch.distributed as dist\n{import}\n\n\ndef evaluate(model, batches):\n    \
             total = 0\n    for b in shard_batches(batches):\n        total += model(b)\n        \
             dist.all_reduce(total)\n    return total\n"
        )
    };
    std::fs::write(scripts.join("train.py"), script("from common import shard_batches")).unwrap();
    std::fs::write(scripts.join("eval.py"), script("from trainer.data import shard_batches"))
        .unwrap();
    let train = vec![("train.py".to_owned(), "DSY002".to_owned(), 7)];
    assert_eq!(findings_in(&scripts, Path::new("train.py")), train, "from its folder");
    assert_eq!(findings_in(&scripts, Path::new(".")), train, "its folder");
    assert_eq!(findings_in(&repo, Path::new("scripts/train.py")), train, "from the repository");
    let eval = vec![("eval.py".to_owned(), "DSY002".to_owned(), 7)];
    assert_eq!(findings_in(&repo, Path::new("scripts/eval.py")), eval, "the project's package");
    assert_eq!(findings_in(&scripts, Path::new("eval.py")), eval, "the package, from the folder");
}
