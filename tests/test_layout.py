"""Where tests live, held by reading the tree: tests/ mirrors the source.

- tests/broker/, clusters/, checkers/, workloads/, nemesis/, harness/: the tests of that
  package (its unit tests, and its own process or host where it needs one);
- tests/system/: tests that run real clusters end to end (`fencepost run`, `cluster`,
  campaigns, stock Kafka, the nemesis and the workloads on real clusters);
- tests/reliability/: fuzzing, crash safety, soundness (planted anomalies found);
- tests/support/: every helper the tests share, and no test.

Every test module sits in one of the test folders (this file alone stays at tests/), and no
module imports a test module: what two test modules share is a helper of tests/support/ (or
a fixture of tests/conftest.py), so a test module can move without breaking another; and
every tests/ path the docs, README.md, bench/ and the tests cite is there."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import ROOT

TESTS = ROOT / "tests"
SOURCE_PACKAGES = ("broker", "clusters", "checkers", "workloads", "nemesis", "harness")
TEST_FOLDERS = (*SOURCE_PACKAGES, "system", "reliability", "bench")
SUPPORT = "support"
# tests/... as docs cite it: a file (also before ::test), a folder, a glob, `module.attribute`;
# and a test module run as a program, `python -m tests.reliability.test_broker_fuzz`
CITATION = re.compile(r"(?<![\w/.-])tests/[\w/.*-]*[\w*/]")
RUN_AS_MODULE = re.compile(r"-m (tests(?:\.\w+)+)")


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def is_test_module(path: Path) -> bool:
    return path.name.startswith("test_") and path.suffix == ".py"


def module_name(path: Path, root: Path = ROOT) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def names_a_test_module(dotted: str) -> bool:
    parts = dotted.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") for part in parts)


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) of every module `path` imports, relative imports resolved, names taken
    from a package counted as modules (`from tests.harness import test_report`), and the
    modules named to importlib.import_module or pytest.importorskip."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path, root).split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[:len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "importorskip")):
            found.append((node.lineno, node.args[0].value))
    return found


def test_every_test_module_sits_in_a_folder_that_mirrors_the_source():
    misplaced = []
    for path in python_files(TESTS):
        relative = path.relative_to(TESTS)
        if not is_test_module(path) or relative == Path("test_layout.py"):
            continue
        if relative.parts[0] not in TEST_FOLDERS:
            misplaced.append(str(relative))
    assert misplaced == [], (
        f"test modules outside the test folders {', '.join(TEST_FOLDERS)} (a helper with no tests goes to "
        f"tests/support/ under a name that does not start with test_): {misplaced}")


def test_no_module_imports_a_test_module():
    offending = [f"{path.relative_to(ROOT)}:{line} imports {name}"
                 for folder in (TESTS, ROOT / "bench") for path in python_files(folder)
                 for line, name in imported_modules(path) if names_a_test_module(name)]
    assert offending == [], ("what test modules share belongs in tests/support/ (or tests/conftest.py for a "
                             f"fixture): {offending}")


def test_every_folder_of_the_tests_is_a_package_and_a_known_one():
    folders = {p.parent for p in python_files(TESTS)}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []
    top = {f.relative_to(TESTS).parts[0] for f in folders if f != TESTS}
    assert top <= {*TEST_FOLDERS, SUPPORT}, top - {*TEST_FOLDERS, SUPPORT}


def test_every_source_package_has_its_test_folder():
    for package in SOURCE_PACKAGES:
        assert (ROOT / package / "__init__.py").is_file(), package
        assert any(is_test_module(p) for p in (TESTS / package).glob("test_*.py")), package


def test_the_import_check_sees_every_way_of_importing_a_test_module(tmp_path):
    program = tmp_path / "tests" / "checkers" / "mod.py"
    program.parent.mkdir(parents=True)
    program.write_text("from . import test_a\nfrom .test_b import x\nfrom tests.harness import test_c\n"
                       "import tests.system.test_d\nfrom tests.support.cli import fencepost\n"
                       "import pytest\npytest.importorskip('tests.reliability.test_e')\n")
    names = [name for _, name in imported_modules(program, tmp_path) if names_a_test_module(name)]
    assert {n.rsplit(".", 1)[-1] for n in names} >= {"test_a", "test_b", "test_c", "test_d", "test_e"}
    assert not any("fencepost" in n or n.endswith(".cli") for n in names)


def cited_paths(text: str) -> list[str]:
    return ([m.group(0) for m in CITATION.finditer(text)]
            + [m.group(1).replace(".", "/") + ".py" for m in RUN_AS_MODULE.finditer(text)])


def cites_something_there(citation: str) -> bool:
    if any(ROOT.glob(citation)) if "*" in citation else (ROOT / citation).exists():
        return True
    module, _, attribute = citation.rpartition(".")  # tests/support/local_cluster.LocalCluster
    return bool(module) and attribute != "py" and (ROOT / f"{module}.py").is_file()


def test_every_cited_test_path_is_there():
    sources = [ROOT / "README.md", ROOT / "pyproject.toml", *(ROOT / "docs").rglob("*.md"),
               *python_files(ROOT / "bench"), *python_files(TESTS), *(ROOT / "scripts").iterdir()]
    sources = [s for s in sources if s.is_file() and s != TESTS / "test_layout.py"]  # its examples are made up
    stale = [f"{source.relative_to(ROOT)}: {citation}" for source in sources
             for citation in cited_paths(source.read_text(errors="replace")) if not cites_something_there(citation)]
    assert stale == [], f"citations of test files that are not there (moved? see tests/test_layout.py): {stale}"


def test_the_citation_check_reads_citations_as_docs_write_them():
    text = ("`tests/harness/test_formats.py` holds; see tests/support/synth/. Also tests/system/test_x.py. "
            "(`tests/broker/test_broker_storage_log.py::test_truncate`), tests/support/local_cluster.LocalCluster, "
            "`python3 -m pytest tests/clusters/test_lazyfs*.py`, jepsen/tests/kafka.clj, "
            "`python -m tests.reliability.test_broker_fuzz --frames 9`, python -m tests.test_broker_fuzz")
    assert cited_paths(text) == ["tests/harness/test_formats.py", "tests/support/synth/", "tests/system/test_x.py",
                                 "tests/broker/test_broker_storage_log.py",
                                 "tests/support/local_cluster.LocalCluster", "tests/clusters/test_lazyfs*.py",
                                 "tests/reliability/test_broker_fuzz.py", "tests/test_broker_fuzz.py"]
    assert [cites_something_there(c) for c in cited_paths(text)] == [True, True, False, True, True, True, True, False]
