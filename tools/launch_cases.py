#!/usr/bin/env python
"""Real multi-process runs checked against the port; same as ``python -m paddle_spmd_port launch``.

    python tools/launch_cases.py --nproc 2                  # 1-D mesh, CPU/gloo
    python tools/launch_cases.py --nproc 4                  # 2x2 mesh
    python tools/launch_cases.py --nproc 2 --device gpu     # NCCL, adds the GPU-only cases
"""

import sys

from paddle_spmd_port.launch.cli import main

if __name__ == "__main__":
    sys.exit(main())
