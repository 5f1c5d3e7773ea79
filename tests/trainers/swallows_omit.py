"""Fault: the founding-contract trainer, parsing its flags with `parse_known_args`.

argparse accepts abbreviations by default, so `--omit PART` would read as `--omit-rng-restore` and
the unknown `PART` would be dropped: every fault run would silently become a resume without RNG
restore, which diverges, and the fault matrix would report a catch that never happened. The
verifier passes `--omit=PART` as one token, which argparse refuses for a flag that takes no value
(exit 2), and it requires the trainer to echo the omitted part in meta.omitted.
"""

from founding_contract import parser, run

args, _ignored = parser().parse_known_args()  # the trap: unknown arguments are dropped, not refused
run(args)
