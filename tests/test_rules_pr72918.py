"""The sync_batch_norm rules proposed in PR #72918 (branch revision 19683c03): worked tables.

Expected answers are worked out by hand from the branch's C++ (see the module docstring of
paddle_spmd_port.ops.sync_batch_norm.pr72918): only axis 1 keeps its sharding, the statistics carry the batch
letter and so stay replicated, the grad's scale/bias follow C without partial.
"""

from __future__ import annotations

import pytest

from paddle_spmd_port import ProcessMesh
from paddle_spmd_port.errors import InvalidSpecError, PaddleInvalidArgument
from paddle_spmd_port.ops.registry import PROFILES, rules_in
from paddle_spmd_port.ops.sync_batch_norm import pr72918
from paddle_spmd_port.ops.sync_batch_norm import rules as sync_batch_norm
from paddle_spmd_port.ops.sync_batch_norm.pr72918 import sync_batch_norm_grad_infer_spmd, sync_batch_norm_infer_spmd

from .helpers import MESH_2x3, rep, show, spec

X = (8, 6, 4, 4)
C = (6,)


def fwd(x_dm, *, x_partial=(), data_format="NCHW", scale=True, bias=True, mean_dm=(-1,)):
    return sync_batch_norm_infer_spmd(spec(X, x_dm, partial=x_partial), spec(C, mean_dm), rep(C),
                                      rep(C) if scale else None, rep(C) if bias else None, data_format=data_format)


def grad(x_dm, og_dm=None, *, scale=True, bias=True, reserve=False, data_format="NCHW", og_partial=()):
    og = spec(X, og_dm if og_dm is not None else x_dm, partial=og_partial)
    return sync_batch_norm_grad_infer_spmd(spec(X, x_dm), rep(C) if scale else None, rep(C) if bias else None,
                                           rep(C), rep(C), rep(C) if reserve else None, og, data_format=data_format)


ALL_REP_FWD = (["[-1,-1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]"],
               ["[-1,-1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1]"])


@pytest.mark.parametrize("x_dm,expected", [
    ((0, 1, -1, -1), (["[-1,1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]"],
                      ["[-1,1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1]"])),
    ((-1, 0, 1, -1), (["[-1,0,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]"],
                      ["[-1,0,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1]"])),
    ((0, -1, -1, 1), ALL_REP_FWD),
    ((-1, -1, -1, -1), ALL_REP_FWD),
])
def test_forward_table(x_dm, expected):
    assert show(fwd(x_dm)) == expected


def test_forward_statistics_never_follow_c():
    """PR72918-QUIRK(stats-batch-letter): mean/variance are annotated with the batch letter."""
    result = fwd((-1, 1, -1, -1), mean_dm=(1,))
    assert [str(a) for a in result.inputs[1:3]] == ["[-1]", "[-1]"]
    assert [str(a) for a in result.outputs[1:5]] == ["[-1]"] * 4


def test_forward_ignores_data_format():
    """PR72918-QUIRK(axis-1-always): NHWC still keeps axis 1, here H."""
    assert show(fwd((0, 1, -1, -1), data_format="NHWC")) == show(fwd((0, 1, -1, -1)))
    assert str(fwd((-1, -1, -1, 1), data_format="NHWC").outputs[0]) == "[-1,-1,-1,-1]"


def test_forward_drops_partial_and_none_has_no_mesh():
    result = fwd((-1, 1, -1, -1), x_partial=(0,), scale=False, bias=False)
    assert show(result) == (["[-1,1,-1,-1]", "[-1]", "[-1]", "[-1] @-", "[-1] @-"],
                            ["[-1,1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1]"])


@pytest.mark.parametrize("x_dm,og_dm,expected", [
    ((0, 1, -1, -1), (0, -1, -1, -1),
     (["[-1,1,-1,-1]", "[1]", "[1]", "[-1]", "[-1]", "[-1]", "[-1,1,-1,-1]"], ["[-1,1,-1,-1]", "[1]", "[1]"])),
    ((-1, 0, -1, 1), (-1, -1, -1, -1),
     (["[-1,0,-1,-1]", "[0]", "[0]", "[-1]", "[-1]", "[-1]", "[-1,0,-1,-1]"], ["[-1,0,-1,-1]", "[0]", "[0]"])),
    ((-1, -1, 0, -1), (-1, 1, -1, -1),  # out_grad's own sharding is ignored
     (["[-1,-1,-1,-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1]", "[-1,-1,-1,-1]"], ["[-1,-1,-1,-1]", "[-1]", "[-1]"])),
])
def test_grad_table(x_dm, og_dm, expected):
    assert show(grad(x_dm, og_dm)) == expected


