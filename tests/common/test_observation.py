"""The observer's record format, as both sides read it: the environment that asks for it, the file it goes to, and a
reading that never fails on what it finds (records are evidence; without them a trainer is judged as before)."""

import ast
import dataclasses
import json
import sys
from pathlib import Path

from resumeproof.common import observation as o


def test_the_environment_puts_the_observer_first_and_keeps_the_callers_path():
    env = o.environment({"PYTHONPATH": "/theirs", "HOME": "/h"}, Path("/runs/v/observed/resumed"), {6, 1, 10})
    assert env["PYTHONPATH"].split(":") == [str(o.SITE), "/theirs"] and env["HOME"] == "/h"
    assert env[o.OBSERVE_ENV] == "/runs/v/observed/resumed" and env[o.UPDATES_ENV] == "1,6,10"
    assert (o.SITE / "sitecustomize.py").is_file()
    assert o.environment({}, Path("r"), {1})["PYTHONPATH"] == str(o.SITE)


def test_each_rank_writes_its_own_file_and_the_updates_read_back():
    assert o.record_file("/x/resumed", None) == Path("/x/resumed.json")
    assert o.record_file("/x/resumed", 3) == Path("/x/resumed.rank-3.json")
    assert o.updates_wanted("1,6,10") == {1, 6, 10} and o.updates_wanted(None) == set()
    assert o.updates_wanted("1,six") == set()  # unreadable: record nothing rather than guess


def test_records_read_back_typed_and_anything_else_reads_as_none(tmp_path):
    path = tmp_path / "r.json"
    update = {"loss": {"value": 0.5, "digest": "d"}, "step": {"backwards": 2, "a key of a later observer": 1}}
    path.write_text(json.dumps({"format": o.FORMAT, "rank": 1, "updates": {"6": update}, "restores": []}))
    found = o.read(path)
    assert found is not None and found.rank == 1 and found.at(7) is None
    six = found.at(6)
    assert six is not None and (six.loss.value, six.step.backwards, six.held(o.LOSS, o.DIGEST)) == (0.5, 2, "d")
    assert six.after == o.After() and six.forward.batch is None  # a moment not reached holds nothing
    for text in ("", "{", json.dumps({"format": "other"}), json.dumps({"format": o.FORMAT, "updates": {"x": {}}})):
        path.write_text(text)
        assert o.read(path) is None, text
    assert o.read(tmp_path / "missing.json") is None


def test_it_imports_the_standard_library_alone_so_any_trainer_can_load_it_by_its_path():
    tree = ast.parse(Path(o.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    assert names and all(name.split(".")[0] in sys.stdlib_module_names for name in names), names


def test_updates_read_as_ranges_and_lists_and_nothing_when_unreadable():
    assert o.updates_wanted("1-3,7") == {1, 2, 3, 7} and o.updates_wanted("5-5") == {5}
    assert o.updates_wanted("1-x") == set()


def test_a_stop_and_blocks_are_read_strictly():
    assert o.stop_asked("exit:5") == (o.EXIT, 5) and o.stop_asked("sigterm:1") == (o.SIGTERM, 1)
    assert o.stop_asked("exit:0") == (o.EXIT, 0)  # a resume ended before its first step: what it is fed
    assert o.stop_asked("sigterm:0") is None and o.stop_asked("exit:-1") is None
    assert o.stop_asked("halt:5") is None and o.stop_asked(None) is None
    assert o.blocks_asked("rng, optimizer,unknown") == {o.RNG_SETTERS, "optimizer"}


def test_a_stop_or_block_is_never_inherited_from_the_verifiers_own_environment():
    inherited = {o.STOP_ENV: "exit:1", o.BLOCK_ENV: "model"}
    env = o.environment(inherited, Path("/r"), "1-4")
    assert o.STOP_ENV not in env and o.BLOCK_ENV not in env and env[o.UPDATES_ENV] == "1-4"
    env = o.environment({}, Path("/r"), {2}, (o.SIGTERM, 3), ("rng",))
    assert (env[o.STOP_ENV], env[o.BLOCK_ENV]) == ("sigterm:3", "rng")


def test_records_compare_only_when_made_with_the_same_fingerprints(tmp_path):
    made = {"cpu": "xxh3-128", "device": "pk128/1"}
    records = []
    for name, fingerprint in (("a", made), ("b", made), ("c", {**made, "cpu": "sha256"}), ("d", None)):
        path = tmp_path / f"{name}.json"
        document = {"format": o.FORMAT, "updates": {}, **({o.FINGERPRINT: fingerprint} if fingerprint else {})}
        path.write_text(json.dumps(document))
        records.append(o.read(path))
    assert records[0].fingerprint == made and records[3].fingerprint is None
    assert o.incomparable(records[:2]) is None and o.incomparable([]) is None
    why = o.incomparable(records[:3])
    assert why is not None and "cpu sha256, device pk128/1 (c.json)" in why and "(a.json, b.json)" in why
    assert "unrecorded fingerprints (d.json)" in (o.incomparable([records[0], records[3]]) or "")


def test_each_moments_fields_are_the_keys_the_observer_writes_under_it():
    written = {
        o.START: {o.GENERATORS},
        o.FORWARD: {o.GENERATORS, o.BATCH, o.MODEL, o.ATTRIBUTES},
        o.LOSS: {o.VALUE, o.DIGEST, o.SCALE, o.TARGET},
        o.STEP: {o.OPTIMIZER, o.GROUPS, o.SCHEDULERS, o.SCALERS, o.AVERAGED, o.BACKWARDS, o.UNSEEN, o.MODULES},
        o.AFTER: {o.GENERATORS, o.GRADS, o.PARAMS},
    }
    read = o.Recorded()
    assert {moment: {f.name for f in dataclasses.fields(getattr(read, moment))} for moment in o.MOMENTS} == written
    assert all(read.held(moment, key) is None for moment, key in o.VALUED)
