//! Hostile and partial input through the real binary (issue 17): partial sets are named and
//! never healthy, a wrong source root is detected, sources outside the roots are never read,
//! non-regular files are refused, terminal escapes from dumps are escaped, limits become
//! warnings. `python/tests/test_hostile.py` runs the full generated set through every command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn scenario(name: &str) -> PathBuf {
    repo().join("tests/scenarios").join(name)
}

fn desync_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_desync")).current_dir(cwd).args(args).output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Copies some of a scenario's dumps into a fresh directory.
fn some_dumps(name: &str, keep: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in keep {
        std::fs::copy(scenario(name).join("dumps").join(file), dir.path().join(file)).unwrap();
    }
    dir
}

#[test]
fn one_rank_of_four_is_never_healthy_and_the_others_are_named() {
    // Gloo's pg_config lists the default group as name "" with ranks [0, 1, 2, 3].
    for keep in ["gloo_trace_rank_0", "gloo_trace_rank_2"] {
        let dumps = some_dumps("healthy", &[keep]);
        let out = desync_in(dumps.path(), &["analyze", ".", "--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let report = json_of(&out);
        assert_ne!(report["verdict"]["category"], "healthy");
        assert_eq!(report["input"]["world_size"], 4);
        let missing: Vec<u64> =
            serde_json::from_value(report["input"]["missing_ranks"].clone()).unwrap();
        assert_eq!(missing.len(), 3);
        let headline = report["verdict"]["headline"].as_str().unwrap();
        assert!(
            headline.contains("no readable dump") || headline.contains("no dump"),
            "{headline}"
        );
        // The warning says what pg_config really held.
        let warnings = report["warnings"].to_string();
        assert!(warnings.contains("name \\\"\\\" and ranks [0-3]"), "{warnings}");
    }
}

#[test]
fn a_stated_world_size_names_ranks_no_file_mentions() {
    let dumps = some_dumps("json_extra_collective", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    let out = desync_in(dumps.path(), &["analyze", ".", "--format", "json", "--world-size", "6"]);
    let report = json_of(&out);
    assert_eq!(report["input"]["world_size"], 6);
    assert_eq!(report["input"]["missing_ranks"], serde_json::json!([2, 3, 4, 5]));
    assert_eq!(out.status.code(), Some(1));
    let too_big = desync_in(dumps.path(), &["analyze", ".", "--world-size", "99999999"]);
    assert_eq!(too_big.status.code(), Some(2), "{}", text(&too_big));
}

#[test]
fn an_unreadable_rank_still_counts_toward_the_world() {
    let dumps = some_dumps("healthy", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    std::fs::write(dumps.path().join("gloo_trace_rank_5"), b"\x80\x02garbage").unwrap();
    let report = json_of(&desync_in(dumps.path(), &["analyze", ".", "--format", "json"]));
    assert!(report["input"]["missing_ranks"].as_array().unwrap().contains(&Value::from(5)));
}

#[test]
fn huge_rank_numbers_are_refused_not_allocated() {
    let dumps = some_dumps("healthy", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    let bytes = std::fs::read(dumps.path().join("gloo_trace_rank_0")).unwrap();
    std::fs::write(dumps.path().join("gloo_trace_rank_99999999"), &bytes).unwrap();
    let out = desync_in(dumps.path(), &["analyze", ".", "--format", "json"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let report = json_of(&out);
    assert!(report["input"]["world_size"].as_u64().unwrap() <= 4);
    assert!(report["warnings"].to_string().contains("above the limit"), "{}", report["warnings"]);
}

#[test]
fn non_regular_paths_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace_rank_0");
    let made = Command::new("mkfifo").arg(&fifo).status();
    let mut paths = vec![PathBuf::from("/dev/zero")];
    if made.is_ok_and(|s| s.success()) {
        paths.push(fifo);
    }
    for path in paths {
        let out = desync_in(dir.path(), &["analyze", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("not a regular file"), "{}", text(&out));
    }
}

#[test]
fn json_oddities_cost_an_entry_not_a_rank() {
    let dir = tempfile::tempdir().unwrap();
    for rank in 0..4 {
        let name = format!("gloo_trace_rank_{rank}");
        let bytes =
            std::fs::read(scenario("json_extra_collective").join("dumps").join(&name)).unwrap();
        let mut dump: Value = serde_json::from_slice(&bytes).unwrap();
        if rank == 1 {
            dump["entries"][3]["input_sizes"] = Value::from("not a list");
        }
        let mut out = if rank == 2 { b"\xef\xbb\xbf".to_vec() } else { Vec::new() };
        out.extend(serde_json::to_vec(&dump).unwrap());
        std::fs::write(dir.path().join(&name), out).unwrap();
    }
    // A file name that is not UTF-8 must not break the JSON report.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"notes_\xff_rank_9.txt");
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    let out = desync_in(dir.path(), &["analyze", ".", "--format", "json"]);
    let report = json_of(&out);
    assert_eq!(report["input"]["ranks_loaded"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(report["verdict"]["category"], "divergence");
    assert!(report["warnings"].to_string().contains("1 entry skipped"), "{}", report["warnings"]);
}

/// Rewrites every frame of the scenario's training script to `target`, named `function`.
fn retarget_frames(name: &str, target: &str, function: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(scenario(name).join("dumps")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let from = format!("/tmp/desync-jobs/{name}/train.py");
        // Pickle strings carry their length: rewrite through Python-free byte surgery on the
        // SHORT_BINUNICODE/BINUNICODE forms torch writes (X + u32 length + bytes).
        let out = replace_pickle_string(&bytes, &from, target);
        let out = replace_pickle_string(&out, "main", function);
        std::fs::write(dir.path().join(path.file_name().unwrap()), out).unwrap();
    }
    dir
}

fn replace_pickle_string(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let mut needle = vec![b'X'];
    needle.extend((from.len() as u32).to_le_bytes());
    needle.extend(from.as_bytes());
    let mut with = vec![b'X'];
    with.extend((to.len() as u32).to_le_bytes());
    with.extend(to.as_bytes());
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(&needle) {
            out.extend(&with);
            i += needle.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[test]
fn frames_naming_files_outside_the_roots_are_never_read() {
    let outside = tempfile::tempdir().unwrap();
    let secret = "DESYNC-CANARY-rust-cli";
    let canary = outside.path().join("train.py");
    let body: String =
        (0..200).map(|i| format!("def main():  # {secret} {i}\n    break\n")).collect();
    std::fs::write(&canary, body).unwrap();
    let src = scenario("early_stop").join("src");
    let cwd = tempfile::tempdir().unwrap();
    for target in [canary.to_str().unwrap(), "/etc/passwd", "../../../../../../../../etc/passwd"] {
        let dumps = retarget_frames("early_stop", target, "main");
        let d = dumps.path().to_str().unwrap();
        let path_map = format!("/tmp={}", src.display());
        let runs = [
            vec!["analyze", d, "--format", "json"],
            vec!["analyze", d, "--color", "always"],
            vec!["analyze", d, "--source-root", src.to_str().unwrap()],
            vec!["analyze", d, "--format", "json", "--path-map", &path_map],
        ];
        for args in runs {
            let out = desync_in(cwd.path(), &args);
            let all = text(&out);
            assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {all}");
            assert!(!all.contains(secret), "{args:?} leaked the canary: {all}");
            assert!(!all.contains("root:x:0:0"), "{args:?} leaked /etc/passwd: {all}");
        }
        let out = desync_in(cwd.path(), &["analyze", d, "--format", "json"]);
        let warnings = json_of(&out)["warnings"].to_string();
        assert!(warnings.contains("not read"), "{target}: {warnings}");
    }
}

#[test]
fn a_wrong_source_root_is_detected_and_no_branch_comes_from_it() {
    let wrong = tempfile::tempdir().unwrap();
    let body: String = std::iter::once("def build_mesh(shape):\n".to_owned())
        .chain((0..120).map(|i| format!("    if shape[{}] > {i}:\n        break\n", i % 3)))
        .collect();
    std::fs::write(wrong.path().join("train.py"), body).unwrap();
    let dumps = scenario("early_stop").join("dumps");
    let out = desync_in(
        wrong.path(),
        &[
            "analyze",
            dumps.to_str().unwrap(),
            "--format",
            "json",
            "--source-root",
            wrong.path().to_str().unwrap(),
        ],
    );
    let report = json_of(&out);
    assert_eq!(report["verdict"]["category"], "divergence");
    assert!(report["code"]["branch"].is_null(), "{}", report["code"]);
    let explanation = report["code"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("differs from what ran"), "{explanation}");
    assert!(explanation.contains("build_mesh"), "{explanation}");
    assert!(report["warnings"].to_string().contains("differs from what ran"));
    // The right root still finds the branch.
    let right = scenario("early_stop").join("src");
    let out = desync_in(
        wrong.path(),
        &[
            "analyze",
            dumps.to_str().unwrap(),
            "--format",
            "json",
            "--source-root",
            right.to_str().unwrap(),
        ],
    );
    assert_eq!(json_of(&out)["code"]["branch"]["line"], 101);
}

#[test]
fn terminal_escapes_from_dumps_are_escaped() {
    let evil = "main\u{1b}]0;pwned\u{7}\u{1b}[2J\rHEALTHY\u{9b}";
    let dumps = retarget_frames("early_stop", "/tmp/desync-jobs/early_stop/train.py", evil);
    let d = dumps.path().to_str().unwrap();
    for color in ["never", "always"] {
        let out = desync_in(dumps.path(), &["analyze", d, "--color", color]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("\\x1b]0;pwned"), "{stdout}");
        for raw in ["\u{7}", "\r", "\u{1b}]", "\u{1b}[2J", "\u{9b}"] {
            assert!(!stdout.contains(raw), "--color {color}: raw {raw:?} reached the terminal");
        }
        if color == "never" {
            assert!(!stdout.contains('\u{1b}'), "an escape with colour off");
        }
    }
    // JSON keeps the string exact (escaped by JSON itself).
    let report = json_of(&desync_in(dumps.path(), &["analyze", d, "--format", "json"]));
    assert!(report.to_string().contains("\\u001b]0;pwned"));
}

#[test]
fn watch_durations_and_counts_are_validated() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--interval", "--lag", "--timeout", "--for"] {
        let out = desync_in(dir.path(), &["watch", "--dir", ".", flag, "1e20"]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", text(&out));
        assert!(!text(&out).contains("panicked"), "{flag}: {}", text(&out));
    }
    let out = desync_in(dir.path(), &["watch", "--dir", ".", "--concurrency", "100000000"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Runs desync in `cwd` and waits at most `limit` seconds (a write into a FIFO would block
/// forever): `None` when it had to be killed.
fn desync_within(cwd: &Path, args: &[&str], limit: u64) -> Option<Output> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_desync"))
        .current_dir(cwd)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(limit);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
fn output_targets_that_are_not_regular_files_are_refused_at_once() {
    let dumps = some_dumps("healthy", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    let out_dir = tempfile::tempdir().unwrap();
    let fifo = out_dir.path().join("out.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let file = out_dir.path().join("plain.txt");
    std::fs::write(&file, b"").unwrap();
    let (fifo, dir, file) =
        (fifo.to_str().unwrap(), out_dir.path().to_str().unwrap(), file.to_str().unwrap());
    let at = dumps.path().to_str().unwrap();
    // Every writer, each with a FIFO, a device and a directory where a file goes (or a FIFO
    // and a file where a directory goes).
    let mut runs: Vec<(Vec<&str>, &str)> = Vec::new();
    for target in [fifo, "/dev/null", dir] {
        let kind = match target {
            t if t == fifo => "not a regular file (a FIFO)",
            "/dev/null" => "not a regular file (a character device)",
            _ => "not a regular file (a directory)",
        };
        runs.push((vec!["report", at, "-o", target], kind));
        runs.push((vec!["analyze", at, "--html", target], kind));
        runs.push((vec!["analyze", at, "--emit-probes", target], kind));
        runs.push((vec!["export", at, "--perfetto", target], kind));
    }
    for target in [fifo, file] {
        let kind = if target == fifo {
            "not a directory (a FIFO)"
        } else {
            "not a directory (a regular file)"
        };
        runs.push((vec!["summarize", at, "-o", target], kind));
        runs.push((vec!["watch", "--dir", at, "--save", target, "--for", "5"], kind));
        runs.push((vec!["run", "--dir", target, "--", "true"], kind));
    }
    for (args, kind) in runs {
        let out = desync_within(out_dir.path(), &args, 30)
            .unwrap_or_else(|| panic!("{args:?} blocked on its output"));
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(kind), "{args:?} must say {kind:?}: {said}");
        assert!(!said.contains("written"), "{args:?}: refused only after the work: {said}");
    }
    // A plain file is still replaced whole, and no temporary file is left beside it.
    let report = out_dir.path().join("report.html");
    let out = desync_in(out_dir.path(), &["report", at, "-o", report.to_str().unwrap()]);
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", text(&out));
    assert!(std::fs::read_to_string(&report).unwrap().contains("<html"));
    let names: Vec<String> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn a_deep_or_unreadable_folder_among_the_dumps_is_a_warning() {
    let dumps = some_dumps("healthy", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    for rank in ["gloo_trace_rank_2", "gloo_trace_rank_3"] {
        let node = dumps.path().join("node1");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::copy(scenario("healthy").join("dumps").join(rank), node.join(rank)).unwrap();
    }
    // 3,000 levels: deeper than PATH_MAX lets one path name, so made 500 at a time below an
    // open folder (named through /proc/self/fd).
    let mut deepest = std::fs::File::open(dumps.path()).unwrap();
    for _ in 0..6 {
        use std::os::fd::AsRawFd;
        let below = format!("/proc/self/fd/{}/{}", deepest.as_raw_fd(), "d/".repeat(500));
        std::fs::create_dir_all(&below).unwrap();
        deepest = std::fs::File::open(&below).unwrap();
    }
    let out = desync_in(dumps.path(), &["analyze", ".", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = json_of(&out);
    assert_eq!(report["verdict"]["category"], "healthy");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("not searched: more than 64 levels"), "{warnings}");

    // An unreadable folder: chmod 000 stops no one but root's inferiors, so as root the
    // binary runs as `nobody` (setpriv), over a copy everyone may read.
    let locked = dumps.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let chmod = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(dumps.path(), 0o755);
    chmod(&dumps.path().join("node1"), 0o755);
    chmod(&locked, 0o000);
    let exe = env!("CARGO_BIN_EXE_desync");
    let as_root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let mut command = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", exe]);
        c
    } else {
        Command::new(exe)
    };
    let out = command.current_dir(dumps.path()).args(["analyze", ".", "--format", "json"]).output();
    chmod(&locked, 0o755);
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let warnings = json_of(&out)["warnings"].to_string();
    assert!(
        warnings.contains("locked") && warnings.contains("directory not searched"),
        "{warnings}"
    );
}

/// Python files near the 16 MiB lint limit, of every shape that once cost the parser gigabytes
/// or its stack: (name, text, whether `lint` must refuse it).
fn huge_python_shapes() -> Vec<(&'static str, String, bool)> {
    let size = (16 << 20) - 64;
    let lines = |line: String| line.repeat(size / line.len());
    vec![
        ("nul", "\0".repeat(size), true),
        ("dollar", "$".repeat(size), true),
        ("closers", ")".repeat(size), true),
        ("statements", "a;".repeat(size / 2), true),
        ("numbers", "x = [".to_owned() + &"1,".repeat(size / 2 - 4) + "]\n", true),
        ("stray_backslash_brackets", lines(format!("x = {}1\n", "\\[".repeat(2_900))), true),
        ("lone_cr_blocks", (0..5_000).map(|d| format!("{}if x:\r", " ".repeat(d))).collect(), true),
        ("unary", lines(format!("x = {}a\n", "- ".repeat(2_900))), true),
        ("attributes", lines(format!("x = a{}\n", ".b".repeat(2_900))), true),
        ("subscripts", lines(format!("x = a{}\n", "[0]".repeat(2_900))), true),
        ("calls", lines(format!("x = {}a{}\n", "f(".repeat(1_400), ")".repeat(1_400))), true),
        ("binary", "x = a".to_owned() + &"+a".repeat(size / 2 - 4) + "\n", true),
        ("comparisons", "x = a".to_owned() + &"<a".repeat(size / 2 - 4) + "\n", true),
        ("long_string", format!("x = \"{}\"\n", "a".repeat(size - 8)), false),
        ("long_name", format!("x = {}\n", "a".repeat(size - 8)), false),
    ]
}

#[test]
fn lint_survives_every_huge_python_shape_under_a_memory_cap() {
    let dir = tempfile::tempdir().unwrap();
    for (name, source, refused) in huge_python_shapes() {
        let path = dir.path().join(format!("{name}.py"));
        std::fs::write(&path, source).unwrap();
        // The hostile tests' cap: 4 GiB of address space.
        let script = format!(
            "ulimit -v 4194304; exec '{}' lint '{}' --format json",
            env!("CARGO_BIN_EXE_desync"),
            path.display()
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        std::fs::remove_file(&path).unwrap();
        let said = text(&out);
        assert!(out.status.code().is_some_and(|c| c <= 2), "{name}: {:?} {said}", out.status);
        assert!(!said.contains("panicked"), "{name}: {said}");
        assert_eq!(
            said.contains("not linted"),
            refused,
            "{name}: {}",
            &said[said.len().saturating_sub(600)..]
        );
    }
}

#[test]
fn the_mcp_server_survives_any_lint() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let mut calls = Vec::new();
    for (name, source, _) in huge_python_shapes().into_iter().take(6) {
        let path = dir.path().join(format!("{name}.py"));
        std::fs::write(&path, source).unwrap();
        calls.push(path.display().to_string());
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_desync"))
        .arg("mcp")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut send = |message: Value| writeln!(input, "{message}").unwrap();
    send(serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}}));
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (i, path) in calls.iter().enumerate() {
        send(serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "lint", "arguments": {"paths": [path]}}}));
    }
    let last = calls.len() + 1;
    send(serde_json::json!({"jsonrpc": "2.0", "id": last, "method": "tools/list"}));
    let mut answered = std::collections::BTreeSet::new();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    while answered.len() < last + 1 {
        let Some(Ok(line)) = lines.next() else { break };
        let message: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = message["id"].as_u64() {
            if (1..last as u64).contains(&id) {
                let said = message.to_string();
                assert!(said.contains("not linted") || said.contains("not parsed"), "{said:.600}");
            }
            answered.insert(id);
        }
    }
    drop(input);
    let status = child.wait().unwrap();
    assert_eq!(answered.len(), last + 1, "the server stopped answering: {status:?}");
    assert!(status.code().is_some(), "killed by a signal: {status:?}");
}

#[test]
fn home_is_no_default_source_root_and_dump_links_out_are_not_followed() {
    let home = tempfile::tempdir().unwrap();
    let secret = "DESYNC-CANARY-home";
    // Every line a module-level statement: any `<module>` frame line matches it.
    let body: String = (0..200).map(|i| format!("token_{i} = '{secret}'\n")).collect();
    std::fs::write(home.path().join("train.py"), &body).unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_rsa"), &body).unwrap();
    // The mismatched call's frame (in `allreduce_gradients`) as module code of `train.py`,
    // relative: as written, it resolves under the working directory.
    let dumps = retarget_frames("dtype_mismatch", "train.py", "<module>");
    for entry in std::fs::read_dir(dumps.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, replace_pickle_string(&bytes, "allreduce_gradients", "<module>"))
            .unwrap();
    }
    let d = dumps.path().to_str().unwrap();
    let in_home = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_desync"))
            .current_dir(home.path())
            .env("HOME", home.path())
            .args(args)
            .output()
            .unwrap()
    };
    // The same directory as a project (HOME elsewhere) is read: the frames do reach the file.
    let out = Command::new(env!("CARGO_BIN_EXE_desync"))
        .current_dir(home.path())
        .env("HOME", "/nonexistent-home")
        .args(["analyze", d, "--format", "json"])
        .output()
        .unwrap();
    assert!(text(&out).contains(secret), "the control run did not read train.py: {}", text(&out));
    let out = in_home(&["analyze", d, "--format", "json"]);
    assert!(!text(&out).contains(secret), "read from $HOME: {}", text(&out));
    let warnings = json_of(&out)["warnings"].to_string();
    assert!(
        warnings.contains("home directory") && warnings.contains("--source-root"),
        "{warnings}"
    );

    // A dump directory whose rank 3 is a link to a key outside it.
    let linked = some_dumps("early_stop", &["gloo_trace_rank_0", "gloo_trace_rank_1"]);
    std::os::unix::fs::symlink(
        home.path().join(".ssh/id_rsa"),
        linked.path().join("gloo_trace_rank_3"),
    )
    .unwrap();
    let out = in_home(&["analyze", linked.path().to_str().unwrap(), "--format", "json"]);
    assert!(!text(&out).contains(secret), "a link's target was echoed: {}", text(&out));
    let warnings = json_of(&out)["warnings"].to_string();
    assert!(warnings.contains("outside the dump directory"), "{warnings}");
    // Named directly, a file that is no dump is described, never quoted.
    let key = home.path().join(".ssh/id_rsa");
    let out = in_home(&["analyze", key.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("not a Flight Recorder dump") && !text(&out).contains("token_"));
}
