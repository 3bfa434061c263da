"""Release profiles: what each Paddle release does differently from the port's default (3.3.1).

Pure data. The port reproduces Paddle 3.3.1. Older releases answer some cases differently; a
*release profile* (:class:`ReleaseProfile`) lists those differences as data (:data:`RELEASES`),
each with a matcher that recognises the native outcome the release is known to give, so that the
sweep can report "known difference for X.Y.Z" apart from real mismatches. Which profile applies
to an installed Paddle is decided by :mod:`.detect`. Nothing here imports Paddle.

(Not to be confused with the *rule profiles* ``paddle``, ``pr72918`` and ``proposed`` of
:mod:`paddle_spmd_port.rules.registry`: those are alternative rule implementations.)

Measured with the CPU wheels from the package index (Python 3.11): every case of every rule's
grid through every default native route (registry, compiled caller, PIR), classified by
:meth:`ReleaseProfile.explain`. No mismatch is left unexplained in any release; the only
unexplained outcomes were 3 of 37,436 batch_norm_grad cases on 3.0.0 recorded as "native
crashed: exit code 1", which did not recur when run again. The grid's co-shard set (ids
``<rule>-coshard-<n>``: inputs with several mesh dims on one axis) was measured on its own, by the
sweep restricted to it (see ``_COSHARD_SWEEP`` below); 3.2.0 and later answer it like 3.3.1::

    release  commit      registry batch_norm  BatchNorm*InferSpmd  differences from 3.3.1
    3.0.0    6ed5dd3833  missing              none                 batch_norm_static unreachable; batch_norm,
                                                                   batch_norm_grad fully replicated (fallback);
                                                                   batch_norm_grad aborts with scale/bias None;
                                                                   layer_norm_grad marks absent grads Partial;
                                                                   compiled caller cannot be built;
                                                                   registry cannot set a co-shard
    3.1.0    cdcd76a93d  present              3 functions          layer_norm_grad segfaults with scale/bias
                                                                   None and x_grad split; rules raise reading a
                                                                   co-sharded dims_mapping; int attrs (*)
    3.1.1    0cd8342db8  present              3 functions          rules raise reading a co-sharded
                                                                   dims_mapping; int attrs (*)
    3.2.0    e22e2f9af7  present              3 functions          int attrs (*)
    3.2.1    659ebc9506  present              3 functions          int attrs (*)
    3.2.2    d90d3ad913  present              3 functions          int attrs (*)
    3.3.0    cbf3469113  present              3 functions          none
    3.3.1    7688495538  present              3 functions          none (the port's default)

    (*) not in the sweep: two binding probes of :mod:`paddle_spmd_port.compat.probes` (integer
        attributes are not range-checked before 3.3.0), see :attr:`ReleaseProfile.probe_differences`.

The rules issue 15 added (instance_norm, rms_norm, fast_ln, group_norm families: ``_NORM_RULES_15``) were
measured on their own, full grid with co-shards, registry and compiled routes (``_NORM_SWEEP``; the
table with case counts is docs/releases-norms.md)::

    release  differences from 3.3.1 on those rules
    3.0.0    no instance_norm / group_norm rule at all; RmsNorm*/FastLn* exported but the compiled caller
             cannot be built (no batch_norm.h): rms_norm_grad, fast_ln(_grad) reached by no route,
             rms_norm(_reverse) compared through fused_rms_norm; registry cannot set a co-shard; the
             PIR group_norm(_grad) ops replicate everything, the grad aborts with scale/bias None
    3.1.0    group_norm(_base) answers 1-D mean/variance and its grad refuses 2-D ones;
             InstanceNormGradInferSpmd has no bias (registry reads the inputs shifted, compiled caller
             cannot call it); fast_ln_grad segfaults with scale None and x split; co-shard reads raise;
             x-rank wording
    3.1.1    co-shard reads raise; x-rank wording of instance_norm / group_norm
    3.2.x    x-rank wording of instance_norm / group_norm
    3.3.0    none

Their compat probes (``in/*``, ``rms/*``, ``gn/*`` of :mod:`paddle_spmd_port.compat.probes`, measured in the 3.0.0,
3.1.0 and 3.2.2 venvs) differ in the same ways: 3.0.0 registers no instance_norm / group_norm (skipped by
``registry_missing``) and prints fused_rms_norm's attrs in its older format; 3.1.0 answers group_norm's statistics
1-D, reads instance_norm's grad inputs shifted (no bias) and raises on co-shards; 3.1.0-3.2.2 word the x-rank
checks differently (see :attr:`ReleaseProfile.probe_differences`).

CI and ``tools/matrix.py`` run the newest release of each minor line (:func:`matrix_versions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..case import Case
from ..outcome import Outcome
from ..types import DistAttr, mesh_dims_of
from .compare import Comparison, compare

#: Verdicts that are not differences at all: nothing to explain.
AGREEING = frozenset({"match", "both-raise-same", "port-rejects-invalid"})


# --------------------------------------------------------------------------- matchers
# A matcher decides whether one native outcome is the one a known difference predicts.
# Signature: (difference, case, port outcome, native outcome, comparison) -> bool.
Matcher = Callable[["KnownDifference", Case, Outcome, Outcome, Comparison], bool]


def _replicated(attr: DistAttr) -> bool:
    return all(m == -1 for m in attr.dims_mapping) and not attr.partial_dims


def _match_rule_missing(d: KnownDifference, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
    """The native route says the rule does not exist (unreachable, or a NotFound error)."""
    text = native.unreachable if native.unreachable is not None else (
        native.error.message if native.error is not None else None)
    return text is not None and any(re.search(p, text) for p in d.param("patterns"))


def _match_replicated_fallback(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                               cmp: Comparison) -> bool:
    """Native answered what the dist API's fallback for an op without a rule gives: every present
    input replicated on its own mesh, every None input an empty attr without mesh, every output
    replicated on x's mesh, nothing partial. The port's own answer (or error) does not matter."""
    res = native.result
    x = case.inputs[0]
    if res is None or x is None or len(res.inputs) != len(case.inputs):
        return False
    if len(res.outputs) != len(case.spec.result_outputs):
        return False
    for spec, attr in zip(case.inputs, res.inputs, strict=True):
        if attr.partial_dims:
            return False
        if spec is None:
            if attr.dims_mapping or attr.mesh is not None:
                return False
        elif attr.dims_mapping != (-1,) * len(spec.shape) or attr.mesh != spec.mesh:
            return False
    return all(_replicated(a) and a.mesh == x.mesh for a in res.outputs)


def _match_crash_with_none(d: KnownDifference, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
    """Native process died with the given signal, one of the named optional inputs is None, and
    (with param ``port_sharded``) the port's answer splits that output along some mesh dim."""
    if native.crash is None or not re.search(d.param("crash"), native.crash):
        return False
    named = case.named_inputs()
    if not any(named.get(name, 0) is None for name in d.param("when_none")):
        return False
    sharded = d.param("port_sharded", None)
    if sharded is None:
        return True
    if port.result is None:
        return False
    attr = dict(zip(case.spec.result_outputs, port.result.outputs, strict=False)).get(sharded)
    return attr is not None and any(m != -1 for m in attr.dims_mapping)


