"""Release profiles: what each Paddle release does differently from the port's default (3.3.1).

The port reproduces Paddle 3.3.1. Older releases answer some cases differently; a *release
profile* (:class:`ReleaseProfile`) lists those differences as data (:data:`RELEASES`), each with a
matcher that recognises the native outcome the release is known to give, so that the sweep can
report "known difference for X.Y.Z" apart from real mismatches. Which profile applies to an
installed Paddle is decided by :func:`detect_release` (for a version string) and
:func:`installed_release` (the installed Paddle's version and commit, read from
``paddle/version/__init__.py``). Nothing here imports Paddle.

Each family declares its own differences per release (``ops/<family>/releases.py``: the kit,
:mod:`paddle_spmd_port.ops.kit.releases`, says how); this module holds the matchers, the releases'
commits and the compat-probe differences, and assembles the families' entries into one profile
per release (:func:`_assemble`). What was measured, and how, is in docs/releases/ (one page per
release; each difference's ``evidence`` names its section there).

(Not to be confused with the *rule profiles* ``paddle``, ``pr72918`` and ``proposed`` of
:mod:`paddle_spmd_port.ops.registry`: those are alternative rule implementations.)

CI and ``tools/matrix.py`` run the newest release of each minor line (:func:`matrix_versions`).

How a release is picked::

    paddle.__version__   profile   flags
    3.0.0                3.0.0     exact
    3.2.5 (unmeasured)   3.2.2     nearest older measured release (is_exact=False)
    3.1.0rc1             3.1.0     a pre-release of a measured release takes that release's (is_exact=False)
    3.4.0, 0.0.0 (dev)   3.3.1     is_newer_than_known: every difference is a possible regression
    2.5.2                2.6.2     is_older_than_known
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .case import Case
from .compare import Comparison, compare
from .installed import NOT_INSTALLED, paddle_version
from .ops import FAMILIES, family_part
from .ops.kit.releases import (
    COSHARD_READ_RAISES_31,
    KINDS,
    NO_COSHARD_300,
    STR_ARGS_300,
    STR_FORMAT_300,
    KnownDifference,
    ReleaseNotes,
    probes,
)
from .outcome import Outcome
from .types import DistAttr, mesh_dims_of

#: Verdicts that are not differences at all: nothing to explain.
#: (native-varies: Paddle's two answers differ, neither is held against the port, so no profile explains it)
AGREEING = frozenset({"match", "both-raise-same", "port-rejects-invalid", "native-varies"})

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


def _match_coshard_unreachable(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                               cmp: Comparison) -> bool:
    """Some input of the case is co-sharded and the route said it cannot build it on this release
    (unreachable, text matching one of param ``patterns``)."""
    if not any(spec is not None and spec.coshard for spec in case.inputs):
        return False
    text = native.unreachable
    return text is not None and any(re.search(p, text) for p in d.param("patterns"))


def _match_rule_not_modelled(d: KnownDifference, case: Case, port: Outcome, native: Outcome,
                             cmp: Comparison) -> bool:
    """The release's function is another algorithm than the port's model: any case of the rule whose
    verdict is one of param ``verdicts`` (it answers otherwise, or crashes). The cases it answers as
    the port does stay compared (they match); only this one rule of this one release is concerned."""
    return cmp.verdict in d.param("verdicts")


MATCHERS: dict[str, Matcher] = {
    "rule-missing": _match_rule_missing,
    "replicated-fallback": _match_replicated_fallback,
    "crash-with-none": _match_crash_with_none,
    "partial-on-absent-grad": _match_partial_on_absent_grad,
    "coshard-refused": _match_coshard_refused,
    "error-text-differs": _match_error_text_differs,
    "outputs-truncated": _match_outputs_truncated,
    "native-raises": _match_native_raises,
    "coshard-unreachable": _match_coshard_unreachable,
    "rule-not-modelled": _match_rule_not_modelled,
}
#: The kinds that only ever explain a case with a co-sharded input (the rule's other cases are not affected).
if tuple(MATCHERS) != KINDS:
    raise ImportError(f"the matchers {tuple(MATCHERS)} are not the kit's kinds {KINDS}")


def _matches(d: KnownDifference, case: Case, port: Outcome, native: Outcome, cmp: Comparison) -> bool:
    return case.rule in d.rules and MATCHERS[d.kind](d, case, port, native, cmp)

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
    is_prerelease: bool = False
    """The detected version is a pre-release (dev, a, b, rc) of this profile's release."""
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
        """Why native differs from the port in a way this release is known to (``"known difference for
        X.Y.Z: <why>"``, or ``"X.Y.Z lacks it: <why>"`` for something the release does not have), else
        None (also None when they agree, and always None for a release newer than every profile:
        there, each difference is a possible regression). :meth:`classify` also gives the verdict."""
        found = self.classify(case, port_outcome, native_outcome, comparison)
        return None if found is None else found[1]

    def classify(self, case: Case, port_outcome: Outcome, native_outcome: Outcome,
                 comparison: Comparison | None = None) -> tuple[str, str] | None:
        """The verdict and note the sweep gives a case this release explains (None: not explained, see
        :meth:`explain`): ``release-lacks`` when the difference says the release lacks the rule or what the
        case needs (:attr:`KnownDifference.absence`: not compared), else ``known-difference``."""
        if self.is_newer_than_known or not self.differences:
            return None
        cmp = comparison if comparison is not None else compare(case.spec, port_outcome, native_outcome)
        if cmp.verdict in AGREEING or cmp.verdict == "not-run":  # not run: nothing of Paddle's to explain
            return None
        for diff in self.differences:
            if _matches(diff, case, port_outcome, native_outcome, cmp):
                if diff.absence:
                    return "release-lacks", f"{self.version} lacks it ({diff.name}): {diff.why}"
                return "known-difference", f"known difference for {self.version}: {diff.why}"
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
        if self.is_prerelease:
            return (f"Paddle {shown} ({commit}) is a pre-release of {self.version}, whose profile is applied "
                    f"({len(self.differences)} known differences)")
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



