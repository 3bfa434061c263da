"""``python -m paddle_spmd_port launch`` with bad input: one line on stderr naming the argument and
what is valid, exit 2, no traceback, nothing written, and nothing launched (output paths are checked
before any rank starts). No Paddle needed: every row fails before the launch.
"""

from __future__ import annotations

import json

import pytest

from paddle_spmd_port.launch.cli import machine_ranks

from .cli_checks import BadInput, assert_usage_error


def _case(**override) -> str:
    """One valid case line (layer_norm on a 1-D mesh of 2), with fields overridden (put last)."""
    base = {"case_id": "a", "op": "layer_norm", "shape": [4, 8], "mesh_shape": [2], "placements": ["S(0)"],
            "normalized_shape": [8]}
    case = {k: v for k, v in base.items() if k not in override}
    case.update(override)
    return json.dumps(case) + "\n"


def row(*argv: str, names: str, setup: dict[str, str] | None = None, code: int = 2) -> BadInput:
    return BadInput(("launch", *argv), names, setup or {}, code)


def _cpu_build() -> bool:
    """The installed Paddle is a CPU build (its version file says so; Paddle is not imported)."""
    from paddle_spmd_port.installed import paddle_dir

    root = paddle_dir()
    return root is not None and "cuda_version     = 'False'" in (root / "version" / "__init__.py").read_text()


FULL_REPORT = json.dumps({"meta": {"selection": {"slug": "full", "describe": "the built-in grid, every rule"}},
                          "cases": []})
OLD = {"rep/launch-np2.json": FULL_REPORT, "rep/launch-np2.md": "# the full launch\n"}


NP2 = ("--nproc", "2")

