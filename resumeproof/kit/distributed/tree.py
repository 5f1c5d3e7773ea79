"""The canonical reduction: per-row vectors summed over a fixed binary tree of the global batch.

A floating-point sum depends on its order. DDP's all-reduce sums each gradient element in an order
set by the ring of ranks and the element's place in a bucket, so the same update at another world
size (or after DDP rebuilt its buckets) differs in the last bits. Here every row of the global batch
is a leaf, the tree over rows [0, B) splits [lo, hi) at (lo + hi) // 2 whatever W is, each rank sums
the largest subtrees inside its shard, the partial sums are all-gathered (exact copies) and every
rank finishes the same tree: the same additions in the same order at W = 1, 2, 4 ... B.
"""

import torch
import torch.distributed as dist

Node = tuple[int, int]  # rows [lo, hi) of the global batch


def cover(lo: int, hi: int, a: int, b: int) -> list[Node]:
    """The largest nodes of the tree over [lo, hi) whose rows lie inside [a, b), left to right."""
    if hi <= a or b <= lo:
        return []
    if a <= lo and hi <= b:
        return [(lo, hi)]
    mid = (lo + hi) // 2
    return cover(lo, mid, a, b) + cover(mid, hi, a, b)


def tree_sum(lo: int, hi: int, known: dict[Node, torch.Tensor]) -> torch.Tensor:
    """The value of node [lo, hi): a known one, or its left child plus its right child."""
    if (lo, hi) in known:
        return known[(lo, hi)]
    if hi - lo <= 1:
        raise KeyError(f"row {lo} of the global batch has no value")
    mid = (lo + hi) // 2
    return tree_sum(lo, mid, known) + tree_sum(mid, hi, known)


def allreduce(leaves: dict[int, torch.Tensor], batch: int, rank: int, size: int) -> torch.Tensor:
    """The sum over the whole global batch of per-row vectors (this rank's rows in `leaves`), bit-identical
    for every world size that divides the batch."""
    per = batch // size
    covers = [cover(0, batch, r * per, (r + 1) * per) for r in range(size)]
    known = {(i, i + 1): v for i, v in leaves.items()}
    mine = [tree_sum(lo, hi, known) for lo, hi in covers[rank]]
    block = torch.zeros(max(len(c) for c in covers), mine[0].numel(), dtype=mine[0].dtype)
    for k, value in enumerate(mine):
        block[k] = value
    gathered = [block]
    if size > 1:
        gathered = [torch.empty_like(block) for _ in range(size)]
        dist.all_gather(gathered, block)
    partials = {node: gathered[r][k] for r, nodes in enumerate(covers) for k, node in enumerate(nodes)}
    return tree_sum(0, batch, partials)