# --------------------------------------------------------------------------- compat-probe differences
#: The probes of the value types and the replicated rule (``attr/*``, ``spec/*``, ``replicated/*``,
#: ``coshard/*``) that a release answers differently; each family's own probes are in its releases module.
_COSHARD_READS = ("coshard/equality-and-spec-copy", "coshard/larger-mesh-dim-survives",
                  "coshard/layer-norm-reads-the-surviving-dim", "coshard/partial-set-before-kept",
                  "coshard/read-back", "coshard/set-after-dims-mapping")
_GENERIC_PROBES: dict[str, tuple[tuple[str, str], ...]] = {
    "3.0.0": (
        *probes(STR_FORMAT_300, "attr/dynamic-dims-fixed-by-first-mapping", "attr/empty", "attr/partial-api",
                "attr/partial-two-dims-sorted", "attr/str-with-mesh", "replicated/backward", "replicated/forward",
                "replicated/forward-absent-first", "replicated/forward-single-spec", "spec/absent-stand-in",
                "spec/attr-is-copied", "spec/copy-is-independent", "spec/set-process-mesh", "spec/str"),
        *probes(STR_ARGS_300, "replicated/attributes-ignored"),
        ("attr/multi-dims-mapping", "TensorDistAttr has no multi_dims_mapping attribute (AttributeError)"),
        *probes(NO_COSHARD_300, *_COSHARD_READS, "coshard/dims-mapping-set-after-replaces-it", "coshard/not-a-list",
                "coshard/partial-on-a-member-refused"),
    ),
    "3.1.0": probes(COSHARD_READ_RAISES_31, *_COSHARD_READS),
    "3.1.1": probes(COSHARD_READ_RAISES_31, *_COSHARD_READS),
}


