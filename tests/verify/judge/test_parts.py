"""Which declared part a name points to (verify/judge/parts.py): its own name, a name of the same kind, a shared prefix,
one of its words; none where two parts could be meant or the part is not declared."""

import pytest

from resumeproof.common.protocol import STANDARD_PARTS
from resumeproof.verify.judge.parts import part_for


def test_a_name_of_the_same_kind_as_a_part_of_its_own_points_to_it():
    own = ("net", "opt", "ema", "scaler", "order", "rng-shuffle")
    assert [part_for(n, own) for n in ("params", "model", "optimizer", "data", "scale")] == [
        "net",
        "net",
        "opt",
        "order",
        "scaler",
    ]
    assert part_for("params", ("net", "weights")) is None  # two parts of the kind: no one of them is named


@pytest.mark.parametrize(
    ("name", "part"),
    [
        ("params", "model"),
        ("scale", "scaler"),
        ("teacher", "ema"),
        ("optim", "optimizer"),
        ("sampler", "data"),
        ("loss_scale", "scaler"),
        ("rng-numpy", "rng-numpy"),
        ("lr_sched", "scheduler"),
        ("n_averaged", "ema"),
        ("weights_ema", None),
        ("foo", None),
    ],
)
def test_names_map_to_declared_parts_only(name, part):
    assert part_for(name, (*STANDARD_PARTS, "scaler", "ema")) == part
    assert part_for("teacher", STANDARD_PARTS) is None  # ema not declared: no part to name
