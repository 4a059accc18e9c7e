"""Nothing is written outside the run directory, and nothing but regular files is replaced
(docs/RELIABILITY.md, 7.2): the real `fencepost` CLI on run directories whose data names
files (a topic `../../X`, values of hundreds of characters, NUL bytes and slashes in them),
whose output folders are symlinks, and on `--out` targets that are FIFOs, devices,
directories or links; every test checks that nothing appeared or changed outside the run
directory in a temporary root that holds it.

Also: the one atomic writer (harness/rundir/atomic.py) with two writers of one file (two
processes, two threads), the leftover `.partial` files of killed writers (removed by the
next writer of the file and by `fencepost cleanup --only-partials`, never a live writer's),
and the one function that makes file names of data (harness/rundir/safe_names.py).
"""
from __future__ import annotations

import fcntl
import os
import random
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.cli import fencepost
from tests.support.paths import ROOT
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import plant

# Values the planted anomaly names, renamed to these: a long unsafe one (slashes, dots, letters
# beyond ASCII; the report's also a NUL, which no command line can carry) and a long one of safe
# characters only.
CLIMBING = "../../" + "é/" * 70
CLIMBING_NUL = "../../\x00" + "é/" * 70
LONG = "y" * 300
HOSTILE_TOPIC = "../../X"
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._~-]*")


# --- helpers ------------------------------------------------------------------------