def _match_partial_on_absent_grad(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                                  cmp: Comparison) -> bool:
    """Only the partial status of grads whose input is None differs; native marks them Partial
    on exactly the mesh dims that split x_grad (as it does for a present scale/bias)."""
    res = native.result
    if res is None or port.result is None or not cmp.diffs:
        return False
    grads: Mapping[str, str] = dict(d.param("grads"))
    outputs = dict(zip(case.spec.result_outputs, res.outputs, strict=False))
    x_grad = outputs.get("x_grad")
    if x_grad is None:
        return False
    expected = sorted({m for e in x_grad.dims_mapping for m in mesh_dims_of(e)})
    named = case.named_inputs()
    for diff in cmp.diffs:
        side, _, rest = diff.cell.partition(".")
        grad, _, what = rest.partition(".")
        if side != "out" or what != "partial" or grad not in grads or named.get(grads[grad], 0) is not None:
            return False
        attr = outputs.get(grad)
        if attr is None or attr.mesh is not None or sorted(attr.partial_dims) != expected or not expected:
            return False
    return True


def _match_coshard_refused(d: KnownDifference, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
    """Some input of the case is co-sharded (several mesh dims on one axis) and the native route
    raised on it: the exception family ``family`` with a message matching ``message``. A case
    without a co-sharded input, an answer, a crash or another error is not this difference."""
    if not any(spec is not None and spec.coshard for spec in case.inputs):
        return False
    err = native.error
    return err is not None and err.family == d.param("family") and bool(re.search(d.param("message"), err.message))


def _match_error_text_differs(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                              cmp: Comparison) -> bool:
    """Both raise the same family, and native's message becomes the port's (3.3.1's) once each
    ``(old, new)`` of param ``rewrites`` is applied to it: the same check, older wording."""
    if port.error is None or native.error is None or port.error.family != native.error.family:
        return False
    message = native.error.message
    for old, new in d.param("rewrites"):
        message = message.replace(old, new)
    return message != native.error.message and message == port.error.message


def _match_outputs_truncated(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                             cmp: Comparison) -> bool:
    """Both answer; every differing cell is the dims_mapping of an output named in param ``outputs``, and
    native's mapping of each is the port's cut to its first ``keep`` entries (a lower-rank output)."""
    if port.result is None or native.result is None or not cmp.diffs:
        return False
    names = d.param("outputs")
    if any(not any(diff.cell == f"out.{name}.dims_mapping" for name in names) for diff in cmp.diffs):
        return False
    ours = dict(zip(case.spec.result_outputs, port.result.outputs, strict=False))
    theirs = dict(zip(case.spec.result_outputs, native.result.outputs, strict=False))
    keep = d.param("keep")
    return all(name in ours and name in theirs and theirs[name].dims_mapping == ours[name].dims_mapping[:keep]
               for name in names)


def _match_native_raises(d: KnownDifference, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
    """Native raised the exception family ``family`` with a message matching ``message``. When the
    pattern has groups ``name`` and ``rank``, the input ``name`` must have that rank; with param
    ``ranks_differ`` (two input names), those two inputs must have different ranks."""
    err = native.error
    if err is None or err.family != d.param("family"):
        return False
    found = re.search(d.param("message"), err.message)
    if found is None:
        return False
    named = case.named_inputs()
    groups = found.groupdict()
    if "name" in groups and "rank" in groups:
        spec = named.get(groups["name"])
        if spec is None or len(spec.shape) != int(groups["rank"]):
            return False
    pair = d.param("ranks_differ", None)
    if pair is not None:
        first, second = (named.get(name) for name in pair)
        if first is None or second is None or len(first.shape) == len(second.shape):
            return False
    return True


MATCHERS: dict[str, Matcher] = {
    "rule-missing": _match_rule_missing,
    "replicated-fallback": _match_replicated_fallback,
    "crash-with-none": _match_crash_with_none,
    "partial-on-absent-grad": _match_partial_on_absent_grad,
    "coshard-refused": _match_coshard_refused,
    "error-text-differs": _match_error_text_differs,
    "outputs-truncated": _match_outputs_truncated,
    "native-raises": _match_native_raises,
}
#: The kinds that only ever explain a case with a co-sharded input (the rule's other cases are not affected).
_COSHARD_ONLY_KINDS = frozenset({"coshard-refused"})


# --------------------------------------------------------------------------- data model
@dataclass(frozen=True)
class KnownDifference:
    """One way a release's native answer differs from the port, for some rules."""

    name: str
    rules: frozenset[str]
    kind: str
    """Key of :data:`MATCHERS`: how the native outcome is recognised."""
    why: str
    """Short reason, shown in reports as ``known difference for X.Y.Z: <why>``."""
    evidence: str
    """What was measured (command and counts)."""
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in MATCHERS:
            raise ValueError(f"known difference {self.name!r}: unknown kind {self.kind!r}; "
                             f"choose one of {', '.join(MATCHERS)}")

    def param(self, key: str, default: Any = KeyError) -> Any:
        params = dict(self.params)
        if default is KeyError:
            return params[key]
        return params.get(key, default)

    def matches(self, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
        return case.rule in self.rules and MATCHERS[self.kind](self, case, port, native, cmp)

    @property
    def coshard_only(self) -> bool:
        """It explains only cases with a co-sharded input (see its kind)."""
        return self.kind in _COSHARD_ONLY_KINDS


@dataclass(frozen=True)
class ReleaseProfile:
    """What one Paddle release does differently from the port's default (3.3.1)."""

    version: str
    commit: str
    """Prefix of ``paddle.version.commit`` of the release's wheels."""
    registry_missing: frozenset[str] = frozenset()
    """``core.get_phi_spmd_rule`` names that 3.3.1 registers and this release does not."""
    cpp_rules_missing: frozenset[str] = frozenset()
    """C++ InferSpmd functions (of the ported rules) absent from this release's libraries."""
    differences: tuple[KnownDifference, ...] = ()
    detected_version: str = ""
    """The ``paddle.__version__`` this profile was picked for (empty: not picked by detection)."""
    detected_commit: str = ""
    is_exact: bool = True
    """The detected version is this profile's release."""
    is_newer_than_known: bool = False
    """Newer than every measured release: :meth:`explain` explains nothing."""
    is_older_than_known: bool = False
    commit_matches: bool = True
    """The detected commit starts with :attr:`commit` (False for a custom build of the release)."""
    probe_differences: tuple[tuple[str, str], ...] = ()
    """(probe name, why) for the Python-binding probes of :mod:`paddle_spmd_port.compat.probes` whose native
    answer differs from 3.3.1's in this release (the compat layer follows 3.3.1)."""
    probe_crashes: tuple[tuple[str, str], ...] = ()
    """(probe name, why) for the compat probes that kill the process in this release (not run natively)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def explain(self, case: Case, port_outcome: Outcome, native_outcome: Outcome,
                comparison: Comparison | None = None) -> str | None:
        """``"known difference for X.Y.Z: <why>"`` when native differs from the port in a way
        this release is known to, else None (also None when they agree, and always None for a
        release newer than every profile: there, each difference is a possible regression)."""
        if self.is_newer_than_known or not self.differences:
            return None
        cmp = comparison if comparison is not None else compare(case.spec, port_outcome, native_outcome)
        if cmp.verdict in AGREEING or cmp.verdict == "not-run":  # not run: nothing of Paddle's to explain
            return None
        for diff in self.differences:
            if diff.matches(case, port_outcome, native_outcome, cmp):
                return f"known difference for {self.version}: {diff.why}"
        return None

    def explain_probe(self, probe: str) -> str | None:
        """``"known difference for X.Y.Z: <why>"`` for a compat probe this release answers
        differently from 3.3.1, else None (always None for a release newer than every profile)."""
        if self.is_newer_than_known:
            return None
        why = dict(self.probe_differences).get(probe) or dict(self.probe_crashes).get(probe)
        return None if why is None else f"known difference for {self.version}: {why}"

    def differences_for(self, rule: str, coshard: bool = False) -> tuple[KnownDifference, ...]:
        """The known differences of ``rule`` that can concern a case without a co-sharded input; with
        ``coshard``, also those that concern only cases with one."""
        return tuple(d for d in self.differences if rule in d.rules and (coshard or not d.coshard_only))

    def headline(self) -> str:
        """One line for reports: which profile is used and how much to trust it."""
        shown = self.detected_version or self.version
        commit = (self.detected_commit or self.commit)[:10]
        if self.is_newer_than_known:
            return (f"Paddle {shown} ({commit}) is newer than every profile; compared with {self.version}'s "
                    "behaviour: every difference is a possible regression")
        if self.is_older_than_known:
            return (f"Paddle {shown} ({commit}) is older than every profile; {self.version}'s known "
                    f"differences ({len(self.differences)}) are applied")
        if not self.is_exact:
            return (f"Paddle {shown} ({commit}) has no profile of its own; the nearest older one, "
                    f"{self.version}, is applied ({len(self.differences)} known differences)")
        extra = "" if self.commit_matches else f" (commit differs from the release's {self.commit})"
        return f"Paddle {shown} ({commit}): profile {self.version}{extra}, {len(self.differences)} known differences"

    def to_json(self) -> dict[str, Any]:
        return {"profile": self.version, "commit": self.commit, "detected_version": self.detected_version,
                "detected_commit": self.detected_commit, "is_exact": self.is_exact,
                "is_newer_than_known": self.is_newer_than_known, "is_older_than_known": self.is_older_than_known,
                "commit_matches": self.commit_matches, "headline": self.headline(),
                "differences": [{"name": d.name, "rules": sorted(d.rules), "why": d.why} for d in self.differences],
                "probe_differences": dict(self.probe_differences), "probe_crashes": dict(self.probe_crashes)}


# --------------------------------------------------------------------------- the table
_BN_SYMBOLS = frozenset({"BatchNormInferSpmd", "BatchNormInferSpmdStatic", "BatchNormGradInferSpmd"})

#: Before 3.3.0 the registry's Python binding does not range-check integer attributes (measured with
#: ``python -m paddle_spmd_port.compat.probes native`` in every release's venv; 3.3.0 and 3.3.1 agree).
_INT_ATTRS_UNCHECKED = (
    ("ln/attribute-big-axis", "begin_norm_axis=2**40 is cut to int32 (0) and answered; 3.3.0+ raises IndexError "
                              "(OutOfRange) 'Integer value 1099511627776 exceeds int32 range'"),
    ("ln/attribute-big-list-epsilon", "epsilon=[2**40] raises ValueError 'Attribute cast error'; 3.3.0+ raises "
                                      "IndexError (OutOfRange) first"),
)

#: The co-shard probes that read a co-sharded attr's dims_mapping (directly or through a copy or a rule).
_COSHARD_READS = ("coshard/equality-and-spec-copy", "coshard/larger-mesh-dim-survives",
                  "coshard/layer-norm-reads-the-surviving-dim", "coshard/partial-set-before-kept",
                  "coshard/read-back", "coshard/set-after-dims-mapping")
#: The probes of the issue-15 registry rules (instance_norm, fused_rms_norm, group_norm) with a co-sharded x.
_NORM_COSHARD_READS = ("gn/forward-coshard", "in/forward-coshard", "rms/forward-coshard")

#: 3.0.0's compat-probe differences (measured: ``python -m paddle_spmd_port.compat.probes native`` in the 3.0.0 venv,
#: compared with the compat layer's observations; the batch_norm, instance_norm (``in/*``) and group_norm (``gn/*``)
#: probes are skipped by ``registry_missing``: 3.0.0 raises "(NotFound) `instance_norm` Kernel's Spmd rules is not
#: registered" there, or AttributeError first where the probe sets a co-shard).
_STR_FORMAT_300 = ("TensorDistAttr's str prints 'dims_mappings: [0,-1]' and no split_factor (3.3.1: "
                   "'dim_mappings: [[0] [] ]' and 'split_factor')")
_STR_ARGS_300 = "infer_spmd() rejects str arguments ('must be int, float, bool or Tensor, but got str')"
_PROBES_300 = (
    *((name, _STR_FORMAT_300) for name in (
        "attr/dynamic-dims-fixed-by-first-mapping", "attr/empty", "attr/partial-api", "attr/partial-two-dims-sorted",
        "attr/str-with-mesh", "ln/attribute-float64-epsilon", "ln/forward", "ln/forward-absent-with-mapping",
        "ln/forward-begin-norm-axis-0", "ln/forward-interleaved-args", "ln/forward-one-dim-mesh",
        "ln/forward-partial-and-absent-scale", "ln/reverse-absent-scale-bias", "ln/reverse-partial-kept",
        "replicated/backward", "replicated/forward", "replicated/forward-absent-first",
        "replicated/forward-single-spec", "spec/absent-stand-in", "spec/attr-is-copied", "spec/copy-is-independent",
        "spec/set-process-mesh", "spec/str", "rms/forward", "rms/forward-one-dim-mesh", "rms/forward-partial",
        "rms/reverse", "rms/reverse-partial")),
    *((name, _STR_ARGS_300) for name in ("ln/attribute-str-axis", "ln/forward-extra-args",
                                         "replicated/attributes-ignored")),
    ("attr/multi-dims-mapping", "TensorDistAttr has no multi_dims_mapping attribute (AttributeError)"),
    *((name, "no co-sharding: TensorDistAttr has no multi_dims_mapping attribute (AttributeError)") for name in (
        *_COSHARD_READS, "coshard/dims-mapping-set-after-replaces-it", "coshard/not-a-list",
        "coshard/partial-on-a-member-refused", "rms/forward-coshard")),
    *_INT_ATTRS_UNCHECKED,
)

#: 3.1.x: co-sharded attrs can be set, but reading dims_mapping of one raises instead of falling back to one
#: mesh dim (measured: ``python -m paddle_spmd_port.compat.probes native`` in the 3.1.0 and 3.1.1 venvs; 3.2.0
#: and later answer like 3.3.1). The ``_NORM_COSHARD_READS`` were probed in the 3.1.0 venv; 3.1.1 is given them on
#: the sweep's word (``coshard-dims-mapping-read-raises``: every valid co-shard case of those rules, 3.1.0 and 3.1.1).
_COSHARD_READ_RAISES_31 = tuple(
    (name, "reading dims_mapping of a co-sharded attr raises ValueError (InvalidArgument) 'There are 2 mesh dim "
           "sharded on tensor dim 0,you should call \"multi_dims_mapping()\"'; 3.2.0+ falls back to one mesh dim")
    for name in (*_COSHARD_READS, *_NORM_COSHARD_READS))

#: 3.1.0-3.2.2 word the x-rank checks of instance_norm and group_norm differently (measured: the compat probes in
#: the 3.1.0 and 3.2.2 venvs; the sweep's ``x-rank-message-wording`` saw the same in 3.1.1, 3.2.0 and 3.2.1).
_X_RANK_WORDING_PROBES = (
    ("in/x-rank-1", "instance_norm's x-rank check says 'The ndim of x in instance_norm should greater than 1' "
                    "(3.3.0+: 'should be greater than 1'), same ValueError"),
    ("gn/x-rank-2", "group_norm's x-rank check says 'The ndim of x in group_norm should grater than 2' "
                    "(3.3.0+: 'should be greater than 2'), same ValueError"),
)

#: 3.1.0 alone (measured: the compat probes in the 3.1.0 venv; the sweep's group-norm-statistics-1d and
#: instance-norm-grad-without-bias found both fixed in 3.1.1).
_PROBES_310_ONLY = (
    *((name, "group_norm's forward answers mean and variance 1-D [N's mesh dim] (3.1.1+: 2-D [N's mesh dim, -1]); "
             "the other attrs as 3.3.1") for name in (
        "gn/forward", "gn/forward-one-dim-mesh", "gn/forward-partial-absent-and-attributes")),
    *((name, "InstanceNormGradInferSpmd takes no bias, so infer_backward reads the inputs shifted by one (the 2-D "
             "saved_variance as y_grad) and raises ValueError 'The ndim of y_grad in instance_norm should be equal "
             "with x, but got [0].'") for name in ("in/grad", "in/grad-partial-and-absent-bias")),
)

#: How the co-shard set (:func:`~.grid.coshard_cases`: 23,430 cases, ids ``<rule>-coshard-<n>``) was measured on
#: each release: the parity sweep (parity/cli.py: every rule's default routes, the release's profile) with its
#: grid replaced by the co-shard set, ``--workers 1``, in a venv per release (paddlepaddle==X.Y.Z, numpy).
#: PIR marks every co-shard case unreachable in every release (a PIR value holds one mesh dim per axis).
_COSHARD_SWEEP = "co-shard set (23,430 cases, the sweep's default routes)"
_COSHARD_LIKE_331 = (f"{_COSHARD_SWEEP}: the same native statuses and verdicts as 3.3.1 on every rule and route, "
                     "0 mismatches",)

#: The rule keys issue 15 added (group_norm, instance_norm, rms_norm, fast_ln families).
_NORM_RULES_15 = frozenset({"instance_norm", "instance_norm_grad", "rms_norm", "rms_norm_reverse", "rms_norm_grad",
                            "fast_ln", "fast_ln_grad", "group_norm", "group_norm_base", "group_norm_grad",
                            "group_norm_grad_base"})
#: How the issue-15 rules were measured on each release (see docs/releases-norms.md for the table).
_NORM_SWEEP = ("parity --rules <the 11 issue-15 keys>, full grid with its co-shard set: 23,074 cases, registry "
               "where registered and the compiled caller, --workers 1; group_norm and group_norm_grad also through "
               "PIR (--backend pir), and every rule in the full default sweep of 3.0.0, 3.1.1, 3.2.2, 3.3.1")

_PIR_GN_SWEEP = ("parity --rules group_norm,group_norm_base,group_norm_grad,group_norm_grad_base --workers 1, full "
                 "grid, the PIR route of group_norm / group_norm_grad (a default route since 3.3.1's was measured)")

#: 3.1.0-3.2.2 word the x-rank checks of instance_norm's and group_norm's forward rules differently (same checks,
#: same family; 3.3.0 has 3.3.1's words).
_X_RANK_WORDING = KnownDifference(
    name="x-rank-message-wording",
    rules=frozenset({"instance_norm", "group_norm", "group_norm_base"}),
    kind="error-text-differs",
    why="the x-rank check says 'should greater than' / 'should less than' (instance_norm) and 'should grater "
        "than' (group_norm) where 3.3.0+ says 'should be greater than' / 'should be less than'",
    evidence=f"{_NORM_SWEEP}, 3.1.0, 3.1.1, 3.2.0, 3.2.1, 3.2.2 alike: the only other difference of 3.2.x; per "
             "route (registry and compiled alike) instance_norm 2 cases (x rank 1 and 6), group_norm and "
             "group_norm_base 2 each (x rank 1 and 2), and 1 group_norm case through PIR; instance_norm_grad's "
             "check keeps the old words in 3.3.1 too",
    params=(("rewrites", (("should greater than", "should be greater than"),
                          ("should less than", "should be less than"),
                          ("should grater than", "should be greater than"))),),
)

#: 3.1.x sets a co-shard (compiled caller and registry alike), but the rules read dims_mapping, which raises.
_COSHARD_READ_RAISES_SWEEP_31 = KnownDifference(
    name="coshard-dims-mapping-read-raises",
    rules=frozenset({"batch_norm_static", "batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_reverse",
                     "layer_norm_grad", *_NORM_RULES_15}),
    kind="coshard-refused",
    why="a rule reading a co-sharded input's dims_mapping raises ValueError 'There are <n> mesh dim sharded on tensor "
        "dim <k>,you should call \"multi_dims_mapping()\"' (3.2.0+ falls back to one mesh dim)",
    evidence=f"{_COSHARD_SWEEP}, 3.1.0 and 3.1.1 alike: 13,230 cases raise it, batch_norm_static 978 (registry), "
             "batch_norm 1,956, batch_norm_grad 2,256, layer_norm_grad 4,500 (compiled), layer_norm 1,740, "
             "layer_norm_reverse 1,800 (registry): exactly the cases whose co-sharded input the rule reads "
             "(batch_norm_grad: x; layer_norm_reverse: out, mean, variance; 120 of these raise NotImplementedError "
             "in 3.3.1); the others match (batch_norm_grad 2,280, layer_norm_reverse 1,740, sync_batch_norm(_grad) "
             "6,132: the replicated rule reads no mapping); invalid cases stay port-rejects-invalid. The issue-15 "
             f"rules ({_NORM_SWEEP}), every valid co-shard case, per route (registry / compiled): instance_norm "
             "372 / 372, instance_norm_grad 774 / 774 (3.1.0: 540 / unreachable), rms_norm 366 / 366, "
             "rms_norm_reverse 726 / 726, rms_norm_grad 972, fast_ln 528, fast_ln_grad 942, group_norm, "
             "group_norm_base 258 / 258 each, group_norm_grad, group_norm_grad_base 258 each",
    params=(("family", "ValueError"),
            ("message", r'^There are \d+ mesh dim sharded on tensor dim \d+, ?you should call '
                        r'"multi_dims_mapping\(\)"')),
)

RELEASES: tuple[ReleaseProfile, ...] = (
    ReleaseProfile(
        version="3.0.0",
        commit="6ed5dd3833",
        registry_missing=frozenset({"batch_norm", "instance_norm", "group_norm", "cummax"}),
        cpp_rules_missing=_BN_SYMBOLS | {"InstanceNormInferSpmd", "InstanceNormGradInferSpmd", "GroupNormInferSpmd",
                                         "GroupNormInferSpmdBase", "GroupNormGradInferSpmd",
                                         "GroupNormGradInferSpmdBase"},
        differences=(
            KnownDifference(
                name="no-batch-norm-rule",
                rules=frozenset({"batch_norm_static", "batch_norm", "batch_norm_grad"}),
                kind="rule-missing",
                why="no batch_norm SPMD rule exists (no 'batch_norm' registry entry, no BatchNorm*InferSpmd "
                    "functions or batch_norm.h header before 3.1)",
                evidence="full grid: batch_norm_static via the registry 4,533 of 4,533 cases unreachable "
                         "(core.contains_spmd_rule('batch_norm') is False); batch_norm 31,617 and batch_norm_grad "
                         "37,436 of as many cases unreachable via the compiled caller (paddle/include has no "
                         "phi/infermeta/spmd_rules/batch_norm.h); nm -D of the libraries shows only "
                         "LayerNorm{,Grad}InferSpmd and LayerNormInferSpmdReverse",
                params=(("patterns", (r"registers no 'batch_norm' rule",
                                      r"`batch_norm` Kernel's Spmd rules is not registered",
                                      r"has no phi/infermeta/spmd_rules/batch_norm\.h")),),
            ),
            KnownDifference(
                name="no-compiled-caller",
                rules=frozenset({"layer_norm", "layer_norm_reverse", "layer_norm_grad"}),
                kind="rule-missing",
                why="the compiled caller is built against batch_norm.h, which this release lacks, so it cannot "
                    "reach the layer_norm rules either (they are still compared through the registry and PIR)",
                evidence="full grid: layer_norm_grad via the compiled caller 26,870 of 26,870 cases unreachable, "
                         "'compiled caller unavailable: ... has no phi/infermeta/spmd_rules/batch_norm.h'",
                params=(("patterns", (r"compiled caller unavailable: .*has no phi/infermeta/spmd_rules/"
                                      r"batch_norm\.h",)),),
            ),
            KnownDifference(
                name="batch-norm-replicated-fallback",
                rules=frozenset({"batch_norm", "batch_norm_grad"}),
                kind="replicated-fallback",
                why="batch_norm has no InferSpmd rule, so the dist op falls back to replicating every input "
                    "and output (no Partial on the grads)",
                evidence="full grid via PIR: all 6,705 batch_norm and all 22,146 batch_norm_grad mismatching "
                         "cases are this answer (inputs replicated on their own mesh, None inputs empty, outputs "
                         "replicated on x's mesh, nothing partial); the 8,066 + 14,112 others match the port",
            ),
            KnownDifference(
                name="batch-norm-grad-abort-without-scale",
                rules=frozenset({"batch_norm_grad"}),
                kind="crash-with-none",
                why="building batch_norm_grad without scale or bias aborts the process (SIGABRT) in the "
                    "replicated fallback",
                evidence="full grid via PIR: every one of the 1,176 batch_norm_grad cases with scale or bias "
                         "None ends in SIGABRT (1,175; one more was recorded as 'exit code 1' and aborts when run "
                         "alone); no case with both present crashes that way",
                params=(("crash", r"signal 6\b"), ("when_none", ("scale", "bias"))),
            ),
            KnownDifference(
                name="layer-norm-grad-partial-on-absent-grad",
                rules=frozenset({"layer_norm_grad"}),
                kind="partial-on-absent-grad",
                why="LayerNormGradInferSpmd marks scale_grad/bias_grad Partial even when scale/bias is None "
                    "(3.1.1 and later leave the absent grad without partial)",
                evidence="full grid via PIR: all 608 layer_norm_grad mismatching cases differ only in the "
                         "partial status of a grad whose input is None, Partial on x_grad's mesh dims",
                params=(("grads", (("scale_grad", "scale"), ("bias_grad", "bias"))),),
            ),
            KnownDifference(
                name="no-multi-dims-mapping",
                rules=frozenset({"layer_norm", "layer_norm_reverse", "sync_batch_norm", "sync_batch_norm_grad",
                                 "rms_norm", "rms_norm_reverse"}),
                kind="coshard-refused",
                why="TensorDistAttr has no multi_dims_mapping, so the registry route cannot set a co-sharded input "
                    "(AttributeError)",
                evidence=f"{_COSHARD_SWEEP}: every one of the 11,412 valid cases of the registry's rules raises "
                         "AttributeError \"'paddle.base.libpaddle.TensorDistAttr' object has no attribute "
                         "'multi_dims_mapping'\": layer_norm 1,740, layer_norm_reverse 3,540, sync_batch_norm 1,956, "
                         "sync_batch_norm_grad 4,176 (the invalid ones too: port-rejects-invalid); batch_norm_static "
                         "and the compiled rules are unreachable (no-batch-norm-rule, no-compiled-caller). "
                         f"{_NORM_SWEEP}: fused_rms_norm's rules through the registry, rms_norm 366 and "
                         "rms_norm_reverse 726 cases (every valid co-shard case; the rest match)",
                params=(("family", "AttributeError"), ("message", r"has no attribute 'multi_dims_mapping'")),
            ),
            KnownDifference(
                name="no-instance-group-norm-rule",
                rules=frozenset({"instance_norm", "instance_norm_grad", "group_norm", "group_norm_base",
                                 "group_norm_grad", "group_norm_grad_base"}),
                kind="rule-missing",
                why="no instance_norm or group_norm SPMD rule exists (no registry entry, no InstanceNorm*/GroupNorm* "
                    "InferSpmd functions, no instance_norm.h or group_norm.h before 3.1)",
                evidence=f"{_NORM_SWEEP}: every case unreachable, through the registry ('this Paddle build registers "
                         "no 'instance_norm' rule': instance_norm 1,306, instance_norm_grad 2,877; 'group_norm': "
                         "group_norm 1,485, group_norm_base 1,480) and the compiled caller (it cannot be built); "
                         "nm -D libphi_core.so exports none of the six functions, paddle/include has neither header",
                params=(("patterns", (r"registers no '(instance|group)_norm' rule",
                                      r"compiled caller unavailable: .*has no phi/infermeta/spmd_rules/"
                                      r"batch_norm\.h")),),
            ),
            KnownDifference(
                name="no-compiled-caller-rms-fast-ln",
                rules=frozenset({"rms_norm", "rms_norm_reverse", "rms_norm_grad", "fast_ln", "fast_ln_grad"}),
                kind="rule-missing",
                why="the compiled caller is built against batch_norm.h, which this release lacks, so it cannot reach "
                    "RmsNorm*/FastLn* InferSpmd, although the library exports them: rms_norm_grad, fast_ln and "
                    "fast_ln_grad are reached by no route (rms_norm and rms_norm_reverse are still compared "
                    "through the registry's fused_rms_norm)",
                evidence=f"{_NORM_SWEEP}: every case of the five keys unreachable through the compiled caller "
                         "('compiled caller unavailable: ... has no phi/infermeta/spmd_rules/batch_norm.h'): rms_norm "
                         "1,054, rms_norm_reverse 2,487, rms_norm_grad 2,493, fast_ln 1,415, fast_ln_grad 2,746; "
                         "nm -D libphi_core.so exports RmsNormInferSpmd(Reverse), RmsNormGradInferSpmd, "
                         "FastLn(Grad)InferSpmd and paddle/include has rms_norm.h and layer_norm.h as in 3.3.1",
                params=(("patterns", (r"compiled caller unavailable: .*has no phi/infermeta/spmd_rules/"
                                      r"batch_norm\.h",)),),
            ),
            KnownDifference(
                name="group-norm-pir-replicated-fallback",
                rules=frozenset({"group_norm", "group_norm_grad"}),
                kind="replicated-fallback",
                why="group_norm has no InferSpmd rule, so the PIR group_norm / group_norm_grad ops fall back to "
                    "replicating every input and output (no Partial on the grads)",
                evidence=f"{_PIR_GN_SWEEP}: all 340 group_norm and 904 group_norm_grad mismatching PIR cases are "
                         "this answer; 295 + 936 others match the port, the rest are unreachable on PIR",
            ),
            KnownDifference(
                name="group-norm-grad-pir-abort-without-scale",
                rules=frozenset({"group_norm_grad"}),
                kind="crash-with-none",
                why="building group_norm_grad without scale or bias aborts the process (SIGABRT) in the "
                    "replicated fallback",
                evidence=f"{_PIR_GN_SWEEP}: all 30 group_norm_grad cases with scale or bias None and x's axis 0 "
                         "not split end in SIGABRT (those with it split crash too, on 3.3.1 as well: invalid input "
                         "the port rejects)",
                params=(("crash", r"signal 6\b"), ("when_none", ("scale", "bias"))),
            ),
        ),
        probe_differences=_PROBES_300,
        probe_crashes=(
            ("ln/attribute-empty-list-epsilon", "epsilon=[] kills the process with SIGSEGV (3.1.1 answers like 3.3.1)"),
        ),
    ),
    ReleaseProfile(
        version="3.1.0",
        commit="cdcd76a93d",
        differences=(
            KnownDifference(
                name="layer-norm-grad-segfault-without-scale",
                rules=frozenset({"layer_norm_grad"}),
                kind="crash-with-none",
                why="LayerNormGradInferSpmd segfaults when scale or bias is None and x_grad is split (it marks "
                    "the absent grad Partial); fixed in 3.1.1",
                evidence="full grid, PIR and compiled caller alike: 763 layer_norm_grad cases end in SIGSEGV, "
                         "exactly those with scale or bias None whose x_grad is split (the 750 with x_grad "
                         "replicated match the port); in 3.0.0 the same cases answer with the Partial instead",
                params=(("crash", r"signal 11\b"), ("when_none", ("scale", "bias")), ("port_sharded", "x_grad")),
            ),
            _COSHARD_READ_RAISES_SWEEP_31,
            _X_RANK_WORDING,
            KnownDifference(
                name="fast-ln-grad-segfault-without-scale",
                rules=frozenset({"fast_ln_grad"}),
                kind="crash-with-none",
                why="FastLnGradInferSpmd segfaults when scale is None and x_grad is split; fixed in 3.1.1",
                evidence=f"{_NORM_SWEEP}: 11 fast_ln_grad cases end in SIGSEGV (compiled caller), exactly those with "
                         "scale None whose x is split (x_grad split in the port's answer); 3.1.1 answers them like "
                         "3.3.1",
                params=(("crash", r"signal 11\b"), ("when_none", ("scale",)), ("port_sharded", "x_grad")),
            ),
            KnownDifference(
                name="group-norm-statistics-1d",
                rules=frozenset({"group_norm", "group_norm_base"}),
                kind="outputs-truncated",
                why="GroupNormInferSpmd(Base) answers mean and variance 1-D [N's mesh dim] where 3.1.1+ answers 2-D "
                    "[N's mesh dim, -1]",
                evidence=f"{_NORM_SWEEP}: every valid case differs in exactly that, registry and compiled alike: "
                         "group_norm 1,210, group_norm_base 1,205 (the others are invalid input or co-shards); "
                         "through PIR 689 more group_norm cases cannot be built ('The global ddim size must equal' "
                         "the op's 2-D mean: unreachable there, 1,483 of 1,485 against 850 in 3.2.0+)",
                params=(("outputs", ("mean", "variance")), ("keep", 1)),
            ),
            KnownDifference(
                name="group-norm-grad-wants-1d-statistics",
                rules=frozenset({"group_norm_grad", "group_norm_grad_base"}),
                kind="native-raises",
                why="GroupNormGradInferSpmd(Base) requires 1-D mean and variance (its forward answers them 1-D) and "
                    "raises 'The ndim of mean/variance in group_norm should be 1' on the 2-D ones of 3.1.1+",
                evidence=f"{_NORM_SWEEP}: group_norm_grad 2,523 cases (2,031 plain, 492 co-shard), "
                         "group_norm_grad_base 2,518 (2,026, 492) raise it for a mean or variance of rank 2 "
                         "(compiled caller), and 2,031 group_norm_grad cases through PIR; the port answers them "
                         "(or rejects invalid input)",
                params=(("family", "ValueError"),
                        ("message", r"^The ndim of (?P<name>mean|variance) in group_norm should be 1, but got "
                                    r"\[(?P<rank>\d+)\]\.$")),
            ),
            KnownDifference(
                name="instance-norm-grad-without-bias",
                rules=frozenset({"instance_norm_grad"}),
                kind="native-raises",
                why="InstanceNormGradInferSpmd takes (x, scale, saved_mean, saved_variance, y_grad), no bias: the "
                    "registry's infer_backward reads the inputs shifted by one (saved_variance as y_grad) and raises "
                    "'The ndim of y_grad in instance_norm should be equal with x'",
                evidence=f"{_NORM_SWEEP}: through the registry 2,293 cases raise it (2,029 plain, 264 co-shard), "
                         "exactly those whose saved_variance rank differs from x's; the header and the exported "
                         "symbol have 5 tensors (3.1.1 added bias)",
                params=(("family", "ValueError"),
                        ("message", r"^The ndim of y_grad in instance_norm should be equal with x"),
                        ("ranks_differ", ("saved_variance", "x"))),
            ),
            KnownDifference(
                name="instance-norm-grad-no-compiled-call",
                rules=frozenset({"instance_norm_grad"}),
                kind="rule-missing",
                why="the compiled caller cannot call InstanceNormGradInferSpmd with bias (3.1.0's takes none): "
                    "unreachable there, compared through the registry",
                evidence=f"{_NORM_SWEEP}: 2,875 of 2,877 cases unreachable through the compiled caller (the other 2 "
                         "are invalid co-shard+partial input refused while the inputs are set)",
                params=(("patterns", (r"InstanceNormGradInferSpmd takes no bias",)),),
            ),
        ),
        probe_differences=(*_INT_ATTRS_UNCHECKED, *_COSHARD_READ_RAISES_31, *_X_RANK_WORDING_PROBES,
                           *_PROBES_310_ONLY),
    ),
    ReleaseProfile(version="3.1.1", commit="0cd8342db8",
                   differences=(_COSHARD_READ_RAISES_SWEEP_31, _X_RANK_WORDING),
                   probe_differences=(*_INT_ATTRS_UNCHECKED, *_COSHARD_READ_RAISES_31, *_X_RANK_WORDING_PROBES)),
    ReleaseProfile(version="3.2.0", commit="e22e2f9af7", differences=(_X_RANK_WORDING,),
                   probe_differences=(*_INT_ATTRS_UNCHECKED, *_X_RANK_WORDING_PROBES),
                   notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.2.1", commit="659ebc9506", differences=(_X_RANK_WORDING,),
                   probe_differences=(*_INT_ATTRS_UNCHECKED, *_X_RANK_WORDING_PROBES),
                   notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.2.2", commit="d90d3ad913", differences=(_X_RANK_WORDING,),
                   probe_differences=(*_INT_ATTRS_UNCHECKED, *_X_RANK_WORDING_PROBES),
                   notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.3.0", commit="cbf3469113", notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.3.1", commit="7688495538",
                   notes=(f"{_COSHARD_SWEEP}: 0 mismatches (registry and compiled routes compared; PIR "
                          "unreachable)",)),
)

_BY_VERSION = {p.version: p for p in RELEASES}


def release_for(version: str) -> ReleaseProfile:
    """The profile of a measured release, by its exact version string."""
    try:
        return _BY_VERSION[version]
    except KeyError:
        raise ValueError(f"no profile for Paddle {version!r}; known: {', '.join(_BY_VERSION)}") from None


def known_versions() -> tuple[str, ...]:
    """Every profiled release, oldest first."""
    return tuple(p.version for p in RELEASES)


def matrix_versions() -> tuple[str, ...]:
    """The newest profiled release of each minor line, oldest first: what CI and tools/matrix.py run."""
    newest: dict[tuple[int, ...], str] = {}
    for version in known_versions():  # plain X.Y.Z strings, oldest first
        newest[tuple(int(n) for n in version.split(".")[:2])] = version
    return tuple(newest.values())


__all__ = ["AGREEING", "MATCHERS", "RELEASES", "KnownDifference", "ReleaseProfile", "known_versions",
           "matrix_versions", "release_for"]
