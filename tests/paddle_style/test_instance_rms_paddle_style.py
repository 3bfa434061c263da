"""instance_norm and fused_rms_norm SPMD rules, written against Paddle's static auto-parallel API
so that the same file runs unchanged against native Paddle 3.3.1 and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_instance_rms_paddle_style.py

Every expected value below is what Paddle 3.3.1 answers (mesh 2x3).
"""

import unittest

from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


def make_spec(shape, dims_mapping, mesh, partial_dims=None):
    attr = TensorDistAttr()
    attr.process_mesh = mesh
    attr.dims_mapping = dims_mapping
    if partial_dims:
        attr._set_partial_dims(partial_dims)
    return DistTensorSpec(shape, attr)


def absent():
    return DistTensorSpec([0], TensorDistAttr())


class RuleTestCase(unittest.TestCase):
    def setUp(self):
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

    def assertMappings(self, attrs, expected):
        self.assertEqual([a.dims_mapping for a in attrs], expected)


class TestInstanceNorm(RuleTestCase):
    def setUp(self):
        super().setUp()
        self.rule = core.get_phi_spmd_rule("instance_norm")
        self.c = make_spec([6], [-1], self.mesh)

    def test_forward_keeps_n_and_c_and_a_5d_last_axis(self):
        x = make_spec([8, 6, 4, 4, 4], [0, -1, -1, -1, 1], self.mesh, [])
        result = self.rule.infer_forward(x, self.c, absent(), 1e-5)
        self.assertMappings(result[0], [[0, -1, -1, -1, 1], [-1], [-1]])
        self.assertMappings(result[1], [[0, -1, -1, -1, 1], [0, -1], [0, -1]])

    def test_forward_clears_partial(self):
        x = make_spec([8, 6, 4, 4], [-1, 1, -1, -1], self.mesh, [0])
        result = self.rule.infer_forward(x, self.c, self.c, 1e-5)
        self.assertFalse(any(a._is_partial() for a in result[0] + result[1]))
        self.assertMappings(result[1], [[-1, 1, -1, -1], [-1, 1], [-1, 1]])

    def test_backward_is_the_grad_rule(self):
        x = make_spec([8, 6, 4, 4], [0, 1, -1, -1], self.mesh)
        stat = make_spec([8, 6], [-1, -1], self.mesh)
        y_grad = make_spec([8, 6, 4, 4], [-1, -1, -1, 0], self.mesh)
        result = self.rule.infer_backward(x, self.c, self.c, stat, stat, y_grad, 1e-5)
        self.assertEqual(len(result[0]), 5)
        self.assertMappings(result[0], [[0, 1, -1, -1], [-1], [0, 1], [0, 1], [0, 1, -1, -1]])
        self.assertMappings(result[1], [[0, 1, -1, -1], [-1], [-1]])
        self.assertEqual(result[1][1]._partial_dims(), {0, 1})
        self.assertEqual(result[1][2]._partial_dims(), {0, 1})

    def test_int_epsilon_is_a_cast_error(self):
        x = make_spec([8, 6, 4, 4], [0, 1, -1, -1], self.mesh)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(x, self.c, self.c, 1)


class TestFusedRmsNorm(RuleTestCase):
    def setUp(self):
        super().setUp()
        self.rule = core.get_phi_spmd_rule("fused_rms_norm")
        self.scale = make_spec([4], [-1], self.mesh)

    def test_forward_replicates_the_last_axis(self):
        x = make_spec([8, 6, 4], [1, -1, 0], self.mesh)
        result = self.rule.infer_forward(x, self.scale, 1e-5)
        self.assertMappings(result[0], [[1, -1, -1], [-1]])
        self.assertMappings(result[1], [[1, -1, -1], [1, -1]])

    def test_backward_ignores_x_and_merges_out_with_invvar(self):
        x = make_spec([8, 6, 4], [0, 1, -1], self.mesh)
        out = make_spec([8, 6, 4], [-1, -1, 1], self.mesh)
        invvar = make_spec([8, 6], [0, -1], self.mesh)
        result = self.rule.infer_backward(x, self.scale, out, invvar, 1e-5)
        self.assertMappings(result[0], [[0, -1, -1], [-1]])
        self.assertMappings(result[1], [[0, -1, -1], [0, -1]])

    def test_missing_scale_fails_the_rank_check(self):
        x = make_spec([8, 6, 4], [0, -1, -1], self.mesh)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(x, absent(), 1e-5)


if __name__ == "__main__":
    unittest.main()
