"""kit.distributed's own flags: --reduction and --dist-timeout, refused alike by click and by the Options object."""

import click
import pytest
from click.testing import CliRunner

from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import distributed


def by_click(*argv: str) -> distributed.Options | str:
    """The Options a click command decorated with `distributed.click_options` receives, or its refusal's last line."""
    seen = []

    @click.command()
    @distributed.click_options
    def command(distributed: distributed.Options) -> None:
        seen.append(distributed)

    result = CliRunner().invoke(command, list(argv))
    return seen[0] if result.exit_code == 0 else result.output.strip().splitlines()[-1]


@pytest.mark.parametrize("given", ["inf", "-inf", "nan", "0", "-1", "soon"])
def test_a_timeout_that_is_not_a_finite_number_of_seconds_above_0_is_refused_by_the_flag_and_the_object(given):
    said = f"{given}: must be a finite number of seconds > 0"
    refused = by_click("--dist-timeout", given)
    assert isinstance(refused, str) and "--dist-timeout" in refused and said in refused, refused
    with pytest.raises(ResumeproofError, match=f"--dist-timeout {said}"):
        distributed.Options(timeout=given)  # a string: what a caller's own parser may hand over


def test_a_finite_timeout_and_a_known_reduction_reach_the_command():
    assert by_click("--dist-timeout", "2.5", "--reduction", "canonical") == distributed.Options(
        reduction="canonical", timeout=2.5
    )
    assert by_click() == distributed.Options(timeout=distributed.DEFAULT_TIMEOUT)


def test_an_unknown_reduction_is_refused_by_the_flag_and_the_object():
    assert "'sum' is not one of" in str(by_click("--reduction", "sum"))
    with pytest.raises(ResumeproofError, match="--reduction sum: one of ddp, canonical, fsdp, fsdp-canonical"):
        distributed.Options(reduction="sum")
