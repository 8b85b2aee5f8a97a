//! Which frames are the user's code and which a library's, beyond what a file's location says
//! ([`crate::model::Frame::is_library`]: site-packages, dist-packages, the standard library).
//!
//! Two things move frames after decoding:
//! - torch run from a source checkout (`/opt/pytorch/torch/…`) is not under site-packages. The
//!   innermost frame of every Flight Recorder stack is torch's own Python code (the collective's
//!   wrapper, or autograd's engine call for DDP's reducer), so the `torch` folder that frame
//!   lives in is torch's tree, and every frame under it is library code;
//! - the user says so: `--library GLOB` makes matching frames library code (a vendored package
//!   inside the repo), `--user-code GLOB` makes them the user's (their own package installed
//!   into site-packages). `--user-code` wins over both.
//!
//! Globs match the whole frame path: `*` any run of characters (slashes included), `?` one.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::model::{Call, Frame, Head, Stack, Trace};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Frames matching these are library code.
    pub library: Vec<String>,
    /// Frames matching these are the user's code (wins over everything).
    pub user: Vec<String>,
}

/// What decides a frame's side for one trace: torch's own folders outside site-packages, and
/// the user's globs.
struct Decider<'o> {
    moved_roots: Vec<String>,
    ownership: &'o Ownership,
}

impl<'o> Decider<'o> {
    /// `None` in the common case of torch in site-packages and no globs: nothing moves.
    fn of(trace: &Trace, ownership: &'o Ownership) -> Option<Self> {
        let moved_roots: Vec<String> = torch_roots(trace)
            .into_iter()
            .filter(|r| !crate::model::is_library_file(&format!("{r}x.py")))
            .collect();
        let moves =
            !moved_roots.is_empty() || !ownership.library.is_empty() || !ownership.user.is_empty();
        moves.then_some(Self { moved_roots, ownership })
    }

    fn is_library(&self, f: &Frame) -> bool {
        if self.ownership.user.iter().any(|g| glob_match(g, &f.file)) {
            return false;
        }
        if self.ownership.library.iter().any(|g| glob_match(g, &f.file)) {
            return true;
        }
        self.moved_roots.iter().any(|r| f.file.starts_with(r.as_str())) || f.is_library()
    }
}

/// Reclassifies the trace's frames; a no-op (no allocation) in the common case of torch in
/// site-packages and no globs.
pub(crate) fn apply(trace: &mut Trace, ownership: &Ownership) {
    let Some(decider) = Decider::of(trace, ownership) else { return };
    let decide = |f: &Frame| decider.is_library(f);
    // Heads and calls are shared between ranks (load/intern.rs): each is rebuilt once, and
    // every entry that held the old one gets the new one.
    let mut stacks: FxHashMap<*const Frame, Stack> = FxHashMap::default();
    let mut calls: FxHashMap<*const Call, Arc<Call>> = FxHashMap::default();
    let mut heads: FxHashMap<*const Head, Arc<Head>> = FxHashMap::default();
    for rank in &mut trace.ranks {
        for entry in &mut rank.entries {
            if let Some(head) = heads.get(&Arc::as_ptr(&entry.head)) {
                entry.head = head.clone();
                continue;
            }
            let Some(stack) = entry.call.stack.clone() else { continue };
            if stack.iter().all(|f| decide(f) == f.is_library()) {
                continue;
            }
            let old_head = Arc::as_ptr(&entry.head);
            let call = calls
                .entry(Arc::as_ptr(&entry.call))
                .or_insert_with(|| {
                    let new_stack = stacks
                        .entry(stack.as_ptr())
                        .or_insert_with(|| {
                            stack.iter().map(|f| f.clone().with_library(decide(f))).collect()
                        })
                        .clone();
                    let mut call = (*entry.call).clone();
                    call.stack = Some(new_stack);
                    Arc::new(call)
                })
                .clone();
            entry.set_call(call);
            heads.insert(old_head, entry.head.clone());
        }
    }
}

/// Reclassifies the frames of the stacks files by the same rule as the dumps' frames.
pub(crate) fn apply_to_stacks(trace: &mut Trace, ownership: &Ownership) {
    let Some(decider) = Decider::of(trace, ownership) else { return };
    let mut stacks = std::mem::take(&mut trace.stacks);
    for thread in stacks.iter_mut().flat_map(|s| &mut s.threads) {
        for frame in &mut thread.frames {
            let library = decider.is_library(frame);
            if library != frame.is_library() {
                *frame = frame.clone().with_library(library);
            }
        }
    }
    trace.stacks = stacks;
}

/// The folders torch's own code runs from: the `torch` folder around each stack's innermost
/// frame (a few distinct ones at most).
fn torch_roots(trace: &Trace) -> Vec<String> {
    let mut roots: Vec<String> = Vec::new();
    let mut seen_stacks: Vec<*const Frame> = Vec::new();
    for rank in &trace.ranks {
        for entry in &rank.entries {
            let Some(stack) = entry.stack() else { continue };
            if seen_stacks.len() < 64 && !seen_stacks.contains(&stack.as_ptr()) {
                seen_stacks.push(stack.as_ptr());
            } else if seen_stacks.len() >= 64 {
                // Enough stacks looked at: the roots are known.
                return roots;
            } else {
                continue;
            }
            let Some(innermost) = stack.first() else { continue };
            if let Some(end) = innermost.file.rfind("/torch/") {
                let root = &innermost.file[..end + "/torch/".len()];
                if !roots.iter().any(|r| r == root) {
                    roots.push(root.to_owned());
                }
            }
        }
    }
    roots
}

/// `*` matches any run of characters (slashes included), `?` exactly one.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match(
            "*/site-packages/mytrainer/*",
            "/v/lib/python3.11/site-packages/mytrainer/loop.py"
        ));
        assert!(!glob_match(
            "*/site-packages/mytrainer/*",
            "/v/lib/python3.11/site-packages/torch/x.py"
        ));
        assert!(glob_match("*/vendor/*", "/job/vendor/apex/x.py"));
        assert!(glob_match("/job/train?.py", "/job/train2.py"));
        assert!(!glob_match("/job/train?.py", "/job/train.py"));
        assert!(glob_match("*", ""));
    }
}