def test_grad_scale_grad_is_sharded_not_partial():
    """PR72918-QUIRK(grad-scale-sharded): unlike 3.3.1's batch_norm_grad (Partial over C's
    mesh dim), the proposal shards the per-channel gradients along C."""
    result = grad((0, 1, -1, -1), og_partial=())
    assert all(not a.partial_dims for a in result.inputs + result.outputs)
    assert result.outputs[1].dims_mapping == result.outputs[2].dims_mapping == (1,)


def test_grad_with_none_scale_keeps_going():
    """No partial is set, so a None scale with C split does not crash here (3.3.1's
    batch_norm_grad does): scale_grad is [d] without a mesh."""
    result = grad((-1, 1, -1, -1), scale=False)
    assert show(result)[1] == ["[-1,1,-1,-1]", "[1] @-", "[1]"]
    assert str(result.inputs[1]) == "[1]"  # the scale *input* takes x's mesh


def test_grad_meshes_come_from_x_for_inputs_and_from_scale_for_grads():
    other = ProcessMesh((2, 3), dim_names=("a", "b"))
    result = sync_batch_norm_grad_infer_spmd(spec(X, (0, 1, -1, -1)), spec(C, (-1,), other), rep(C), rep(C), rep(C),
                                             None, rep(X))
    assert {a.mesh for a in result.inputs} == {MESH_2x3}
    assert result.outputs[0].mesh == MESH_2x3
    assert result.outputs[1].mesh == other and result.outputs[2].mesh == MESH_2x3


def test_grad_reserve_space_replicated():
    assert str(grad((-1, 1, -1, -1), reserve=True).inputs[5]) == "[-1]"


@pytest.mark.parametrize("call,message", [
    (lambda: sync_batch_norm_infer_spmd(rep((8,)), rep(C), rep(C), rep(C), rep(C)),
     "The ndim of x in batch_norm should be greater than 1, but got [1]."),
    (lambda: sync_batch_norm_infer_spmd(rep((2, 2, 2, 2, 2, 2)), rep(C), rep(C), rep(C), rep(C)),
     "The ndim of x in batch_norm should be less than 6, but got [6]."),
    (lambda: sync_batch_norm_infer_spmd(rep(X), rep(C), rep((6, 1)), rep(C), rep(C)),
     "The ndim of variance in batch_norm should be 1, but got [2]."),
    (lambda: sync_batch_norm_grad_infer_spmd(rep(X), rep(C), rep(C), rep(C), rep(C), None, rep((8, 6))),
     "The ndim of out_grad in batch_norm should be equal with x, but got out_grad:[2] and x:[4]."),
    (lambda: sync_batch_norm_grad_infer_spmd(rep(X), rep(C), rep(C), rep((6, 1)), rep(C), None, rep(X)),
     "The ndim of saved_mean in batch_norm should be 1, but got [2]."),
    (lambda: sync_batch_norm_grad_infer_spmd(rep(X), rep(C), rep(C), rep(C), rep(C), rep((6, 1)), rep(X)),
     "The ndim of reserve_space_ndim in batch_norm should be 1, but got [2]."),
])
def test_checks_and_messages(call, message):
    with pytest.raises(PaddleInvalidArgument) as info:
        call()
    assert str(info.value) == message


def test_invalid_specs_are_rejected():
    with pytest.raises(InvalidSpecError):
        fwd((0, 0, -1, -1))
    with pytest.raises(InvalidSpecError):
        sync_batch_norm_grad_infer_spmd(spec(X, (), mesh=None), rep(C), rep(C), rep(C), rep(C), None, rep(X))


def test_proposal_is_a_separate_rule_set():
    assert all(PROFILES["pr72918"][key] is fn for key, fn in rules_in(pr72918).items())
    assert rules_in(pr72918) == {"sync_batch_norm": sync_batch_norm_infer_spmd,
                             "sync_batch_norm_grad": sync_batch_norm_grad_infer_spmd}
    # the default (shipped) rules stay the replicated fallback and disagree with the proposal
    shipped = sync_batch_norm.sync_batch_norm_infer_spmd(spec(X, (0, 1, -1, -1)), rep(C), rep(C), rep(C), rep(C))
    assert str(shipped.outputs[0]) == "[-1,-1,-1,-1]"
    assert str(fwd((0, 1, -1, -1)).outputs[0]) == "[-1,1,-1,-1]"
