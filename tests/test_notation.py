import pytest

from paddle_spmd_port.errors import ShardingConflictError
from paddle_spmd_port.notation import mapping_for_axes, merge_shardings


@pytest.mark.parametrize("tensors, expected", [
    pytest.param([("ijk", [0, -1, -1]), ("ij", [-1, 1])], {"i": 0, "j": 1, "k": -1}, id="axes-agree"),
    pytest.param([("ij", [0, -1]), ("jk", [-1, 0])], {"i": 0, "j": -1, "k": -1},
                 id="dim-claimed-twice-first-keeps"),
    pytest.param([("ij1", [-1, -1, 0]), ("ij", [-1, 0])], {"1": 0, "i": -1, "j": -1},
                 id="forced-key-steals-dim"),
])
def test_merge_worked_table(tensors, expected):
    assert merge_shardings(tensors) == expected


def test_conflict_message_is_paddles():
    with pytest.raises(ShardingConflictError) as err:
        merge_shardings([("ijk", [1, -1, -1]), ("ij", [0, -1])])
    assert str(err.value) == "Tensor Axis[i] is Sharded by two different mesh dimension [0] and [1]."
    assert isinstance(err.value, NotImplementedError)


def test_forced_axes_share_one_key():
    with pytest.raises(ShardingConflictError, match=r"Axis\[1\].*\[1\] and \[0\]"):
        merge_shardings([("ij11", [-1, -1, 0, 1])])


def test_mapping_for_axes_reads_forced_as_replicated():
    assert mapping_for_axes("ij1", {"i": 0, "j": 1, "1": 1}) == (0, 1, -1)
