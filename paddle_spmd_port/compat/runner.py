"""Run one Paddle-style unittest file under one backend, in this process, and write a JSON report.

    python -m paddle_spmd_port.compat.runner --backend port|native [--shim] --out report.json test_x.py

``port`` installs the compat API first (:mod:`paddle_spmd_port.compat.swap`); ``native`` leaves
Paddle alone. ``compat-test`` starts this once per (backend, file), so a swap never leaks and a
native crash costs one file. What the test file does (its import, its tests) is its outcome; an
exception of the runner's own code is not: its traceback goes to stderr and the runner exits 4
(an internal error's code), which ``compat-test`` ends on as its own internal error. Report::

    {"backend": "port", "environment": "paddle 3.3.1 with compat swapped in",
     "file": "...", "status": "ran" | "import-error" | "unavailable", "message": "...",
     "tests": [{"id": "TestLayerNorm.test_forward", "status": "pass" | "fail" | "error" | "skip"
                | "expected-failure" | "unexpected-success", "message": "..."}]}
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import sys
import traceback
import unittest
from pathlib import Path
from typing import Any

from ..reporting import write_json
from ..runctl.exits import EXIT_INTERNAL
from .swap import install_port_backend, paddle_installed


def _last_line(text: str, limit: int = 400) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1].strip() if lines else ""
    return line if len(line) <= limit else line[:limit] + "..."


def _describe(err: tuple) -> str:
    """``ExcType: first line of the message`` (assertEqual's summary line, not its diff)."""
    exc = err[1]
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
    return _last_line(f"{type(exc).__name__}: {first}")


class _Recorder(unittest.TestResult):
    """Keeps one (id, status, message) row per test, in run order."""

    def __init__(self, module_name: str) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self._prefix = module_name + "."

    def _id(self, test: unittest.TestCase) -> str:
        test_id = test.id()
        return test_id[len(self._prefix):] if test_id.startswith(self._prefix) else test_id.replace(self._prefix, "")

    def _add(self, test: unittest.TestCase, status: str, message: str = "") -> None:
        self.rows.append({"id": self._id(test), "status": status, "message": message})

    def addSuccess(self, test):  # unittest's API
        super().addSuccess(test)
        self._add(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._add(test, "fail", _describe(err))

    def addError(self, test, err):
        super().addError(test, err)
        self._add(test, "error", _describe(err))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._add(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._add(test, "expected-failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._add(test, "unexpected-success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._add(subtest, "fail" if failed else "error", _describe(err))


def run_file(path: Path) -> dict[str, Any]:
    """Import ``path`` as a fresh module and run its unittest tests."""
    module_name = "spmd_compat_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        return {"status": "import-error", "message": f"cannot load {path} as a Python module", "tests": []}
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # any import failure is the file's outcome
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return {"status": "import-error", "message": _last_line(text), "tests": []}
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    recorder = _Recorder(module_name)
    captured = io.StringIO()
    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = captured
    try:
        suite.run(recorder)
    finally:
        sys.stdout, sys.stderr = real_out, real_err
    return {"status": "ran", "message": "", "tests": recorder.rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paddle_spmd_port.compat.runner",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("port", "native"), required=True)
    parser.add_argument("--shim", action="store_true",
                        help="port backend: use the compat shim even if Paddle is installed")
    parser.add_argument("--out", required=True, help="where to write the JSON report")
    parser.add_argument("path")
    args = parser.parse_args(argv)
    try:
        _run(args)
    except Exception:  # ours, not the file's: compat-test raises it (see the module docstring)
        traceback.print_exc()
        return EXIT_INTERNAL
    return 0


def _run(args: argparse.Namespace) -> None:
    report: dict[str, Any] = {"backend": args.backend, "file": args.path}
    if args.backend == "port":
        report["environment"] = install_port_backend(force_shim=True if args.shim else None)
    elif paddle_installed():
        import warnings

        warnings.filterwarnings("ignore")
        try:
            import paddle
        except Exception as exc:  # an install that does not import: this backend cannot run the file (not ours)
            report.update(environment="paddle (does not import)", status="unavailable", tests=[],
                          message=_last_line(f"import paddle failed: {type(exc).__name__}: {exc}"))
        else:
            report["environment"] = f"paddle {paddle.__version__}"
    else:
        report["environment"] = "no paddle"
        report.update(status="unavailable", message="paddlepaddle is not installed", tests=[])
    if "status" not in report:
        report.update(run_file(Path(args.path).resolve()))
    write_json(args.out, report)


if __name__ == "__main__":
    sys.exit(main())
