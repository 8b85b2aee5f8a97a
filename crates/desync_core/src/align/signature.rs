//! What must agree across ranks for a collective to be compatible: a hash of the op and the
//! shapes and dtypes that its kind requires to match (torchfrtrace's rules, made symmetric),
//! plus a separate hash of the user call site and one of the whole call path.
//!
//! Sizes that legitimately differ by rank are left out: gather's outputs and scatter's inputs
//! exist on the root only, and `all_to_all` splits may be uneven (only the totals must agree,
//! checked per collective; torchfrtrace's per-rank size rule is a false positive there,
//! pytorch#194559).

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use crate::model::{Entry, OpKind};

/// One rank's contribution at one sequence id (several entries for a coalesced group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Token {
    pub sig: u64,
    /// Hash of the user frames; 0 when the dump has no frames.
    pub site: u64,
    /// Hash of every frame above torch's own (the user's and the frameworks' between them);
    /// 0 when the dump has no frames. Two ranks under the same `trainer.fit` line that reach
    /// a barrier from different framework code have the same `site` and different paths.
    pub path: u64,
}

pub fn token(entries: &[&Entry]) -> Token {
    let mut sig = FxHasher::default();
    let mut site = FxHasher::default();
    let mut path = FxHasher::default();
    let (mut has_site, mut has_path) = (false, false);
    for e in entries {
        signature(e, &mut sig);
        for f in e.user_frames() {
            has_site = true;
            (&*f.file, f.line, &*f.function).hash(&mut site);
        }
        for f in e.call_path() {
            has_path = true;
            (&*f.file, f.line, &*f.function).hash(&mut path);
        }
    }
    let nonzero = |used: bool, h: FxHasher| if used { h.finish().max(1) } else { 0 };
    Token { sig: sig.finish(), site: nonzero(has_site, site), path: nonzero(has_path, path) }
}

fn signature(e: &Entry, h: &mut FxHasher) {
    e.op().name.hash(h);
    match e.op().kind {
        OpKind::Gather => {
            e.input_sizes().hash(h);
            e.input_dtypes().hash(h);
        }
        OpKind::Scatter => {
            e.output_sizes().hash(h);
            e.output_dtypes().hash(h);
        }
        OpKind::AllToAll => {
            e.input_dtypes().hash(h);
            e.output_dtypes().hash(h);
        }
        _ => {
            e.input_sizes().hash(h);
            e.output_sizes().hash(h);
            e.input_dtypes().hash(h);
            e.output_dtypes().hash(h);
        }
    }
}

/// How two ranks' entries at the same sequence id differ, most telling first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Difference {
    /// Different operations (or a different number of ops in a coalesced group).
    Op,
    Size,
    Dtype,
}

pub fn difference(a: &[&Entry], b: &[&Entry]) -> Option<Difference> {
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.op().name != y.op().name) {
        return Some(Difference::Op);
    }
    let sizes = |x: &Entry, y: &Entry| match x.op().kind {
        OpKind::Gather => x.input_sizes() == y.input_sizes(),
        OpKind::Scatter => x.output_sizes() == y.output_sizes(),
        OpKind::AllToAll => true,
        _ => x.input_sizes() == y.input_sizes() && x.output_sizes() == y.output_sizes(),
    };
    if a.iter().zip(b).any(|(x, y)| !sizes(x, y)) {
        return Some(Difference::Size);
    }
    let dtypes = |x: &Entry, y: &Entry| match x.op().kind {
        OpKind::Gather => x.input_dtypes() == y.input_dtypes(),
        OpKind::Scatter => x.output_dtypes() == y.output_dtypes(),
        _ => x.input_dtypes() == y.input_dtypes() && x.output_dtypes() == y.output_dtypes(),
    };
    if a.iter().zip(b).any(|(x, y)| !dtypes(x, y)) {
        return Some(Difference::Dtype);
    }
    None
}

/// Product of dimensions; a 0-dim tensor holds one element.
pub fn numel(sizes: &[Vec<i64>]) -> i64 {
    sizes.iter().map(|s| s.iter().product::<i64>()).sum()
}
