"""The four ways a group of ranks turns its shards of the global batch into one update.

Every rank holds the whole global batch (drawn from the same global streams) and computes rows
[r*B/W, (r+1)*B/W) of it. The trainer runs one forward and backward pass per shard, with the
module the reduction names, then asks for the result:

    for rows in reduction.shards():                       # this rank's rows, in one slice or row by row
        reduction.backward(loss_fn(reduction.module(x[rows]), y[rows]))   # the mean loss over `rows`
    loss = reduction.reduce()                             # every gradient the global batch's; the global loss

    ddp             DistributedDataParallel, as users run it: the gradients of the ranks' mean losses
                    are averaged by gloo's all-reduce. Concordant across W to 1-2 ulp, not bit-identical.
    fsdp            FSDP2 (`fully_shard`): parameters, gradients and Adam state sharded; reduce-scatter.
    canonical       replicated parameters, no wrapper: one backward pass per row and the fixed-order
                    tree of tree.py. Bit-identical for every W that divides the batch.
    fsdp-canonical  FSDP2-sharded parameters and Adam state; the gradient is the canonical tree sum,
                    computed on a full copy of the parameters, then each rank keeps its shard.
"""

import copy
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn

from resumeproof.common.errors import ResumeproofError
from resumeproof.kit.distributed import tree
from resumeproof.kit.distributed.options import CANONICAL, DDP, FSDP, FSDP_CANONICAL
from resumeproof.kit.distributed.world import World


class Reduction:
    """A reduction over `world` for a global batch of `batch` rows; `prepare` the model before the optimizer."""

    def __init__(self, world: World, batch: int) -> None:
        if batch % world.size:
            raise ResumeproofError(f"{world.size} processes do not divide the global batch of {batch} rows")
        per = batch // world.size
        self.world, self.batch, self.rows = world, batch, slice(world.rank * per, (world.rank + 1) * per)
        self._module: nn.Module | None = None

    def prepare(self, model: nn.Module) -> None:
        """Wrap or shard `model` in place; the optimizer is built after this, on its parameters."""
        self._module = model

    @property
    def module(self) -> nn.Module:
        """What the forward pass runs."""
        assert self._module is not None, "prepare() first"
        return self._module

    def shards(self) -> Iterator[slice]:
        """The rows of the global batch this rank computes, one forward and backward pass each."""
        yield self.rows

    def backward(self, loss: torch.Tensor) -> None:
        """The backward pass of the mean loss over the rows of the current shard."""
        raise NotImplementedError

    def reduce(self) -> float:
        """Set every parameter's gradient for the global batch; return the global mean loss."""
        raise NotImplementedError


class Averaged(Reduction):
    """ddp and fsdp: each rank's mean loss over its rows, the wrapper averages the gradients."""

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()
        self._loss = loss.detach().clone()

    def reduce(self) -> float:
        total = self._loss
        dist.all_reduce(total)
        return (total / self.world.size).item()


class Replicated(Averaged):
    """ddp: DistributedDataParallel, default options."""

    def prepare(self, model: nn.Module) -> None:
        self._module = nn.parallel.DistributedDataParallel(model)


class Sharded(Averaged):
    """fsdp: FSDP2's fully_shard on a one-dimensional mesh of every rank."""

    def prepare(self, model: nn.Module) -> None:
        _shard(model, self.world)
        self._module = model


class Canonical(Reduction):
    """canonical: replicated parameters, the gradient summed over the fixed tree, rows one by one. A row's
    [loss, gradient...] vector comes from a pass over that row alone, so that it never depends on which rows
    share its rank."""

    def shards(self) -> Iterator[slice]:
        self._leaves: dict[int, torch.Tensor] = {}
        for i in range(self.rows.start, self.rows.stop):
            self._row = i
            yield slice(i, i + 1)

    def backward(self, loss: torch.Tensor) -> None:
        grads = torch.autograd.grad(loss, list(self.module.parameters()))
        self._leaves[self._row] = torch.cat([loss.detach().reshape(1), *(g.reshape(-1) for g in grads)])

    def reduce(self) -> float:
        total = self._total()
        offset = 1
        for p in self.module.parameters():
            p.grad = (total[offset : offset + p.numel()] / self.batch).view_as(p).clone()
            offset += p.numel()
        return (total[0] / self.batch).item()

    def _total(self) -> torch.Tensor:
        """[loss, gradient...] summed over the global batch."""
        return tree.allreduce(self._leaves, self.batch, self.world.rank, self.world.size)


class ShardedCanonical(Canonical):
    """fsdp-canonical: FSDP2 shards, the canonical gradient computed on a full copy of the parameters."""

    def prepare(self, model: nn.Module) -> None:
        self.shadow = copy.deepcopy(model)  # a plain module: each step loads the gathered parameters into it
        _shard(model, self.world)
        self.sharded = model

    @property
    def module(self) -> nn.Module:
        return self.shadow

    def shards(self) -> Iterator[slice]:
        with torch.no_grad():
            for s, f in zip(self.sharded.parameters(), self.shadow.parameters(), strict=True):
                f.copy_(s.full_tensor())  # type: ignore[attr-defined]  # a DTensor once sharded
        yield from super().shards()

    def reduce(self) -> float:
        from torch.distributed.tensor import distribute_tensor

        total = self._total()
        offset = 1
        for s in self.sharded.parameters():
            gradient = (total[offset : offset + s.numel()] / self.batch).view(s.shape)
            # Every rank holds the same full gradient: each keeps its own shard of it, no communication.
            s.grad = distribute_tensor(gradient, s.device_mesh, s.placements, src_data_rank=None)  # type: ignore[attr-defined]
            offset += s.numel()
        return (total[0] / self.batch).item()


def _shard(model: nn.Module, world: World) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    fully_shard(model, mesh=init_device_mesh("cpu", (world.size,)))


KINDS: dict[str, type[Reduction]] = {
    DDP: Replicated,
    FSDP: Sharded,
    CANONICAL: Canonical,
    FSDP_CANONICAL: ShardedCanonical,
}
