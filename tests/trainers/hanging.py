"""Fault: the trainer never finishes, and neither does a child process it started.

With --timeout the verifier must kill the trainer's whole session (both processes) and exit 2.
The two pids are written to DIR/pids so that a test can check that nothing is left running.
"""

import os
import subprocess
import sys
import time

from _protocol_files import make_output, parse_args

args = parse_args()
make_output(args.output)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
(args.output / "pids").write_text(f"{os.getpid()}\n{child.pid}\n")
while True:
    time.sleep(60)
