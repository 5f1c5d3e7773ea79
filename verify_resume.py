"""Prove that a training command resumes exactly: fresh processes, compared at atol 1e-12.

    python -B verify_resume.py --output runs/proof
    python -B verify_resume.py --output runs/mine --train-cmd "python -B my_train.py --config small.toml"
    python -B verify_resume.py --output runs/sweep --interrupt-at all --faults all --segments 3,3,4 --plot
    python -B verify_resume.py chaos --output runs/chaos --kills 20

The same as `resumeproof verify` and `resumeproof chaos` (resumeproof/cli/). Writes
DIR/verification.json; exit 0 passed, 1 a comparison failed, 2 verification could not be completed.
"""

from resumeproof.cli import verify_resume

if __name__ == "__main__":
    verify_resume()
