"""layer_norm and batch_norm SPMD rules, written against Paddle's static auto-parallel API
(the imports and calls of Paddle's own test/auto_parallel/spmd_rules tests), so that the same
file runs unchanged against native Paddle 3.3.1 and against paddle_spmd_port.compat:

    python -m paddle_spmd_port compat-test tests/paddle_style/test_norm_rules_paddle_style.py

Every expected value below is what Paddle 3.3.1 answers. Mesh: 2x3, dims_mapping entries name
the mesh dim that splits a tensor axis (-1 = replicated), P{d} = Partial(SUM) on mesh dim d.
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
    """Paddle's stand-in for a missing optional tensor (scale=None / bias=None)."""
    return DistTensorSpec([0], TensorDistAttr())


class RuleTestCase(unittest.TestCase):
    def setUp(self):
        self.mesh = auto.ProcessMesh(mesh=[[0, 1, 2], [3, 4, 5]])

    def assertMappings(self, attrs, expected):
        self.assertEqual([a.dims_mapping for a in attrs], expected)

    def assertNoPartial(self, result):
        for attr in result[0] + result[1]:
            self.assertFalse(attr._is_partial())
            self.assertEqual(attr._partial_dims(), set())


class TestLayerNormForward(RuleTestCase):
    """infer_forward(x, scale, bias, epsilon: float, begin_norm_axis: int)."""

    def setUp(self):
        super().setUp()
        self.rule = core.get_phi_spmd_rule("layer_norm")
        self.x = make_spec([16, 8, 32], [-1, -1, -1], self.mesh)
        self.scale = DistTensorSpec(self.x)
        self.scale.shape = [32]
        self.scale.set_dims_mapping([-1])
        self.bias = DistTensorSpec(self.scale)

    def infer(self, begin_norm_axis=2):
        return self.rule.infer_forward(self.x, self.scale, self.bias, 1e-5, begin_norm_axis)

    def test_leading_axis_keeps_its_sharding(self):
        self.x.set_dims_mapping([1, -1, -1])
        result = self.infer()
        self.assertEqual(len(result), 2)
        self.assertMappings(result[0], [[1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, -1, -1], [1, -1], [1, -1]])
        self.assertNoPartial(result)

    def test_normalized_axes_become_replicated(self):
        self.x.set_dims_mapping([0, 1, -1])
        self.scale.shape = [8 * 32]
        self.bias.shape = [8 * 32]
        result = self.infer(begin_norm_axis=1)
        self.assertMappings(result[0], [[0, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, -1, -1], [0], [0]])

    def test_scale_and_bias_shardings_are_ignored(self):
        self.x.set_dims_mapping([1, 0, -1])
        self.scale.set_dims_mapping([0])
        self.bias.set_dims_mapping([0])
        result = self.infer()
        self.assertMappings(result[0], [[1, 0, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, 0, -1], [1, 0], [1, 0]])

    def test_begin_norm_axis_zero_replicates_everything(self):
        self.x.set_dims_mapping([0, 1, -1])
        self.scale.shape = [16 * 8 * 32]
        self.bias.shape = [16 * 8 * 32]
        result = self.infer(begin_norm_axis=0)
        self.assertMappings(result[0], [[-1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, -1, -1], [], []])

    def test_partial_input_is_dropped(self):
        self.x = make_spec([16, 8, 32], [0, -1, -1], self.mesh, partial_dims=[1])
        self.assertEqual(self.x.dims_mapping(), [0, -1, -1])
        result = self.infer()
        self.assertMappings(result[0], [[0, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, -1, -1], [0, -1], [0, -1]])
        self.assertNoPartial(result)

    def test_outputs_live_on_the_mesh_of_x(self):
        self.x.set_dims_mapping([1, -1, -1])
        result = self.infer()
        for attr in result[0] + result[1]:
            self.assertEqual(attr.process_mesh, self.mesh)
        self.assertEqual(result[1][1].process_mesh.shape, [2, 3])
        self.assertEqual(result[1][1].process_mesh.process_ids, [0, 1, 2, 3, 4, 5])

    def test_without_scale(self):
        self.x.set_dims_mapping([1, 0, -1])
        self.scale = absent()
        result = self.infer()
        self.assertMappings(result[0], [[1, 0, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, 0, -1], [1, 0], [1, 0]])
        self.assertIsNone(result[0][1].process_mesh)
        self.assertEqual(result[0][2].process_mesh, self.mesh)

    def test_without_bias(self):
        self.x.set_dims_mapping([1, -1, -1])
        self.bias = absent()
        result = self.infer()
        self.assertMappings(result[0], [[1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, -1, -1], [1, -1], [1, -1]])
        self.assertIsNone(result[0][2].process_mesh)

    def test_without_scale_and_bias(self):
        self.x.set_dims_mapping([0, -1, -1])
        self.scale, self.bias = absent(), absent()
        self.scale.set_dims_mapping([0])  # a mesh-less stand-in's mapping is never read
        result = self.infer(begin_norm_axis=1)
        self.assertMappings(result[0], [[0, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, -1, -1], [0], [0]])
        self.assertIsNone(result[0][1].process_mesh)
        self.assertIsNone(result[0][2].process_mesh)

    def test_one_dimensional_mesh(self):
        mesh = auto.ProcessMesh([0, 1], dim_names=["x"])
        x = make_spec([8, 16], [0, -1], mesh)
        w = make_spec([16], [-1], mesh)
        result = self.rule.infer_forward(x, w, w, 1e-5, 1)
        self.assertMappings(result[0], [[0, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, -1], [0], [0]])

    def test_attributes_are_strictly_typed(self):
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x, self.scale, self.bias, 0, 2)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x, self.scale, self.bias, 1e-5, 2.0)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x, self.scale, self.bias, 1e-5, True)

    def test_extra_trailing_arguments_are_ignored(self):
        self.x.set_dims_mapping([1, -1, -1])
        result = self.rule.infer_forward(self.x, self.scale, self.bias, 1e-5, 2, "extra", 3.5)
        self.assertMappings(result[1], [[1, -1, -1], [1, -1], [1, -1]])

    def test_two_dimensional_scale_is_rejected(self):
        self.scale.shape = [8, 32]
        self.scale.set_dims_mapping([-1, -1])
        with self.assertRaises(ValueError):
            self.infer(begin_norm_axis=1)


