"""One import namespace: the project's packages are `fencepost.harness`, `fencepost.clusters`, …
Nothing in the checkout imports them by their bare folder names (a bare `import harness` would
load a second copy of a module beside `fencepost.harness`'s), and an installed wheel puts
only `fencepost` into site-packages, with the C reader and the package data inside it."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PACKAGES = ("harness", "clusters", "broker", "nemesis", "workloads", "checkers")
CODE_FOLDERS = (*PACKAGES, "tests", "bench", "fencepost")
# ... and Python inside a string (`python -c "..."`, a script a test writes): a statement that
# starts after a quote, an escaped newline or a semicolon
EMBEDDED = re.compile(rf"""(?:["';]|\\n)\s*(?:from\s+((?:{'|'.join(PACKAGES)})(?:\.[\w.]+)?)\s+import\s"""
                      rf"""|import\s+((?:{'|'.join(PACKAGES)})(?:\.[\w.]+)?)\b(?!/))""")
BARE = re.compile(rf"^\s*(?:import|from)\s+((?:{'|'.join(PACKAGES)})(?:\.[\w.]+)?)(?:\s+(?:import|as)\b|\s*$|\s*,)")


def bare_imports(path: Path, root: Path = ROOT) -> list[str]:
    """The imports of `path` that name a project package without the `fencepost.` prefix (an
    import statement's module is on its first line, so a line scan sees every one; the
    docstrings' prose never starts a line with `import` or `from <package> import`)."""
    found = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if m := BARE.match(line):
            found.append(f"{path.relative_to(root)}:{n}: {m.group(1)}")
        found += [f"{path.relative_to(root)}:{n}: {e.group(1) or e.group(2)} (in a string)"
                  for e in EMBEDDED.finditer(line)]
    return found


def test_no_file_imports_a_package_by_its_bare_name():
    files = [p for folder in CODE_FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))
             if "__pycache__" not in p.parts and not (folder == "fencepost" and p.parent != ROOT / "fencepost")
             and p != Path(__file__).resolve()]  # this file's examples of the forms are strings
    files += [ROOT / "setup.py"]
    assert len(files) > 400
    assert [bad for p in files for bad in bare_imports(p)] == []


def test_the_bare_import_check_sees_each_form(tmp_path):
    program = tmp_path / "m.py"
    program.write_text("import harness\nimport clusters.store as s\nfrom checkers import x\n"
                       "from fencepost.harness import cli\nimport fencepost.broker\nfrom . import harness\n"
                       "run([python, '-c', 'import broker'])\nscript = 'import os; from nemesis.guard import G\\n'\n"
                       "ok = ['-c', 'import fencepost.broker; from fencepost.harness.cli import main']\n")
    found = [line.rsplit(": ", 1)[1] for line in bare_imports(program, tmp_path)]
    assert found == ["harness", "clusters.store", "checkers", "broker (in a string)", "nemesis.guard (in a string)"]


def test_the_fencepost_folder_links_every_package():
    for name in PACKAGES:
        link = ROOT / "fencepost" / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve(), name


@pytest.mark.slow
@pytest.mark.integration
def test_an_installed_wheel_holds_only_fencepost(tmp_path):
    """`pip install .` of the checkout: the wheel's top-level names, then a fresh virtualenv
    (its dependencies taken from this interpreter's site-packages) where `import harness`
    fails and `import fencepost.harness` works, the C reader among the installed modules."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(wheels), str(ROOT)], check=True, cwd=tmp_path, timeout=600)
    (wheel,) = wheels.glob("fencepost-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"fencepost"}
    assert any(n.startswith("fencepost/harness/_native") and n.endswith(".so") for n in names)
    assert "fencepost/clusters/lazyfs/lazyfs.c" in names or any(
        n.startswith("fencepost/clusters/lazyfs/") and n.endswith(".c") for n in names)
    assert any(n.startswith("fencepost/clusters/systems/kafka/") and n.endswith(".properties") for n in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = ("import importlib.util as u, fencepost.harness.cli, fencepost.broker.__main__\n"
             "print(fencepost.harness.cli.__file__)\n"
             "print(u.find_spec('fencepost.harness._native') is not None)\n"
             "print(u.find_spec('harness'), u.find_spec('clusters'), u.find_spec('checkers'))\n")
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=clean,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    where, native, bare = done.stdout.splitlines()
    assert where.startswith(site), where
    assert native == "True"
    assert bare == "None None None"
    broken = subprocess.run([str(python), "-c", "import harness"], capture_output=True, text=True, cwd=tmp_path,
                            env=clean, timeout=60)
    assert broken.returncode != 0 and "No module named 'harness'" in broken.stderr
