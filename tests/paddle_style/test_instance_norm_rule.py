"""instance_norm SPMD rule, Paddle-style (the layout of Paddle's test/auto_parallel/spmd_rules tests),
runnable unchanged against native Paddle and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_instance_norm_rule.py

infer_forward(x, scale, bias, epsilon) keeps x's N and C axes and clears H and W (a 5-D x keeps its
last axis: the rule clears axes 2 and 3 by index); saved_mean/saved_variance are [N, C].
infer_backward is the grad rule (x, scale, bias, saved_mean, saved_variance, y_grad, epsilon).
Only 4-D and 5-D x are used: a 2-D or 3-D x corrupts Paddle's heap. Expected values: Paddle 3.3.1,
mesh 2x3.
"""

import unittest
from collections import OrderedDict

from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


class TestInstanceNormSPMDRule(unittest.TestCase):
    def setUp(self):
        self.rule = core.get_phi_spmd_rule("instance_norm")
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

        x_attr = TensorDistAttr()
        x_attr.process_mesh = self.mesh
        x_attr.dims_mapping = [-1, -1, -1, -1]
        self.x_spec = DistTensorSpec([8, 6, 4, 4], x_attr)

        self.scale_spec = DistTensorSpec(self.x_spec)
        self.scale_spec.shape = [6]
        self.scale_spec.set_dims_mapping([-1])
        self.bias_spec = DistTensorSpec(self.scale_spec)

        self.mean_spec = DistTensorSpec(self.x_spec)
        self.mean_spec.shape = [8, 6]
        self.mean_spec.set_dims_mapping([-1, -1])
        self.var_spec = DistTensorSpec(self.mean_spec)
        self.y_grad_spec = DistTensorSpec(self.x_spec)

        self.attrs = OrderedDict([("epsilon", 1e-5)])

    def check(self, result, inputs, outputs):
        self.assertEqual(len(result), 2)
        self.assertEqual([a.dims_mapping for a in result[0]], inputs)
        self.assertEqual([a.dims_mapping for a in result[1]], outputs)

    def forward(self):
        return self.rule.infer_forward(self.x_spec, self.scale_spec, self.bias_spec, self.attrs["epsilon"])

    def backward(self):
        return self.rule.infer_backward(
            self.x_spec,
            self.scale_spec,
            self.bias_spec,
            self.mean_spec,
            self.var_spec,
            self.y_grad_spec,
            self.attrs["epsilon"],
        )

    def test_infer_forward(self):
        # nchw[1, 0, -1, -1], c[0], c[0] -->
        # nchw[1, 0, -1, -1], c[-1], c[-1] (inputs)
        # nchw[1, 0, -1, -1], nc[1, 0], nc[1, 0] (outputs)
        self.x_spec.set_dims_mapping([1, 0, -1, -1])
        self.scale_spec.set_dims_mapping([0])
        self.bias_spec.set_dims_mapping([0])
        self.check(
            self.forward(),
            [[1, 0, -1, -1], [-1], [-1]],
            [[1, 0, -1, -1], [1, 0], [1, 0]],
        )

        # nchw[-1, -1, 0, 1]: the spatial axes are cleared
        self.x_spec.set_dims_mapping([-1, -1, 0, 1])
        self.check(
            self.forward(),
            [[-1, -1, -1, -1], [-1], [-1]],
            [[-1, -1, -1, -1], [-1, -1], [-1, -1]],
        )

    def test_infer_forward_5d_keeps_the_last_axis(self):
        # ncdhw[-1, 1, -1, 0, -1] --> axis 3 cleared; ncdhw[0, -1, -1, -1, 1] --> axis 4 kept
        self.x_spec.shape = [8, 6, 4, 4, 4]
        self.x_spec.set_dims_mapping([-1, 1, -1, 0, -1])
        self.check(
            self.forward(),
            [[-1, 1, -1, -1, -1], [-1], [-1]],
            [[-1, 1, -1, -1, -1], [-1, 1], [-1, 1]],
        )
        self.x_spec.set_dims_mapping([0, -1, -1, -1, 1])
        self.check(
            self.forward(),
            [[0, -1, -1, -1, 1], [-1], [-1]],
            [[0, -1, -1, -1, 1], [0, -1], [0, -1]],
        )

    def test_infer_forward_without_scale_and_bias(self):
        self.x_spec.set_dims_mapping([0, 1, -1, -1])
        self.scale_spec = DistTensorSpec([0], TensorDistAttr())
        self.bias_spec = DistTensorSpec([0], TensorDistAttr())
        result = self.forward()
        self.assertEqual(result[0][0].dims_mapping, [0, 1, -1, -1])
        self.assertEqual([a.dims_mapping for a in result[1]], [[0, 1, -1, -1], [0, 1], [0, 1]])

    def test_infer_backward(self):
        # x nchw[0, -1, -1, -1], y_grad nchw[-1, 1, -1, -1], stats nc[-1, -1] -->
        # x, y_grad nchw[0, -1, -1, -1], stats nc[0, -1] (inputs: x's N and C decide, y_grad's C is not merged)
        # x_grad nchw[0, -1, -1, -1], scale_grad, bias_grad c[-1] partial on mesh dim 0 (outputs)
        self.x_spec.set_dims_mapping([0, -1, -1, -1])
        self.y_grad_spec.set_dims_mapping([-1, 1, -1, -1])
        result = self.backward()
        self.check(
            result,
            [[0, -1, -1, -1], [-1], [0, -1], [0, -1], [0, -1, -1, -1]],
            [[0, -1, -1, -1], [-1], [-1]],
        )
        self.assertEqual(result[1][1]._partial_dims(), {0})
        self.assertEqual(result[1][2]._partial_dims(), {0})

        # everything replicated --> nothing partial
        self.x_spec.set_dims_mapping([-1, -1, -1, -1])
        self.y_grad_spec.set_dims_mapping([-1, -1, 0, -1])
        result = self.backward()
        self.check(
            result,
            [[-1, -1, -1, -1], [-1], [-1, -1], [-1, -1], [-1, -1, -1, -1]],
            [[-1, -1, -1, -1], [-1], [-1]],
        )
        self.assertFalse(any(a._is_partial() for a in result[1]))

    def test_rank_checks_raise(self):
        self.scale_spec.shape = [6, 2]
        self.scale_spec.set_dims_mapping([-1, -1])
        with self.assertRaises(ValueError):
            self.forward()
        self.setUp()
        self.mean_spec.shape = [8, 6, 2]
        self.mean_spec.set_dims_mapping([-1, -1, -1])
        with self.assertRaises(ValueError):
            self.backward()

    def test_int_epsilon_is_a_cast_error(self):
        self.attrs["epsilon"] = 1
        with self.assertRaises(ValueError):
            self.forward()
        with self.assertRaises(ValueError):
            self.backward()


if __name__ == "__main__":
    unittest.main()
