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


MATCHERS: dict[str, Matcher] = {
    "rule-missing": _match_rule_missing,
    "replicated-fallback": _match_replicated_fallback,
    "crash-with-none": _match_crash_with_none,
    "partial-on-absent-grad": _match_partial_on_absent_grad,
    "coshard-refused": _match_coshard_refused,
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

#: 3.0.0's compat-probe differences (measured: ``python -m paddle_spmd_port.compat.probes native`` in the 3.0.0 venv,
#: compared with the compat layer's observations; the batch_norm probes are skipped by ``registry_missing``).
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
        "spec/set-process-mesh", "spec/str")),
    *((name, _STR_ARGS_300) for name in ("ln/attribute-str-axis", "ln/forward-extra-args",
                                         "replicated/attributes-ignored")),
    ("attr/multi-dims-mapping", "TensorDistAttr has no multi_dims_mapping attribute (AttributeError)"),
    *((name, "no co-sharding: TensorDistAttr has no multi_dims_mapping attribute (AttributeError)") for name in (
        *_COSHARD_READS, "coshard/dims-mapping-set-after-replaces-it", "coshard/not-a-list",
        "coshard/partial-on-a-member-refused")),
    *_INT_ATTRS_UNCHECKED,
)

#: 3.1.x: co-sharded attrs can be set, but reading dims_mapping of one raises instead of falling back to one
#: mesh dim (measured: ``python -m paddle_spmd_port.compat.probes native`` in the 3.1.0 and 3.1.1 venvs; 3.2.0
#: and later answer like 3.3.1).
_COSHARD_READ_RAISES_31 = tuple(
    (name, "reading dims_mapping of a co-sharded attr raises ValueError (InvalidArgument) 'There are 2 mesh dim "
           "sharded on tensor dim 0,you should call \"multi_dims_mapping()\"'; 3.2.0+ falls back to one mesh dim")
    for name in _COSHARD_READS)

#: How the co-shard set (:func:`~.grid.coshard_cases`: 23,430 cases, ids ``<rule>-coshard-<n>``) was measured on
#: each release: the parity sweep (parity/cli.py: every rule's default routes, the release's profile) with its
#: grid replaced by the co-shard set, ``--workers 1``, in a venv per release (paddlepaddle==X.Y.Z, numpy).
#: PIR marks every co-shard case unreachable in every release (a PIR value holds one mesh dim per axis).
_COSHARD_SWEEP = "co-shard set (23,430 cases, the sweep's default routes)"
_COSHARD_LIKE_331 = (f"{_COSHARD_SWEEP}: the same native statuses and verdicts as 3.3.1 on every rule and route, "
                     "0 mismatches",)

#: 3.1.x sets a co-shard (compiled caller and registry alike), but the rules read dims_mapping, which raises.
_COSHARD_READ_RAISES_SWEEP_31 = KnownDifference(
    name="coshard-dims-mapping-read-raises",
    rules=frozenset({"batch_norm_static", "batch_norm", "batch_norm_grad", "layer_norm", "layer_norm_reverse",
                     "layer_norm_grad"}),
    kind="coshard-refused",
    why="a rule reading a co-sharded input's dims_mapping raises ValueError 'There are <n> mesh dim sharded on tensor "
        "dim <k>,you should call \"multi_dims_mapping()\"' (3.2.0+ falls back to one mesh dim)",
    evidence=f"{_COSHARD_SWEEP}, 3.1.0 and 3.1.1 alike: 13,230 cases raise it, batch_norm_static 978 (registry), "
             "batch_norm 1,956, batch_norm_grad 2,256, layer_norm_grad 4,500 (compiled), layer_norm 1,740, "
             "layer_norm_reverse 1,800 (registry): exactly the cases whose co-sharded input the rule reads "
             "(batch_norm_grad: x; layer_norm_reverse: out, mean, variance; 120 of these raise NotImplementedError "
             "in 3.3.1); the others match (batch_norm_grad 2,280, layer_norm_reverse 1,740, sync_batch_norm(_grad) "
             "6,132: the replicated rule reads no mapping); invalid cases stay port-rejects-invalid",
    params=(("family", "ValueError"),
            ("message", r'^There are \d+ mesh dim sharded on tensor dim \d+, ?you should call '
                        r'"multi_dims_mapping\(\)"')),
)

RELEASES: tuple[ReleaseProfile, ...] = (
    ReleaseProfile(
        version="3.0.0",
        commit="6ed5dd3833",
        registry_missing=frozenset({"batch_norm", "instance_norm", "group_norm", "cummax"}),
        cpp_rules_missing=_BN_SYMBOLS,
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
                rules=frozenset({"layer_norm", "layer_norm_reverse", "sync_batch_norm", "sync_batch_norm_grad"}),
                kind="coshard-refused",
                why="TensorDistAttr has no multi_dims_mapping, so the registry route cannot set a co-sharded input "
                    "(AttributeError)",
                evidence=f"{_COSHARD_SWEEP}: every one of the 11,412 valid cases of the registry's rules raises "
                         "AttributeError \"'paddle.base.libpaddle.TensorDistAttr' object has no attribute "
                         "'multi_dims_mapping'\": layer_norm 1,740, layer_norm_reverse 3,540, sync_batch_norm 1,956, "
                         "sync_batch_norm_grad 4,176 (the invalid ones too: port-rejects-invalid); batch_norm_static "
                         "and the compiled rules are unreachable (no-batch-norm-rule, no-compiled-caller)",
                params=(("family", "AttributeError"), ("message", r"has no attribute 'multi_dims_mapping'")),
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
        ),
        probe_differences=(*_INT_ATTRS_UNCHECKED, *_COSHARD_READ_RAISES_31),
    ),
    ReleaseProfile(version="3.1.1", commit="0cd8342db8", differences=(_COSHARD_READ_RAISES_SWEEP_31,),
                   probe_differences=(*_INT_ATTRS_UNCHECKED, *_COSHARD_READ_RAISES_31)),
    ReleaseProfile(version="3.2.0", commit="e22e2f9af7", probe_differences=_INT_ATTRS_UNCHECKED,
                   notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.2.1", commit="659ebc9506", probe_differences=_INT_ATTRS_UNCHECKED,
                   notes=_COSHARD_LIKE_331),
    ReleaseProfile(version="3.2.2", commit="d90d3ad913", probe_differences=_INT_ATTRS_UNCHECKED,
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
