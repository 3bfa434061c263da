"""fused_rms_norm SPMD rule, Paddle-style (the layout of Paddle's test/auto_parallel/spmd_rules tests),
runnable unchanged against native Paddle and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_fused_rms_norm_rule.py

infer_forward(x, scale, epsilon) is RmsNormInferSpmd: the normalised last axis is replicated, out
takes x's mapping, invvar x's leading axes. infer_backward(x, scale, out, invvar, epsilon) is
RmsNormInferSpmdReverse: it does not read x's mapping, it merges out's leading axes with invvar.
epsilon must be passed, as a float (leaving it out kills Paddle's process). Expected values:
Paddle 3.3.1, mesh 2x3.
"""

import unittest
from collections import OrderedDict

from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


class TestFusedRmsNormSPMDRule(unittest.TestCase):
    def setUp(self):
        self.rule = core.get_phi_spmd_rule("fused_rms_norm")
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

        x_attr = TensorDistAttr()
        x_attr.process_mesh = self.mesh
        x_attr.dims_mapping = [-1, -1, -1]
        self.x_spec = DistTensorSpec([8, 6, 4], x_attr)

        self.scale_spec = DistTensorSpec(self.x_spec)
        self.scale_spec.shape = [4]
        self.scale_spec.set_dims_mapping([-1])

        self.out_spec = DistTensorSpec(self.x_spec)
        self.invvar_spec = DistTensorSpec(self.x_spec)
        self.invvar_spec.shape = [8, 6]
        self.invvar_spec.set_dims_mapping([-1, -1])

        self.attrs = OrderedDict([("epsilon", 1e-6)])

    def check(self, result, inputs, outputs):
        self.assertEqual(len(result), 2)
        self.assertEqual([a.dims_mapping for a in result[0]], inputs)
        self.assertEqual([a.dims_mapping for a in result[1]], outputs)

    def test_infer_forward(self):
        # ijk[0, 1, -1], k[-1] --> ijk[0, 1, -1], k[-1] (inputs); ijk[0, 1, -1], ij[0, 1] (outputs)
        self.x_spec.set_dims_mapping([0, 1, -1])
        result = self.rule.infer_forward(self.x_spec, self.scale_spec, self.attrs["epsilon"])
        self.check(result, [[0, 1, -1], [-1]], [[0, 1, -1], [0, 1]])

        # ijk[-1, 0, 1], k[1]: the last axis is replicated, scale too
        self.x_spec.set_dims_mapping([-1, 0, 1])
        self.scale_spec.set_dims_mapping([1])
        result = self.rule.infer_forward(self.x_spec, self.scale_spec, self.attrs["epsilon"])
        self.check(result, [[-1, 0, -1], [-1]], [[-1, 0, -1], [-1, 0]])

    def test_infer_forward_2d(self):
        self.x_spec.shape = [8, 4]
        self.x_spec.set_dims_mapping([1, 0])
        result = self.rule.infer_forward(self.x_spec, self.scale_spec, self.attrs["epsilon"])
        self.check(result, [[1, -1], [-1]], [[1, -1], [1]])

    def test_infer_backward(self):
        # out ijk[-1, 0, -1], invvar ij[1, -1] --> x, out ijk[1, 0, -1], invvar ij[1, 0] (x's own [0, -1, -1] unread)
        self.x_spec.set_dims_mapping([0, -1, -1])
        self.out_spec.set_dims_mapping([-1, 0, -1])
        self.invvar_spec.set_dims_mapping([1, -1])
        result = self.rule.infer_backward(
            self.x_spec, self.scale_spec, self.out_spec, self.invvar_spec, self.attrs["epsilon"]
        )
        self.check(result, [[1, 0, -1], [-1]], [[1, 0, -1], [1, 0]])

    def test_int_epsilon_is_a_cast_error(self):
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x_spec, self.scale_spec, 1)
        with self.assertRaises(ValueError):
            self.rule.infer_backward(self.x_spec, self.scale_spec, self.out_spec, self.invvar_spec, 1)


if __name__ == "__main__":
    unittest.main()
