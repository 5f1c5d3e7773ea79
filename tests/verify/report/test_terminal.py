"""What the verifier prints on the terminal: the report's tables and notes, rendered from one Verification."""

import io

from rich.console import Console
from rich.table import Table

from resumeproof.common.protocol import RESUMED
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import Verification
from resumeproof.verify.vocabulary.findings import CONCORDANT, DIVERGENT, Resume

H200, A100 = {"name": "NVIDIA H200", "driver": "580.65"}, {"name": "NVIDIA A100", "driver": "570.1"}


def cells(table: Table) -> dict[str, list[str]]:
    """Each body row of a rendered table, by its first cell."""
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(table)
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.getvalue().splitlines() if "│" in line]
    return {row[0]: row[1:] for row in rows}


def resume(verdict: str, deviation: float, mismatches: int, first: str | None) -> Resume:
    return Resume(
        verdict=verdict,
        max_state_deviation=deviation,
        max_deviation=2 * deviation,
        final_mse=0.25,
        mse_deviation=deviation / 4,
        mismatches=mismatches,
        first_mismatch=first,
        diagnosis=None,
    )


def test_the_comparison_table_sets_every_measure_of_the_full_resume_beside_the_negative_control():
    full, negative = resume(CONCORDANT, 0.0, 0, None), resume(DIVERGENT, 0.5, 7, "history[5].loss")
    v = Verification(error=None, train_cmd="t", atol=1e-12, resumes={RESUMED: full}, negative=negative)
    rows = cells(terminal.comparison_table(v))
    assert rows["max |Δ| state (weights, moments, ...)"] == ["0", "0.5"]
    assert rows["max |Δ| anywhere (floats)"] == ["0", "1"]
    assert rows["mismatches"] == ["0", "7"]
    assert rows["final MSE"] == ["0.25", "0.25"] and rows["MSE deviation"] == ["0", "0.125"]
    assert rows["first mismatch"] == ["-", "history[5].loss"]
    assert rows["verdict"] == [CONCORDANT, DIVERGENT]


def test_trajectories_on_different_gpus_are_reported_as_a_resume_across_them():
    v = Verification(error=None, train_cmd="t", environment={"gpus": {"continuous": H200, "resumed": A100}})
    note = terminal.gpu_note(v)
    assert note is not None and "NVIDIA H200, 580.65" in note and "resumed: NVIDIA A100" in note
    assert terminal.gpu_note(Verification(error=None, train_cmd="t")) is None