# --------------------------------------------------------------------------- the table
#: Registry names outside the ported families that a release lacks (the compat probes use them).
_REGISTRY_MISSING_OTHER = {"2.6.2": frozenset({"cummax"}), "3.0.0": frozenset({"cummax"})}
#: Notes on a release's co-shard sweep (docs/releases/<version>.md).
_COSHARD_LIKE_331 = ("co-shard set: the same native statuses and verdicts as 3.3.1 on every rule and route, "
                     "0 mismatches",)


def _merge_order(sequences: list[list[str]]) -> list[str]:
    """One order of every name that keeps each sequence's own order (each family's entries are
    tried in the order it declares them: the first match explains a case); among the names free
    to go next, the one declared first (family order, then position). A contradiction raises."""
    after: dict[str, set[str]] = {}
    rank: dict[str, tuple[int, int]] = {}
    for i, seq in enumerate(sequences):
        for j, name in enumerate(seq):
            after.setdefault(name, set())
            rank.setdefault(name, (i, j))
            if j:
                after[name].add(seq[j - 1])
    order: list[str] = []
    while after:
        ready = [n for n, before in after.items() if not before - set(order)]
        if not ready:
            raise ValueError(f"the families order the differences {sorted(after)} in contradicting ways")
        name = min(ready, key=rank.__getitem__)
        order.append(name)
        del after[name]
    return order


def _assemble(version: str) -> tuple[tuple[KnownDifference, ...], frozenset[str], frozenset[str]]:
    """A release's known differences, registry names and C++ functions missing, from every
    family's release notes (:func:`family_releases`). Entries of one name become one difference over all their
    rules (kind, why and params must agree); each names its evidence, docs/releases/<version>.md."""
    merged: dict[str, KnownDifference] = {}
    sequences: list[list[str]] = []
    registry: set[str] = set(_REGISTRY_MISSING_OTHER.get(version, ()))
    cpp: set[str] = set()
    for family in FAMILIES:
        notes = family_releases(family)
        registry |= notes.registry_missing.get(version, frozenset())
        cpp |= notes.cpp_missing.get(version, frozenset())
        seq = []
        for d in notes.differences.get(version, ()):
            if foreign := d.rules - set(FAMILIES[family].keys):
                raise ValueError(f"ops/{family}/releases.py: {d.name} names rules of other families {sorted(foreign)}")
            seen = merged.get(d.name)
            if seen is None:
                merged[d.name] = dataclasses.replace(d, evidence=f"docs/releases/{version}.md#{d.name}")
            elif (seen.kind, seen.why, seen.params) != (d.kind, d.why, d.params):
                raise ValueError(f"{version}: families declare {d.name!r} differently")
            else:
                merged[d.name] = dataclasses.replace(seen, rules=seen.rules | d.rules)
            seq.append(d.name)
        sequences.append(seq)
    return tuple(merged[n] for n in _merge_order(sequences)), frozenset(registry), frozenset(cpp)


def family_releases(family: str) -> ReleaseNotes:
    """The family's release notes (ops/<family>/releases.py's ``RELEASES``; none: nothing differs)."""
    return family_part(family, ReleaseNotes) or ReleaseNotes()


def _probes(version: str, part: str) -> tuple[tuple[str, str], ...]:
    """A release's compat-probe differences (``probe_differences``) or crashes (``probe_crashes``):
    the generic probes', then each family's; a probe named twice is refused."""
    out = list(_GENERIC_PROBES.get(version, ())) if part == "probe_differences" else []
    for family in FAMILIES:
        notes = family_releases(family)
        out += (notes.probe_differences if part == "probe_differences" else notes.probe_crashes).get(version, ())
    if len({name for name, _ in out}) != len(out):
        raise ValueError(f"{version}: a compat probe is declared twice in {part}")
    return tuple(out)


def _profile(version: str, commit: str, **kwargs: Any) -> ReleaseProfile:
    differences, registry_missing, cpp_missing = _assemble(version)
    return ReleaseProfile(version=version, commit=commit, registry_missing=registry_missing,
                          cpp_rules_missing=cpp_missing, differences=differences,
                          probe_differences=_probes(version, "probe_differences"),
                          probe_crashes=_probes(version, "probe_crashes"), **kwargs)


