"""Hold a release profile's known differences to a measured baseline diff (parity/crosscheck.py).

    .venv/bin/python tools/release_crosscheck.py reports/diff-3.1.0/baseline.json [--release 3.1.0] [--json FILE]

The diff: a baseline saved under the release (``parity --save-baseline FILE``), diffed under 3.3.1
(``parity --baseline FILE``), or the other way round. Prints, per known difference and rule, the
changed cases it explains (by route), then every changed case no difference explains and every
listed difference no changed case shows. Exit 0 the profile accounts for the diff exactly, 1 an
unexplained case or an unobserved difference, 2 bad input, 3 the diff itself was incomplete.
How the releases were measured: docs/measurements/2026-12-01-release-diffs.md.
"""

from __future__ import annotations

import sys

from paddle_spmd_port.parity.crosscheck import main

if __name__ == "__main__":
    sys.exit(main())
