"""`verify --observe` of a script whose data order comes from a generator of its own (a `torch.Generator`, a NumPy
`Generator` from `default_rng`, a `random.Random`: tests/trainers/own_generators_script.py), restored with that
generator's own setter: the resume is exact, and the negative control blocks that setter (observe/block.py) and
diverges, naming what it blocked, where a control that blocked the process-wide setters alone blocked nothing."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

# One verification per generator, shared by the tests below: on one worker, so that none runs twice.
pytestmark = pytest.mark.xdist_group("own-generators")

SCRIPT = shlex.join([sys.executable, "-B", str(TRAINERS / "own_generators_script.py")])
SHORT = ("--observe", "--steps", "6", "--interrupt-at", "3", "--jobs", "2")
BLOCKED = {"torch": "Generator.set_state", "numpy": "PCG64.state", "random": "Random.setstate"}  # observe/block.py


@pytest.fixture(scope="module", params=list(BLOCKED))
def verified(request, tmp_path_factory):
    train = f"{SCRIPT} --generator {request.param} --iters {{steps}} --out {{run}}"
    resume = ("--resume-cmd", f"{train} --resume {{checkpoint}}", "--checkpoint", "{run}/ckpt_{step}.pt")
    proc, doc, _ = verification(tmp_path_factory, f"own-{request.param}", *SHORT, "--train-cmd", train, *resume)
    return request.param, proc, doc


def checks(doc: dict, kind: str) -> list[dict]:
    return [c for c in doc["checks"] if c["kind"] == kind]


def test_a_script_that_restores_its_own_generator_with_its_setter_resumes_exactly(verified):
    _, proc, doc = verified
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["passed"] for c in checks(doc, "restore")] == [True]
    assert doc["comparison"]["resumes"]["resumed"]["verdict"] == "concordant"


def test_its_negative_control_blocks_the_generators_own_setter_and_diverges(verified):
    kind, proc, doc = verified
    assert doc["comparison"]["no_rng_resume"]["verdict"] == "divergent", proc.stderr[-3000:]
    assert doc["negative_divergence_detected"]
    (control,) = checks(doc, "negative-control")
    assert control["passed"] and not control["not_applicable"] and control["detail"] == f"blocked: {BLOCKED[kind]}"