RELEASES: tuple[ReleaseProfile, ...] = (
    _profile("2.6.2", "8ce0de584c", notes=("of the norm ops' rules only layer_norm's (forward, infer_backward, grad) "
                                           "and the replicated rule; PIR has no distributed dialect",)),
    _profile("3.0.0", "6ed5dd3833"),
    _profile("3.1.0", "cdcd76a93d"),
    _profile("3.1.1", "0cd8342db8"),
    _profile("3.2.0", "e22e2f9af7", notes=_COSHARD_LIKE_331),
    _profile("3.2.1", "659ebc9506", notes=_COSHARD_LIKE_331),
    _profile("3.2.2", "d90d3ad913", notes=_COSHARD_LIKE_331),
    _profile("3.3.0", "cbf3469113", notes=_COSHARD_LIKE_331),
    _profile("3.3.1", "7688495538", notes=("co-shard set: 0 mismatches (registry and compiled routes compared; PIR "
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


# --------------------------------------------------------------------------- which profile applies
_VERSION = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?[.-]?(?:(a|b|rc|dev|post)\.?(\d*))?")
_STAGE = {"dev": -4, "a": -3, "b": -2, "rc": -1, None: 0, "post": 1}


def version_key(version: str) -> tuple[int, ...] | None:
    """A sortable key for a release string (``3.1.0rc1`` < ``3.1.0`` < ``3.1.0.post1``), or None
    when it does not start with a number."""
    m = _VERSION.match(version)
    if not m:
        return None
    nums = tuple(int(g or 0) for g in m.group(1, 2, 3, 4))
    return (*nums, _STAGE[m.group(5)], int(m.group(6) or 0))


def is_develop_build(version: str) -> bool:
    """Paddle's builds from the develop branch report ``0.0.0``."""
    key = version_key(version)
    return key is not None and key[:4] == (0, 0, 0, 0)


def detect_release(version: str, commit: str = "") -> ReleaseProfile:
    """The release profile to compare Paddle ``version`` (``paddle.__version__``, commit
    ``paddle.version.commit``) with; see the module docstring for the flags."""
    ordered = sorted(RELEASES, key=lambda p: version_key(p.version) or ())
    newest, oldest = ordered[-1], ordered[0]
    found: dict[str, Any] = dict(detected_version=version, detected_commit=commit)  # (replace() checks the names)
    key = version_key(version)
    if key is None or is_develop_build(version) or key > (version_key(newest.version) or ()):
        return replace(newest, **found, is_exact=False, is_newer_than_known=True, commit_matches=False)
    if key < (version_key(oldest.version) or ()):
        return replace(oldest, **found, is_exact=False, is_older_than_known=True, commit_matches=False)
    exact = next((p for p in ordered if p.version == version), None)
    if exact is not None:
        return replace(exact, **found, commit_matches=not commit or commit.startswith(exact.commit))
    # a pre-release (dev, a, b, rc) of a measured release is nearer to it than to the release before
    release = next((p for p in ordered if key[4] < 0 and (version_key(p.version) or ())[:4] == key[:4]), None)
    if release is not None:
        return replace(release, **found, is_exact=False, is_prerelease=True, commit_matches=False)
    older = [p for p in ordered if (version_key(p.version) or ()) <= key]
    return replace(older[-1], **found, is_exact=False, commit_matches=False)


def installed_release() -> ReleaseProfile | None:
    """The release profile of the installed Paddle, or None when Paddle is not installed.
    Reads ``paddle/version/__init__.py``; Paddle itself is not imported."""
    found = paddle_version()
    if found["version"] == NOT_INSTALLED:
        return None
    return detect_release(found["version"], found["commit"])


__all__ = ["AGREEING", "MATCHERS", "RELEASES", "KnownDifference", "ReleaseProfile", "detect_release",
           "installed_release", "is_develop_build", "known_versions", "matrix_versions", "release_for",
           "version_key"]
