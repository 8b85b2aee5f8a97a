//! Point-to-point traffic the dumps do not show.
//!
//! Gloo's Flight Recorder records collectives only: a job whose ranks also send and receive
//! (a pipelining schedule's activations and gradients, `isend`/`irecv`) leaves those exchanges
//! out of its dumps, and ranks can part in one of them while the dumps show only the
//! collectives around it. When the backend is Gloo and the user's code uses a point-to-point
//! API (the table's `op = "p2p"` rows and `[point_to_point_modules]`), the report says so:
//! the seqs it shows may not be where the ranks parted.
//!
//! The code looked at is every file on a recorded stack and the project modules those import,
//! transitively, up to [`MAX_MODULES`]: the entry script imports the pipeline setup even when
//! no recorded collective's stack passes through it.

use std::sync::Arc;

use desync_python::{Analysis, FileProject, Module, Project};

use super::SourceOptions;
use super::sources::Resolver;
use crate::diagnose::short_path;
use crate::model::Trace;

/// Modules read at most while looking for a point-to-point use.
const MAX_MODULES: usize = 256;

/// Backends whose Flight Recorder does not record point-to-point operations.
const P2P_UNRECORDED_BACKENDS: &[&str] = &["gloo"];

/// The sentence the report adds, with the line that uses point-to-point traffic; `None` when
/// the backend records it, or no file read uses it.
pub fn unrecorded_note(trace: &Trace, options: &SourceOptions) -> Option<String> {
    let backend = trace.ranks.iter().find_map(|r| r.backend())?.to_ascii_lowercase();
    if !P2P_UNRECORDED_BACKENDS.contains(&backend.as_str()) {
        return None;
    }
    let resolver = Resolver::new(options);
    let mut files = Vec::new();
    for rank in &trace.ranks {
        for e in &rank.entries {
            for f in e.user_frames() {
                if !files.contains(&f.file) {
                    files.push(f.file.clone());
                }
            }
        }
    }
    let mut roots: Vec<std::path::PathBuf> = resolver.roots().to_vec();
    let mut locals = Vec::new();
    for file in &files {
        let Ok(local) = resolver.locate(file) else { continue };
        if let Ok(real) = resolver.contain(&local)
            && let Some(dir) = real.parent()
        {
            roots.push(dir.to_path_buf());
        }
        locals.push(local);
    }
    let project = FileProject::new(roots);
    let cx = Analysis::new(Some(&project));
    let mut queue: Vec<Arc<Module>> = locals.iter().filter_map(|l| project.load(l)).collect();
    let mut seen = 0;
    while seen < queue.len() && seen < MAX_MODULES {
        let module = queue[seen].clone();
        seen += 1;
        if let Some(found) = cx.point_to_point_use(&module) {
            let at = module.file_path().map_or_else(
                || format!("line {}", found.line),
                |p| format!("{}:{}", short_path(&p.display().to_string()), found.line),
            );
            return Some(format!(
                "the job exchanges point-to-point messages (`{}` at {at}), which Gloo's Flight Recorder does not record: the ranks may have parted in a send or receive the dumps do not show, before the seqs shown here",
                found.name
            ));
        }
        for m in cx.imports(&module) {
            if !queue.iter().any(|q| Arc::ptr_eq(q, &m)) {
                queue.push(m);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::super::stacks::tests::entry;
    use super::*;
    use crate::model::{DumpFormat, RankDump};

    /// A Gloo job whose recorded stacks pass only through the entry script and a reduction
    /// helper; the entry imports a module that builds a ring of `isend`s through its own alias.
    /// Found through the import; not on NCCL (which records sends), nor without the ring.
    #[test]
    fn a_send_two_imports_away_from_the_stacks_is_said_unrecorded_on_gloo() {
        let dir = std::env::temp_dir().join(format!("desync-p2p-note-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("comm")).unwrap();
        std::fs::write(dir.join("main.py"), "from comm.reduce import mean\nfrom comm import ring\n\ndef main(t):\n    ring.pass_on(t)\n    mean(t)\n").unwrap();
        std::fs::write(dir.join("comm/__init__.py"), "").unwrap();
        std::fs::write(
            dir.join("comm/reduce.py"),
            "import torch.distributed as dist\n\ndef mean(t):\n    dist.all_reduce(t)\n",
        )
        .unwrap();
        let ring = "import torch.distributed as c10d\n\ndef pass_on(t):\n    c10d.isend(t, (c10d.get_rank() + 1) % c10d.get_world_size()).wait()\n";
        std::fs::write(dir.join("comm/ring.py"), ring).unwrap();
        let options = SourceOptions {
            path_maps: vec![("/job".to_owned(), dir.clone())],
            source_root: None,
            fallback_root: None,
            refused_fallback: None,
        };
        let trace = |backend: &str| {
            let mut e = entry(&[("main", "/job/main.py", 6), ("mean", "/job/comm/reduce.py", 4)]);
            if backend != "gloo" {
                let mut call = (*e.head.call).clone();
                call.op =
                    Arc::new(crate::model::Op::parse(&format!("{backend}:all_reduce"), &mut |s| {
                        Arc::from(s)
                    }));
                let mut head = (*e.head).clone();
                head.call = Arc::new(call);
                e.head = Arc::new(head);
            }
            Trace {
                ranks: vec![RankDump {
                    rank: 0,
                    path: PathBuf::from("rank_0"),
                    format: DumpFormat::Json,
                    version: Arc::from("2.10"),
                    comm_lib_version: None,
                    pg_config: Vec::new(),
                    pg_status: Vec::new(),
                    entries: vec![e],
                }],
                ..Trace::default()
            }
        };
        let note = unrecorded_note(&trace("gloo"), &options).expect("a note on Gloo");
        assert!(note.contains("torch.distributed.isend") && note.contains("ring.py:4"), "{note}");
        assert_eq!(unrecorded_note(&trace("nccl"), &options), None);
        std::fs::write(dir.join("comm/ring.py"), "def pass_on(t):\n    return t\n").unwrap();
        assert_eq!(unrecorded_note(&trace("gloo"), &options), None);
        std::fs::remove_dir_all(&dir).ok();
    }
}
