"""Which of the parts a trainer declares a name points to: a history field, a `state` key, a path component, a
part the observer recognises by its class. Both judges name parts through it (docs/checks.md, "Names")."""

from resumeproof.common import protocol
from resumeproof.common.protocol import DATA, MODEL, OPTIMIZER, PROGRESS, SCHEDULER

# The names a trainer may give a part, beyond the part's own (docs/checks.md): a field or key named
# like one of them points to that part, if the trainer declares it.
ALIASES = {
    MODEL: ("params", "parameters", "weights", "net", "network", "module"),
    OPTIMIZER: ("optim", "opt"),
    SCHEDULER: ("sched", "lr_scheduler", "schedule"),
    DATA: ("sampler", "loader", "dataloader", "order", "dataset", "position"),
    PROGRESS: ("step", "steps", "counter"),
    protocol.SCALER: ("grad_scaler", "loss_scale", "scale", "amp"),
    protocol.EMA: ("teacher", "swa", "averaged", "average"),
}


def part_for(name: str, parts: tuple[str, ...]) -> str | None:
    """The declared part a field, key or path component is named after: itself, a part of the same kind
    (ALIASES: `params` and a part named `net` are both the model), a shared prefix, or else one of its
    words (`lr_sched`: `sched`); None when no one part fits."""
    plain = name.lower().replace("-", "_")
    found = _same_kind(plain, parts)
    if found is None:
        close = [p for p in parts if min(len(p), len(plain)) >= 3 and (p.startswith(plain) or plain.startswith(p))]
        found = close[0] if len(close) == 1 else None
    if found is None and "_" in plain:
        words = {w for w in (_same_kind(word, parts) for word in plain.split("_") if word) if w}
        found = words.pop() if len(words) == 1 else None
    return found


def _same_kind(plain: str, parts: tuple[str, ...]) -> str | None:
    exact = [p for p in parts if p.replace("-", "_") == plain]
    if exact:
        return exact[0]
    for concept, aliases in ALIASES.items():  # a name and a part of the same kind
        kind = {concept, *aliases}
        if plain in kind:
            named = [p for p in parts if p.replace("-", "_") in kind]
            if len(named) == 1:
                return named[0]
    return None
