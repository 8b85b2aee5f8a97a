//! `find_order_branch`: process groups walked in a rank-dependent order, where every stuck
//! rank has the same stack and only the order of the loop's iterable differs.

use super::{kinds, line};
use crate::{Branch, Construct, DependenceKind, Module};

/// `find_order_branch` at the `# <A>` line.
fn order(src: &str) -> Option<Branch> {
    let module = Module::parse(src);
    assert!(module.syntax_errors().is_empty(), "{:?}", module.syntax_errors());
    module.find_order_branch(line(src, "# <A>"))
}

/// The shape of `tests/scenarios/pg_order/src/train.py`.
const PG_ORDER: &str = "\
def allreduce_(params, group, average):
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat, group=group)  # <inner>
    if average:
        flat /= dist.get_world_size(group)


def reduce_gradients(model, step, args, tp_group, dp_group, tp_rank, dp_rank):
    reductions = [
        (tp_group, list(model[0].parameters()), False),
        (dp_group, list(model.parameters()), True),
    ]
    if step > args.warmup_steps and (tp_rank + dp_rank) % 2 == 1:
        # Alternate the order on neighbouring ranks.
        reductions.reverse()
    for group, params, average in reductions:
        allreduce_(params, group, average)  # <A>
";

#[test]
fn pg_order_scenario_names_the_reversing_if() {
    let b = order(PG_ORDER).unwrap();
    assert_eq!(b.construct, Construct::If);
    assert_eq!(b.line, line(PG_ORDER, "if step >"));
    assert_eq!(
        b.condition.as_deref(),
        Some("step > args.warmup_steps and (tp_rank + dp_rank) % 2 == 1")
    );
    assert_eq!(b.condition_line, Some(b.line));
    assert_eq!(b.function.as_deref(), Some("reduce_gradients"));
    assert_eq!(b.skipped_line, None);
    // The ranks are parameters: the caller's frame says where they come from.
    assert_eq!(kinds(&b), [DependenceKind::Unknown], "{b:#?}");
    assert!(b.parameters.contains(&"tp_rank".to_owned()));
    // The innermost frame (the collective inside the helper) has no loop: nothing to say.
    let m = Module::parse(PG_ORDER);
    assert_eq!(m.find_order_branch(line(PG_ORDER, "# <inner>")), None);
}

#[test]
fn unconditional_reordering_is_not_a_branch() {
    let src = "\
def reduce(groups, x):
    order = list(groups)
    order.reverse()
    for g in order:
        dist.all_reduce(x, group=g)  # <A>
";
    assert_eq!(order(src), None);
}

#[test]
fn no_loop_and_out_of_range_give_none() {
    let m = Module::parse("def f(x):\n    dist.all_reduce(x)\n");
    assert_eq!(m.find_order_branch(2), None);
    assert_eq!(m.find_order_branch(0), None);
    assert_eq!(m.find_order_branch(99), None);
}

#[test]
fn reassignments_and_swaps_under_a_condition() {
    let forms = [
        "order = order[::-1]",
        "order = reversed(order)",
        "order = list(reversed(order))",
        "order.sort(key=lambda g: -g.size())",
        "order.insert(0, order.pop())",
        "order[0], order[1] = order[1], order[0]",
        "random.shuffle(order)",
        "order = [dp_group, tp_group]",
    ];
    for form in forms {
        let src = format!(
            "\
def reduce(tp_group, dp_group, x):
    rank = dist.get_rank()
    order = [tp_group, dp_group]
    if rank % 2 == 1:
        {form}
    for g in order:
        dist.all_reduce(x, group=g)  # <A>
"
        );
        let b = order(&src).unwrap_or_else(|| panic!("{form}"));
        assert_eq!((b.construct, b.line), (Construct::If, 4), "{form}");
        assert_eq!(b.condition.as_deref(), Some("rank % 2 == 1"));
        assert_eq!(kinds(&b), [DependenceKind::RankId], "{form}");
    }
}

#[test]
fn wrapping_one_item_into_a_list_is_not_a_reordering() {
    for form in ["order = [order]", "order = (order,)", "order: list = [order]"] {
        let src = format!(
            "\
def reduce(order, x):
    rank = dist.get_rank()
    if rank % 2 == 1:
        {form}
    for g in order:
        dist.all_reduce(x, group=g)  # <A>
"
        );
        assert!(order(&src).is_none(), "{form}");
    }
}

#[test]
fn list_literals_in_if_and_else_and_elif() {
    let src = "\
def reduce(tp, dp, x, cfg):
    if cfg.fast:
        order = [tp, dp]
    elif dist.get_rank() < 4:
        order = [dp, tp]
    else:
        order = [tp, dp]
    for g in order:
        dist.all_reduce(x, group=g)  # <A>
";
    let b = order(src).unwrap();
    // The configuration test comes first in source order, but only the rank test shows a
    // reason to differ across ranks: the first informative decision wins.
    assert_eq!(b.construct, Construct::Elif);
    assert_eq!(b.condition.as_deref(), Some("dist.get_rank() < 4"));
    let m = Module::parse(src);
    assert!(m.find_order_branch(9).is_some());
}

