"""Moved: the code lives in :mod:`paddle_spmd_port.ops.kit.tensor` (kept so old imports work)."""

from __future__ import annotations

from ..ops.kit.tensor import (
    _EXACT_OK,
    _NO_PARTIAL,
    _WANTED,
    ATTR_TYPES,
    EXACT_ATTR_TYPES,
    RuleInput,
    _attr,
    _new_input,
    _short,
    _tuple_new,
    _valid_inputs,
    as_input,
    attr_type_ok,
    attrs_exact,
    check_attrs,
    check_specs,
    coshard_survivor,
    getter_mapping,
    on_meshes_of_other_ndim,
    require_mesh_dims_exist,
    require_ndim,
    require_x_mesh,
    valid_inputs,
)

__all__ = ["ATTR_TYPES", "EXACT_ATTR_TYPES", "RuleInput", "_EXACT_OK", "_NO_PARTIAL", "_WANTED", "_attr",
    "_new_input", "_short", "_tuple_new", "_valid_inputs", "as_input", "attr_type_ok", "attrs_exact", "check_attrs",
    "check_specs", "coshard_survivor", "getter_mapping", "on_meshes_of_other_ndim", "require_mesh_dims_exist",
    "require_ndim", "require_x_mesh", "valid_inputs"]
