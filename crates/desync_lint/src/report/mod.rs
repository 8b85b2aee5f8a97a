//! Writing a [`Report`]: Ruff-style text, JSON (`schema_version` 1) and SARIF 2.1.0. Each
//! writer takes the destination; nothing here prints.

mod sarif;

pub use sarif::write_sarif;

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use crate::Report;

/// `path:line:col: CODE message`, a `help:` line under each, then a summary line.
pub fn write_text(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    for f in &report.findings {
        let marker = if f.indirect { " [indirect evidence]" } else { "" };
        writeln!(
            out,
            "{}:{}:{}: {}{marker} {}",
            f.file.display(),
            f.line,
            f.column,
            f.rule,
            f.message
        )?;
        writeln!(out, "    help: {}", f.hint)?;
    }
    let files = plural(report.files_checked, "file");
    let hidden = match report.indirect_hidden {
        0 => String::new(),
        n => format!(
            " ({} with indirect evidence not shown: --include-indirect shows {})",
            plural(n, "more finding"),
            if n == 1 { "it" } else { "them" }
        ),
    };
    if report.findings.is_empty() {
        writeln!(out, "All checks passed ({files} checked){hidden}.")?;
        return Ok(());
    }
    let mut per_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &report.findings {
        *per_rule.entry(f.rule.code()).or_default() += 1;
    }
    let counts: Vec<String> = per_rule.iter().map(|(r, n)| format!("{r}: {n}")).collect();
    writeln!(
        out,
        "Found {} ({}) in {files}{hidden}.",
        plural(report.findings.len(), "finding"),
        counts.join(", ")
    )
}

/// `"direct"` or `"indirect"`: how the finding's evidence reaches the decision.
pub(crate) fn evidence(f: &crate::Finding) -> &'static str {
    if f.indirect { "indirect" } else { "direct" }
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema_version: u32,
    findings: Vec<JsonFinding<'a>>,
    files_checked: usize,
    errors: Vec<JsonError>,
    indirect_hidden: usize,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    file: String,
    line: u32,
    column: u32,
    rule: &'static str,
    message: &'a str,
    hint: &'a str,
    source: &'a str,
    evidence: &'static str,
}

#[derive(Serialize)]
struct JsonError {
    path: String,
    message: String,
}

/// The report as one JSON document (see `docs/lint.md` for the schema).
pub fn write_json(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let doc = JsonReport {
        schema_version: 1,
        findings: report
            .findings
            .iter()
            .map(|f| JsonFinding {
                file: f.file.display().to_string(),
                line: f.line,
                column: f.column,
                rule: f.rule.code(),
                message: &f.message,
                hint: &f.hint,
                source: &f.source,
                evidence: evidence(f),
            })
            .collect(),
        files_checked: report.files_checked,
        errors: report
            .errors
            .iter()
            .map(|e| JsonError { path: e.path().display().to_string(), message: e.to_string() })
            .collect(),
        indirect_hidden: report.indirect_hidden,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::{Finding, LintError, Rule};

    fn report() -> Report {
        Report {
            findings: vec![Finding {
                file: PathBuf::from("dir with space/train.py"),
                line: 7,
                column: 5,
                rule: Rule::RankConditionalCollective,
                message: "`dist.all_reduce(x)` runs only on some ranks".into(),
                hint: Rule::RankConditionalCollective.hint().into(),
                source: "if rank == 0:".into(),
                indirect: false,
            }],
            files_checked: 3,
            indirect_hidden: 0,
            errors: vec![LintError::Read {
                path: PathBuf::from("missing.py"),
                source: io::Error::from(io::ErrorKind::NotFound),
            }],
        }
    }

    #[test]
    fn text_and_json() {
        let mut text = Vec::new();
        write_text(&report(), &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("dir with space/train.py:7:5: DSY001 `dist.all_reduce(x)`"));
        assert!(text.contains("\n    help: issue the collective"));
        assert!(text.ends_with("Found 1 finding (DSY001: 1) in 3 files.\n"));

        let mut json = Vec::new();
        write_json(&report(), &mut json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["files_checked"], 3);
        let f = &v["findings"][0];
        assert_eq!((f["line"].as_u64(), f["column"].as_u64()), (Some(7), Some(5)));
        assert_eq!(f["rule"], "DSY001");
        assert_eq!(f["source"], "if rank == 0:");
        assert_eq!(v["errors"][0]["path"], "missing.py");

        let mut empty = Vec::new();
        write_text(&Report { files_checked: 1, ..Report::default() }, &mut empty).unwrap();
        assert_eq!(String::from_utf8(empty).unwrap(), "All checks passed (1 file checked).\n");
    }
}
