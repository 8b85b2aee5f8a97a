//! Collectives a gradient reducer issued from inside the backward pass (DDP's bucket
//! `all_reduce`s: the table's `[[reducer]]` rows). Their innermost user line is
//! `loss.backward()`, on every rank alike; what decided whether a rank's backward issued a
//! bucket is which parameters its *forward* used, and the forward returned long before. A rank
//! whose forward skipped a submodule (`if has_meta.any(): h = h + self.meta(meta)`) leaves that
//! bucket unready: its backward issues nothing while its peers wait in the bucket's
//! `all_reduce`, and its next forward raises the reducer's error (a crash the job's log shows).
//!
//! So when a side's collective was issued by a reducer's backward (a table `backward_frames`
//! frame on its stack), the candidates are the guards of the uses of the wrapped model's own
//! submodules and parameters that some path through its forward skips, in the classes the
//! project wraps in that reducer — unless the wrap tolerates unused parameters
//! (`find_unused_parameters=True`), where a skip hangs nothing.

use desync_python::knowledge::{Reducer, knowledge};

use super::candidates::{Raw, Workspace};
use crate::model::Entry;

/// The reducer whose backward issued `entry`, when its stack shows one.
pub(crate) fn issued_by(entry: &Entry) -> Option<&'static Reducer> {
    let table = knowledge();
    let stack = entry.stack()?;
    let reducer = stack
        .iter()
        .filter(|f| f.is_library())
        .find_map(|f| table.reducer_of_backward_frame(&f.file, &f.function))?;
    (reducer.op == *entry.op().name).then_some(reducer)
}

/// Guards in the wrapped models' forward methods of a submodule or parameter use some path
/// skips, when one of `sides` was issued by a reducer's backward; empty otherwise.
pub(crate) fn forward_skips(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<Raw> {
    let Some(reducer) = sides.iter().find_map(|e| issued_by(e)) else { return Vec::new() };
    let modules = super::distance::project_modules(ws, sides);
    let mut out = Vec::new();
    for (_, _, module) in &modules {
        for wrap in ws.cx.reducer_wraps(module) {
            if wrap.tolerates_unused || !reducer.names.contains(&wrap.wrapper) {
                continue;
            }
            for (file, local, defining) in &modules {
                for skip in ws.cx.forward_skips(defining, &wrap.class, &wrap.method) {
                    let guards = defining.guards_with(ws.cx, skip.line);
                    for (distance, branch) in guards.into_iter().enumerate() {
                        let note = format!(
                            "it decides whether `{}.{}` uses `self.{}` (line {}): the reducer waits in backward for a gradient of every parameter, so a rank whose forward skips it issues no {} for that bucket while the others wait in it, and raises \"{}\" at its next forward; the line is on no stack",
                            wrap.class,
                            wrap.method,
                            skip.attribute,
                            skip.line,
                            reducer.op,
                            reducer.unused_error
                        );
                        out.push(super::distance::raw(branch, file, local, distance, note));
                    }
                }
            }
        }
    }
    out
}
