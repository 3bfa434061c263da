"""paddle_spmd_port.rules, the public Python face: every rule function of the ``paddle`` profile by
its own name and the registry, the same objects as the op families' and ``ops.registry``'s; one plain
module that plants no other module and names no op."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import paddle_spmd_port.rules as face
from paddle_spmd_port import ops
from paddle_spmd_port.ops import registry

FACE = Path(face.__file__)


def test_every_paddle_rule_function_is_exported_by_its_name() -> None:
    for key, fn in registry.PADDLE_RULES.items():
        assert getattr(face, fn.__name__) is fn, key
        assert fn.__name__ in face.__all__
        assert fn is ops.family_module(ops.rule_spec(key).op, "rules").__dict__[fn.__name__]


def test_the_registry_names_are_the_registrys() -> None:
    for name in ("PROFILES", "PROFILE_NAMES", "SpmdRule", "contains_spmd_rule", "get_spmd_rule", "rule_function",
                 "rule_names"):
        assert getattr(face, name) is getattr(registry, name), name
        assert name in face.__all__
    assert all(hasattr(face, name) for name in face.__all__)
    assert len(set(face.__all__)) == len(face.__all__)


def test_the_readme_example_imports() -> None:
    from paddle_spmd_port.rules import get_spmd_rule, layer_norm_infer_spmd

    assert get_spmd_rule("layer_norm").forward is layer_norm_infer_spmd


def test_the_face_plants_no_module() -> None:
    """A fresh interpreter: importing the face adds no ``paddle_spmd_port.rules.*`` module, and the
    paths it used to plant do not resolve."""
    code = ("import sys, importlib, paddle_spmd_port.rules as r\n"
            "planted = [m for m in sys.modules if m.startswith('paddle_spmd_port.rules.')]\n"
            "assert not planted, planted\n"
            "assert not hasattr(r, '__path__')\n"
            "for old in ('proposed', 'pr72918', 'preconditions', '_tensor', 'registry', 'signatures', 'layer_norm'):\n"
            "    try:\n"
            "        importlib.import_module('paddle_spmd_port.rules.' + old)\n"
            "    except ModuleNotFoundError:\n"
            "        continue\n"
            "    raise AssertionError(old)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_face_names_no_op() -> None:
    names = {*ops.FAMILIES, *ops.RULES, *ops.REGISTRY_NAMES}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    found = [m.group(0) for m in pattern.finditer(FACE.read_text())]
    assert not found
    assert pattern.search("from ..ops.layer_norm import x")  # the check can fail


def test_the_face_and_ops_write_no_sys_modules() -> None:
    """Neither the face nor ops/ registers a module under a name of its choosing: every module is a file,
    found where its name says (compat's runner, which loads a user's test file, is elsewhere)."""
    files = [FACE, *(FACE.parent / "ops").rglob("*.py")]
    assert len(files) > 10
    assert not [str(p) for p in files if "sys.modules" in p.read_text()]
