//! Fuzz target: `parse` must never panic, and neither may walking whatever
//! it returns through the public `Value` API.
//!
//! Invariant checked: decoding terminates without panicking on any input;
//! on success every node reachable from the root answers every accessor.
//! The walk visits each node id once (values can be shared or cyclic).
#![no_main]

use std::collections::HashSet;

use desync_pickle::{Kind, Value, parse};
use libfuzzer_sys::fuzz_target;

/// Iterative (explicit stack): a hand-made pickle can chain containers
/// deeper than `MAX_DEPTH` by mutating already-nested ones, so consumers that
/// follow arbitrary links must not recurse on them.
fn walk(root: Value<'_>, seen: &mut HashSet<u32>) {
    let mut todo = vec![root];
    while let Some(v) = todo.pop() {
        if !seen.insert(v.id()) {
            continue;
        }
        let _ = (v.is_none(), v.as_bool(), v.as_i64(), v.as_f64(), v.as_str(), v.as_bytes());
        let _ = (v.len(), v.is_empty(), v.index(0), v.get("name"), v.is_frozenset());
        if let Kind::Opaque { .. } = v.kind() {
            todo.extend(v.opaque_args());
            todo.extend(v.opaque_state());
        }
        todo.extend(v.iter());
        for (k, x) in v.items() {
            todo.push(k);
            todo.push(x);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = parse(data) {
        let mut seen = HashSet::new();
        walk(p.root(), &mut seen);
        let _ = format!("{:?}", p.root());
        assert!(seen.len() <= p.node_count());
    }
});
