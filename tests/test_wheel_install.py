"""Packaging: the wheel and the sdist carry every file of the package (``native/cpp/spmd_caller.cc``
included), and a non-editable install of the wheel runs the compiled backend from outside the repo.

The dists are built once per module with ``python -m build --no-isolation`` from a copy of the files git
knows (tracked, plus untracked ones that are not ignored), so the work tree gets no ``build/`` or
``*.egg-info``. Building needs the ``test`` extra (``build``, ``setuptools>=70.1``); without them the
tests skip.

The install test puts the wheel into a fresh venv (``--without-pip``; this interpreter's pip installs
into it) and lends it the running interpreter's Paddle through a ``.pth`` line naming the
site-packages folder that holds ``paddle``. Such a folder is appended to ``sys.path`` after the venv's
own site-packages and its ``.pth`` files are not run, so an editable ``paddle_spmd_port`` there cannot
shadow the wheel; the test checks which file the import resolves to all the same. The compiled caller
is built into a fresh ``PADDLE_SPMD_PORT_CACHE``, i.e. from the installed copy of the C++ source.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from .helpers import paddle_profile

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "paddle_spmd_port"
CALLER = f"{PACKAGE}/native/cpp/spmd_caller.cc"
IGNORED_PARTS = {"__pycache__", ".git", ".venv", ".venvs", "build", "reports", ".pytest_cache", ".ruff_cache"}


def _run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


def _repo_files() -> list[str]:
    """Paths (relative, posix) of the files git knows in the work tree: tracked and untracked-not-ignored.
    Without git (an unpacked sdist, say), every file outside caches and build output."""
    try:
        out = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], 60, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        out = None
    if out is not None and out.returncode == 0:
        names = [n for n in out.stdout.split("\0") if n]
    else:
        names = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                 if p.is_file() and not IGNORED_PARTS & set(p.relative_to(ROOT).parts) and p.suffix != ".pyc"]
    return sorted(n for n in names if (ROOT / n).is_file())  # tracked but deleted in the tree: gone


def _package_files() -> list[str]:
    return [n for n in _repo_files() if n.startswith(PACKAGE + "/")]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the 'build' package is not installed (pip install -e .[test])")
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is None and importlib.util.find_spec("wheel") is None:
        pytest.skip("setuptools < 70.1 without the 'wheel' package cannot build wheels (pip install -e .[test])")
    base = tmp_path_factory.mktemp("dists")
    src, out = base / "src", base / "dist"
    for name in _repo_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    # sdist first, then the wheel from the unpacked sdist (what `pip install <sdist>` does)
    done = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], 300, cwd=base)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


# --------------------------------------------------------------------------- fast: the archives' file lists
def test_git_knows_the_cpp_caller():
    assert CALLER in _package_files()


def test_wheel_carries_every_package_file(dists):
    with zipfile.ZipFile(dists["wheel"]) as whl:
        shipped = set(whl.namelist())
    wanted = _package_files()
    missing_data = [n for n in wanted if not n.endswith(".py") and n not in shipped]
    assert not missing_data, f"non-Python package files missing from {dists['wheel'].name}: {missing_data}"
    missing_code = [n for n in wanted if n not in shipped]  # e.g. a folder without __init__.py
    assert not missing_code, f"package files missing from {dists['wheel'].name}: {missing_code}"
    assert CALLER in shipped


def test_sdist_carries_every_package_file(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        shipped = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    missing = [n for n in _package_files() if n not in shipped]
    assert not missing, f"package files missing from {dists['sdist'].name}: {missing}"
    assert {"pyproject.toml", "MANIFEST.in"} <= shipped


# --------------------------------------------------------------------------- slow: install and run
def _venv_site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages")) or sorted(venv.glob("Lib/site-packages"))
    assert len(found) == 1, f"no single site-packages in {venv}: {found}"
    return found[0]


@pytest.mark.native
@pytest.mark.slow
def test_installed_wheel_runs_the_compiled_route(dists, tmp_path):
    profile = paddle_profile()
    if profile is not None and profile.cpp_rules_missing:
        pytest.skip(f"Paddle {profile.detected_version} has no exported C++ rules for the compiled caller")
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no C++ compiler (install g++ or set CXX)")
    paddle_spec = importlib.util.find_spec("paddle")
    assert paddle_spec is not None and paddle_spec.submodule_search_locations
    paddle_site = Path(next(iter(paddle_spec.submodule_search_locations))).parent

    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    done = _run([sys.executable, "-m", "venv", "--without-pip", venv], 120)
    assert done.returncode == 0, done.stderr
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    done = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
                 "--no-cache-dir", "--disable-pip-version-check", dists["wheel"]], 300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = _venv_site_packages(venv)
    (site / "zz_borrowed_paddle.pth").write_text(f"{paddle_site}\n")

    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env["PADDLE_SPMD_PORT_CACHE"] = str(tmp_path / "cache")  # compile from the installed source
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    probe = ("import importlib.util, json, paddle_spmd_port\n"
             "from paddle_spmd_port.native import compiled\n"
             "print(json.dumps({'package': paddle_spmd_port.__file__, 'source': str(compiled.SOURCE),\n"
             "                  'paddle': importlib.util.find_spec('paddle').origin}))\n")
    done = _run([python, "-c", probe], 120, cwd=work, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    where = json.loads(done.stdout.strip().splitlines()[-1])
    package_dir = Path(where["package"]).resolve().parent
    assert package_dir == (site / PACKAGE).resolve(), f"paddle_spmd_port imported from {package_dir}, not the wheel"
    assert (package_dir / "native" / "cpp" / "spmd_caller.cc").is_file()
    assert Path(where["source"]).resolve() == (package_dir / "native" / "cpp" / "spmd_caller.cc").resolve()
    assert Path(where["paddle"]).resolve().is_relative_to(paddle_site.resolve())

    report_dir = tmp_path / "r"
    done = _run([python, "-m", PACKAGE, "parity", "--rules", "batch_norm_grad", "--backend", "compiled",
                 "--max-cases", "20", "--quiet", "--report-dir", report_dir], 600, cwd=work, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((report_dir / "parity.json").read_text())
    rules = report["rules"]
    tallies = [t for t in (rules.values() if isinstance(rules, dict) else rules)
               if t.get("rule") == "batch_norm_grad" and t.get("backend") == "compiled"]
    assert len(tallies) == 1, rules
    tally = tallies[0]
    assert tally["cases"] == 20
    assert tally["matching_cells"] > 0, tally
    assert tally["verdicts"].get("match", 0) > 0, tally["verdicts"]
    assert tally["verdicts"].get("mismatch", 0) == 0, tally["verdicts"]
    assert tally["verdicts"].get("unreachable", 0) == 0, tally["verdicts"]  # e.g. the caller did not build
    assert list((tmp_path / "cache").glob("spmd_caller-*")), "the caller was not compiled into the fresh cache"
