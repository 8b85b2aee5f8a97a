//! A DDP reducer's collective (issued from inside `loss.backward()`) that one rank never issued:
//! the decision is in the wrapped model's forward, on no stack (`bridge/reducer.rs`). The dumps
//! and logs are tests/frameworks/ddp_unused_param_crash's; the project beside them is rewritten
//! here into shapes of this test's own: a model of another name whose forward returns early
//! (skipping its head) on a condition of the batch, built into a variable before DDP wraps it —
//! and the same wrapped with `find_unused_parameters=True`, where a skip hangs nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn case() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/frameworks/ddp_unused_param_crash")
}

/// The project with `triage/model.py` replaced and train.py's lines 11 and 21-22 rewritten
/// (the frames' line numbers stay those the dumps recorded).
fn project(tolerate_unused: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "config.py",
        "engine/__init__.py",
        "engine/loop.py",
        "triage/__init__.py",
        "triage/tickets.py",
    ] {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(case().join("src").join(file), to).unwrap();
    }
    std::fs::write(
        dir.path().join("triage/model.py"),
        "\
from torch import nn


class QueueClassifier(nn.Module):
    def __init__(self, vocab, meta_features, d_model, n_queues):
        super().__init__()
        self.encoder = nn.EmbeddingBag(vocab, d_model, mode=\"mean\")
        self.mixer = nn.Linear(meta_features, d_model)
        self.classifier = nn.Linear(d_model, n_queues)

    def forward(self, tokens, meta, has_meta):
        h = self.encoder(tokens) + self.mixer(meta)
        if has_meta.sum() == 0:
            return h[:, :1].expand(-1, 4)
        return self.classifier(h)
",
    )
    .unwrap();
    let train = std::fs::read_to_string(case().join("src/train.py")).unwrap();
    let keyword = if tolerate_unused { ", find_unused_parameters=True" } else { "" };
    let train = train
        .replace("from triage.model import TicketRouter", "from triage.model import QueueClassifier")
        .replace(
            "    model = DistributedDataParallel(\n        TicketRouter(cfg.vocab, cfg.meta_features, cfg.d_model, cfg.n_queues))",
            &format!(
                "    net = QueueClassifier(cfg.vocab, cfg.meta_features, cfg.d_model, cfg.n_queues)\n    model = DistributedDataParallel(net{keyword})"
            ),
        );
    assert!(train.contains("DistributedDataParallel(net"), "train.py changed: rewrite the test");
    std::fs::write(dir.path().join("train.py"), train).unwrap();
    dir
}

fn analyze(src: &Path) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_desync"));
    cmd.args(["analyze", "--format", "json"])
        .arg(case().join("dumps"))
        .arg("--source-root")
        .arg(src);
    for r in 0..4 {
        cmd.arg("--log").arg(case().join(format!("logs/rank_{r}.log")));
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_forward_that_returns_before_a_submodule_is_the_branch_of_a_reducer_hang() {
    let src = project(false);
    let report = analyze(src.path());
    assert_eq!(report["verdict"]["category"], "crash");
    let branch = &report["code"]["branch"];
    assert!(branch["file"].as_str().unwrap().ends_with("triage/model.py"), "{branch:#}");
    // The guarded `return` that skips the head, with its condition.
    assert_eq!(branch["condition"], "has_meta.sum() == 0", "{branch:#}");
    assert_eq!(branch["function"], "forward", "{branch:#}");
    let explanation = report["code"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("`self.classifier`"), "{explanation}");
}

#[test]
fn a_reducer_that_tolerates_unused_parameters_is_not_blamed_on_the_forward() {
    let src = project(true);
    let report = analyze(src.path());
    let candidates = report["code"]["candidates"].as_array().unwrap();
    assert!(
        candidates.iter().all(|c| !c["file"].as_str().unwrap_or("").ends_with("triage/model.py")),
        "{candidates:#?}"
    );
}
