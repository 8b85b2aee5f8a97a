//! Shapes of the repository's real `PyTorch` test jobs (`python/desync_jobs/scenarios`), reduced
//! to the lines that matter: what the bridge asks for, frame by frame.

use super::{branch, kinds, line};
use crate::{Construct, DependenceKind, Module};

#[test]
fn early_stop_on_a_validation_loss_of_a_rank_specific_source() {
    let src = "\
def main(args):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    source = rank % len(SOURCES)
    val_x, val_y = load_source(source, 128, 'val')
    for step in range(1, args.max_steps + 1):
        loss.backward()
        allreduce_gradients(model, world_size)  # <A>
        if step % args.eval_every == 0:
            val_loss = evaluate(model, val_x, val_y)
            if val_loss < args.target_loss:
                break
    summary = torch.tensor([float(step)])
    dist.all_reduce(summary)  # <B>
";
    let b = branch(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::Break, 12));
    assert_eq!(b.condition.as_deref(), Some("val_loss < args.target_loss"));
    assert_eq!(b.condition_line, Some(11));
    // The validation set is chosen by the rank; the loss and the target pass through
    // functions and arguments this reduced file does not define.
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
    assert!(b.parameters.contains(&"args".to_owned()));
}

#[test]
fn rank_zero_window_logging() {
    let src = "\
def main(args):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    for step, (xb, yb) in enumerate(loader, start=1):
        allreduce_gradients(model, world_size)  # <B>
        window_loss += loss.item() * len(xb)
        if rank == 0 and step % args.log_every == 0:
            window = torch.tensor([window_loss, 1.0])
            dist.all_reduce(window)  # <A>
    dist.barrier()
";
    let b = branch(src).unwrap();
    assert_eq!((b.construct, b.line), (Construct::If, 7));
    assert_eq!(b.dependence[0].kind, DependenceKind::RankId);
    assert_eq!(b.dependence[0].evidence, "`rank` = `dist.get_rank()` (line 2) ← `dist.get_rank()`");
}

#[test]
fn ragged_evaluation_needs_the_deeper_frame() {
    let src = "\
def evaluate(model, val_x, rank, world_size):
    shard = TensorDataset(val_x[rank::world_size])
    for (xb,) in DataLoader(shard, batch_size=8):
        dist.all_gather(gathered, model(xb))

def main():
    val_mse = evaluate(model, val_x, rank, world_size)
    if rank == 0:
        print(val_mse)
    dist.barrier()
";
    let m = Module::parse(src);
    // In the common frame (`main`) nothing separates the call from the barrier...
    assert_eq!(m.find_branch(7, Some(10)), None);
    // ...so the bridge asks again in the frame only one group still has.
    let b = m.find_branch(4, None).unwrap();
    assert_eq!((b.construct, b.line), (Construct::For, 3));
    assert_eq!(b.condition.as_deref(), Some("DataLoader(shard, batch_size=8)"));
    // Its length comes from the caller's arguments (the bridge follows them there).
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
    assert_eq!(b.parameters, ["rank", "world_size"]);
    assert_eq!(b.length_parameters, ["val_x"]);
}

#[test]
fn dtype_from_the_environment_through_a_parameter() {
    let src = "\
COMM_DTYPES = {'fp32': torch.float32, 'bf16': torch.bfloat16}

def allreduce_gradients(model, world_size, comm_dtype):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads]).to(comm_dtype)
    dist.all_reduce(flat)

def main(args):
    comm_dtype = COMM_DTYPES[os.environ.get('GRAD_COMM_DTYPE', 'fp32')]
    for step, (xb, yb) in enumerate(loader, start=1):
        dtype = torch.float32 if step <= args.warmup_steps else comm_dtype
        allreduce_gradients(model, world_size, dtype)
";
    let m = Module::parse(src);
    let inner = m.explain_call(line(src, "dist.all_reduce")).unwrap();
    assert!(inner.arguments[0].parameters.contains(&"comm_dtype".to_owned()));
    let def = m.function_at(6).unwrap();
    let index = def.parameters.iter().position(|p| p == "comm_dtype").unwrap();
    // The caller's frame: the argument in that position reads the launcher environment.
    let outer = m.explain_call(line(src, "allreduce_gradients(model, world_size, dtype)")).unwrap();
    let arg = &outer.arguments[index];
    assert_eq!(arg.text, "dtype");
    assert_eq!(arg.defined_at, Some(11));
    assert_eq!(arg.dependence[0].kind, DependenceKind::Environment);
}
