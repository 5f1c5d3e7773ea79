"""The kit's standard layout, held against the reference trainer: what `layout.validate` accepts and refuses.

A checkpoint that loads (tests/kit/test_checkpoint.py) must still be this run's: every section with
the right types, shapes and dtypes, every counter describing one instant, the same experiment, and
the same code, data and versions unless accepted. Each refusal is one line naming the file; the
checkpoints are the reference trainer's after 5 updates, tampered and re-saved with a valid sidecar.
"""

import copy
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import torch

from resumeproof import kit
from resumeproof.common.protocol import SCALER
from resumeproof.kit import checkpoint, layout
from resumeproof.kit.identity import versions
from resumeproof.kit.layout import (
    CONFIG,
    DATA,
    HISTORY,
    IDENTITY,
    MODEL,
    OPTIMIZER,
    PROGRESS,
    RNG,
    SCHEDULER,
    VERSIONS,
)
from resumeproof.reference import train
from tests.helpers import run_train
from tests.kit._checkpoint_files import CHECKPOINT, files_in, put, save_tampered

pytestmark = pytest.mark.xdist_group("layout")  # one worker: the module's runs are made once


def float64_build(exp: train.Experiment) -> layout.Training:
    """train.build as the trainer runs it: with float64 as torch's default dtype."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train.build(exp)
    finally:
        torch.set_default_dtype(default)


@pytest.fixture(scope="module")
def expected() -> layout.Expected:
    """What the reference trainer requires of a checkpoint, read off its freshly built objects."""
    exp = train.Experiment()
    identity = kit.identity(train.CODE, [train.DATA_FILE])
    return layout.Expected.of(float64_build(exp), asdict(exp), identity, exp.batch)


@pytest.fixture(scope="module")
def trained_state(interrupted_run: Path) -> dict[str, Any]:
    return torch.load(interrupted_run / CHECKPOINT, map_location="cpu", weights_only=True)


@pytest.fixture
def state(trained_state: dict[str, Any]) -> dict[str, Any]:
    """A private copy of the trainer's state after 5 updates, to tamper with."""
    return copy.deepcopy(trained_state)


def load(path: Path, expected: layout.Expected, override: bool = False) -> tuple[dict[str, Any], list[str]]:
    """What the trainer does with --resume: the checked load, then validation against the fresh build."""
    state = checkpoint.load(path)
    return state, layout.validate(path, state, expected, override)


def refusal(path: Path, expected: layout.Expected, override: bool = False) -> str:
    """Load and validate `path`; require a one-line CheckpointError naming it and no change to any file."""
    before = files_in(path.parent)
    with pytest.raises(checkpoint.CheckpointError) as caught:
        load(path, expected, override)
    message = str(caught.value)
    assert "\n" not in message, message
    assert str(path) in message, message
    assert files_in(path.parent) == before, "a refused load changed a file"
    return message


def test_trainer_checkpoint_is_accepted(interrupted_run: Path, expected: layout.Expected) -> None:
    state, overridden = load(interrupted_run / CHECKPOINT, expected)
    assert overridden == []
    assert state[PROGRESS]["step"] == 5


def test_saved_state_is_accepted_again(tmp_path: Path, state: dict[str, Any], expected: layout.Expected) -> None:
    assert load(save_tampered(tmp_path, state), expected)[1] == []


# -- refusals: a well-formed file with the wrong content ----------------------------------------


