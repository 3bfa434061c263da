"""Call forms a Paddle-style rule test may use, runnable unchanged against native Paddle and
paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_call_forms_rule.py

Specs reused from setUp with mappings the rule never reads (Paddle's own p_norm test does this),
tuples, ranges and numpy values where the binding takes a list, the bookkeeping fields of an attr,
and the attribute forms the binding refuses (keywords, tuples, numpy scalars). Expected values:
Paddle 3.3.1, mesh 2x3 unless said.
"""

import unittest

import numpy as np
from paddle.distributed.auto_parallel.static.dist_attribute import (
    DistTensorSpec,
    TensorDistAttr,
)
from paddle.distributed.fleet import auto
from paddle.framework import core


def make_spec(shape, dims_mapping, mesh):
    attr = TensorDistAttr()
    attr.process_mesh = mesh
    attr.dims_mapping = dims_mapping
    return DistTensorSpec(shape, attr)


class TestStaleSpecs(unittest.TestCase):
    def setUp(self):
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])
        self.x_spec = make_spec([8, 4, 16], [1, -1, -1], self.mesh)
        # copies of x whose shape changes without a new mapping: the mapping keeps x's 3 entries
        self.scale_spec = DistTensorSpec(self.x_spec)
        self.scale_spec.shape = [16]
        self.bias_spec = DistTensorSpec(self.scale_spec)

    def test_layer_norm_forward_ignores_stale_scale_and_bias(self):
        result = core.get_phi_spmd_rule("layer_norm").infer_forward(
            self.x_spec, self.scale_spec, self.bias_spec, 1e-5, 2
        )
        self.assertEqual([a.dims_mapping for a in result[0]], [[1, -1, -1], [-1], [-1]])
        self.assertEqual([a.dims_mapping for a in result[1]], [[1, -1, -1], [1, -1], [1, -1]])

    def test_group_norm_forward_ignores_stale_scale(self):
        x = make_spec([8, 6, 4, 4], [0, 1, -1, -1], self.mesh)
        w = DistTensorSpec(x)
        w.shape = [6]
        result = core.get_phi_spmd_rule("group_norm").infer_forward(x, w, w, 1e-5, 2, "NCHW")
        self.assertEqual([a.dims_mapping for a in result[1]], [[0, -1, -1, -1], [0, -1], [0, -1]])

    def test_p_norm_reverse_ignores_x_outside_the_mesh(self):
        mesh = auto.ProcessMesh(mesh=[0, 1, 2, 3])
        x = make_spec([64, 32], [1, 0], mesh)  # mesh dim 1 does not exist: never read by the reverse rule
        out = DistTensorSpec(x)
        out.shape = [64]
        out.set_dims_mapping([0])
        inputs, outputs = core.get_phi_spmd_rule("p_norm").infer_backward(x, out, 2.0, 1, 1e-12, False, False)
        self.assertEqual(inputs[0].dims_mapping, [0, -1])
        self.assertEqual(outputs[0].dims_mapping, [0])

    def test_rms_norm_reverse_ignores_x_values_but_not_its_length(self):
        rule = core.get_phi_spmd_rule("fused_rms_norm")
        out = make_spec([8, 4, 16], [-1, 1, -1], self.mesh)
        invvar = make_spec([8, 4], [0, -1], self.mesh)
        self.x_spec.set_dims_mapping([0, 0, 0])
        inputs, outputs = rule.infer_backward(self.x_spec, make_spec([16], [-1], self.mesh), out, invvar, 1e-6)
        self.assertEqual(inputs[0].dims_mapping, [0, 1, -1])
        self.assertEqual([a.dims_mapping for a in outputs], [[0, 1, -1], [0, 1]])
        self.x_spec.set_dims_mapping([0])
        with self.assertRaises(ValueError):
            rule.infer_backward(self.x_spec, make_spec([16], [-1], self.mesh), out, invvar, 1e-6)

    def test_instance_norm_grad_reads_x_only(self):
        x = make_spec([8, 6, 4, 4], [1, 0, -1, -1], self.mesh)
        stat = DistTensorSpec(x)  # the statistics keep x's 4-entry mapping on a [8, 6] shape
        stat.shape = [8, 6]
        y_grad = make_spec([8, 6, 4, 4], [0, 0, 0, -1], self.mesh)
        c = make_spec([6], [-1], self.mesh)
        inputs, outputs = core.get_phi_spmd_rule("instance_norm").infer_backward(
            x, c, c, stat, stat, y_grad, 1e-5
        )
        self.assertEqual([a.dims_mapping for a in inputs], [[1, 0, -1, -1], [-1], [1, 0], [1, 0], [1, 0, -1, -1]])
        self.assertEqual([a.dims_mapping for a in outputs], [[1, 0, -1, -1], [-1], [-1]])
        self.assertEqual([sorted(a._partial_dims()) for a in outputs], [[], [0, 1], [0, 1]])


