"""The declared rule specs (ops/<family>/__init__.py): every profile's rule functions take exactly
its inputs and attributes (with its defaults), and its channel axis is the module's worked table."""

from __future__ import annotations

import inspect

import pytest

from paddle_spmd_port.errors import InvalidSpecError
from paddle_spmd_port.ops import OPS, RULES
from paddle_spmd_port.ops.kit.layout import DATA_FORMAT_NDIM, DATA_FORMATS, channel_axis, kernel_layout
from paddle_spmd_port.rules import PROFILES, rule_function


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", RULES)
def test_rule_functions_take_the_tables_arguments(key, profile):
    spec = RULES[key]
    params = inspect.signature(rule_function(key, profile)).parameters
    assert tuple(params) == spec.inputs + tuple(name for name, _ in spec.attrs)
    assert {name: params[name].default for name, _ in spec.attrs} == dict(spec.attrs)
    assert all(params[n].default is inspect.Parameter.empty for n in spec.inputs)


def test_every_rule_key_belongs_to_one_op():
    assert sorted(k for keys in OPS.values() for k in keys) == sorted(RULES)
    assert {"batch_norm", "sync_batch_norm", "layer_norm", "instance_norm", "rms_norm", "fast_ln"} <= set(OPS)


@pytest.mark.parametrize("fmt, axis, layout", [
    ("NC", 1, "NCHW"), ("NCL", 1, "NCHW"), ("NCHW", 1, "NCHW"), ("NCDHW", 1, "NCHW"),
    ("NLC", 2, "NHWC"), ("NHWC", 3, "NHWC"), ("NDHWC", 4, "NHWC"),
])
def test_channel_axis_table(fmt, axis, layout):
    assert channel_axis(fmt, DATA_FORMAT_NDIM[fmt]) == axis
    assert kernel_layout(fmt) == layout
    assert fmt in DATA_FORMATS


@pytest.mark.parametrize("fmt, lenient", [("CHWN", 3), ("", 3), ("N", 3), ("nchw", 3), ("XC", 1)])
def test_unknown_format_strict_refuses_lenient_reads_the_second_character(fmt, lenient):
    with pytest.raises(InvalidSpecError):
        channel_axis(fmt, 4)
    assert channel_axis(fmt, 4, strict=False) == lenient
