"""Where a Paddle-style rule test may take its meshes from, runnable unchanged against native Paddle
and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_mesh_paths_rule.py

The mesh class from the module that defines it (paddle.distributed.auto_parallel.process_mesh),
the core mesh (core.ProcessMesh), and a rule's answer, which natively is a core.ProcessMesh equal
to the mesh given, compared from either side; the rule itself is a core.SpmdRule. Expected values:
Paddle 3.3.1.
"""

import unittest

from paddle.distributed.auto_parallel.process_mesh import ProcessMesh
from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.framework import core


class TestMeshPaths(unittest.TestCase):
    def setUp(self):
        self.mesh = ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["x", "y"])
        a = TensorDistAttr()
        a.process_mesh = self.mesh
        a.dims_mapping = [0, -1, -1]
        self.x = DistTensorSpec([8, 4, 16], a)
        self.s = DistTensorSpec(self.x)
        self.s.shape = [16]
        self.s.set_dims_mapping([-1])

    def test_rule_is_a_core_spmd_rule(self):
        self.assertIsInstance(core.get_phi_spmd_rule("layer_norm"), core.SpmdRule)

    def test_result_mesh_is_a_core_mesh(self):
        r = core.get_phi_spmd_rule("layer_norm").infer_forward(self.x, self.s, self.s, 1e-5, 2)
        self.assertIsInstance(r[1][0].process_mesh, core.ProcessMesh)

    def test_mesh_equals_result_mesh(self):
        r = core.get_phi_spmd_rule("layer_norm").infer_forward(self.x, self.s, self.s, 1e-5, 2)
        self.assertEqual(self.mesh, r[1][0].process_mesh)
        self.assertEqual(r[1][0].process_mesh, self.mesh)

    def test_core_mesh_constructed(self):
        m = core.ProcessMesh([2, 3], [0, 1, 2, 3, 4, 5], ["x", "y"])
        a = TensorDistAttr()
        a.process_mesh = m
        a.dims_mapping = [1, -1]
        r = core.get_phi_spmd_rule("p_norm").infer_forward(DistTensorSpec([6, 4], a), 2.0, 0, 1e-12, False, False)
        self.assertEqual(r[1][0]._partial_dims(), {1})
        self.assertEqual(r[1][0].process_mesh, m)
        self.assertEqual(m, r[1][0].process_mesh)


if __name__ == "__main__":
    unittest.main()
