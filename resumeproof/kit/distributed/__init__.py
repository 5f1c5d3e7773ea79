"""The same training loop as one process or as a torchrun group of W ranks, with a world-size-free trajectory.

    with kit.distributed.session("train.py", debug, options) as world:   # None without torchrun
        par = kit.distributed.parallel(world, options, batch)            # Single, or a Group of ranks
        par.prepare(model)                                                # before the optimizer
        ...
        for rows in par.shards():                                         # this process's rows of the batch
            par.backward(loss_fn(par.module(x[rows]), y[rows]))
        loss = par.reduce()                                               # the global batch's gradients and loss

Under torchrun every rank draws the whole global batch from the same global generators and computes
its rows of it; `options.reduction` says how the gradients are combined (reduce.py). Checkpoints are
DCP directories loaded through a reader that never unpickles arbitrary code (dcp_io.py). Without a
launcher, `parallel` returns the kit's single-process calls unchanged. docs/distributed.md.

Importing this package is cheap; torch.distributed.checkpoint and FSDP load only under a launcher (and DCP
when one process resumes a DCP directory: `Single.open_run`).
"""

from resumeproof.common.protocol import RANK_PARTS
from resumeproof.kit.distributed.options import DEFAULT_REDUCTION, DEFAULT_TIMEOUT, REDUCTIONS, Options, click_options
from resumeproof.kit.distributed.parallel import Parallel
from resumeproof.kit.distributed.world import World, launched, session, signed

__all__ = [
    "DEFAULT_REDUCTION",
    "DEFAULT_TIMEOUT",
    "RANK_PARTS",
    "REDUCTIONS",
    "Options",
    "Parallel",
    "World",
    "click_options",
    "launched",
    "parallel",
    "session",
    "signed",
]


def parallel(world: World | None, options: Options, batch: int) -> Parallel:
    """The training calls for this process: `Single` without a launcher, else a `Group` of the ranks."""
    if world is None:
        from resumeproof.kit.distributed.single import Single

        return Single()
    from resumeproof.kit.distributed.group import Group  # DCP and FSDP2: about 1.5 s of imports

    return Group(world, options, batch)