class TestLayerNormReverse(RuleTestCase):
    """infer_backward(x, scale, bias, out, mean, variance, epsilon, begin_norm_axis): infers x
    from the outputs; x's own mapping is not read."""

    def setUp(self):
        super().setUp()
        self.rule = core.get_phi_spmd_rule("layer_norm")
        self.x = make_spec([16, 8, 32], [-1, -1, -1], self.mesh)
        self.scale = DistTensorSpec(self.x)
        self.scale.shape = [32]
        self.scale.set_dims_mapping([-1])
        self.bias = DistTensorSpec(self.scale)
        self.out = DistTensorSpec(self.x)
        self.mean = DistTensorSpec(self.x)
        self.mean.shape = [16, 8]
        self.mean.set_dims_mapping([-1, -1])
        self.var = DistTensorSpec(self.mean)

    def infer(self, out, mean, var, begin_norm_axis=2):
        self.out.set_dims_mapping(out)
        self.mean.set_dims_mapping(mean)
        self.var.set_dims_mapping(var)
        return self.rule.infer_backward(self.x, self.scale, self.bias, self.out, self.mean, self.var, 1e-5,
                                        begin_norm_axis)

    def test_x_follows_out(self):
        result = self.infer([1, -1, -1], [1, -1], [1, -1])
        self.assertEqual([len(result[0]), len(result[1])], [3, 3])
        self.assertMappings(result[0], [[1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, -1, -1], [1, -1], [1, -1]])

    def test_mean_and_variance_shardings_combine(self):
        result = self.infer([-1, -1, -1], [0, -1], [-1, 1])
        self.assertMappings(result[0], [[0, 1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, 1, -1], [0, 1], [0, 1]])

    def test_mapping_of_x_is_not_read(self):
        self.x.set_dims_mapping([0, 1, -1])
        result = self.infer([-1, -1, -1], [-1, -1], [-1, -1])
        self.assertMappings(result[0], [[-1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, -1, -1], [-1, -1], [-1, -1]])

    def test_conflicting_shardings_raise(self):
        with self.assertRaises(NotImplementedError):
            self.infer([1, -1, -1], [0, -1], [-1, -1])

    def test_sharded_normalized_axis_takes_mesh_dim_from_mean(self):
        # out's normalized axis and mean's second axis both want mesh dim 0; out's comes first
        result = self.infer([-1, -1, 0], [-1, 0], [-1, -1])
        self.assertMappings(result[0], [[-1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, -1, -1], [-1, -1], [-1, -1]])

    def test_two_sharded_normalized_axes_raise(self):
        self.x = make_spec([16, 8, 4, 8], [-1, -1, -1, -1], self.mesh)
        self.out = DistTensorSpec(self.x)
        with self.assertRaises(NotImplementedError):
            self.infer([-1, -1, 0, 1], [-1, -1], [-1, -1])

    def test_partial_status_is_kept(self):
        self.x = make_spec([16, 8, 32], [-1, -1, -1], self.mesh, partial_dims=[0])
        self.out = make_spec([16, 8, 32], [-1, -1, -1], self.mesh, partial_dims=[0])
        result = self.infer([1, -1, -1], [1, -1], [1, -1])
        self.assertMappings(result[0], [[1, -1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[1, -1, -1], [1, -1], [1, -1]])
        self.assertTrue(result[0][0]._is_partial())
        self.assertEqual(result[0][0]._partial_dims(), {0})
        self.assertTrue(result[1][0]._is_partial(0))
        self.assertFalse(result[1][0]._is_partial(1))
        self.assertFalse(result[1][1]._is_partial())

    def test_without_scale_and_bias(self):
        self.scale, self.bias = absent(), absent()
        result = self.infer([0, 1, -1], [-1, -1], [-1, -1])
        self.assertMappings(result[0], [[0, 1, -1], [-1], [-1]])
        self.assertMappings(result[1], [[0, 1, -1], [0, 1], [0, 1]])
        self.assertIsNone(result[0][1].process_mesh)
        self.assertIsNone(result[0][2].process_mesh)


class TestBatchNorm(RuleTestCase):
    """infer_forward(x, mean, variance, scale, bias): Paddle's registry rule takes no
    attributes and always treats axis 1 as the channel axis."""

    def setUp(self):
        super().setUp()
        self.rule = core.get_phi_spmd_rule("batch_norm")
        self.x = make_spec([8, 16, 4, 4], [-1, -1, -1, -1], self.mesh)
        self.stats = [make_spec([16], [-1], self.mesh) for _ in range(4)]

    def infer(self, x_mapping, *extra):
        self.x.set_dims_mapping(x_mapping)
        return self.rule.infer_forward(self.x, *self.stats, *extra)

    def test_channel_sharding_is_kept_and_batch_dropped(self):
        result = self.infer([0, 1, -1, -1])
        self.assertEqual([len(result[0]), len(result[1])], [5, 6])
        self.assertMappings(result[0], [[-1, 1, -1, -1], [1], [1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, 1, -1, -1], [1], [1], [1], [1], [-1]])
        self.assertNoPartial(result)

    def test_other_axes_become_replicated(self):
        result = self.infer([0, -1, -1, 1])
        self.assertMappings(result[0], [[-1, -1, -1, -1], [-1], [-1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, -1, -1, -1], [-1], [-1], [-1], [-1], [-1]])

    def test_mappings_of_statistics_are_not_read(self):
        self.stats[0].set_dims_mapping([0])
        self.stats[1].set_dims_mapping([1])
        result = self.infer([-1, -1, -1, -1])
        self.assertMappings(result[0], [[-1, -1, -1, -1], [-1], [-1], [-1], [-1]])

    def test_partial_inputs_are_dropped(self):
        self.x = make_spec([8, 16, 4, 4], [-1, 1, -1, -1], self.mesh, partial_dims=[0])
        self.stats[0] = make_spec([16], [-1], self.mesh, partial_dims=[0])
        result = self.rule.infer_forward(self.x, *self.stats)
        self.assertMappings(result[0], [[-1, 1, -1, -1], [1], [1], [-1], [-1]])
        self.assertNoPartial(result)

    def test_without_scale_and_bias(self):
        self.stats[2], self.stats[3] = absent(), absent()
        result = self.infer([-1, 1, -1, -1])
        self.assertMappings(result[0], [[-1, 1, -1, -1], [1], [1], [-1], [-1]])
        self.assertMappings(result[1], [[-1, 1, -1, -1], [1], [1], [1], [1], [-1]])
        self.assertIsNone(result[0][3].process_mesh)
        self.assertIsNone(result[0][4].process_mesh)
        self.assertEqual(result[1][5].process_mesh, self.mesh)

    def test_data_format_attribute_is_ignored(self):
        result = self.infer([0, -1, -1, 1], False, 0.9, 1e-5, "NHWC", False, False)
        self.assertMappings(result[0], [[-1, -1, -1, -1], [-1], [-1], [-1], [-1]])

    def test_two_and_five_dimensional_inputs(self):
        self.x = make_spec([8, 16], [0, 1], self.mesh)
        result = self.rule.infer_forward(self.x, *self.stats)
        self.assertMappings(result[1], [[-1, 1], [1], [1], [1], [1], [-1]])
        self.x = make_spec([2, 16, 4, 4, 4], [-1, 0, -1, -1, 1], self.mesh)
        result = self.rule.infer_forward(self.x, *self.stats)
        self.assertMappings(result[1], [[-1, 0, -1, -1, -1], [0], [0], [0], [0], [-1]])

    def test_rank_checks(self):
        self.x = make_spec([8], [0], self.mesh)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x, *self.stats)
        self.x = make_spec([8, 16, 4, 4], [-1, -1, -1, -1], self.mesh)
        self.stats[0] = make_spec([16, 2], [-1, -1], self.mesh)
        with self.assertRaises(ValueError):
            self.rule.infer_forward(self.x, *self.stats)

    def test_no_backward_rule(self):
        with self.assertRaises(RuntimeError):
            self.rule.infer_backward(self.x, *self.stats)