class TestListForms(unittest.TestCase):
    def setUp(self):
        self.mesh = auto.ProcessMesh(mesh=np.array([[0, 1, 2], [3, 4, 5]]), dim_names=["dp", "mp"])

    def test_tuples_ranges_and_numpy_where_lists_go(self):
        attr = TensorDistAttr()
        attr.process_mesh = self.mesh
        attr.dims_mapping = (0, -1, 1)
        spec = DistTensorSpec(np.array([8, 6, 4]), attr)
        spec.set_dims_mapping(np.array([0, -1, -1]))
        spec.shape = range(8, 11)
        self.assertEqual(spec.shape, [8, 9, 10])
        self.assertEqual(spec.dims_mapping(), [0, -1, -1])
        inputs, outputs = core.get_phi_spmd_rule("p_norm").infer_forward(spec, 2.0, 0, 1e-12, True, False)
        self.assertEqual(outputs[0].dims_mapping, [-1, -1, -1])
        self.assertTrue(outputs[0]._is_partial(mesh_axis=0))
        self.assertFalse(outputs[0]._is_partial(mesh_axis=1))
        attr.dims_mapping = range(-1, 1)
        attr._set_partial_dims((1,))
        self.assertEqual((attr.dims_mapping, attr._partial_dims()), ([-1, 0], {1}))

    def test_sets_and_generators_are_refused(self):
        attr = TensorDistAttr()
        attr.process_mesh = self.mesh
        with self.assertRaises(TypeError):
            attr.dims_mapping = {0, -1}
        with self.assertRaises(TypeError):
            attr._set_partial_dims(d for d in [0])
        with self.assertRaises(TypeError):
            DistTensorSpec({8, 6}, attr)

    def test_attribute_forms_the_binding_refuses(self):
        x = make_spec([8, 4, 16], [1, -1, -1], self.mesh)
        w = make_spec([16], [-1], self.mesh)
        rule = core.get_phi_spmd_rule("layer_norm")
        with self.assertRaises(TypeError):
            rule.infer_forward(x, w, w, epsilon=1e-5, begin_norm_axis=2)
        for epsilon, axis in ((np.float32(1e-5), 2), (1e-5, np.int64(2)), ((1e-5,), 2)):
            with self.assertRaises(ValueError):
                rule.infer_forward(x, w, w, epsilon, axis)
        for epsilon, axis in ((1, 2), (1e-5, True), (1e-5, 2.0)):  # no cast: the types must match
            with self.assertRaises(ValueError):
                rule.infer_forward(x, w, w, epsilon, axis)
        inputs, outputs = core.get_phi_spmd_rule("p_norm").infer_forward(x, 2.0, 2, 1e-12, 1, 0)
        self.assertEqual(outputs[0].dims_mapping, [1, -1, -1])  # an int where a bool is read is cast: keepdims


class TestAttrFields(unittest.TestCase):
    def test_bookkeeping_fields(self):
        attr = TensorDistAttr()
        self.assertEqual((attr.batch_dim, attr.chunk_id, attr.dynamic_dims, attr.annotated), (0, 0, [], {}))
        attr.process_mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])
        attr.dims_mapping = [0, -1]
        attr.mark_annotated("dims_mapping")
        attr.batch_dim = 1
        self.assertEqual(attr.dynamic_dims, [False, False])
        self.assertTrue(attr.is_annotated("dims_mapping"))
        self.assertFalse(attr.verify())
        copy = DistTensorSpec([4, 6], attr)
        self.assertIn("batch_dim: 1", str(copy))
        self.assertIn("annotated: [dims_mapping: 1]", str(copy))
        attr.reset()
        self.assertEqual((attr.dims_mapping, attr.process_mesh, attr.annotated), ([-1, -1], None, {}))


if __name__ == "__main__":
    unittest.main()
