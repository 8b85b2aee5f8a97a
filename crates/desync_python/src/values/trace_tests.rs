//! `trace_value` and the uniform-configuration classification the linter uses.

use crate::{
    ClassifyOptions, DependenceKind, Module, StepKind, ValueFeature, classify_expression,
    classify_expression_with,
};

/// The shape of `tests/scenarios/ragged_allgather`: a rank-strided validation shard.
const RAGGED: &str = "\
def evaluate(model, val_x, val_y, rank, world_size, batch_size):
    shard = TensorDataset(val_x[rank::world_size], val_y[rank::world_size])
    for xb, yb in DataLoader(shard, batch_size=batch_size):
        local = torch.cat([model(xb), yb], dim=1)
        gathered = [torch.empty_like(local) for _ in range(world_size)]
        dist.all_gather(gathered, local)
";

#[test]
fn traces_a_gathered_tensor_back_to_its_shard() {
    let m = Module::parse(RAGGED);
    let steps = m.trace_value(6, "local");
    assert_eq!(steps[0].kind, StepKind::Expression);
    assert_eq!(steps[0].text.as_deref(), Some("local"));
    let local = &steps[1];
    assert_eq!(
        (local.name.as_deref(), local.line, local.kind),
        (Some("local"), 4, StepKind::Value)
    );
    assert_eq!(local.function, Some(1));
    let xb = steps.iter().find(|s| s.name.as_deref() == Some("xb")).unwrap();
    assert_eq!(xb.kind, StepKind::LoopItem);
    assert_eq!(xb.features, [ValueFeature::Loader { drop_last: false }]);
    let shard = steps.iter().find(|s| s.name.as_deref() == Some("shard")).unwrap();
    assert_eq!(shard.features[0], ValueFeature::Slice { bounds: "rank::world_size".into() });
    let rank = steps.iter().find(|s| s.name.as_deref() == Some("rank")).unwrap();
    assert_eq!((rank.kind, rank.function), (StepKind::Parameter, Some(1)));
    // Definitions (`torch`, `TensorDataset` imported elsewhere) are not steps.
    assert!(steps.iter().all(|s| s.name.as_deref() != Some("torch")));
}

#[test]
fn shape_and_dtype_features() {
    let src = "\
def f(x, batch, mask, parts, comm_dtype):
    a = torch.zeros(len(batch), x.size(0), x.shape[1])
    b = torch.tensor([len(batch)], dtype=torch.long)
    c = x[mask.nonzero()].to(comm_dtype)
    d = torch.cat(parts) if x.numel() else F.pad(x, (0, 1))
    e = x[:, 0][1:-1]
    y = a + b + c + d + e
";
    let m = Module::parse(src);
    let steps = m.trace_value(7, "y");
    let of = |name: &str| {
        steps.iter().find(|s| s.name.as_deref() == Some(name)).unwrap().features.clone()
    };
    assert_eq!(
        of("a"),
        // `x.shape[1]` is a feature dimension: not a length.
        [ValueFeature::Length { of: "batch".into() }, ValueFeature::Length { of: "x".into() }]
    );
    // The contents of `torch.tensor([...])` are not a shape; its dtype still is a choice.
    assert_eq!(of("b"), [ValueFeature::Dtype { expr: "torch.long".into() }]);
    let c = of("c");
    assert!(c.contains(&ValueFeature::Dtype { expr: "comm_dtype".into() }), "{c:?}");
    assert!(c.contains(&ValueFeature::DataDependentShape { call: "mask.nonzero".into() }));
    let d = of("d");
    assert!(d.contains(&ValueFeature::Concat { list: "parts".into() }), "{d:?}");
    assert!(d.contains(&ValueFeature::Padding { call: "F.pad".into() }));
    assert!(of("e").is_empty(), "literal slices keep a fixed shape");
    let m = Module::parse("def h(x):\n    n = x.shape[1] + x.size(-1) + x.size(0)\n    return n\n");
    let steps = m.trace_value(3, "n");
    assert_eq!(steps[1].features, [ValueFeature::Length { of: "x".into() }], "only size(0) counts");
    // `.to(device)` is not a dtype.
    let m = Module::parse("def g(x, device):\n    y = x.to(device)\n    return y\n");
    assert!(m.trace_value(3, "y").iter().all(|s| s.features.is_empty()));
}

#[test]
fn collectives_in_values_and_limits() {
    let src = "\
def f(flag):
    agreed = dist.all_reduce(flag, async_op=True)
    a = agreed
    b = a
    c = b
    d = c
    e = d
";
    let m = Module::parse(src);
    let steps = m.trace_value(7, "e");
    assert!(steps.len() <= 6, "depth is capped: {steps:#?}");
    let m = Module::parse(&src.replace("    e = d\n", "    x = agreed\n"));
    let steps = m.trace_value(7, "x");
    assert!(steps.iter().any(|s| {
        s.features.contains(&ValueFeature::Collective { callee: "dist.all_reduce".into() })
    }));
    assert!(m.trace_value(1, "").is_empty());
    assert!(m.trace_value(0, "((").len() <= 1);
}

#[test]
fn configuration_is_rank_invariant() {
    let src = "\
import argparse, os, sys
def f(step):
    args = argparse.ArgumentParser().parse_args()
    dtype = torch.float32 if step <= args.warmup else COMM[os.environ.get('DT', 'fp32')]
    x = 1
";
    let m = Module::parse(src);
    let uniform = ClassifyOptions { uniform_config: true };
    let kinds = |deps: Vec<crate::Dependence>| deps.into_iter().map(|d| d.kind).collect::<Vec<_>>();
    for options in [ClassifyOptions::default(), uniform] {
        assert!(classify_expression_with(&m, 5, "args.warmup > 0", options).is_empty());
        assert!(classify_expression_with(&m, 5, "len(sys.argv) > 2", options).is_empty());
    }
    let deps = classify_expression(&m, 5, "dtype");
    assert!(kinds(deps.clone()).contains(&DependenceKind::Environment), "{deps:?}");
    assert!(deps.iter().any(|d| d.evidence.contains("os.environ")), "{deps:?}");
}

#[test]
fn placement_and_rank_loops_are_not_rank_dependence() {
    let src = "\
def f(model, world_size, x, comm_dtype, bytes_per_rank):
    local_rank = int(os.environ['LOCAL_RANK'])
    net = DDP(model.to(local_rank), device_ids=[local_rank], output_device=local_rank)
    y = x.cuda(local_rank)
    z = x.to(comm_dtype)
    for src_rank in range(world_size):
        pass
    n = 1
";
    let m = Module::parse(src);
    let kinds =
        |e: &str| classify_expression(&m, 8, e).into_iter().map(|d| d.kind).collect::<Vec<_>>();
    assert!(!kinds("net").contains(&DependenceKind::RankId), "{:?}", kinds("net"));
    assert!(!kinds("y").contains(&DependenceKind::RankId));
    assert!(!kinds("src_rank == 0").contains(&DependenceKind::RankId));
    assert!(!kinds("bytes_per_rank[0] > 0").contains(&DependenceKind::RankId));
    // The rank itself still is one, and a dtype argument of `.to` is still followed.
    assert_eq!(kinds("local_rank == 0"), [DependenceKind::RankId]);
    assert_eq!(kinds("src_rank == local_rank"), [DependenceKind::RankId]);
    let origin = Module::parse("def g(x, comm_dtype):\n    dist.all_reduce(x.to(comm_dtype))\n");
    let arg = &origin.explain_call(2).unwrap().arguments[0];
    assert_eq!(arg.parameters, ["x", "comm_dtype"]);
}
