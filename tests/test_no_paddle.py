"""The rules, the grid and the comparator import and run without Paddle."""

import subprocess
import sys

CODE = """
import sys
sys.modules['paddle'] = None  # any 'import paddle' now fails
from paddle_spmd_port.rules import layer_norm_infer_spmd, batch_norm_grad_infer_spmd, get_spmd_rule
from paddle_spmd_port.grid import grid_for
from paddle_spmd_port.outcome import port_outcome
from paddle_spmd_port.compare import compare
n = 0
for case in grid_for('layer_norm'):
    port_outcome(case); n += 1
print('ok', n)
"""


def test_port_runs_without_paddle():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ")


def test_infer_port_only_without_paddle():
    code = ("import sys; sys.modules['paddle'] = None\n"
            "from paddle_spmd_port.cli import main\n"
            "sys.exit(main(['infer', 'layer_norm', '--x-shape', '8,6', '--x-mapping', '0,-1', '--no-native']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "out out" in out.stdout and "[0,-1]" in out.stdout
