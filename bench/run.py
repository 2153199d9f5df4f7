"""Time kinedyn against MuJoCo and Pinocchio in one process: ``python -m bench.run``.

The same as ``kinedyn bench``; the harness is :mod:`kinedyn.cli.benchmark` (so the installed
package can run it). See docs/benchmarks.md for what is timed and how to read the table.
"""

import sys

from kinedyn.cli.benchmark import main

if __name__ == "__main__":
    sys.exit(main())
