//! Which arm of an `if` a line lies in, and whether the `if` decides alike on every pass of
//! the loops around it. The bridge reads the lines each side of a divergence is shown to have
//! run (its stack, its recorded collectives): an `if` both sides ran the same arm of did not
//! send them different ways.

use ruff_python_ast::{Expr, Stmt, StmtIf};
use ruff_text_size::{Ranged, TextRange};

use crate::names::bindings::{self, Scope};
use crate::syntax::module::Module;
use crate::syntax::tree::Slot;

/// The `if` statement whose header is at `if_line`, and which of its blocks holds `line`:
/// 0 for its body, `i + 1` for its i-th `elif`/`else` clause. `None` when `line` is not inside
/// one of its blocks (the header itself, or outside the statement).
pub(crate) fn arm_holding(module: &Module, if_line: u32, line: u32) -> Option<usize> {
    let path = module.path(line)?;
    path.levels.iter().find_map(|level| match (level.owner, level.slot) {
        (Some(Stmt::If(s)), slot) if module.line_of(s.start()) == if_line => match slot {
            Slot::Body => Some(0),
            Slot::Clause(i) => Some(i + 1),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the `if` at `if_line` takes the same arm on every pass of the loops around it in
/// its function, on a given rank: its test calls nothing and reads only names that no
/// statement inside those loops binds (a parameter, a value set up before the loop). Then an
/// arm a rank is shown to have run on an earlier pass is the arm it runs on every pass.
/// Outside any loop there is one pass. Attributes written in place inside the loop
/// (`cfg.stage = ...`) are not looked for: a test of such a field is taken as fixed.
pub(crate) fn decides_alike_on_every_pass(module: &Module, if_line: u32) -> bool {
    let Some(path) = module.path(if_line) else { return false };
    let Some(stmt) = if_at(module, path.leaf(), if_line) else { return false };
    let loops: Vec<TextRange> = path
        .scope_levels(module)
        .iter()
        .filter_map(|level| match level.owner {
            Some(s @ (Stmt::For(_) | Stmt::While(_))) if level.slot == Slot::Body => {
                Some(s.range())
            }
            _ => None,
        })
        .collect();
    if loops.is_empty() {
        return true;
    }
    let scope = Scope::of(module, path.innermost_function(module));
    let mut fixed = true;
    crate::syntax::expr::walk(&stmt.test, &mut |e| match e {
        Expr::Call(_) | Expr::Await(_) | Expr::Yield(_) | Expr::Named(_) => fixed = false,
        Expr::Name(n) => {
            let inside_a_loop = bindings::bindings(module, scope, n.id.as_str())
                .iter()
                .any(|b| loops.iter().any(|l| l.contains(b.at)));
            if inside_a_loop {
                fixed = false;
            }
        }
        _ => {}
    });
    fixed
}

fn if_at<'a>(module: &Module, leaf: &'a Stmt, if_line: u32) -> Option<&'a StmtIf> {
    match leaf {
        Stmt::If(s) if module.line_of(s.start()) == if_line => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::Module;

    const SRC: &str = "\
def fit(mesh, batches, peers):
    done = 0
    for i, b in enumerate(batches):
        if mesh.is_first:
            head(b)
        elif mesh.is_last:
            tail(b)
            done += 1
        else:
            relay(b)
        if done > 3:
            log(done)
        if peers.ready(i):
            sync(b)
        after(b)
";

    #[test]
    fn the_block_of_an_if_that_holds_a_line() {
        let m = Module::parse(SRC);
        assert_eq!(m.if_arm_holding(4, 5), Some(0));
        assert_eq!(m.if_arm_holding(4, 8), Some(1), "the elif clause");
        assert_eq!(m.if_arm_holding(4, 10), Some(2), "the else clause");
        assert_eq!(m.if_arm_holding(4, 4), None, "the header is no arm");
        assert_eq!(m.if_arm_holding(4, 15), None, "after the statement");
        assert_eq!(m.if_arm_holding(11, 5), None, "another if");
    }

    #[test]
    fn a_test_of_values_set_before_the_loop_decides_alike_on_every_pass() {
        let m = Module::parse(SRC);
        assert!(m.if_decides_alike_on_every_pass(4), "a parameter's field");
        assert!(!m.if_decides_alike_on_every_pass(11), "`done` changes inside the loop");
        assert!(!m.if_decides_alike_on_every_pass(13), "a call may answer otherwise each pass");
    }
}