ROWS = [
    # --nproc
    row("--nproc", "0", names="--nproc"),
    row("--nproc", "-1", names="--nproc"),
    row("--nproc", "two", names="--nproc"),
    row("--nproc", "1.5", names="--nproc"),
    row("--device", "cpu", names="--nproc"),  # missing
    # output paths, checked before the launch
    row(*NP2, "--report-dir", "{tmp}/taken", names="--report-dir", setup={"taken": "a file\n"}),
    row(*NP2, "--report-dir", "taken", names="--report-dir", setup={"taken": "a file\n"}),
    row(*NP2, "--report-dir", "{tmp}/taken/sub", names="--report-dir", setup={"taken": "a file\n"}),
    row(*NP2, "--report-dir", "rep", names="--report-dir", setup={"rep/launch-np2.md/": ""}),
    row(*NP2, "--report-dir", "rep", names="--report-dir", setup={"rep/launch-np2.json/": ""}),
    row(*NP2, "--report-dir", "rep", names="--report-dir", setup={"rep/launch-np2-logs": "a file\n"}),
    row(*NP2, "--write-cases", "{tmp}/out/", names="--write-cases", setup={"out/": ""}),
    row(*NP2, "--write-cases", "taken/cases.jsonl", names="--write-cases", setup={"taken": "a file\n"}),
    # numbers
    row(*NP2, "--timeout", "0", names="--timeout"),
    row(*NP2, "--timeout", "-1", names="--timeout"),
    row(*NP2, "--timeout", "inf", names="--timeout"),
    row(*NP2, "--timeout", "nan", names="--timeout"),
    row(*NP2, "--timeout", "soon", names="--timeout"),
    row(*NP2, "--rtol", "-1", names="--rtol"),
    row(*NP2, "--rtol=-1e-5", names="--rtol"),
    row(*NP2, "--rtol", "-1e-5", names="--rtol"),  # argparse: "expected one argument"
    row(*NP2, "--rtol", "nan", names="--rtol"),
    row(*NP2, "--crash-probes", "-1", names="--crash-probes"),
    row(*NP2, "--crash-probes", "all", names="--crash-probes"),
    # --cases
    row(*NP2, "--cases", "missing.jsonl", names="--cases"),
    row(*NP2, "--cases", "{tmp}/cases", names="--cases", setup={"cases/": ""}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case() + '{"case_id": "b", \n'}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": "not json\n"}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": "[1, 2]\n"}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": ""}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(colour="red")}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(op="conv2d")}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(shape=[4, "8"])}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(shape=[4, 0])}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(placements=[0])}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(placements=["S(5)"])}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(weight="yes")}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(epsilon=-1)}),
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case() + _case()}),  # duplicate id
    row(*NP2, "--cases", "c.jsonl", "--mesh", "2", names="--mesh", setup={"c.jsonl": _case()}),
    # --mesh
    row(*NP2, "--mesh", "0", names="--mesh"),
    row(*NP2, "--mesh", "2x0", names="--mesh"),
    row(*NP2, "--mesh", "-2", names="--mesh"),
    row(*NP2, "--mesh", "two", names="--mesh"),
    row(*NP2, "--mesh", "2x", names="--mesh"),
    row(*NP2, "--mesh", "", names="--mesh"),
    row(*NP2, "--mesh", "1,2", names="--mesh"),  # sizes are joined by x, as in every command
    row(*NP2, "--backend", "gpu", names="--backend"),  # the device flag is --device
    row(*NP2, "--mesh", "2x2", names="--mesh"),  # 4 ranks, the launch has 2
    row("--nproc", "4", "--mesh", "3", names="--mesh"),
    row("--nproc", "8", "--mesh", "2x2x2", names="--mesh"),  # no built-in grid for a 3-D mesh
    # --device, --devices, --nnodes, --master
    row(*NP2, "--device", "tpu", names="--device"),
    row(*NP2, "--device", "gpu", "--devices", "a,b", names="--devices"),
    row(*NP2, "--device", "gpu", "--devices", "0;1", names="--devices"),
    row(*NP2, "--device", "gpu", "--devices=-1,0", names="--devices"),
    row(*NP2, "--device", "gpu", "--devices", "0,1,2", names="--devices"),
    row(*NP2, "--device", "gpu", "--devices", "0", names="--devices"),
    row(*NP2, "--device", "gpu", "--devices", "0,0", names="--devices"),
    row(*NP2, "--devices", "0,1", names="--devices"),  # cpu: --devices means nothing
    row(*NP2, "--nnodes", "many", names="--nnodes"),
    row(*NP2, "--nnodes", "0", names="--nnodes"),
    row(*NP2, "--nnodes", "4:2", names="--nnodes"),
    row(*NP2, "--nnodes", "2", "--mesh", "2", names="--mesh"),  # 2 nodes x 2 ranks = 4
    row(*NP2, "--master", "", names="--master"),
    # not a form the launcher reads (nohost with --nnodes 2: the launcher's ValueError, then our exit 4)
    row(*NP2, "--nnodes", "2", "--master", "nohost", names="--master"),
    row(*NP2, "--nnodes", "2", "--master", "10.0.0.1:99999", names="--master"),
    row(*NP2, "--nnodes", "2", "--master", "10.0.0.1:", names="--master"),
    row(*NP2, "--nnodes", "2", "--master", ":8090", names="--master"),
    row(*NP2, "--nnodes", "2", "--master", "etcd://", names="--master"),
    row(*NP2, "--no-such-option", names="--no-such-option"),
    # timeouts finite and within what the launcher's waits accept
    row(*NP2, "--timeout", "1e300", names="--timeout"),
    row(*NP2, "--timeout", "-inf", names="--timeout"),
    # empty paths: '' was the current directory (reports and logs written there)
    row(*NP2, "--report-dir", "", names="--report-dir"),
    row(*NP2, "--cases", "", names="--cases"),
    row(*NP2, "--write-cases", "", names="--write-cases"),
    # more ranks than the machine holds (64 on 2 cores: load 34, 12 GB, a timeout); --oversubscribe insists
    row("--nproc", str(machine_ranks()[0] + 1), names="--nproc"),
    row("--nproc", "100000", "--mesh", "100000", names="--nproc"),
    row(*NP2, "--mesh", "100000x100000", names="--mesh"),  # more processes than a mesh may list
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(shape=[2**40, 8])}),  # no rank holds it
    row(*NP2, "--cases", "c.jsonl", names="--cases", setup={"c.jsonl": _case(shape=[2**62, 8])}),  # beyond int64
    # a narrower run never silently replaces the broader report (was: launch-np2.md rewritten each time)
    row(*NP2, "--rules", "layer_norm", "--report-dir", "rep", names="--report-dir", setup=OLD),
    row(*NP2, "--cases", "c.jsonl", "--report-dir", "rep", names="--report-dir", setup={**OLD, "c.jsonl": _case()}),
    row(*NP2, "--report-dir", "rep", names="--report-dir",
        setup={"rep/launch-np2.json": "{}", "rep/launch-np2.md": "# a report of unknown selection\n"}),
]
if _cpu_build():  # a CUDA build is refused here with the GPU count instead (on a machine without enough GPUs)
    ROWS.append(row(*NP2, "--device", "gpu", names="--device gpu", code=3))


def _id(r: BadInput) -> str:
    """The row's argv plus what its setup lays out (for a case file: the end of its last line)."""
    layout = ", ".join(k if k.endswith("/") else f"{k}: {v.strip()[-40:] or 'empty'}" for k, v in r.setup.items())
    return r.id + (f" [{layout}]" if layout else "")


@pytest.mark.parametrize("bad", ROWS, ids=[_id(r) for r in ROWS])
def test_bad_input_is_one_line_and_exit_2(bad: BadInput, tmp_path):
    assert_usage_error(bad, tmp_path)


def test_rows_are_distinct():
    assert len({_id(r) + repr(sorted(r.setup.items())) for r in ROWS}) == len(ROWS)