@pytest.mark.parametrize("key", sorted(layout.REQUIRED_KEYS))
def test_checkpoint_missing_a_top_level_key_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, key: str
) -> None:
    del state[key]
    assert f"missing {key}" in refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(
            put((MODEL, "hidden.weight"), torch.zeros(2, 8, dtype=torch.float64)),
            "model.hidden.weight is torch.float64 [2, 8], expected torch.float64 [8, 2]",
            id="model-tensor-of-wrong-shape",
        ),
        pytest.param(
            put((MODEL, "hidden.bias"), torch.zeros(8, dtype=torch.float32)),
            "model.hidden.bias is torch.float32 [8], expected torch.float64 [8]",
            id="model-tensor-of-wrong-dtype",
        ),
        pytest.param(put((MODEL, "out.bias"), [0.0]), "model.out.bias is a list, expected a tensor", id="model-list"),
        pytest.param(
            put((MODEL, "extra.weight"), torch.zeros(1, dtype=torch.float64)), "model holds", id="extra-param"
        ),
        pytest.param(
            put((OPTIMIZER, "state", 1, "exp_avg"), torch.zeros(9, dtype=torch.float64)),
            "optimizer.state.1.exp_avg is torch.float64 [9], expected torch.float64 [8]",
            id="optimizer-moment-of-wrong-shape",
        ),
        pytest.param(
            put((RNG, "torch"), torch.zeros(3, dtype=torch.uint8)),
            "generator 'torch' refuses its saved state",
            id="torch-rng-cut",
        ),
        pytest.param(put((RNG, "numpy", "bit_generator"), "MT19937"), "PCG64", id="numpy-rng-of-another-kind"),
        pytest.param(lambda state: state[RNG].pop("python"), "saved generators ['numpy', 'torch']", id="rng-missing"),
        pytest.param(
            put((DATA, "permutation"), torch.zeros(24, dtype=torch.int64)),
            "data.permutation is not a permutation of 0..23",
            id="permutation-with-repeats",
        ),
        pytest.param(put((layout.FORMAT_KEY,), "resumeproof-checkpoint/0"), "format is", id="other-format"),
        pytest.param(put((PROGRESS, "step"), -1), "progress.step must be a non-negative int", id="negative-step"),
    ],
)
def test_checkpoint_with_a_section_of_the_wrong_shape_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    assert problem in refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(
            put((SCHEDULER, "last_epoch"), 4), "scheduler.last_epoch is 4, progress.step is 5", id="scheduler"
        ),
        pytest.param(
            lambda state: state[HISTORY].pop(),
            "history does not hold exactly the records of steps 1..5",
            id="history-one-record-short",
        ),
        pytest.param(
            lambda state: state[HISTORY].__setitem__(4, dict(state[HISTORY][3])),
            "history does not hold exactly the records of steps 1..5",
            id="history-record-repeated",
        ),
        pytest.param(put((PROGRESS, "step"), 6), "history does not hold", id="progress-step-ahead"),
        pytest.param(
            put((OPTIMIZER, "state", 2, "step"), torch.tensor(4.0, dtype=torch.float64)),
            "optimizer.state.2.step is 4.0, progress.step is 5",
            id="optimizer-step-behind",
        ),
        pytest.param(put((OPTIMIZER, "state"), {}), "optimizer state is empty after 5 updates", id="optimizer-reset"),
        pytest.param(
            put((DATA, "cursor"), 16),
            "data position (epoch 0, cursor 16) is not where step 5 ends",
            id="data-cursor-one-batch-behind",
        ),
        pytest.param(put((DATA, "epoch"), 1), "data position (epoch 1, cursor 20)", id="data-one-epoch-ahead"),
    ],
)
def test_checkpoint_with_inconsistent_progress_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    assert problem in refusal(save_tampered(tmp_path, state), expected)


IDENTITY_FIELDS = [
    pytest.param(IDENTITY, "data_sha256", id="another-data-set"),
    pytest.param(IDENTITY, "code_sha256", id="another-code-version"),
    pytest.param(VERSIONS, "torch", id="another-torch"),
]


@pytest.mark.parametrize(("section", "key"), IDENTITY_FIELDS)
def test_checkpoint_from_other_data_or_code_is_refused_without_override(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, section: str, key: str
) -> None:
    state[section][key] = "0" * 64
    message = refusal(save_tampered(tmp_path, state), expected)
    assert f"{key}: checkpoint '{'0' * 64}'" in message, message
    assert "--override-identity" in message, message


@pytest.mark.parametrize(("section", "key"), IDENTITY_FIELDS)
def test_override_accepts_other_data_or_code_and_returns_the_differences(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, section: str, key: str
) -> None:
    state[section][key] = "0" * 64
    loaded, differences = load(save_tampered(tmp_path, state), expected, override=True)
    current = {**expected.identity, **versions()}[key]
    assert differences == [f"{key}: checkpoint {'0' * 64!r}, current {current!r}"]
    assert loaded[section][key] == "0" * 64


