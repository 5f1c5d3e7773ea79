"""The standard layout (kit/layout.py) as a DCP checkpoint: what each rank saves, and a load checked like a file's.

DCP keys, nested:
    model.*     get_state_dict's model part: replicated tensors (ddp, canonical: DCP writes each once)
                or DTensor shards (FSDP2: DCP records the chunks and reshards them on load)
    optim.*     its optimizer state by parameter name (Adam's moments, sharded like the parameters)
    rng.NAME    the state of each torch.Generator (a uint8 tensor)
    extra       JSON in a uint8 tensor: the optimizer's param_groups, the scheduler, the other
                generators, the data position, step, history, config, versions, identity,
                provenance, and the world that saved it

Everything but `model` and `optim` is global: every rank draws from the same streams and holds the
same bytes. Rank 0 alone saves them, after the ranks compared digests (agree.py): DCP keeps one
arbitrary copy of a key several ranks save, and would hide a rank that drifted.
A load is held to the same checks as a file checkpoint: after dcp_io.load the state is put in the
layout's form (optimizer state by parameter index) for layout.validate, then restored with
set_state_dict.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.distributed.checkpoint.state_dict import get_state_dict, set_model_state_dict, set_state_dict

from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import layout
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.distributed import dcp_io
from resumeproof.kit.identity import versions

MODEL, OPTIM, RNG, EXTRA = "model", "optim", "rng", "extra"
FORMAT = "resumeproof-dcp/1"
SAVED_BY = "saved_by"  # in extra: world size and reduction of the run that wrote it (not checked: any W resumes)


@dataclass(frozen=True)
class Loaded:
    view: dict[str, Any]  # the layout's form, for layout.validate and the resume's Start
    model: dict[str, Any]  # as dcp_io.load filled them (DTensor shards under FSDP2), for set_state_dict
    optim: dict[str, Any]
    groups: list[dict[str, Any]]  # param_groups by parameter name


def state_dicts(t: layout.Training, shapes: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """get_state_dict(model, optimizer), leaving a fresh optimizer fresh: DSD fills an empty one with a
    step at lr 0 (a step count of 1, zero moments), which would change every later update. With
    `shapes`, the state it made is returned all the same (tensors of the right shapes to load into)."""
    fresh = not t.optimizer.state
    model, optim = get_state_dict(t.model, t.optimizer)
    if fresh:
        t.optimizer.state.clear()
        optim = optim if shapes else {"state": {}, "param_groups": optim["param_groups"]}
    return model, optim


def capture(
    t: layout.Training, config: dict[str, Any], identity: dict[str, str], provenance: list, saved_by: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, Any]]:
    """What every rank saves; and the global part rank 0 alone saves: torch generator states, extra."""
    model, optim = state_dicts(t)
    rng = t.generators.state()
    tensors = {name: value for name, value in rng.items() if isinstance(value, torch.Tensor)}
    extra = {
        layout.FORMAT_KEY: FORMAT, "param_groups": optim["param_groups"], layout.SCHEDULER: t.scheduler.state_dict(),
        layout.RNG: {name: value for name, value in rng.items() if name not in tensors},
        layout.DATA: {"permutation": t.order.permutation, "cursor": t.order.cursor, "epoch": t.order.epoch},
        layout.PROGRESS: {"step": t.step}, layout.HISTORY: t.history, layout.CONFIG: config,
        layout.VERSIONS: versions(), layout.IDENTITY: identity, layout.PROVENANCE: provenance, SAVED_BY: saved_by,
    }  # fmt: skip
    return {MODEL: model, OPTIM: optim["state"]}, tensors, extra


def load(folder: Path, t: layout.Training) -> Loaded:
    """dcp_io.load of every key this run knows (and no other) into tensors shaped by this run, in the layout's form."""
    metadata = dcp_io.read_metadata(folder)
    saved = metadata.state_dict_metadata
    model, optim = state_dicts(t, shapes=True)
    # Copies: DSD hands out the live parameters, and dcp_io.load writes in place. Loading into them
    # would restore the model before restore() decides whether to (a resume told to omit it).
    target: dict[str, Any] = {MODEL: _copies(model), OPTIM: _copies(optim["state"]) if _holds(saved, OPTIM) else {}}
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
        groups = _tuples_like(extra["param_groups"], optim["param_groups"])
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{folder}: its extra state is unreadable ({type(err).__name__}); refusing") from None
    order = [name for group in optim["param_groups"] for name in group["params"]]
    return Loaded(_view(extra, target, groups, order), target[MODEL], target[OPTIM], groups)


