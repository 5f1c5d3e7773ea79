"""The standard layout (kit/layout.py) as a DCP checkpoint: what each rank saves, and a load checked like a file's.

A trainer builds the same checkpoint dict under torchrun as in one process, with its model and
optimizer sections from DCP's get_state_dict (`state_dicts`). `split` turns it into DCP keys, nested:
    model.*     the model section: replicated tensors (ddp, canonical: DCP writes each once) or DTensor
                shards (FSDP2: DCP records the chunks and reshards them on load)
    optim.*     the optimizer's state by parameter name (Adam's moments, sharded like the parameters)
    rng.NAME    the state of each torch.Generator (a uint8 tensor)
    extra       JSON in a uint8 tensor: every other section (the optimizer's param_groups, the
                scheduler, the other generators, the data position, step, history, config, versions,
                identity, provenance) and the world that saved it

Everything but `model` and `optim` is global: every rank draws from the same streams and holds the
same bytes. Rank 0 alone saves them, after the ranks compared digests (agree.py): DCP keeps one
arbitrary copy of a key several ranks save, and would hide a rank that drifted.
`load` gives the dict back in the trainer's form (model and optimizer as set_state_dict takes them),
and in the layout's form (optimizer state by parameter index) for layout.validate: a load is held to
the same checks as a file checkpoint's. It runs on every rank, or in one process without a process
group, which resumes the layout's form with load_state_dict. The other way, `by_name` puts a single
process's file in the trainer's form for a group, and `load_state_dicts` shards its full tensors.
Importing this module is cheap: DCP loads inside the functions that call it, so that a single
process can name this file in its code identity.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import DATA, MODEL, OPTIMIZER
from resumeproof.kit import layout
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.layout import FORMAT_KEY, RNG

OPTIM, EXTRA = "optim", "extra"  # DCP keys beside `model` and `rng`
FORMAT = "resumeproof-dcp/1"
SAVED_BY = "saved_by"  # in extra: world size and reduction of the run that wrote it (not checked: any W resumes)


@dataclass(frozen=True)
class Loaded:
    state: dict[str, Any]  # the trainer's form: model and optimizer as DCP's set_state_dict takes them
    view: dict[str, Any]  # the layout's form, for layout.validate


def state_dicts(model: nn.Module, optimizer: torch.optim.Optimizer, shapes: bool = False) -> tuple[dict, dict]:
    """get_state_dict(model, optimizer), leaving a fresh optimizer fresh: DSD fills an empty one with a
    step at lr 0 (a step count of 1, zero moments), which would change every later update. With
    `shapes`, the state it made is returned all the same (tensors of the right shapes to load into)."""
    from torch.distributed.checkpoint.state_dict import get_state_dict

    fresh = not optimizer.state
    model_state, optim = get_state_dict(model, optimizer)
    if fresh:
        optimizer.state.clear()
        optim = optim if shapes else {"state": {}, "param_groups": optim["param_groups"]}
    return dict(model_state), dict(optim)


def load_state_dicts(
    model: nn.Module, optimizer: torch.optim.Optimizer, model_state_dict: dict | None, optim_state_dict: dict | None
) -> None:
    """What state_dicts (or load, or by_name) gave, put back through DCP's set_state_dict; None leaves a part as
    built. Full tensors (a single process's checkpoint) into an FSDP2-sharded model go with full_state_dict:
    each rank keeps its shard of them, Adam's moments included."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict, set_state_dict

    given = [model_state_dict or {}, optim_state_dict or {}]
    full = _holds_dtensor(dict(model.named_parameters())) and not _holds_dtensor(given)
    options = StateDictOptions(full_state_dict=True) if full else None
    if optim_state_dict is not None and optim_state_dict["state"]:
        set_state_dict(
            model,
            optimizer,
            model_state_dict=model_state_dict or {},
            optim_state_dict=optim_state_dict,
            options=options,
        )
    elif model_state_dict:
        set_model_state_dict(model, model_state_dict, options=options)


def by_name(optim: dict[str, Any], model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """A single process's optimizer state dict (state and param groups by parameter index) in the form DCP's
    set_state_dict takes: by parameter name, in the order this run's optimizer lists its parameters."""
    order = [name for group in state_dicts(model, optimizer)[1]["param_groups"] for name in group["params"]]
    return {
        "state": {order[index]: moments for index, moments in optim["state"].items()},
        "param_groups": [{**group, "params": [order[i] for i in group["params"]]} for group in optim["param_groups"]],
    }


def _holds_dtensor(tree: Any) -> bool:
    from torch.distributed.tensor import DTensor

    if isinstance(tree, dict):
        return any(_holds_dtensor(value) for value in tree.values())
    if isinstance(tree, list | tuple):
        return any(_holds_dtensor(value) for value in tree)
    return isinstance(tree, DTensor)


def split(state: dict[str, Any], saved_by: dict[str, Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict]:
    """A checkpoint dict as DCP saves it: what every rank saves; and the global part rank 0 alone saves, torch
    generator states and extra."""
    optim, rng, data = state[OPTIMIZER], state[RNG], state[DATA]
    tensors = {name: value for name, value in rng.items() if isinstance(value, torch.Tensor)}
    extra = {key: value for key, value in state.items() if key not in (MODEL, OPTIMIZER, RNG, DATA)}
    extra |= {
        FORMAT_KEY: FORMAT,
        "param_groups": optim["param_groups"],
        RNG: {name: value for name, value in rng.items() if name not in tensors},
        DATA: {**data, "permutation": data["permutation"].tolist()},
        SAVED_BY: saved_by,
    }
    return {MODEL: state[MODEL], OPTIM: optim["state"]}, tensors, extra


def load(folder: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> Loaded:
    """dcp_io.load of every key this run knows (and no other) into tensors shaped by this run."""
    from resumeproof.kit.distributed import dcp_io

    metadata = dcp_io.read_metadata(folder)
    saved = metadata.state_dict_metadata
    model_state, moments, order = _targets(model, optimizer, saved)
    # Copies: DSD hands out the live parameters, and dcp_io.load writes in place. Loading into them
    # would restore the model before the trainer decides whether to (a resume told to omit it).
    target: dict[str, Any] = {MODEL: _copies(model_state), OPTIM: _copies(moments) if _holds(saved, OPTIM) else {}}
    target[RNG] = {key.split(".", 1)[1]: _empty(saved, key) for key in saved if key.startswith(f"{RNG}.")}
    target[EXTRA] = _empty(saved, EXTRA)
    planned = set(flatten(target))
    if planned != set(saved):
        extra, missing = sorted(set(saved) - planned), sorted(planned - set(saved))
        said = f"holds {', '.join(extra[:3])}, which this run does not know" if extra else f"lacks {missing[0]}"
        raise CheckpointError(f"{folder}: {said}; refusing to resume")
    dcp_io.load(target, folder, metadata)
    try:
        extra = dcp_io.from_json_tensor(target[EXTRA])
        groups = _tuples_like(extra["param_groups"], optimizer.param_groups)
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{folder}: its extra state is unreadable ({type(err).__name__}); refusing") from None
    view = _view(extra, target, groups, order)
    state = {**view, OPTIMIZER: {"state": target[OPTIM], "param_groups": groups}}
    return Loaded(state, view)


def _targets(
    model: nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What a load fills (the model's state dict and the optimizer's state by parameter name, each tensor shaped
    by this run) and the parameter names in the optimizer's order. Under torchrun, from DCP's get_state_dict
    (FSDP2 shards as DTensors). In one process without it: DSD's FQNs are the module's own names there, and
    DSD needs TorchDynamo, which torch_setup keeps a single process from importing; the optimizer's state
    tensors are shaped by the checkpoint's metadata, and validate holds them to this run's parameters."""
    if dist.is_available() and dist.is_initialized():
        model_state, optim = state_dicts(model, optimizer, shapes=True)
        return model_state, optim["state"], [name for group in optim["param_groups"] for name in group["params"]]
    names = {id(p): name for name, p in model.named_parameters()}
    order = [names[id(p)] for group in optimizer.param_groups for p in group["params"]]
    moments: dict[str, dict[str, torch.Tensor]] = {}
    for key in saved:
        owner = max((n for n in order if key.startswith(f"{OPTIM}.{n}.")), key=len, default=None)
        if owner is not None:  # a key of no parameter of this run stays unplanned: load refuses it
            moments.setdefault(owner, {})[key.removeprefix(f"{OPTIM}.{owner}.")] = _empty(saved, key, dtype=None)
    return dict(model.state_dict()), moments, order


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The keys DCP gives a nested state dict: the path joined with dots."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        flat.update(flatten(value, f"{name}.") if isinstance(value, dict) else {name: value})
    return flat


def _copies(tree: dict[str, Any]) -> dict[str, Any]:
    """The same nested dict with every tensor (DTensor shards included) replaced by a copy."""
    return {
        k: _copies(v) if isinstance(v, dict) else v.detach().clone() if torch.is_tensor(v) else v
        for k, v in tree.items()
    }


def _holds(saved: dict[str, Any], section: str) -> bool:
    return any(key.startswith(f"{section}.") for key in saved)


def _empty(saved: dict[str, Any], key: str, dtype: torch.dtype | None = torch.uint8) -> torch.Tensor:
    """An empty tensor of the size the checkpoint records for `key`, which must be a tensor (of `dtype`)."""
    entry = saved.get(key)
    size, found = getattr(entry, "size", None), getattr(getattr(entry, "properties", None), "dtype", None)
    if size is None or not isinstance(found, torch.dtype) or dtype not in (None, found):
        what = "a tensor" if dtype is None else f"a {str(dtype).removeprefix('torch.')} tensor"
        raise CheckpointError(f"{key}: not {what} in this checkpoint; refusing to resume")
    return torch.empty(size, dtype=found)


def _tuples_like(loaded: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """JSON turns tuples (Adam's betas) into lists: give them back the type this run's optimizer has."""
    if len(loaded) != len(fresh):
        raise ResumeproofError(f"optimizer has {len(loaded)} param groups, this run {len(fresh)}")
    pairs = zip(loaded, fresh, strict=True)
    return [{k: tuple(v) if isinstance(f.get(k), tuple) else v for k, v in g.items()} for g, f in pairs]


def _view(extra: dict[str, Any], target: dict[str, Any], groups: list[dict[str, Any]], order: list[str]) -> dict:
    """The loaded state in the layout's form: optimizer state and param groups by index, tensors where a
    file checkpoint holds tensors; a section the checkpoint lacks stays absent for validate to name. Every
    section split() put in extra comes back, so that a section the layout gains travels through DCP as well."""
    index = {name: i for i, name in enumerate(order)}
    view = {key: value for key, value in extra.items() if key not in ("param_groups", SAVED_BY)}
    view[FORMAT_KEY] = layout.FORMAT if extra.get(FORMAT_KEY) == FORMAT else extra.get(FORMAT_KEY)
    view[MODEL] = target[MODEL]
    view[OPTIMIZER] = {
        "state": {index.get(name, name): moments for name, moments in target[OPTIM].items()},
        "param_groups": [{**g, "params": [index.get(n, n) for n in g.get("params", [])]} for g in groups],
    }
    view[RNG] = {**extra.get(RNG, {}), **target[RNG]}
    data = extra.get(DATA)
    if isinstance(data, dict) and isinstance(data.get("permutation"), list):
        view[DATA] = {**data, "permutation": torch.tensor(data["permutation"], dtype=torch.int64)}
    return view