def tree(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every path under `root` (symlinks not followed) -> (mode, size, mtime, inode)."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st_ = os.lstat(path)
            found[str(path.relative_to(root))] = (st_.st_mode, st_.st_size, st_.st_mtime_ns, st_.st_ino)
    return found


def changed_outside(root: Path, run_dir: Path, before: dict) -> list[str]:
    """The paths under `root` but outside `run_dir` that appeared, went or changed since `before`."""
    after = tree(root)
    inside = str(run_dir.relative_to(root))
    return sorted(k for k in set(before) | set(after)
                  if before.get(k) != after.get(k) and k != inside and not k.startswith(inside + os.sep))


def hostile_run(root: Path, topic: str = "fp", values: tuple[str, str] | None = None) -> tuple[Path, dict]:
    """A small run, two folders deep under `root`, whose partition 0 is not linearizable (an acked
    value overwritten by another); with `values`, those two values renamed to these. Returns the
    run directory and the planted anomaly's details (`value`, `by`, `offset`)."""
    run = generate(GenConfig(seed=3, lines=300, partitions=2, producers=4, consumers=1, topic=topic))
    planted = plant("nonlinearizable/lost-write", run, random.Random(1))
    run_dir = planted.run.write(root / "a" / "b" / "run")
    details = dict(planted.details)
    if values is not None:
        renames = {details["value"]: values[0], details["by"]: values[1]}
        for name in ("history.jsonl", "final.jsonl"):
            data = (run_dir / name).read_bytes()
            for old, new in renames.items():
                data = data.replace(orjson.dumps(old), orjson.dumps(new))
            (run_dir / name).write_bytes(data)
        details["value"], details["by"] = values
    return run_dir, details


def check_in(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return fencepost(run_dir.parent, "check", str(run_dir), *args)


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


# --- names made of data -------------------------------------------------------------


def test_a_topic_that_climbs_out_of_the_run_gets_its_counterexample_page_inside(tmp_path):
    """A topic `../../X` made `fencepost check` write `X-0.html` two folders above the run."""
    run_dir, _ = hostile_run(tmp_path, topic=HOSTILE_TOPIC)
    before = tree(tmp_path)
    done = check_in(run_dir)
    assert done.returncode == 1, done.stderr
    assert changed_outside(tmp_path, run_dir, before) == []
    results = orjson.loads((run_dir / "results.json").read_bytes())
    page = results["linearizability"][f"{HOSTILE_TOPIC}-0"]["counterexample_file"]
    assert page.startswith("linear/") and SAFE_NAME.fullmatch(page.removeprefix("linear/")), page
    assert (run_dir / page).resolve().parent == (run_dir / "linear").resolve()
    assert "<html" in (run_dir / page).read_text().lower()


@pytest.mark.parametrize("which", ["climbing value", pytest.param("long value", marks=pytest.mark.slow),
                                   pytest.param("climbing topic", marks=pytest.mark.slow)])
def test_trace_pages_of_long_and_unsafe_values_and_topics_get_bounded_names_inside(tmp_path, which):
    """A value of more than about 120 characters crashed `fencepost trace --html` (a file name
    over 255 bytes); a slash or `..` in a value or topic must not make a path either."""
    run_dir, planted = hostile_run(tmp_path, topic=HOSTILE_TOPIC, values=(CLIMBING, LONG))
    target = {"climbing value": [CLIMBING], "long value": [LONG],
              "climbing topic": ["--offset", f"{HOSTILE_TOPIC}/0/{planted['offset']}"]}[which]
    before = tree(tmp_path)
    done = fencepost(run_dir.parent, "trace", str(run_dir), *target, "--html")
    assert done.returncode == 0, done.stderr
    page = Path(re.search(r"^page: (.+)$", done.stdout, re.M).group(1))
    assert changed_outside(tmp_path, run_dir, before) == []
    assert os.listdir(run_dir / "trace") == [page.name]
    assert SAFE_NAME.fullmatch(page.name) and len(page.name) <= 130, page.name


@pytest.mark.slow
def test_report_of_hostile_names_and_symlinked_output_folders_writes_only_inside(tmp_path):
    """`fencepost report` on a run with a climbing topic and long values, whose linear/, trace/ and
    plots/ are symlinks to folders outside: each link is replaced by a real folder (the link
    removed, its target untouched), and nothing outside the run changes."""
    run_dir, _ = hostile_run(tmp_path, topic=HOSTILE_TOPIC, values=(CLIMBING_NUL, LONG))
    elsewhere = tmp_path / "elsewhere"
    for folder in ("linear", "trace", "plots"):
        (elsewhere / folder).mkdir(parents=True)
        (elsewhere / folder / "keep.txt").write_text("mine")
        (run_dir / folder).symlink_to(elsewhere / folder, target_is_directory=True)
    before = tree(tmp_path)
    done = check_in(run_dir)
    assert done.returncode == 1, done.stderr
    done = fencepost(run_dir.parent, "report", str(run_dir))
    assert done.returncode == 0, done.stderr
    assert changed_outside(tmp_path, run_dir, before) == []
    for folder in ("linear", "trace", "plots"):
        assert not (run_dir / folder).is_symlink() and (run_dir / folder).is_dir()
        assert sorted(os.listdir(elsewhere / folder)) == ["keep.txt"]
    assert len(list((run_dir / "trace").glob("*.html"))) >= 2
    assert list((run_dir / "linear").glob("*.html")) and list((run_dir / "plots").glob("*.png"))


@pytest.mark.slow
def test_a_symlinked_plot_or_page_inside_a_real_output_folder_is_refused_not_followed(tmp_path):
    """plots/rate.png a link to a file outside: matplotlib wrote through it. Now the report is
    refused (exit 254, naming the link) and the file outside keeps its bytes."""
    run_dir, _ = hostile_run(tmp_path)
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"keep")
    (run_dir / "plots").mkdir()
    (run_dir / "plots" / "rate.png").symlink_to(outside)
    before = tree(tmp_path)
    done = fencepost(run_dir.parent, "report", str(run_dir))
    assert done.returncode == 254, done.stderr
    assert "rate.png" in done.stderr and "Traceback" not in done.stderr
    assert outside.read_bytes() == b"keep" and (run_dir / "plots" / "rate.png").is_symlink()
    assert changed_outside(tmp_path, run_dir, before) == []


def test_a_counterexample_page_is_replaced_by_a_rename_never_written_in_place(tmp_path):
    """linear/*.html were written in place (open, truncate, write): a hard link to the page from
    outside the run saw its bytes change, a reader a half-written page, and a link named like the
    page was followed. Now the page is a new file renamed over the old one."""
    run_dir, _ = hostile_run(tmp_path)
    (run_dir / "linear").mkdir()
    (run_dir / "linear" / "fp-0.html").write_text("old page")
    os.link(run_dir / "linear" / "fp-0.html", tmp_path / "hard-link.html")
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (run_dir / "linear" / "fp-1.html").symlink_to(outside)  # not written: fp-1 is linearizable
    before = tree(tmp_path)
    done = check_in(run_dir)
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "hard-link.html").read_text() == "old page"
    assert (run_dir / "linear" / "fp-0.html").read_text() != "old page"
    assert outside.read_text() == "keep"
    assert changed_outside(tmp_path, run_dir, before) == []
    assert partials(run_dir / "linear") == []


