"""A drop-in for the part of Paddle's static auto-parallel API that SPMD rule tests use, backed
by the port's pure rules. Imports without Paddle.

    Paddle 3.3.1 name                                                  here
    paddle.framework.core.get_phi_spmd_rule / contains_spmd_rule       get_phi_spmd_rule / contains_spmd_rule
    ...static.dist_attribute.TensorDistAttr / DistTensorSpec           TensorDistAttr / DistTensorSpec
    paddle.distributed.fleet.auto.ProcessMesh, dist.ProcessMesh        ProcessMesh
    core.ProcessMesh (what attr.process_mesh returns)                  CoreProcessMesh

Rules served: the registry names each op family declares in its ``ops/<family>/compat.py``
(exactly the names Paddle registers, with the arguments Paddle's binding takes) and the generic
``replicated`` rule; :func:`rule_names` lists them.

To run an unedited Paddle-style test file against this package and against Paddle::

    python -m paddle_spmd_port compat-test path/to/test_<op>_rule.py [--against port|native|both]
    pytest -p paddle_spmd_port.compat.pytest_plugin --spmd-backend=port path/to/test_<op>_rule.py
"""

from .dist_attr import DistTensorSpec, TensorDistAttr
from .mesh import CoreProcessMesh, ProcessMesh
from .spmd_rule import SpmdRule, contains_spmd_rule, get_phi_spmd_rule, rule_names

__all__ = [
    "CoreProcessMesh", "DistTensorSpec", "ProcessMesh", "SpmdRule", "TensorDistAttr", "contains_spmd_rule",
    "get_phi_spmd_rule", "rule_names",
]
