"""p_norm SPMD rule, Paddle-style (the layout of Paddle's test/auto_parallel/spmd_rules tests),
runnable unchanged against native Paddle and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_p_norm_rule.py

The registry's p_norm reduces one axis (or every axis with asvector): x keeps its mapping and out
is Partial(SUM) on the mesh dims that split a reduced axis, whatever porder; the reverse rule
infers x from out, -1 on the reduced axes. Expected values: Paddle 3.3.1, mesh 2x3.
"""

import unittest

from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


class TestPNormSPMDRule(unittest.TestCase):
    def setUp(self):
        self.rule = core.get_phi_spmd_rule("p_norm")
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

        x_attr = TensorDistAttr()
        x_attr.process_mesh = self.mesh
        x_attr.dims_mapping = [-1, -1, -1]
        self.x_spec = DistTensorSpec([4, 6, 8], x_attr)
        self.out_spec = DistTensorSpec(self.x_spec)

    def test_infer_forward_split_reduced_axis(self):
        # x[0, 1, -1], axis 1 --> x[0, 1, -1]; out[0, -1] partial on mesh dim 1
        self.x_spec.set_dims_mapping([0, 1, -1])
        inputs, outputs = self.rule.infer_forward(self.x_spec, 2.0, 1, 1e-12, False, False)
        self.assertEqual(inputs[0].dims_mapping, [0, 1, -1])
        self.assertEqual(outputs[0].dims_mapping, [0, -1])
        self.assertTrue(outputs[0]._is_partial())
        self.assertEqual(outputs[0]._partial_dims(), {1})

    def test_infer_forward_keepdims_kept_axis(self):
        # x[0, 1, -1], axis -1, keepdims --> out[0, 1, -1], no partial (the reduced axis was replicated)
        self.x_spec.set_dims_mapping([0, 1, -1])
        _, outputs = self.rule.infer_forward(self.x_spec, 1.0, -1, 1e-12, True, False)
        self.assertEqual(outputs[0].dims_mapping, [0, 1, -1])
        self.assertFalse(outputs[0]._is_partial())

    def test_infer_forward_asvector(self):
        # every axis reduced: out is 0-D, partial on both mesh dims
        self.x_spec.set_dims_mapping([0, 1, -1])
        _, outputs = self.rule.infer_forward(self.x_spec, 2.0, 0, 1e-12, False, True)
        self.assertEqual(outputs[0].dims_mapping, [])
        self.assertEqual(outputs[0]._partial_dims(), {0, 1})

    def test_infer_backward(self):
        # out[1, 0], axis 1 --> x[1, -1, 0]; out as given
        self.out_spec.shape = [4, 8]
        self.out_spec.set_dims_mapping([1, 0])
        inputs, outputs = self.rule.infer_backward(self.x_spec, self.out_spec, 2.0, 1, 1e-12, False, False)
        self.assertEqual(inputs[0].dims_mapping, [1, -1, 0])
        self.assertEqual(outputs[0].dims_mapping, [1, 0])

    def test_infer_backward_forced_axes_conflict(self):
        # keepdims asvector: the size-1 axes of out share one key; split along two mesh dims they conflict
        self.out_spec.shape = [1, 1, 1]
        self.out_spec.set_dims_mapping([1, 0, -1])
        with self.assertRaises(NotImplementedError):
            self.rule.infer_backward(self.x_spec, self.out_spec, 2.0, 1, 1e-12, True, True)


if __name__ == "__main__":
    unittest.main()