@pytest.mark.slow
def test_a_linked_counterexample_page_is_refused_and_its_target_kept(tmp_path):
    run_dir, _ = hostile_run(tmp_path)
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (run_dir / "linear").mkdir()
    (run_dir / "linear" / "fp-0.html").symlink_to(outside)
    done = check_in(run_dir)
    assert done.returncode == 254, done.stderr
    assert "fp-0.html" in done.stderr and "Traceback" not in done.stderr
    assert outside.read_text() == "keep" and (run_dir / "linear" / "fp-0.html").is_symlink()


# --- export --out and compare --out: the one atomic writer ----------------------------


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    run_dir, _ = hostile_run(tmp_path_factory.mktemp("small"))
    return run_dir


def _char_device(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a /dev/null of our own, in a temp dir


@pytest.mark.parametrize("kind", ["fifo", "char-device", pytest.param("directory", marks=pytest.mark.slow),
                                  pytest.param("symlink", marks=pytest.mark.slow)])
def test_export_refuses_an_out_that_is_not_a_regular_file(small_run, tmp_path, kind):
    """`export --edn --out /dev/null` as root replaced the system's /dev/null by a regular file."""
    out = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(out)
    elif kind == "char-device":
        _char_device(out)
    elif kind == "directory":
        out.mkdir()
    else:
        (tmp_path / "file.edn").write_text("keep")
        out.symlink_to(tmp_path / "file.edn")
    mode = os.lstat(out).st_mode
    before = tree(tmp_path)
    done = fencepost(tmp_path, "export", str(small_run), "--edn", "--out", str(out))
    assert done.returncode == 254, done.stderr
    assert str(out) in done.stderr and "Traceback" not in done.stderr
    assert os.lstat(out).st_mode == mode
    assert tree(tmp_path) == before  # no partial file left beside it either


@pytest.mark.slow
def test_two_exports_to_one_file_both_write_it_whole(tmp_path):
    """Both wrote `FILE.partial`: one renamed the other's half-written file, or crashed finding
    none; NUL bytes where one truncated what the other had written."""
    run_dir = tmp_path / "big"
    from tests.support.synth.generate import generate_to_dir
    generate_to_dir(run_dir, GenConfig(seed=1, lines=20_000, partitions=2, producers=4, consumers=1))
    alone = tmp_path / "alone.edn"
    assert fencepost(tmp_path, "export", str(run_dir), "--edn", "--out", str(alone)).returncode == 0
    same = tmp_path / "same.edn"
    for _ in range(2):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        procs = [subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "export", str(run_dir), "--edn",
                                   "--out", str(same)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
        assert same.read_bytes() == alone.read_bytes()
        assert partials(tmp_path) == []


def test_two_threads_writing_one_file_each_write_it_whole(tmp_path):
    """The temporary name was `.NAME.<pid>.partial`: two writers in one process shared it."""
    from fencepost.harness.rundir.atomic import write_atomically

    path = tmp_path / "shared.json"
    payloads = [bytes([65 + i]) * 200_000 for i in range(2)]
    errors = []

    def writer(payload: bytes) -> None:
        try:
            for _ in range(30):
                write_atomically(path, payload)
        except Exception as e:  # noqa: BLE001 - the test reports any
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_bytes() in payloads
    assert partials(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_compare_refuses_an_out_file_that_is_not_a_regular_file(small_run, tmp_path, kind):
    """compare.csv a FIFO was replaced by a regular file; compare.png a link was written through."""
    out = tmp_path / "cmp"
    out.mkdir()
    outside = tmp_path / "outside.png"
    outside.write_bytes(b"keep")
    if kind == "fifo":
        os.mkfifo(out / "compare.csv")
        named = "compare.csv"
    else:
        (out / "compare.png").symlink_to(outside)
        named = "compare.png"
    before = tree(tmp_path)
    done = fencepost(tmp_path, "compare", str(small_run), "--out", str(out))
    assert done.returncode == 254, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert tree(tmp_path) == before
    assert outside.read_bytes() == b"keep"


@pytest.mark.slow
def test_compare_out_that_is_a_file_is_refused(small_run, tmp_path):
    (tmp_path / "cmp").write_text("keep")
    done = fencepost(tmp_path, "compare", str(small_run), "--out", str(tmp_path / "cmp"))
    assert done.returncode == 254, done.stderr
    assert "cmp" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "cmp").read_text() == "keep"


# --- leftover .partial files ----------------------------------------------------------


def _leftovers(folder: Path, name: str) -> list[Path]:
    """What a writer of `folder/name` killed mid-write leaves: today's name and the older one."""
    made = [folder / f".{name}.0123456789abcdef.partial", folder / f".{name}.4242.partial"]
    for path in made:
        path.write_bytes(b"\x00" * 100)
    return made


def test_the_next_writer_of_a_file_removes_the_partials_killed_writers_left(small_run, tmp_path):
    """...but not the one a live writer holds, nor another file's."""
    out = tmp_path / "h.edn"
    dead = _leftovers(tmp_path, "h.edn")
    other = _leftovers(tmp_path, "h.edn.old")
    live = tmp_path / ".h.edn.fedcba9876543210.partial"
    with open(live, "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a writer holds its temporary file
        done = fencepost(tmp_path, "export", str(small_run), "--edn", "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert live.exists()
    assert not any(p.exists() for p in dead)
    assert all(p.exists() for p in other)
    assert out.stat().st_size > 0


def test_cleanup_only_partials_removes_leftovers_under_results(tmp_path):
    results = tmp_path / "results"
    run_dir = results / "t" / "20261127T000000Z-abcdef"
    (run_dir / "trace").mkdir(parents=True)
    (run_dir / "history.jsonl").write_text("")
    dead = _leftovers(run_dir, "report.html") + _leftovers(run_dir / "trace", "value-1-2.html")
    kept = run_dir / "notes.partial"  # not a name a writer makes
    kept.write_text("mine")
    done = fencepost(tmp_path, "cleanup", "--only-partials", "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert not any(p.exists() for p in dead)
    assert kept.read_text() == "mine"
    assert all(str(p) in done.stdout for p in dead), done.stdout


# --- the one function that names files after data ---------------------------------------


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(max_size=400))
def test_safe_name_is_one_bounded_harmless_component(text):
    from fencepost.harness.rundir.safe_names import MAX_NAME, safe_name

    name = safe_name(text)
    assert SAFE_NAME.fullmatch(name) and len(name) <= MAX_NAME
    assert name not in (".", "..") and "/" not in name and "\x00" not in name
    if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", text) and len(text) <= MAX_NAME:
        assert name == text
    else:
        assert name != text and "~" in name


def test_safe_names_of_different_texts_differ():
    from fencepost.harness.rundir.safe_names import safe_name

    texts = ["a b", "a_b", "a/b", "a\x00b", "../a", ".a", "-a", "", "x" * 300, "x" * 301, "é", "e", "\udcff"]
    names = [safe_name(t) for t in texts]
    assert len(set(names)) == len(texts), names


def test_a_run_directory_never_lands_outside_the_results_folder(tmp_path):
    from fencepost.harness.errors import BadInput
    from fencepost.harness.rundir.run_dirs import new_run_dir

    results = tmp_path / "deep" / "results"
    results.mkdir(parents=True)
    for name in ("../../escape", "..", "a/b", "/abs", ""):
        with pytest.raises(BadInput):
            new_run_dir(results, name)
    assert sorted(os.listdir(tmp_path)) == ["deep"] and os.listdir(results) == []


# --- many hostile names through the writers themselves ------------------------------------

PIECES = ["..", "/", "\x00", ".", "-", "~", " ", "é", "\u202e", "\U0001f600", "\n", "%2e%2e", "CON", "\\", "a", "9",
          "€", "<script>", "'", '"', "$HOME", "*", "?"]


def hostile_text(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return rng.choice(["", ".", "..", "-", "~"]) + "a" * rng.choice([0, 119, 120, 121, 250, 400])
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, rng.choice([4, 40, 200]))))


def hostile_names_case_count(cases: int, seed: int, root: Path) -> dict[str, int]:
    """Write a trace page of a value, one of an offset and a counterexample page for each of
    `cases` hostile texts (as value, topic and topic), a hundred texts per run directory under
    `root`; any write outside the run directory, any name that is not safe, or any error fails.
    Returns the counts."""
    from fencepost.checkers.check import PartitionReport
    from fencepost.harness.check.checking import write_counterexamples
    from fencepost.harness.report.trace import Target, Trace
    from fencepost.harness.report.trace_page import write_trace_page

    rng = random.Random(seed)
    texts: set[str] = set()
    pages = []
    run_dirs = [root / f"batch{batch}" / "a" / "b" / "run" for batch in range(0, cases, 100)]
    for run_dir in run_dirs:
        run_dir.mkdir(parents=True)
    before = tree(root)
    for batch, run_dir in zip(range(0, cases, 100), run_dirs):
        for _ in range(min(100, cases - batch)):
            text = hostile_text(rng)
            texts.add(text)
            for target in (Target(value=text),
                           Target(topic=text, partition=rng.randrange(2**31), offset=rng.randrange(2**63))):
                write_trace_page(run_dir, Trace(target, [], [], False, []))
            report = PartitionReport(text, rng.randrange(2**31), [], {}, linearizable=False,
                                     linear_html="<html>x</html>")
            assert len(write_counterexamples(run_dir, [report])) == 1
        pages += [p for folder in ("trace", "linear") for p in (run_dir / folder).iterdir()]
    after = tree(root)
    insides = tuple(str(run_dir.relative_to(root)) for run_dir in run_dirs)
    changed = [k for k in set(before) | set(after) if before.get(k) != after.get(k)
               and k not in insides and not k.startswith(tuple(inside + os.sep for inside in insides))]
    assert changed == []  # every path that changed lies in one of the run directories
    bad = [p.name for p in pages if not (SAFE_NAME.fullmatch(p.name) and len(p.name) <= 130)]
    assert bad == []
    return {"texts": len(texts), "pages": len(pages), "longest": max(len(p.name) for p in pages)}


@pytest.fixture
def no_fsync(monkeypatch):
    """These tests are of names and places, not of durability: an fsync per page would cost
    them most of their time."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def test_hostile_names_through_the_page_writers_stay_inside(tmp_path, no_fsync):
    counts = hostile_names_case_count(100, seed=1, root=tmp_path)
    assert counts["texts"] > 70 and counts["pages"] > 200


@pytest.mark.slow
def test_hostile_names_through_the_page_writers_stay_inside_many(tmp_path, no_fsync):
    counts = hostile_names_case_count(5_000, seed=2, root=tmp_path)
    print(counts)
    assert counts["texts"] > 3_000 and counts["pages"] > 10_000


@pytest.mark.slow
def test_an_export_killed_mid_write_leaves_a_partial_the_next_export_removes(tmp_path):
    """SIGKILL `fencepost export` while it writes: the target keeps its old bytes, and the
    temporary file it left is gone after the next export of that file."""
    import signal
    import time

    from tests.support.synth.generate import generate_to_dir

    run_dir = tmp_path / "big"
    generate_to_dir(run_dir, GenConfig(seed=1, lines=40_000, partitions=2, producers=4, consumers=1))
    out = tmp_path / "h.edn"
    out.write_text("old")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed_with_partial = 0
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "export", str(run_dir), "--edn",
                                 "--out", str(out)], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not partials(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_with_partial += bool(partials(tmp_path))
        assert out.read_text() == "old" or proc.returncode == 0
    assert killed_with_partial >= 1
    done = fencepost(tmp_path, "export", str(run_dir), "--edn", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert partials(tmp_path) == [] and out.read_text() != "old"
