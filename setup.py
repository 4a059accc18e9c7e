"""The one compiled part: fencepost.harness._native, the C reader of history.jsonl and
final.jsonl (harness/native/). Everything else is in pyproject.toml. The
build is optional: without a C compiler `fencepost` installs and reads runs
with its Python readers (slower), and says so in `fencepost check --help`."""
from pathlib import Path

from setuptools import Extension, setup

SOURCES = sorted(str(p) for p in Path("harness/native").glob("*.c"))

setup(ext_modules=[Extension(
    "fencepost.harness._native", sources=SOURCES, optional=True,
    extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                        "-Wno-missing-field-initializers"],
)])
