"""The process group of a torchrun launch: joined from torchrun's environment, left without the exit hang.

    with kit.distributed.session("train.py", debug, options) as world:   # None without a launcher
        ...

Under torchrun every rank joins a gloo group with a short timeout (a rank that hangs fails the
run in `timeout` seconds; a dead one is noticed at the next collective), asks the kernel to kill
it when its launcher dies, and leaves through `os._exit`, so that no destructor of the process
group runs at interpreter exit. Without a launcher the session is `exit_on_error` and nothing else.
"""

import ctypes
import faulthandler
import gc
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from resumeproof.common.errors import EXIT_ERROR, ResumeproofError, exit_on_error, one_line
from resumeproof.kit.distributed.options import Options

BACKEND = "gloo"  # CPU; NCCL and CUDA are outside what a 1e-12 proof can cover
PR_SET_PDEATHSIG = 1
T = TypeVar("T")
LEAVE_LIMIT = 30.0  # seconds destroy_process_group may take before the stacks are dumped and the rank exits 3


@dataclass(frozen=True, kw_only=True)
class World:
    rank: int
    size: int
    timeout: float
    backend: str = BACKEND

    @property
    def main(self) -> bool:
        return self.rank == 0


def launched() -> bool:
    """Started by torchrun (or any launcher that sets the env:// variables)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def signed(prog: str) -> str:
    """How a rank signs its error lines, so that the verifier can quote the rank that failed."""
    return f"{prog} [rank {os.environ['RANK']}]" if launched() else prog


@contextmanager
def session(prog: str, debug: bool, options: Options) -> Iterator[World | None]:
    """The process group for the body, left cleanly; without a launcher, exit_on_error alone."""
    if not launched():
        if options.reduction is not None:
            import click  # for this usage error alone

            raise click.UsageError("--reduction needs a launcher: torchrun --standalone --nproc-per-node W ...")
        with exit_on_error(prog, debug):
            yield None
        return
    code = 0
    try:
        with exit_on_error(signed(prog), debug):
            world = join(options.timeout)
            yield world
        leave()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else EXIT_ERROR
    except BaseException as err:  # a collective that failed, DCP's CheckpointException (a BaseException) ...
        if debug:
            traceback.print_exc()
        else:
            print(f"{signed(prog)}: failed: {_said(err)}", file=sys.stderr)
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Never finalize the interpreter: a process group freed there can deadlock (see leave()).
        os._exit(code)


def join(timeout: float) -> World:
    """Die with the launcher, dump stacks on SIGUSR2, join the gloo group that torchrun's variables describe."""
    die_with_parent()
    faulthandler.register(signal.SIGUSR2, all_threads=True)  # kill -USR2 PID: where a hung rank is
    dist.init_process_group(BACKEND, timeout=timedelta(seconds=timeout))
    return World(rank=dist.get_rank(), size=dist.get_world_size(), timeout=timeout)


def die_with_parent() -> None:
    """torchrun starts every worker in a session of its own, so killing the launcher's process group
    never reaches them; PR_SET_PDEATHSIG makes the kernel SIGKILL this worker when its launcher dies."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the launcher died before prctl took effect
        os._exit(EXIT_ERROR)


def leave(limit: float = LEAVE_LIMIT) -> None:
    """Destroy the group after every rank arrived. Freeing a ProcessGroupGloo on the main thread with the
    GIL held can deadlock (its destructor joins a gloo thread that waits for the GIL): holders such as
    DDP's reducer go first (the caller's objects are gone once the body returned; gc collects cycles),
    and a watchdog dumps every stack and exits 3 if destroying still hangs."""
    gc.collect()
    dist.barrier()
    watchdog = threading.Timer(limit, _hung)
    watchdog.daemon = True
    watchdog.start()
    dist.destroy_process_group()
    watchdog.cancel()


def _hung() -> None:
    faulthandler.dump_traceback(all_threads=True)
    os._exit(3)


def gather_ints(world: World, value: int) -> list[int]:
    """Every rank's `value`, in rank order, on every rank."""
    mine = torch.tensor([value], dtype=torch.int64)
    everyone = [torch.zeros_like(mine) for _ in range(world.size)]
    dist.all_gather(everyone, mine)
    return [int(v.item()) for v in everyone]


def broadcast(world: World, value: Any) -> Any:
    """Rank 0's JSON value on every rank (a decision rank 0 made alone), sent as text, never pickled."""
    raw = json.dumps(value).encode() if world.main else b""
    length = torch.tensor([len(raw)], dtype=torch.int64)
    dist.broadcast(length, src=0)
    data = torch.tensor(list(raw), dtype=torch.uint8) if world.main else torch.empty(int(length), dtype=torch.uint8)
    dist.broadcast(data, src=0)
    return json.loads(bytes(data.tolist()).decode())


def on_main(world: World, work: Callable[[], T]) -> T | None:
    """Run `work` on rank 0 alone (a decision about shared files); a refusal there is raised on every rank,
    so that no rank waits for a collective that rank 0 will never reach."""
    result, error = None, None
    if world.main:
        try:
            result = work()
        except (ResumeproofError, OSError) as err:
            error = one_line(err)
    error = broadcast(world, error)
    if error is not None:
        raise ResumeproofError(error)
    return result


def gather_json(world: World, value: Any) -> list[Any]:
    """Every rank's JSON value, in rank order, on every rank (sent as text, never pickled)."""
    raw = json.dumps(value).encode()
    lengths = gather_ints(world, len(raw))
    block = torch.zeros(max(lengths), dtype=torch.uint8)
    block[: len(raw)] = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
    everyone = [torch.empty_like(block) for _ in range(world.size)]
    dist.all_gather(everyone, block)
    return [json.loads(bytes(data[:n].tolist()).decode()) for data, n in zip(everyone, lengths, strict=True)]


def on_every_rank(world: World, work: Callable[[], T]) -> T:
    """Run `work` on every rank (each checks what it alone read); a refusal on any rank is raised on every
    rank, the lowest refusing rank's, so that no rank goes on to a collective the others never reach."""
    result, error = None, None
    try:
        result = work()
    except (ResumeproofError, OSError) as err:
        error = one_line(err)
    errors = gather_json(world, error)
    refused = next(((rank, said) for rank, said in enumerate(errors) if said is not None), None)
    if refused is not None:
        rank, said = refused
        raise ResumeproofError(said if rank == 0 else f"rank {rank}: {said}")  # rank 0 accepted what rank r refused
    return result  # type: ignore[return-value]  # work returned on every rank


def _said(err: BaseException) -> str:
    text = " ".join(str(err).split())[:400]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