def restore(loaded: Loaded, t: layout.Training, omit: Iterable[str]) -> list[str]:
    """layout.restore for a DCP load: model and optimizer through set_state_dict, then the same sections."""
    omit = set(omit)
    model = loaded.model if layout.MODEL not in omit else {}
    if layout.OPTIMIZER not in omit and loaded.optim:
        optim = {"state": loaded.optim, "param_groups": loaded.groups}
        set_state_dict(t.model, t.optimizer, model_state_dict=model, optim_state_dict=optim)  # type: ignore[arg-type]
    elif model:
        set_model_state_dict(t.model, model)
    # The remaining sections as a file checkpoint restores them (model and optimizer are done above).
    return layout.restore(loaded.view, t, omit | {layout.MODEL, layout.OPTIMIZER})


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The keys DCP gives a nested state dict: the path joined with dots."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        flat.update(flatten(value, f"{name}.") if isinstance(value, dict) else {name: value})
    return flat


def _copies(tree: dict[str, Any]) -> dict[str, Any]:
    """The same nested dict with every tensor (DTensor shards included) replaced by a copy."""
    return {k: _copies(v) if isinstance(v, dict) else v.detach().clone() if torch.is_tensor(v) else v
            for k, v in tree.items()}  # fmt: skip


def _holds(saved: dict[str, Any], section: str) -> bool:
    return any(key.startswith(f"{section}.") for key in saved)


def _empty(saved: dict[str, Any], key: str) -> torch.Tensor:
    entry = saved.get(key)
    size = getattr(entry, "size", None)
    if size is None or getattr(getattr(entry, "properties", None), "dtype", None) is not torch.uint8:
        raise CheckpointError(f"{key}: not a uint8 tensor in this checkpoint; refusing to resume")
    return torch.empty(size, dtype=torch.uint8)


def _tuples_like(loaded: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """JSON turns tuples (Adam's betas) into lists: give them back the type this run's optimizer has."""
    if len(loaded) != len(fresh):
        raise ResumeproofError(f"optimizer has {len(loaded)} param groups, this run {len(fresh)}")
    pairs = zip(loaded, fresh, strict=True)
    return [{k: tuple(v) if isinstance(f.get(k), tuple) else v for k, v in g.items()} for g, f in pairs]


def _view(extra: dict[str, Any], target: dict[str, Any], groups: list[dict[str, Any]], order: list[str]) -> dict:
    """The loaded state in the layout's form: optimizer state and param groups by index, tensors where a
    file checkpoint holds tensors; a section the checkpoint lacks stays absent for validate to name."""
    index = {name: i for i, name in enumerate(order)}
    view = {key: extra[key] for key in (*layout.SECTIONS, layout.HISTORY, layout.PROVENANCE) if key in extra}
    view[layout.FORMAT_KEY] = layout.FORMAT if extra.get(layout.FORMAT_KEY) == FORMAT else extra.get(layout.FORMAT_KEY)
    view[layout.MODEL] = target[MODEL]
    view[layout.OPTIMIZER] = {
        "state": {index.get(name, name): moments for name, moments in target[OPTIM].items()},
        "param_groups": [{**g, "params": [index.get(n, n) for n in g.get("params", [])]} for g in groups],
    }
    view[layout.RNG] = {**extra.get(layout.RNG, {}), **target[RNG]}
    data = extra.get(layout.DATA)
    if isinstance(data, dict) and isinstance(data.get("permutation"), list):
        view[layout.DATA] = {**data, "permutation": torch.tensor(data["permutation"], dtype=torch.int64)}
    return view
