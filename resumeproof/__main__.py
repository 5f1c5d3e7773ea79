"""`python -m resumeproof ...` is the `resumeproof` command."""

from resumeproof.cli import main

main()
