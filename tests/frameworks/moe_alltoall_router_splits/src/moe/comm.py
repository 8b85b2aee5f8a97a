"""Expert-parallel communication: token counts and the token all-to-all (with autograd)."""

import torch
import torch.distributed as dist


def exchange_counts(send_counts: torch.Tensor) -> torch.Tensor:
    """send_counts[j]: tokens this rank routes to expert j (on rank j).
    Returns recv_counts[i]: tokens rank i routes to this rank's expert."""
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    return recv_counts


class AllToAll(torch.autograd.Function):
    """all_to_all_single with variable splits; backward sends the gradients back the same way."""

    @staticmethod
    def forward(ctx, x, output_splits, input_splits):
        ctx.output_splits, ctx.input_splits = output_splits, input_splits
        out = x.new_empty((sum(output_splits),) + tuple(x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), output_split_sizes=output_splits,
                               input_split_sizes=input_splits)
        return out

    @staticmethod
    def backward(ctx, grad):
        back = grad.new_empty((sum(ctx.input_splits),) + tuple(grad.shape[1:]))
        dist.all_to_all_single(back, grad.contiguous(), output_split_sizes=ctx.input_splits,
                               input_split_sizes=ctx.output_splits)
        return back, None, None
