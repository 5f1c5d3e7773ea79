"""The environment verification.json records: the verifier's interpreter and packages, and what the trainer
reports of its own (threads, dtype, device, GPU), with each trajectory's GPU where they differ."""

import platform
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.protocol import CONTINUOUS
from resumeproof.verify.run.summary import Summary

Summaries = dict[str, Summary]


def of(summaries: Summaries) -> dict[str, Any]:
    """The environment of a verification whose accepted summaries are `summaries` (none, if nothing ran)."""
    continuous = summaries.get(CONTINUOUS)
    found = _environment(continuous.meta if continuous is not None else {})
    gpus = gpus_differ(summaries)
    if gpus:
        found["gpus"] = gpus
    return found


def _environment(meta: dict[str, Any]) -> dict[str, Any]:
    """The verifier's interpreter and packages; threads, dtype, device and GPU as the trainer reports them."""
    return {
        "resumeproof": version("resumeproof"),
        "python": platform.python_version(),
        "torch": version("torch"),
        "numpy": version("numpy"),
        "platform": platform.platform(),
        "threads": meta.get("threads"),
        "dtype": meta.get("dtype"),
        "device": meta.get("device"),
        "gpu": meta.get("gpu"),
    }


def gpus_differ(summaries: Summaries) -> dict[str, Any] | None:
    """Each trajectory's `meta.gpu` when they are not all the same: a resume across GPUs, drivers or
    libraries is another claim than a resume on one machine, and the report says so."""
    gpus = {}
    for name, summary in summaries.items():
        gpus[name] = summary.meta.get("gpu")
    return gpus if len({protocol.dumps(gpu) for gpu in gpus.values()}) > 1 else None


def version(package: str) -> str | None:
    """The installed version of `package`, or None where it is not installed."""
    from importlib import metadata  # late: about 30 ms, and the first trainers need not wait for it

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