@pytest.mark.parametrize("override", [False, True], ids=["without-override", "with-override"])
@pytest.mark.parametrize(("key", "value", "problem"), [("lr", 0.1, "lr=0.1 (now 0.03)"), ("seed", 1, "seed=1 (now 0)")])
def test_checkpoint_of_another_experiment_is_refused_even_with_override(
    tmp_path: Path,
    state: dict[str, Any],
    expected: layout.Expected,
    override: bool,
    key: str,
    value: object,
    problem: str,
) -> None:
    state[CONFIG][key] = value
    message = refusal(save_tampered(tmp_path, state), expected, override=override)
    assert f"written by another experiment: {problem}" in message, message


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(put((SCHEDULER, "gamma"), 2.0), "scheduler gamma is 2.0, this experiment has 0.5", id="gamma"),
        pytest.param(put((SCHEDULER, "step_size"), 4), "scheduler step_size is 4", id="step-size"),
        pytest.param(put((SCHEDULER, "base_lrs"), [0.1]), "scheduler base_lrs is [0.1]", id="base-lrs"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "betas"), (0.8, 0.999)), "optimizer betas", id="betas"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "initial_lr"), 0.1), "optimizer initial_lr", id="initial-lr"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "eps"), 1e-6), "optimizer eps", id="eps"),
    ],
)
def test_checkpoint_whose_hyperparameters_differ_from_a_fresh_build_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    message = refusal(save_tampered(tmp_path, state), expected, override=True)  # no override for these
    assert problem in message, message


# -- malformed sections and generator states are refused at load, not mid-resume -----------------


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(put((OPTIMIZER, "param_groups"), [5]), id="param-group-not-a-dict"),
        pytest.param(put((OPTIMIZER, "state", 0), 5), id="optimizer-moments-not-a-dict"),
        pytest.param(put((CONFIG, "lr"), torch.ones(2)), id="config-value-a-tensor"),
    ],
)
def test_malformed_section_is_refused_as_checkpoint_error(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable
) -> None:
    tamper(state)
    refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(put((RNG, "numpy"), {"bit_generator": "PCG64"}), id="numpy-state-without-state"),
        pytest.param(put((RNG, "python"), (3, (-1,) * 625, None)), id="python-words-negative"),
        pytest.param(
            lambda state: put((RNG, "python"), (9, *state[RNG]["python"][1:]))(state), id="python-state-version-9"
        ),
        pytest.param(lambda state: state[RNG]["torch"].fill_(255), id="torch-state-garbage"),
    ],
)
def test_rng_state_that_cannot_be_restored_is_refused_at_load(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable
) -> None:
    tamper(state)
    try:  # control: resuming from it would crash after load
        float64_build(train.Experiment()).generators.restore(state[RNG])
        restorable = True
    except kit.ResumeproofError:
        restorable = False
    assert not restorable
    refusal(save_tampered(tmp_path, state), expected)


def test_refusal_quoting_a_large_tensor_is_still_one_line(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected
) -> None:
    state[OPTIMIZER]["state"][0]["step"] = torch.full((100,), 5.0, dtype=torch.float64)
    refusal(save_tampered(tmp_path, state), expected)


# -- the scaler: AMP's GradScaler, a part where a run has one, and nowhere else -----------------------------------


def fp16_build() -> layout.Training:
    """train.build at --precision fp16, as the trainer runs it: float32 weights, an enabled GradScaler on the CPU."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:
        return train.build(train.Experiment(precision="fp16"))
    finally:
        torch.set_default_dtype(default)


@pytest.fixture(scope="module")
def fp16_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference trainer at --precision fp16 (autocast on the CPU, a GradScaler), 5 updates."""
    out = tmp_path_factory.mktemp("fp16") / "interrupted"
    proc = run_train("--steps", "5", "--output", out, "--precision", "fp16")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def fp16_expected() -> layout.Expected:
    exp = train.Experiment(precision="fp16")
    return layout.Expected.of(fp16_build(), asdict(exp), kit.identity(train.CODE, [train.DATA_FILE]), exp.batch)


@pytest.fixture
def fp16_state(fp16_run: Path) -> dict[str, Any]:
    return torch.load(fp16_run / CHECKPOINT, map_location="cpu", weights_only=True)