class TestRegistryAndSpecs(RuleTestCase):
    def test_registered_names(self):
        self.assertTrue(core.contains_spmd_rule("layer_norm"))
        self.assertTrue(core.contains_spmd_rule("batch_norm"))
        self.assertFalse(core.contains_spmd_rule("sync_batch_norm"))
        self.assertFalse(core.contains_spmd_rule("layer_norm_grad"))
        with self.assertRaises(RuntimeError):
            core.get_phi_spmd_rule("sync_batch_norm")

    def test_spec_copies_are_independent(self):
        x = make_spec([16, 8], [0, -1], self.mesh)
        y = DistTensorSpec(x)
        y.shape = [4]
        y.set_dims_mapping([1])
        self.assertEqual(x.shape, [16, 8])
        self.assertEqual(x.dims_mapping(), [0, -1])
        self.assertEqual(y.shape, [4])
        self.assertEqual(y.process_mesh(), self.mesh)

    def test_spec_copies_its_attr(self):
        attr = TensorDistAttr()
        attr.process_mesh = self.mesh
        attr.dims_mapping = [1, -1]
        x = DistTensorSpec([6, 2], attr)
        attr.dims_mapping = [0, -1]
        self.assertEqual(x.dims_mapping(), [1, -1])

    def test_partial_status_api(self):
        attr = TensorDistAttr()
        attr.process_mesh = self.mesh
        attr.dims_mapping = [-1, 0]
        self.assertFalse(attr._is_partial())
        attr._set_partial_dims([1])
        self.assertTrue(attr._is_partial())
        self.assertTrue(attr._is_partial(1))
        self.assertFalse(attr._is_partial(0))
        self.assertEqual(attr._partial_dims(), {1})
        with self.assertRaises(ValueError):
            attr._set_partial_dims([1])
        with self.assertRaises(ValueError):
            attr._set_partial_dims([0])
        attr._clean_partial_status()
        self.assertFalse(attr._is_partial())

    def test_empty_attr(self):
        attr = TensorDistAttr()
        self.assertIsNone(attr.process_mesh)
        self.assertEqual(attr.dims_mapping, [])
        self.assertEqual(absent().dims_mapping(), [])
        self.assertEqual(absent().shape, [0])

    def test_meshes_compare_by_shape_and_ids(self):
        named = auto.ProcessMesh([[0, 1, 2], [3, 4, 5]], dim_names=["dp", "mp"])
        self.assertEqual(named, self.mesh)
        self.assertNotEqual(auto.ProcessMesh([[0, 1, 2], [3, 4, 6]]), self.mesh)
        self.assertNotEqual(auto.ProcessMesh([0, 1, 2, 3, 4, 5]), self.mesh)
        self.assertEqual(self.mesh.dim_names, ["d0", "d1"])


if __name__ == "__main__":
    unittest.main()
