"""group_norm SPMD rule, Paddle-style (the layout of Paddle's test/auto_parallel/spmd_rules tests),
runnable unchanged against native Paddle and paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_group_norm_rule.py

The registry's group_norm runs GroupNormInferSpmdBase: only x's batch axis keeps its mesh dim,
mean/variance come back [N, groups] with that dim on axis 0, partial status is cleared, and
epsilon, groups and data_format are not read. Expected values: Paddle 3.3.1, mesh 2x3.
"""

import unittest
from collections import OrderedDict

from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


class TestGroupNormSPMDRule(unittest.TestCase):
    def setUp(self):
        self.rule = core.get_phi_spmd_rule("group_norm")
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

        x_attr = TensorDistAttr()
        x_attr.process_mesh = self.mesh
        x_attr.dims_mapping = [-1, -1, -1, -1]
        self.x_spec = DistTensorSpec([8, 6, 4, 4], x_attr)

        self.scale_spec = DistTensorSpec(self.x_spec)
        self.scale_spec.shape = [6]
        self.scale_spec.set_dims_mapping([-1])
        self.bias_spec = DistTensorSpec(self.scale_spec)

        self.attrs = OrderedDict([("epsilon", 1e-5), ("groups", 2), ("data_format", "NCHW")])

    def infer(self):
        return self.rule.infer_forward(
            self.x_spec,
            self.scale_spec,
            self.bias_spec,
            self.attrs["epsilon"],
            self.attrs["groups"],
            self.attrs["data_format"],
        )

    def check(self, result, inputs, outputs):
        self.assertEqual(len(result), 2)
        self.assertEqual([a.dims_mapping for a in result[0]], inputs)
        self.assertEqual([a.dims_mapping for a in result[1]], outputs)

    def test_infer_forward(self):
        # nchw[0, 1, -1, -1], c[1], c[1] -->
        # nchw[0, -1, -1, -1], c[-1], c[-1] (inputs)
        # nchw[0, -1, -1, -1], ng[0, -1], ng[0, -1] (outputs)
        self.x_spec.set_dims_mapping([0, 1, -1, -1])
        self.scale_spec.set_dims_mapping([1])
        self.bias_spec.set_dims_mapping([1])
        self.check(
            self.infer(),
            [[0, -1, -1, -1], [-1], [-1]],
            [[0, -1, -1, -1], [0, -1], [0, -1]],
        )

        # nchw[-1, 0, 1, -1] --> nothing kept: the batch axis is replicated
        self.x_spec.set_dims_mapping([-1, 0, 1, -1])
        self.check(
            self.infer(),
            [[-1, -1, -1, -1], [-1], [-1]],
            [[-1, -1, -1, -1], [-1, -1], [-1, -1]],
        )

    def test_infer_forward_ignores_its_attributes(self):
        # nhwc[1, 0, -1, -1]: channel-last, groups 3 (not dividing C), any data_format string
        self.x_spec.set_dims_mapping([1, 0, -1, -1])
        for attrs in (
            (1e-5, 3, "NHWC"),
            (0.5, 0, "not a layout"),
            (1e-5, -1, ""),
        ):
            self.attrs = OrderedDict(zip(("epsilon", "groups", "data_format"), attrs, strict=True))
            self.check(
                self.infer(),
                [[1, -1, -1, -1], [-1], [-1]],
                [[1, -1, -1, -1], [1, -1], [1, -1]],
            )
        # and none at all
        result = self.rule.infer_forward(self.x_spec, self.scale_spec, self.bias_spec)
        self.check(
            result,
            [[1, -1, -1, -1], [-1], [-1]],
            [[1, -1, -1, -1], [1, -1], [1, -1]],
        )

    def test_infer_forward_3d_and_5d(self):
        # ncl[1, -1, 0]
        self.x_spec.shape = [8, 6, 4]
        self.x_spec.set_dims_mapping([1, -1, 0])
        self.attrs["data_format"] = "NCL"
        self.check(
            self.infer(),
            [[1, -1, -1], [-1], [-1]],
            [[1, -1, -1], [1, -1], [1, -1]],
        )
        # ncdhw[-1, -1, -1, -1, 1], bias c[0]
        self.x_spec.shape = [8, 6, 4, 4, 4]
        self.x_spec.set_dims_mapping([-1, -1, -1, -1, 1])
        self.bias_spec.set_dims_mapping([0])
        self.attrs["data_format"] = "NCDHW"
        self.check(
            self.infer(),
            [[-1, -1, -1, -1, -1], [-1], [-1]],
            [[-1, -1, -1, -1, -1], [-1, -1], [-1, -1]],
        )

    def test_infer_forward_without_scale_and_bias(self):
        self.x_spec.shape = [8, 6, 4]
        self.x_spec.set_dims_mapping([1, -1, 0])
        self.scale_spec = DistTensorSpec([0], TensorDistAttr())
        self.bias_spec = DistTensorSpec([0], TensorDistAttr())
        self.attrs["data_format"] = "NCL"
        self.check(
            self.infer(),
            [[1, -1, -1], [-1], [-1]],
            [[1, -1, -1], [1, -1], [1, -1]],
        )

    def test_infer_forward_clears_partial(self):
        x_attr = TensorDistAttr()
        x_attr.process_mesh = self.mesh
        x_attr.dims_mapping = [0, -1, -1, -1]
        x_attr._set_partial_dims([1])
        self.x_spec = DistTensorSpec([8, 6, 4, 4], x_attr)
        result = self.infer()
        self.check(
            result,
            [[0, -1, -1, -1], [-1], [-1]],
            [[0, -1, -1, -1], [0, -1], [0, -1]],
        )
        self.assertFalse(any(a._is_partial() for a in result[0] + result[1]))

    def test_x_rank_out_of_range_raises(self):
        for shape in ([8, 6], [8, 6, 4, 4, 4, 4]):
            self.x_spec.shape = shape
            self.x_spec.set_dims_mapping([-1] * len(shape))
            with self.assertRaises(ValueError):
                self.infer()

    def test_infer_backward_is_not_registered(self):
        with self.assertRaises(RuntimeError):
            self.rule.infer_backward(
                self.x_spec,
                self.scale_spec,
                self.bias_spec,
                self.x_spec,
                self.x_spec,
                self.x_spec,
                self.x_spec,
                self.attrs["epsilon"],
                self.attrs["groups"],
                self.attrs["data_format"],
            )


if __name__ == "__main__":
    unittest.main()
