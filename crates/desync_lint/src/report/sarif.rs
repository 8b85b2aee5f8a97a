//! SARIF 2.1.0 output for code-scanning services (GitHub, GitLab, VS Code's SARIF viewer):
//! one run whose driver lists every rule, one result per finding with its file, line and
//! column. Relative paths stay relative URI references (resolved against the checkout);
//! absolute ones become `file://` URIs.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::evidence;
use crate::{LintError, Report, Rule};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The report as a SARIF 2.1.0 log.
pub fn write_sarif(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|r| {
            json!({
                "id": r.code(),
                "name": r.name(),
                "shortDescription": { "text": r.summary() },
                "help": { "text": r.hint() },
                "defaultConfiguration": { "level": "warning" },
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            json!({
                "ruleId": f.rule.code(),
                "ruleIndex": Rule::ALL.iter().position(|r| *r == f.rule),
                // Indirect evidence (shown on request only) is a note, not a warning.
                "level": if f.indirect { "note" } else { "warning" },
                "message": { "text": format!("{} (help: {})", f.message, f.hint) },
                "properties": { "evidence": evidence(f) },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": { "uri": uri(&f.file) },
                        "region": { "startLine": f.line, "startColumn": f.column },
                    }
                }],
            })
        })
        .collect();
    let notifications: Vec<Value> = report
        .errors
        .iter()
        .map(|e| {
            // A path that could not be read failed the run; a file skipped or linted in part
            // is a warning, as on the terminal.
            let level = if e.is_read_error() { "error" } else { "warning" };
            json!({ "level": level, "message": { "text": e.to_string() } })
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "desync",
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://github.com/desync-dev/desync",
                    "rules": rules,
                }
            },
            "invocations": [{
                "executionSuccessful": !report.errors.iter().any(LintError::is_read_error),
                "toolExecutionNotifications": notifications,
                "properties": { "indirectHidden": report.indirect_hidden },
            }],
            "results": results,
        }]
    });
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

/// A URI reference for `path`: forward slashes, reserved and non-ASCII bytes percent-encoded.
fn uri(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let mut out = String::with_capacity(text.len());
    if path.is_absolute() {
        out.push_str("file://");
        if !text.starts_with('/') {
            // `C:/x` → `file:///C:/x`.
            out.push('/');
        }
    }
    for byte in text.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"/-._~:".contains(&byte);
        if keep {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::Finding;

    #[test]
    fn minimal_valid_log() {
        let report = Report {
            findings: vec![Finding {
                file: PathBuf::from("src/my train.py"),
                line: 3,
                column: 9,
                rule: Rule::LocalEarlyExit,
                message: "m".into(),
                hint: "h".into(),
                source: "break".into(),
                indirect: false,
            }],
            files_checked: 1,
            errors: Vec::new(),
            indirect_hidden: 0,
        };
        let mut buf = Vec::new();
        write_sarif(&report, &mut buf).unwrap();
        let v: Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "desync");
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), Rule::ALL.len());
        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "DSY002");
        assert_eq!(result["ruleIndex"], 1);
        let loc = &result["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/my%20train.py");
        assert_eq!(loc["region"]["startLine"], 3);
        assert_eq!(loc["region"]["startColumn"], 9);
        assert!(result["message"]["text"].as_str().unwrap().starts_with('m'));
    }

    #[test]
    fn uris() {
        assert_eq!(uri(Path::new("/tmp/a b/c#.py")), "file:///tmp/a%20b/c%23.py");
        assert_eq!(uri(Path::new("x/é.py")), "x/%C3%A9.py");
    }
}
