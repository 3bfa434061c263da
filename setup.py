"""The optional C module (paddle_spmd_port/_speedups.c); everything else is in pyproject.toml.

``optional=True``: where it cannot be compiled (no C compiler), the install goes on without it and
the package runs its Python constructors (paddle_spmd_port.types.CORE == "python")."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("paddle_spmd_port._speedups", ["paddle_spmd_port/_speedups.c"], optional=True)])
