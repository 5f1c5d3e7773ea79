"""State the observer reads through a private key that this torch may not have (a GradScaler's `_growth_tracker`) is
recorded as unseen, not as a silent 0 that would call a lost growth tracker restored."""

from resumeproof.common import observation as o
from tests.observe.test_observer import LOOP, run

# A torch whose GradScaler keeps its growth tracker under another name: its state_dict has no `_growth_tracker`.
RENAMED = LOOP.replace(
    "scaler = torch.amp",
    "_sd = torch.amp.GradScaler.state_dict\n"
    "torch.amp.GradScaler.state_dict = lambda self: {k: v for k, v in _sd(self).items() if k != '_growth_tracker'}\n"
    "scaler = torch.amp",
)


def test_a_growth_tracker_the_state_dict_lacks_is_recorded_unseen_and_none(tmp_path):
    step = run(tmp_path, code=RENAMED, updates={2})["updates"]["2"][o.STEP]
    assert step[o.UNSEEN] == ["scaler.growth_tracker"]
    assert step[o.SCALERS] == [{"scale": 8.0, "growth_tracker": None}]


def test_a_growth_tracker_the_state_dict_holds_is_seen(tmp_path):
    step = run(tmp_path, updates={2})["updates"]["2"][o.STEP]
    assert step[o.UNSEEN] == [] and step[o.SCALERS] == [{"scale": 8.0, "growth_tracker": 1}]
