//! Scenario tests for `find_branch`: small training loops, each with the lines where two groups
//! of ranks stopped marked `# <A>` and `# <B>`.

mod conditional;
mod exceptions;
mod jumps;
mod loops;
mod order;
mod scenarios;

use crate::{Branch, Construct, DependenceKind, Module};

/// 1-based line of the first line containing `marker`.
pub(super) fn line(src: &str, marker: &str) -> u32 {
    let index = src.lines().position(|l| l.contains(marker));
    u32::try_from(index.unwrap_or_else(|| panic!("marker {marker} not found")) + 1).unwrap()
}

/// `find_branch` between the `# <A>` line and the `# <B>` line (if any).
pub(super) fn branch(src: &str) -> Option<Branch> {
    let module = Module::parse(src);
    assert!(module.syntax_errors().is_empty(), "{:?}", module.syntax_errors());
    let b = src.contains("# <B>").then(|| line(src, "# <B>"));
    module.find_branch(line(src, "# <A>"), b)
}

/// `find_branch` with the groups swapped.
pub(super) fn branch_swapped(src: &str) -> Option<Branch> {
    let module = Module::parse(src);
    module.find_branch(line(src, "# <B>"), Some(line(src, "# <A>")))
}

pub(super) fn kinds(b: &Branch) -> Vec<DependenceKind> {
    b.dependence.iter().map(|d| d.kind).collect()
}

/// Asserts construct, line (by marker) and condition text.
pub(super) fn assert_branch(b: &Branch, construct: Construct, src: &str, marker: &str, cond: &str) {
    assert_eq!(b.construct, construct, "{b:#?}");
    assert_eq!(b.line, line(src, marker), "{b:#?}");
    assert_eq!(b.condition.as_deref(), Some(cond), "{b:#?}");
}

#[test]
fn straight_line_code_has_no_branch() {
    let src = "\
def step(a, b):
    dist.all_reduce(a)  # <A>
    x = a * 2
    dist.all_gather_into_tensor(b, x)  # <B>
";
    assert_eq!(branch(src), None);
    assert_eq!(branch_swapped(src), None);
}

#[test]
fn lines_in_one_loop_body_without_jumps_have_no_branch() {
    let src = "\
def train(loader):
    for batch in loader:
        dist.broadcast(batch, 0)  # <B>
        loss = model(batch)
        dist.all_reduce(loss)  # <A>
";
    assert_eq!(branch(src), None);
}

#[test]
fn out_of_range_and_blank_lines_give_none() {
    let m = Module::parse("import torch\n\nx = 1\n");
    assert_eq!(m.find_branch(0, None), None);
    assert_eq!(m.find_branch(2, Some(3)), None);
    assert_eq!(m.find_branch(99, Some(1)), None);
    assert_eq!(m.find_branch(3, Some(3)), None);
}

#[test]
fn module_level_scripts_work_too() {
    let src = "\
import torch.distributed as dist
rank = dist.get_rank()
for batch in loader:
    if rank == 0:
        dist.all_reduce(batch)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if rank", "rank == 0");
    assert_eq!(b.function, None);
    assert_eq!(b.dependence[0].evidence, "`rank` = `dist.get_rank()` (line 2) ← `dist.get_rank()`");
}

#[test]
fn line_b_in_another_function_counts_as_absent() {
    let src = "\
def helper():
    dist.barrier()  # <B>

def train(loss):
    if not torch.isfinite(loss):
        return
    dist.all_reduce(loss)  # <A>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Return, src, "return", "not torch.isfinite(loss)");
    assert_eq!(b.function.as_deref(), Some("train"));
}

#[test]
fn guards_list_every_deciding_construct() {
    let src = "\
def train(loader):
    for batch in loader:
        loss = model(batch)
        if not torch.isfinite(loss):
            continue
        if dist.get_rank() == 0:
            dist.all_reduce(loss)
";
    let m = Module::parse(src);
    let guards = m.guards(7);
    let got: Vec<(Construct, u32)> = guards.iter().map(|g| (g.construct, g.line)).collect();
    assert_eq!(got, [(Construct::Continue, 5), (Construct::If, 6), (Construct::For, 2)]);
    assert_eq!(guards[1].dependence[0].kind, DependenceKind::RankId);
    assert!(m.guards(1).is_empty());
    assert!(m.guards(0).is_empty());
}