#[test]
fn conditional_expressions_decide_too() {
    let src = "\
def reduce(tp, dp, x):
    rank = dist.get_rank()
    order = [tp, dp] if rank % 2 == 0 else [dp, tp]
    for g in order:
        dist.all_reduce(x, group=g)  # <A>
";
    let b = order(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 3));
    assert_eq!(b.condition.as_deref(), Some("rank % 2 == 0"));
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
    let inline = "\
def reduce(groups, x, local_rank):
    for g in (groups if local_rank == 0 else groups[::-1]):
        dist.all_reduce(x, group=g)  # <A>
";
    let b = order(inline).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 2));
    assert_eq!(b.condition.as_deref(), Some("local_rank == 0"));
}

#[test]
fn a_reordering_inside_the_same_if_as_the_loop_is_not_a_decision() {
    let src = "\
def reduce(groups, x, rank):
    if rank == 0:
        groups.reverse()
        for g in groups:
            dist.all_reduce(x, group=g)  # <A>
";
    assert_eq!(order(src), None);
}

#[test]
fn group_loop_beats_inner_tensor_loop_and_loop_carried_reversal_counts() {
    let src = "\
def train(ds, groups, tensors):
    for batch in torch.utils.data.DataLoader(ds):
        for g in groups:
            for t in tensors:
                dist.all_reduce(t, group=g)  # <A>
        if dist.get_rank() % 2 and batch.sum() > 0:
            groups.reverse()
";
    let b = order(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 6));
    let k = kinds(&b);
    assert!(k.contains(&DependenceKind::RankId) && k.contains(&DependenceKind::LocalData));
}

#[test]
fn swapped_group_names_without_a_loop() {
    let src = "\
def reduce(tp_group, dp_group, a, b, rank):
    first, second = tp_group, dp_group
    if rank % 2 == 1:
        first, second = second, first
    dist.all_reduce(a, group=first)  # <A>
    dist.all_reduce(b, group=second)
";
    let b = order(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 3));
    // Picking one's own group under `if rank in ranks` is how new_group is used: no order.
    let own = "\
def setup(rank, x):
    for ranks in ([0, 1], [2, 3]):
        group = dist.new_group(ranks)
        if rank in ranks:
            my_group = group
    dist.all_reduce(x, group=my_group)  # <A>
";
    assert_eq!(order(own), None);
}

#[test]
fn opaque_condition_is_still_returned() {
    let src = "\
def reduce(groups, x, flip):
    if flip:
        groups = groups[::-1]
    for g in groups:
        dist.all_reduce(x, group=g)  # <A>
";
    let b = order(src).unwrap();
    assert_eq!(b.condition.as_deref(), Some("flip"));
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
}

#[test]
fn direct_form_is_found_by_find_branch() {
    // `if c: f(a); f(b) else: f(b); f(a)`: the deadlocked ranks sit on different lines, so
    // their stacks part and `find_branch` already names the `if`.
    let src = "\
def reduce(x, tp, dp):
    if dist.get_rank() % 2 == 0:
        dist.all_reduce(x, group=tp)  # <A>
        dist.all_reduce(x, group=dp)
    else:
        dist.all_reduce(x, group=dp)  # <B>
        dist.all_reduce(x, group=tp)
";
    let b = super::branch(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 2));
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
}

#[test]
fn the_real_pg_order_job() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/scenarios/pg_order/src/train.py");
    let src = std::fs::read_to_string(path).unwrap();
    let m = Module::parse(&src);
    // The stuck ranks' frames, innermost first: allreduce_ (:53), reduce_gradients (:72),
    // main (:100). The bridge asks each in turn; the first answer is the deciding `if`.
    let call = line(&src, "    allreduce_(params, group, average)");
    assert_eq!(m.find_order_branch(line(&src, "dist.all_reduce(flat, group=group)")), None);
    let b = m.find_order_branch(call).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, line(&src, "if step > args.warmup_steps")));
    assert_eq!(b.function.as_deref(), Some("reduce_gradients"));
    assert!(b.parameters.contains(&"tp_rank".to_owned()), "{b:#?}");
    assert_eq!(m.find_order_branch(line(&src, "reduce_gradients(model, step, args")), None);
}

#[test]
fn moving_the_walked_object_keeps_its_order() {
    // Rank 0 materialises the weights, the others allocate empty ones: the same module, the
    // same buffers in the same order on every rank.
    let moved = "\
def sync_buffers(model, device):
    if dist.get_rank() == 0:
        model = model.to(device=device)
    else:
        model = model.to_empty(device=device)
    for _, buffer in model.named_buffers():
        dist.broadcast(buffer, src=0)  # <A>
";
    assert_eq!(order(moved), None);
    // A reordered copy still counts.
    let flipped = "\
def reduce(groups, x):
    if dist.get_rank() % 2 == 1:
        groups = groups.flip(0)
    for g in groups:
        dist.all_reduce(x, group=g)  # <A>
";
    assert_eq!(order(flipped).map(|b| b.construct), Some(Construct::If));
}
