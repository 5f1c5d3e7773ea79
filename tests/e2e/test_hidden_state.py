"""State in no state_dict, named where it lives (tests/trainers/hidden_state*.py), through a protocol trainer and an
unmodified script alike: a submodule's forward counter and the root's annealed temperature (plain attributes: the
attribute's path and its value on both sides), an EMA teacher kept as a plain module beside the model and lost at
the resume, loaded with strict=False under keys that match nothing or looked for under another key (the teacher,
whose parameters the optimizer does not hold), an lr schedule that reads the loop's own global counter, a global
step or a count of examples, which the resume leaves at 0 (the scheduler's own state is restored: the counter it
reads, `progress`, from the second resumed update). Each bug in the resume alone reuses its correct variant's runs;
`teacher-renamed` saves under another key too, and runs in full.
"""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

pytestmark = pytest.mark.xdist_group("hidden-state")  # each kind's correct runs once, its bugs reuse them

SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
PROTOCOL, SCRIPT = "protocol", "script"
SAVES_OTHERWISE = ("teacher-renamed",)  # a bug of what is saved, not only of the resume: its own runs
# bug -> the diagnosis' parts (both ways), what its explanation says, the update it names
NAMED = {
    "counter": (["model.gate.calls"], "model.gate.calls: 3 in the continuous run, 0 after the restore", 4),
    "temperature": (["model.temperature"], "model.temperature: ", 4),
    "teacher-strict": (["teacher"], "teacher: its parameters differ at", 4),
    "teacher-renamed": (["teacher"], "the optimizer does not hold them", 4),
    "lr-global": (["progress"], "the schedule computes its lr from a counter outside its state", 5),
    "warmup-global": (["progress"], "the schedule computes its lr from a counter outside its state", 5),
}
CASES = [(kind, bug) for kind in (PROTOCOL, SCRIPT) for bug in NAMED]


def _commands(kind: str, bug: str | None) -> tuple[str, ...]:
    flag = f" --bug {bug}" if bug else ""
    python = f"{shlex.quote(sys.executable)} -B"
    if kind == PROTOCOL:
        return ("--train-cmd", f"{python} {TRAINERS}/hidden_state.py{flag}")
    train = f"{python} {TRAINERS}/hidden_state_script.py --iters {{steps}} --out {{run}}{flag}"
    return ("--observe", "--train-cmd", train, "--checkpoint", "{run}/ckpt_{step}.pt")


def _resume(kind: str, bug: str | None) -> str:
    python, flag = f"{shlex.quote(sys.executable)} -B", f" --bug {bug}" if bug else ""
    if kind == PROTOCOL:
        return f"{python} {TRAINERS}/hidden_state.py{flag}"
    script = f"{TRAINERS}/hidden_state_script.py --iters {{steps}} --out {{run}} --resume {{checkpoint}}"
    return f"{python} {script}{flag}"


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    """Each kind's correct verification (its output folder), made once: it passes."""
    made = {}

    def verified(kind: str):
        if kind not in made:
            resume = () if kind == PROTOCOL else ("--resume-cmd", _resume(kind, None))
            proc, _, out = verification(tmp_path_factory, kind, *SHORT, *_commands(kind, None), *resume)
            assert proc.returncode == 0, proc.stderr[-3000:]
            made[kind] = out
        return made[kind]

    return verified


@pytest.mark.parametrize(("kind", "bug"), CASES, ids=[f"{k}-{b}" for k, b in CASES])
def test_state_outside_every_state_dict_is_named_from_the_evidence_both_ways(tmp_path_factory, correct, kind, bug):
    if bug in SAVES_OTHERWISE:
        reuse = ("--resume-cmd", _resume(kind, bug)) if kind == SCRIPT else ()
        proc, doc, _ = verification(tmp_path_factory, bug, *SHORT, *_commands(kind, bug), *reuse)
    else:
        reuse = ("--resume-cmd", _resume(kind, bug), "--reuse-runs", str(correct(kind)))
        proc, doc, _ = verification(tmp_path_factory, bug, *SHORT, *_commands(kind, None), *reuse)
    assert proc.returncode == 1, proc.stderr[-3000:]
    parts, said, update = NAMED[bug]
    diagnoses = [c["diagnosis"] for c in doc["checks"] if not c["passed"] and c.get("diagnosis")]
    first = diagnoses[0]
    assert first["parts"] == parts and first["step"] == update, first
    assert said in first["explanation"], first
    assert all(not {"model", "optimizer", "scheduler"} & set(d["parts"]) for d in diagnoses), diagnoses  # restored
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("FAILED: ") and line.endswith(f"lost {parts[0]}"), line