def test_only_a_run_with_a_gradscaler_has_the_scaler_part() -> None:
    assert layout.parts(("numpy", "torch")) == (MODEL, OPTIMIZER, SCHEDULER, "rng-numpy", "rng-torch", DATA, PROGRESS)
    assert layout.parts(("numpy", "torch"), scaler=True)[-1] == SCALER
    assert not float64_build(train.Experiment()).has_scaler  # a disabled GradScaler is no scaler
    assert fp16_build().has_scaler


def test_capture_and_restore_carry_the_scaler_and_omitting_it_leaves_it_as_built() -> None:
    trained = fp16_build()
    trained.scaler.load_state_dict({**trained.scaler.state_dict(), "scale": 2048.0, "_growth_tracker": 3})
    state = layout.capture(trained, {}, {}, [])
    assert state[SCALER] == {**trained.scaler.state_dict(), "scale": 2048.0, "_growth_tracker": 3}
    resumed, careless = fp16_build(), fp16_build()
    built = careless.scaler.state_dict()
    layout.restore(state, resumed)
    layout.restore(state, careless, omit={SCALER})
    assert resumed.scaler.state_dict() == state[SCALER]
    assert careless.scaler.state_dict() == built and built["scale"] == 256.0
    assert SCALER not in layout.capture(float64_build(train.Experiment()), {}, {}, [])


def test_an_fp16_checkpoint_is_accepted_with_its_scaler(fp16_run: Path, fp16_expected: layout.Expected) -> None:
    state, overridden = load(fp16_run / CHECKPOINT, fp16_expected)
    assert overridden == [] and state[SCALER]["scale"] == 512.0 and state[SCALER]["_growth_tracker"] == 1


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(lambda state: state.pop(SCALER), "missing scaler (this run has a GradScaler", id="missing"),
        pytest.param(put((SCALER,), [512.0]), "scaler is a list, expected a dict", id="not-a-dict"),
        pytest.param(put((SCALER, "scale"), -1.0), "scaler.scale is -1.0, expected a finite number > 0", id="negative"),
        pytest.param(put((SCALER, "scale"), float("inf")), "scaler.scale is inf", id="infinite"),
        pytest.param(put((SCALER, "scale"), "512"), "scaler.scale is '512'", id="text"),
        pytest.param(put((SCALER, "_growth_tracker"), -1), "scaler._growth_tracker is -1", id="tracker-negative"),
        pytest.param(
            put((SCALER, "growth_interval"), 2000),
            "scaler growth_interval is 2000, this experiment has 4",
            id="another-growth-interval",
        ),
        pytest.param(put((SCALER, "backoff_factor"), 0.25), "scaler backoff_factor is 0.25", id="another-backoff"),
    ],
)
def test_an_fp16_checkpoint_without_a_sound_scaler_state_is_refused(
    tmp_path: Path, fp16_state: dict[str, Any], fp16_expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(fp16_state)
    assert problem in refusal(save_tampered(tmp_path, fp16_state), fp16_expected)


def test_a_scaler_state_in_a_checkpoint_of_a_run_without_a_gradscaler_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected
) -> None:
    state[SCALER] = {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 4}
    message = refusal(save_tampered(tmp_path, state), expected)
    assert "scaler: holds a GradScaler's state, and this run has no GradScaler" in message, message


@pytest.mark.parametrize(
    ("tamper", "accepted"),
    [
        pytest.param(put((OPTIMIZER, "state", 0, "step"), torch.tensor(4.0)), True, id="one-update-skipped"),
        pytest.param(put((OPTIMIZER, "state"), {}), True, id="every-update-skipped"),
        pytest.param(put((OPTIMIZER, "state", 0, "step"), torch.tensor(6.0)), False, id="ahead-of-the-updates"),
        pytest.param(put((OPTIMIZER, "state", 0, "step"), torch.tensor(-1.0)), False, id="negative"),
    ],
)
def test_with_a_gradscaler_the_optimizer_may_trail_the_updates_it_skipped_but_never_lead(
    tmp_path: Path, fp16_state: dict[str, Any], fp16_expected: layout.Expected, tamper: Callable, accepted: bool
) -> None:
    """A GradScaler skips optimizer.step() when a gradient overflowed: Adam's count then trails progress.step."""
    tamper(fp16_state)
    path = save_tampered(tmp_path, fp16_state)
    if accepted:
        assert load(path, fp16_expected)[1] == []
    else:
        assert "optimizer.state.0.step is" in refusal(path, fp16_expected)
