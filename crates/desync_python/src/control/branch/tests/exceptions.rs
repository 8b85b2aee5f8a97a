//! `try`/`except`: only the ranks that raised run the handler.

use super::{assert_branch, branch, branch_swapped, kinds};
use crate::{Construct, DependenceKind, Jump};

#[test]
fn except_continue_skips_the_collective() {
    let src = "\
def train(model, loader, opt):
    for batch in loader:
        dist.broadcast(batch, 0)  # <B>
        try:
            out = model(batch)
            dist.all_reduce(out)  # <A>
        except RuntimeError as err:
            logger.warning('skipping batch: %s', err)
            continue
        opt.step()
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Except, src, "except", "RuntimeError");
    assert_eq!(b.source, "except RuntimeError as err:");
    assert_eq!(b.jump, Some(Jump { construct: Construct::Continue, line: 9 }));
    assert_eq!(kinds(&b), [DependenceKind::Exception]);
    assert_eq!(
        b.dependence[0].evidence,
        "`except RuntimeError` at line 7 runs only on ranks that raised"
    );
    assert_eq!(b.skipped_line, Some(6));
}

#[test]
fn except_pass_with_other_group_after_the_try() {
    let src = "\
def step(batch):
    try:
        loss = compute(batch)
        dist.all_reduce(loss)  # <A>
    except:
        pass
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::Except);
    assert_eq!(b.line, 5);
    assert_eq!(b.condition, None);
    assert_eq!(b.jump, None);
    assert_eq!(branch_swapped(src).unwrap().line, 5);
}

#[test]
fn try_body_against_handler_body() {
    let src = "\
def step(x):
    try:
        y = risky(x)
        dist.all_reduce(y)  # <A>
    except ValueError:
        raise
    except (OSError, TimeoutError):
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Except, src, "except (OSError", "(OSError, TimeoutError)");
    assert_eq!(b.skipped_line, None);
}

#[test]
fn handler_guarded_continue_reported_as_except() {
    let src = "\
def train(loader, it):
    for step in range(100):
        dist.all_reduce(step_tensor)  # <B>
        try:
            batch = next(it)
        except StopIteration:
            continue
        dist.all_reduce(batch)  # <A>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Except, src, "except StopIteration", "StopIteration");
    assert_eq!(b.jump, Some(Jump { construct: Construct::Continue, line: 7 }));
    assert_eq!(b.skipped_line, Some(8));
}
