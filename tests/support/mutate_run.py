"""Seeded mutations of whole run directories, and the rules every mutated run is held to
(issue 33, docs/RELIABILITY.md 7.6). Shared by tests/reliability/test_mutation.py (a
seeded slice in the fast set) and bench/mutation_bench.py (100,000 cases and more), so
both run the same cases: case `n` of class `cls` under seed `seed` is made by
`random.Random(f"{seed}:{cls}:{n}")` alone, whatever else runs.

Bases: every run under examples/, a few valid synthetic runs (tests/support/synth) and,
per planter of tests/support/synth/plant.py, a synthetic run holding that anomaly. The
unmutated base is checked once: its exit code, and per anomaly example of its invalid set
the lines the anomaly hangs on (`Base.instances`: the example's ops, the lines naming its
values, the final.jsonl lines at its offsets; for replica-divergence every replica line
of the partition).

A mutation changes the base's files (`CLASSES`) and says which original lines it
touched and what `fencepost check` must then answer (`Case.expect`):
- a complete line that is not a valid line (garbage, NUL, invalid UTF-8, a required field
  of the wrong type or beyond int64, history lines dropped, duplicated or swapped so an
  index is not its line number, an empty history): exit 2, unknown;
- a planted change whose anomaly the documented rules catch (an acknowledged value's
  final read line dropped or changed, a poll's or an acknowledgement's offset changed,
  a final read cut inside a read line or marked incomplete): never 0;
- a test.json section of the wrong type, or test.json not an object: 254; a key the
  checker does not read: the base's verdict;
- anything else: 0, 1 or 2; and on a base holding an anomaly, never 0 unless the mutation
  touched a line of every anomaly example (`Case.expect` is computed so).

`run_case` then runs the commands (check always; report, trace --html, export --edn,
compare on a share, and all of them for the symbolic-link classes), each in a child forked
from this process (harness.cli.main with argv: its exit code as the command line gives it)
or, when asked, as a real `fencepost` process, in a root of its own: the run directory,
a sentinel folder beside it (the targets of the symbolic links), the child's working
directory, and folders for compare's and export's --out. `Failure`s: an exit code outside
{0, 1, 2, 254} or a signal, a traceback, a command over its time, any change outside the
run directory and the --out folders, a verdict outside `Case.expect`, the C and Python
readers loading the run differently, a control character printed, a page whose script
elements a value opened or closed, a real process answering otherwise than the forked one.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson

from tests.support.paths import EXAMPLES, ROOT

HISTORY, FINAL, TEST = "history.jsonl", "final.jsonl", "test.json"
RUN_FILES = (HISTORY, FINAL, TEST)
ALLOWED = frozenset({0, 1, 2, 254})
ANY = frozenset({0, 1, 2})
NOT_VALID = frozenset({1, 2})
UNKNOWN = frozenset({2})
REFUSED = frozenset({254})

INT64 = (-(2**63), 2**63 - 1)
OUT_OF_RANGE = [2**63, -(2**63) - 1, 2**64, 10**30, 1e308, -1e308]
IN_RANGE_EXTREMES = [2**63 - 1, -(2**63), -1, 0]
# "@ROOT@" becomes the case's root folder (an absolute path that stays inside it).
HOSTILE = [
    "../../x", "../../../fpmut-up", "@ROOT@/fpmut-abs", "</script>", "<!--<script>",
    "</script><!--<script>fpmut", "\x00", "a\x00b", "\x1b[2J\x1b[31mred\x1b[0m", "\x1b]0;title\x07",
    "\u2028\u2029", "x" * 10_000, "v" * 200, "\U0001F600\U0001D54F", "", " ", ".", "..", "CON",
    "a/b", "a\\b", "%2e%2e%2f", "\r\n", "'\"`;<>&", "-1", "NaN", "\ud800",
]
PAGE_MARKERS = ("<!--<script>", "</script><!--<script>fpmut")
CONTROL = bytes(c for c in range(32) if chr(c) not in "\t\n\r") + b"\x7f"
GARBAGE = [b"not json\n", b"[1, 2, 3]\n", b"null\n", b'"s"\n', b"5\n", b"{\n", b"\n", b" \t \n",
           b"\xef\xbb\xbf{}\n", b'{"index": 1e999}\n', b"{\"a\": NaN}\n", b"\xff\xfe\xfd\n"]
WRONG_TYPES: list[Any] = ["x", "1", None, True, False, [], [1], {}, {"a": 1}, 1.5]


# -- lines ---------------------------------------------------------------------------

def split_lines(data: bytes) -> list[bytes]:
    """Lines as the readers see them: split at b"\\n" only, each keeping it (the last may lack it)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def parse(line: bytes) -> Any:
    """The JSON value of a line (a fresh object), or None. orjson first (fast; beyond 64 bits it
    gives a float), else the standard reader (which takes NaN, lone surrogates, huge integers)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def dump(value: Any, ascii_only: bool = False) -> bytes:
    """JSON text as a writer of any language might write it: big integers and 1e308 kept,
    non-ASCII raw (or escaped), a lone surrogate escaped."""
    try:
        return json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def leaves(value: Any, path: tuple = ()) -> Iterable[tuple[tuple, Any]]:
    """(path, value) of every value inside `value`, containers included, depth first."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (i,))


def set_path(value: Any, path: tuple, new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# Fields the readers must read, by file and line kind (docs/FORMATS.md): a line where one is of
# the wrong type or beyond int64 is an error, and the verdict is unknown.
def required(name: str, line: dict, path: tuple) -> bool:
    if not path:
        return False
    if name == HISTORY:
        if path in {("index",), ("time",), ("process",), ("type",), ("f",)}:
            return True
        f, typ = line.get("f"), line.get("type")
        if line.get("process") == "nemesis" or path[0] != "value":
            return False
        if f == "send" and path[1:] in {("topic",), ("partition",), ("value",)}:
            return True
        if f == "send" and typ == "ok" and path[1:] == ("offset",):
            return True
        if f == "poll" and typ == "ok" and (path[1:] == ("records",) or (
                len(path) == 4 and path[1] == "records" and path[3] in ("topic", "partition", "offset", "value"))):
            return True
        return f == "assign" and path[1:] == ("partitions",)
    if name == FINAL:
        kind = line.get("kind")
        need = {"read": ("topic", "partition", "offset", "value"), "read-state": ("topic", "partition", "complete"),
                "replica": ("node", "topic", "partition", "offset", "value"),
                "replica-state": ("node", "topic", "partition", "log_end_offset", "high_watermark")}.get(kind, ())
        return path == ("kind",) or (len(path) == 1 and path[0] in need) or (
            kind == "replica-state" and path[0] == "epochs" and len(path) <= 3)
    return False


# -- bases ---------------------------------------------------------------------------

@dataclass(slots=True)
class Base:
    name: str
    files: dict[str, bytes]
    verdict: int  # check's exit code on it, unmutated
    instances: list[dict[str, frozenset[int]]] = field(default_factory=list)  # per anomaly example: file -> lines
    idempotent: bool = False
    results: bytes = b"{}"  # the results.json check writes for it


SYNTH_VALID = [  # (name, GenConfig keyword arguments)
    ("synth-small", dict(seed=11, lines=120, partitions=2, producers=4, consumers=1, nodes=2, poll_batch=6)),
    ("synth-dup", dict(seed=12, lines=160, partitions=1, producers=3, consumers=2, nodes=3, idempotent=False,
                       p_retry_dup=0.3, p_offset_gap=0.05, stale_follower=True, uncommitted_tail=True)),
    ("synth-group", dict(seed=13, lines=200, partitions=2, producers=4, consumers=2, nodes=2, group=True,
                         p_crash=0.05, dangling=True)),
]
PLANT_CONFIG = dict(lines=260, partitions=2, producers=4, consumers=2, nodes=3, poll_batch=8, consumer_share=0.4,
                    lagging_follower=False)


def _check_exit(files: dict[str, bytes]) -> tuple[int, dict]:
    from fencepost.harness.check.checking import check_run
    with tempfile.TemporaryDirectory(prefix="fpmut-base-", dir=work_parent()) as tmp:
        for name, data in files.items():
            Path(tmp, name).write_bytes(data)
        outcome = check_run(Path(tmp), write=False, out=None, jobs=1)
        return outcome.exit_code, outcome.results


def _instances(files: dict[str, bytes], results: dict) -> list[dict[str, frozenset[int]]]:
    """Per example of an invalid-set anomaly: the lines it hangs on."""
    hist = [parse(x) for x in split_lines(files[HISTORY])]
    hist_raw = split_lines(files[HISTORY])
    final = [parse(x) for x in split_lines(files.get(FINAL, b""))]
    out = []
    for name, examples in results["anomalies"].items():
        if name not in results["invalid_anomalies"]:
            continue
        for ex in examples:
            indices: set[int] = set()
            values: set[str] = set()
            offsets: set[int] = set()
            for path, v in leaves(ex):
                key = next((k for k in reversed(path) if isinstance(k, str)), "")
                if key in ("ops", "invoke_index", "complete_index") and is_int(v):
                    indices.add(v)
                elif key in ("value", "values", "final_value", "earlier_value", "by") and isinstance(v, str):
                    values.add(v)
                elif "offset" in key or key in ("skipped", "reread", "committed") and is_int(v):
                    if is_int(v):
                        offsets.add(v)
                elif key == "records" and isinstance(v, dict):
                    values.add(v.get("value")) if isinstance(v.get("value"), str) else None
            needles = [dump(v) for v in values]
            h = {i for i in indices if 0 <= i < len(hist)}
            h |= {i for i, raw in enumerate(hist_raw) if any(n in raw for n in needles)}
            key = (ex.get("topic"), ex.get("partition"))
            f = set()
            for i, d in enumerate(final):
                if not isinstance(d, dict) or (d.get("topic"), d.get("partition")) != key:
                    continue
                if (d.get("offset") in offsets or d.get("value") in values
                        or (name == "replica-divergence" and d.get("kind") in ("replica", "replica-state"))):
                    f.add(i)
            out.append({HISTORY: frozenset(h), FINAL: frozenset(f)})
    return out


def _base(name: str, files: dict[str, bytes]) -> Base | None:
    code, results = _check_exit(files)
    if code not in (0, 1):
        return None
    test = parse(files.get(TEST, b"{}")) or {}
    idem = bool(isinstance(test.get("producer"), dict) and test["producer"].get("idempotent"))
    return Base(name, files, code, _instances(files, results) if code == 1 else [], idem,
                json.dumps(results, indent=2).encode())


@functools.lru_cache(maxsize=1)
def bases() -> tuple[Base, ...]:
    """Every base, in a fixed order (examples, valid synthetic runs, planted ones)."""
    from tests.support.synth.generate import GenConfig, generate
    from tests.support.synth.plant import PLANTERS, CannotPlant, expected_invalid, plant
    from tests.support.synth.run import final_lines, write_run

    found: list[Base] = []
    for d in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        files = {n: (d / n).read_bytes() for n in RUN_FILES if (d / n).is_file()}
        base = _base(f"example:{d.name}", files)
        assert base is not None, d
        found.append(base)

    def files_of(run) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory(prefix="fpmut-gen-", dir=work_parent()) as tmp:
            write_run(Path(tmp), run.history, list(final_lines(run.topic, run.final)), run.test)
            return {n: Path(tmp, n).read_bytes() for n in RUN_FILES}

    for name, kw in SYNTH_VALID:
        base = _base(name, files_of(generate(GenConfig(**kw))))
        assert base is not None and base.verdict == 0, name
        found.append(base)
    for planter in sorted(PLANTERS):
        for seed in range(8):
            group = planter.startswith("commit-")
            idem = planter == "duplicate"
            try:
                planted = plant(planter, generate(GenConfig(seed=100 + seed, group=group, idempotent=idem,
                                                            **PLANT_CONFIG)), seed)
            except CannotPlant:
                continue
            if not expected_invalid(planted):
                break
            base = _base(f"planted:{planter}", files_of(planted.run))
            if base is not None and base.verdict == 1 and base.instances:
                found.append(base)
                break
    return tuple(found)


# -- cases ---------------------------------------------------------------------------

@dataclass(slots=True)
class Case:
    seed: int
    cls: str
    n: int
    base: Base
    files: dict[str, bytes]  # a name missing: the file is absent
    # path in the root -> ("dir",) / ("fifo",) / ("link", target in the root)
    special: dict[str, tuple] = field(default_factory=dict)
    touched: dict[str, set[int]] | None = field(default_factory=dict)  # None: everything
    kind: str = "any"  # what check must answer: any / not-valid / unknown / refused / same / exact:<codes>
    commands: list[tuple] = field(default_factory=list)
    note: str = ""

    @property
    def expect(self) -> frozenset[int]:
        """The exit codes `fencepost check` may give."""
        base = self.base
        if self.kind == "unknown":
            return UNKNOWN
        if self.kind == "refused":
            return REFUSED
        if self.kind == "same":
            return frozenset({base.verdict, 254})
        if self.kind == "same-exact":
            return frozenset({base.verdict})
        if self.kind == "unknown-if-valid" and base.verdict == 0:
            return UNKNOWN
        keeps_anomaly = base.verdict == 1 and self.touched is not None and any(
            all(not (lines & self.touched.get(name, set())) for name, lines in inst.items())
            for inst in base.instances)
        if self.kind in ("not-valid", "unknown-if-valid") or keeps_anomaly:
            return NOT_VALID
        return ANY

    def reproduce(self) -> str:
        return f"python bench/mutation_bench.py --seed {self.seed} --only {self.cls} --case {self.n}"


class Mutable:
    """A base's files as lines, mutated in place, remembering which original lines changed
    (`touched`) and, per line, what a mutation requires of check because of it (`tags`: a
    later mutation of the line drops them; they count only on a complete, newline-ended line)."""

    def __init__(self, base: Base, rng: random.Random) -> None:
        self.base, self.rng = base, rng
        self.lines = {n: split_lines(base.files[n]) for n in (HISTORY, FINAL) if n in base.files}
        self.origin = {n: list(range(len(lines))) for n, lines in self.lines.items()}  # original line of each
        self.tags: dict[str, list[str | None]] = {n: [None] * len(lines) for n, lines in self.lines.items()}
        self.test = base.files.get(TEST)
        self.touched: dict[str, set[int]] | None = {HISTORY: set(), FINAL: set()}
        self.kinds: list[str] = []  # what the whole case requires, whatever the lines
        self.special: dict[str, tuple] = {}
        self.commands: list[tuple] = []
        self.only_commands = False  # True: `commands` are all the case runs (no check first)
        self.extra: dict[str, bytes] = {}  # more files in the run directory (results.json)
        self.notes: list[str] = []

    def touch(self, name: str, *at: int) -> None:
        if self.touched is not None:
            self.touched[name].update(self.origin[name][i] for i in at if self.origin[name][i] is not None)

    def parsed(self, name: str) -> list[Any]:
        return [parse(x) for x in self.lines[name]]

    def replace(self, name: str, at: int, line: bytes, kind: str | None = None) -> None:
        self.touch(name, at)
        self.lines[name][at] = line
        self.tags[name][at] = kind

    def insert(self, name: str, at: int, line: bytes, kind: str | None = None) -> None:
        self.lines[name].insert(at, line)
        self.origin[name].insert(at, None)
        self.tags[name].insert(at, kind)

    def delete(self, name: str, at: int) -> None:
        self.touch(name, at)
        for table in (self.lines, self.origin, self.tags):
            del table[name][at]

    def keep(self, name: str, order: list[int]) -> None:
        """The lines at positions `order` become the file, in that order; the rest are gone."""
        gone = set(range(len(self.lines[name]))) - set(order)
        self.touch(name, *gone)
        self.touch(name, *[i for pos, i in enumerate(order) if pos != i])
        for table in (self.lines, self.origin, self.tags):
            table[name] = [table[name][i] for i in order]

    def set_file(self, name: str, data: bytes) -> None:
        """The whole file replaced: every original line touched."""
        self.touch(name, *range(len(self.lines[name])))
        self.lines[name] = split_lines(data)
        self.origin[name] = [None] * len(self.lines[name])
        self.tags[name] = [None] * len(self.lines[name])

    def note(self, text: str) -> None:
        self.notes.append(text)

    def files(self) -> dict[str, bytes]:
        out = {n: b"".join(lines) for n, lines in self.lines.items()}
        if self.test is not None:
            out[TEST] = self.test
        return {**out, **self.extra}

    def kind(self) -> str:
        """What check must answer: the case's kinds, the tags of complete lines, and what the
        bytes themselves say (a complete line that is not a JSON object, a history line whose
        index is not its line number, no send or poll: unknown)."""
        kinds = list(self.kinds)
        for name, lines in self.lines.items():
            kinds += [tag for line, tag in zip(lines, self.tags[name]) if tag and line.endswith(b"\n")]
        if _structurally_unknown(self.lines):
            kinds.append("unknown")
        return _kind(kinds)


def _structurally_unknown(files: dict[str, list[bytes]]) -> bool:
    client = False
    for name, lines in files.items():
        for at, line in enumerate(lines):
            complete = line.endswith(b"\n")
            is_object, index, is_client = _line_facts(line)
            if not is_object:
                if complete:
                    return True
                continue
            if name == HISTORY:
                if complete and index is not None and index != at:
                    return True
                client = client or (complete and is_client)
    return HISTORY in files and not client


@functools.lru_cache(maxsize=1 << 16)
def _line_facts(line: bytes) -> tuple[bool, int | None, bool]:
    """(a JSON object as the readers read it, its integer index, a client's send or poll)."""
    try:
        d = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False, None, False
    if not isinstance(d, dict):
        return False, None, False
    index = d.get("index")
    return True, index if is_int(index) else None, d.get("f") in ("send", "poll") and d.get("process") != "nemesis"


def _kind(kinds: list[str]) -> str:
    """What several requirements together require of check."""
    for k in ("refused", "unknown", "not-valid", "unknown-if-valid", "same", "same-exact"):
        if k in kinds:
            return k
    return "any"


def _pick_file(m: Mutable) -> str:
    return m.rng.choice(sorted(m.lines))


# Each mutation takes the Mutable and edits it; what it requires of check goes on the lines
# it changed (tags) or, for the whole case, into m.kinds.

def mut_corrupt_line(m: Mutable) -> None:
    """A complete line (any, the last too) replaced by one that cannot be read."""
    name = _pick_file(m)
    lines, rng = m.lines[name], m.rng
    if not lines:
        m.insert(name, 0, b"")
    at = rng.randrange(len(lines))
    line = lines[at].rstrip(b"\n")
    how = rng.choice(["garbage", "nul", "utf8", "cut", "bom", "object-in-object"])
    if how == "garbage":
        new = rng.choice(GARBAGE)
    elif how == "nul":
        cut = rng.randrange(len(line) + 1)
        new = line[:cut] + b"\x00" * rng.randint(1, 3) + line[cut:] + b"\n"
    elif how == "utf8":
        cut = rng.randrange(1, len(line)) if len(line) > 2 else 0
        bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        new = line[:cut] + bad + line[cut:] + b"\n"
    elif how == "cut":
        new = line[:rng.randrange(max(len(line) - 1, 1))] + b"\n"
    elif how == "bom":
        new = b"\xef\xbb\xbf" + line + b"\n"
    else:
        new = b"{" + line + b"}\n"
    m.replace(name, at, new, "unknown")
    m.note(f"{name}:{at + 1} corrupt ({how})")


def mut_torn_tail(m: Mutable) -> None:
    """The last line of a file cut short, without its newline (a torn write); or only its newline gone."""
    name = _pick_file(m)
    lines = m.lines[name]
    if not lines:
        return
    at = len(lines) - 1
    line = lines[at].rstrip(b"\n")
    keep = len(line) if m.rng.random() < 0.2 else m.rng.randrange(1, max(len(line), 2))
    m.replace(name, at, line[:keep])
    m.note(f"{name}:{at + 1} torn after {keep} bytes")


def mut_truncate(m: Mutable) -> None:
    """A file cut anywhere: the bytes after a random point are gone."""
    name = _pick_file(m)
    data = b"".join(m.lines[name])
    cut = m.rng.randrange(len(data) + 1)
    at = data[:cut].count(b"\n")
    kept = split_lines(data[:cut])
    m.keep(name, list(range(len(kept))))
    if len(kept) > at:  # a torn last line
        m.replace(name, at, kept[at])
    m.note(f"{name} cut at byte {cut} (line {at + 1})")


def mut_final_cut_in_read(m: Mutable) -> None:
    """final.jsonl cut inside a read line: that partition's read is incomplete, the later ones
    missing (issue 33: unknown, never a lost write)."""
    final = m.parsed(FINAL)
    reads = [i for i, d in enumerate(final) if isinstance(d, dict) and d.get("kind") == "read"]
    if not reads:
        return mut_truncate(m)
    at = m.rng.choice(reads)
    line = m.lines[FINAL][at]
    m.keep(FINAL, list(range(at + 1)))
    m.replace(FINAL, at, line[:m.rng.randrange(1, len(line) - 2)])
    m.note(f"final.jsonl cut inside read line {at + 1}")
    m.kinds.append("unknown-if-valid")


def mut_flip_bytes(m: Mutable) -> None:
    """1-4 bytes of a file flipped (xor with a random byte)."""
    name = _pick_file(m)
    data = bytearray(b"".join(m.lines[name]))
    if not data:
        return
    for _ in range(m.rng.randint(1, 4)):
        at = m.rng.randrange(len(data))
        data[at] ^= m.rng.randint(1, 255)
    new = split_lines(bytes(data))
    old = m.lines[name]
    if len(new) != len(old):  # a newline made or lost: every line from the first change on is new
        first = next((i for i, (a, b) in enumerate(zip(new, old)) if a != b), min(len(new), len(old)))
        m.keep(name, list(range(first)))
        for line in new[first:]:
            m.insert(name, len(m.lines[name]), line)
        m.touch(name)  # (keep touched the rest)
        changed = list(range(first, len(new)))
    else:
        changed = [i for i, (a, b) in enumerate(zip(new, old)) if a != b]
        for i in changed:
            m.replace(name, i, new[i])
    m.note(f"{name}: bytes flipped on lines {[i + 1 for i in changed][:6]}")


def mut_lines(m: Mutable) -> None:
    """A line dropped or duplicated, two lines swapped, or a few shuffled (in the history, where
    an index is its line number, that makes an error wherever it is not the last line)."""
    name = _pick_file(m)
    lines, rng = m.lines[name], m.rng
    if len(lines) < 3:
        return mut_torn_tail(m)
    how = rng.choice(["drop", "duplicate", "swap", "shuffle"])
    n = len(lines)
    at = rng.randrange(n)
    if how == "drop":
        m.delete(name, at)
    elif how == "duplicate":
        to = rng.randrange(n)  # before the last line, so the file still ends as it did
        m.touch(name, at)
        m.insert(name, to, lines[at] if lines[at].endswith(b"\n") else lines[at] + b"\n")
    elif how == "swap":
        other = rng.randrange(n - 1)
        at = rng.randrange(n - 1)
        if other == at:
            other = (at + 1) % (n - 1)
        order = list(range(n))
        order[at], order[other] = order[other], order[at]
        m.keep(name, order)
    else:
        a = rng.randrange(n - 2)
        b = min(n - 2, a + rng.randint(1, 5))
        window = list(range(a, b + 1))
        shuffled = window[:]
        rng.shuffle(shuffled)
        if shuffled == window:
            shuffled.reverse()
        m.keep(name, list(range(a)) + shuffled + list(range(b + 1, n)))
    m.note(f"{name}: {how} at line {at + 1}")


def _field_edit(m: Mutable, choose: Callable[[str, dict, list[tuple[tuple, Any]]], tuple | None], label: str) -> None:
    """Set one field of one line: `choose(name, line, leaves)` gives (path, new value, tag) or None."""
    rng = m.rng
    for _ in range(30):
        name = _pick_file(m)
        lines = m.lines[name]
        if not lines:
            continue
        at = rng.randrange(len(lines))
        d = parse(lines[at])
        if not isinstance(d, dict):
            continue
        got = choose(name, d, list(leaves(d))[1:])
        if got is None:
            continue
        path, new, tag = got
        set_path(d, path, new)
        text = dump(d, rng.random() < 0.3)
        m.replace(name, at, text + (b"\n" if lines[at].endswith(b"\n") else b""), tag)
        m.note(f"{name}:{at + 1} {'.'.join(map(str, path))} = {label} {_short(new)}")
        return


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def mut_numbers(m: Mutable) -> None:
    """An integer field set to a number beyond int64, a float, or an extreme within int64."""
    def choose(name, d, fields):
        ints = [(p, v) for p, v in fields if is_int(v)]
        if not ints:
            return None
        path, old = m.rng.choice(ints)
        if m.rng.random() < 0.6:
            new = m.rng.choice(OUT_OF_RANGE)
            return path, new, "unknown" if required(name, d, path) else None
        new = m.rng.choice(IN_RANGE_EXTREMES)
        if new == old:
            return None
        # an index not its line number, a negative offset where the readers read one: errors
        wrong = path == ("index",) or (new < 0 and path[-1] == "offset" and required(name, d, path))
        return path, new, "unknown" if wrong else None
    _field_edit(m, choose, "number")


def mut_wrong_type(m: Mutable) -> None:
    """A field (any depth) given a value of another JSON type."""
    def choose(name, d, fields):
        path, old = m.rng.choice(fields)
        options = [w for w in WRONG_TYPES if type(w) is not type(old)]
        new = m.rng.choice(options)
        if path[-1] == "leader_epoch" and new is None:
            return None
        if path == ("process",) and isinstance(new, str):
            new = "nemesis-x"  # not "nemesis" itself, which is a process
        return path, new, "unknown" if required(name, d, path) else None
    _field_edit(m, choose, "type")


def _acked_unique(m: Mutable) -> tuple[dict[str, tuple], dict]:
    """Values acknowledged by an ok send, found exactly once in the final read, of a partition whose
    read is complete: value -> (final line number, topic, partition, offset); and where each value
    is in the final read."""
    final = m.parsed(FINAL) if FINAL in m.lines else []
    reads: dict[str, list] = {}
    for i, d in enumerate(final):
        if (isinstance(d, dict) and d.get("kind") == "read" and isinstance(d.get("value"), str)
                and _key(d) is not None):
            reads.setdefault(d["value"], []).append((i, d["topic"], d["partition"], d.get("offset")))
    acked = set()
    for i, d in enumerate(m.parsed(HISTORY)):
        if (isinstance(d, dict) and d.get("f") == "send" and d.get("type") == "ok" and isinstance(d.get("value"), dict)
                and isinstance(d["value"].get("value"), str) and m.lines[HISTORY][i].endswith(b"\n")):
            acked.add(d["value"]["value"])
    complete = _complete_partitions(final, m.lines.get(FINAL, []))
    unique = {v: r[0] for v, r in reads.items() if len(r) == 1 and v in acked and (r[0][1], r[0][2]) in complete
              and m.lines[FINAL][r[0][0]].endswith(b"\n")}
    return unique, reads


def _key(d: Any) -> tuple[str, int] | None:
    """(topic, partition) of a line or record, or None when they are not a string and an integer."""
    if isinstance(d, dict) and isinstance(d.get("topic"), str) and is_int(d.get("partition")):
        return d["topic"], d["partition"]
    return None


def _complete_partitions(final: list, lines: list[bytes]) -> set:
    states: dict[tuple, bool] = {}
    for d, line in zip(final, lines):
        if (isinstance(d, dict) and d.get("kind") in ("read", "read-state") and line.endswith(b"\n")
                and _key(d) is not None):
            key = _key(d)
            ok = d.get("complete") is True if d.get("kind") == "read-state" else True
            states[key] = states.get(key, True) and ok
    return {k for k, ok in states.items() if ok}


def mut_drop_acked_read(m: Mutable) -> None:
    """The final read line of an acknowledged value (read once) dropped: a lost write."""
    unique, _ = _acked_unique(m)
    if not unique:
        return mut_lines(m)
    value = m.rng.choice(sorted(unique))
    at = unique[value][0]
    m.delete(FINAL, at)
    m.note(f"final.jsonl:{at + 1} (acked {value}) dropped")
    m.kinds.append("not-valid")


def mut_final_value(m: Mutable) -> None:
    """The value of an acknowledged value's final read line changed (to a hostile string)."""
    unique, reads = _acked_unique(m)
    if not unique:
        return mut_hostile(m)
    value = m.rng.choice(sorted(unique))
    at = unique[value][0]
    d = parse(m.lines[FINAL][at])
    new = m.rng.choice([s for s in HOSTILE if s not in reads] + ["fpmut-other"])
    d["value"] = new
    m.replace(FINAL, at, dump(d, m.rng.random() < 0.3) + b"\n", "not-valid")
    m.note(f"final.jsonl:{at + 1} value {value!r} -> {_short(new)}")


def _other_offset(m: Mutable, old: int, taken: set) -> int:
    rng = m.rng
    for _ in range(50):
        new = rng.choice([old + 1, old - 1, old + rng.randint(2, 50), rng.randint(0, 5), old + 10_000,
                          2**63 - 1, -1, 2**63])
        if new != old and new not in taken:
            return new
    return old + 100_003


def mut_poll_offset(m: Mutable) -> None:
    """An ok poll's record given another offset (its value is read once, elsewhere, in the final read)."""
    _, reads = _acked_unique(m)
    final = m.parsed(FINAL) if FINAL in m.lines else []
    complete = _complete_partitions(final, m.lines.get(FINAL, []))
    hist = m.parsed(HISTORY)
    spots = []
    for i, d in enumerate(hist):
        if (isinstance(d, dict) and d.get("f") == "poll" and d.get("type") == "ok" and isinstance(d.get("value"), dict)
                and isinstance(d["value"].get("records"), list) and m.lines[HISTORY][i].endswith(b"\n")):
            for j, r in enumerate(d["value"]["records"]):
                if (isinstance(r, dict) and isinstance(r.get("value"), str) and len(reads.get(r["value"], [])) == 1
                        and is_int(r.get("offset")) and _key(r) in complete):
                    spots.append((i, j))
    if not spots:
        return mut_numbers(m)
    i, j = m.rng.choice(spots)
    d = hist[i]
    r = d["value"]["records"][j]
    old = r["offset"]
    r["offset"] = _other_offset(m, old, {o for _, t, p, o in reads[r["value"]] if is_int(o)})
    m.replace(HISTORY, i, dump(d) + b"\n", "not-valid")
    m.note(f"history.jsonl:{i + 1} poll record {r['value']!r} offset {old} -> {r['offset']}")


def mut_ack_offset(m: Mutable) -> None:
    """An ok send's acknowledged offset changed (its value is read once, elsewhere, in the final read)."""
    unique, reads = _acked_unique(m)
    hist = m.parsed(HISTORY)
    spots = [i for i, d in enumerate(hist) if isinstance(d, dict) and d.get("f") == "send" and d.get("type") == "ok"
             and isinstance(d.get("value"), dict) and isinstance(d["value"].get("value"), str)
             and d["value"]["value"] in unique
             and is_int(d["value"].get("offset")) and m.lines[HISTORY][i].endswith(b"\n")]
    if not spots:
        return mut_numbers(m)
    i = m.rng.choice(spots)
    d = hist[i]
    old = d["value"]["offset"]
    d["value"]["offset"] = _other_offset(m, old, {unique[d["value"]["value"]][3]})
    m.replace(HISTORY, i, dump(d) + b"\n", "not-valid")
    m.note(f"history.jsonl:{i + 1} ack of {d['value']['value']!r} offset {old} -> {d['value']['offset']}")


def mut_incomplete(m: Mutable) -> None:
    """A read-state says the final read did not reach its end: unknown (on a valid run)."""
    final = m.parsed(FINAL) if FINAL in m.lines else []
    states = [i for i, d in enumerate(final) if isinstance(d, dict) and d.get("kind") == "read-state"
              and d.get("complete") is True and m.lines[FINAL][i].endswith(b"\n")]
    if not states:
        return mut_drop_acked_read(m)
    at = m.rng.choice(states)
    d = final[at]
    d["complete"] = False
    d["error"] = m.rng.choice(["read up to offset 3 of 9 in 60s", "\x1b[31mred", "</script>"])
    m.replace(FINAL, at, dump(d) + b"\n", "unknown-if-valid")
    m.note(f"final.jsonl:{at + 1} read-state complete=false")


def mut_empty_history(m: Mutable) -> None:
    """A history with no send and no poll: empty, NUL bytes, one garbage line, only nemesis lines."""
    how = m.rng.choice(["empty", "nul", "garbage", "nemesis-only", "newline"])
    data = {"empty": b"", "nul": b"\x00" * m.rng.randint(1, 4096), "garbage": m.rng.choice(GARBAGE),
            "newline": b"\n"}.get(how)
    if how == "nemesis-only":
        kept = [parse(x) for x in m.lines[HISTORY] if b'"nemesis"' in x]
        data = b"".join(dump({**d, "index": i}) + b"\n" for i, d in enumerate(k for k in kept if isinstance(k, dict)))
    m.set_file(HISTORY, data)
    m.note(f"history.jsonl {how}")
    m.kinds.append("unknown")


def mut_hostile(m: Mutable) -> None:
    """A string field (any depth, any file) replaced by a hostile string."""
    unique, _ = _acked_unique(m)

    def choose(name, d, fields):
        strs = [(p, v) for p, v in fields if isinstance(v, str)]
        if not strs:
            return None
        path, old = m.rng.choice(strs)
        new = m.rng.choice(HOSTILE)
        if new == old:
            return None
        tag = None
        if new == "\ud800" or (name == HISTORY and path in (("type",), ("process",))):
            tag = "unknown"  # a lone surrogate is no UTF-8; a type or process of no known kind
        elif (name == FINAL and d.get("kind") == "read" and path in (("value",), ("topic",))
              and isinstance(d.get("value"), str) and d["value"] in unique):
            tag = "not-valid"
        return path, new, tag
    _field_edit(m, choose, "hostile")


def mut_hostile_everywhere(m: Mutable) -> None:
    """One hostile string in every string field of a few lines (and the trace follows it)."""
    new = m.rng.choice(HOSTILE)
    name = _pick_file(m)
    lines = m.lines[name]
    picked = sorted(m.rng.sample(range(len(lines)), min(len(lines), m.rng.randint(1, 5)))) if lines else []
    for at in picked:
        d = parse(lines[at])
        if not isinstance(d, dict):
            continue
        for path, v in list(leaves(d))[1:]:
            if isinstance(v, str):
                set_path(d, path, new)
        m.replace(name, at, dump(d) + (b"\n" if lines[at].endswith(b"\n") else b""),
                  "unknown" if new == "\ud800" or (name == HISTORY and "type" in d) else None)
    m.note(f"{name}: lines {[a + 1 for a in picked]}: every string = {_short(new)}")
    m.commands.append(("trace", new))


def mut_huge_line(m: Mutable) -> None:
    """One line's value made long: 10,000 characters to 2 MB."""
    def choose(name, d, fields):
        strs = [(p, v) for p, v in fields if isinstance(v, str) and p[-1] == "value"]
        if not strs:
            return None
        path, _ = m.rng.choice(strs)
        return path, m.rng.choice("x\u00e9\U0001F600") * m.rng.choice([10_000, 100_000, 2_000_000]), None
    _field_edit(m, choose, "huge")


TEST_READ = {  # test.json keys the checker reads, and values of the wrong type or out of range
    ("checker",): [[], "x", 5, True, [1]],
    ("producer",): [[], "x", 5, True],
    ("producer", "idempotent"): ["yes", 1, [], {}],
    ("checker", "invalid"): ["lost-write", 5, {}, ["no-such-anomaly"], [1]],
    ("checker", "linearizability"): ["yes", 1, []],
    ("checker", "linear_method"): ["fast", 1, []],
    ("checker", "search_budget"): [0, -1, 2**63, 2**64, 1e308, "5", 1.5, True],
    ("checker", "no_such_key"): [1, "x"],
}
TEST_UNREAD = [("name",), ("topic",), ("partitions",), ("truncation",), ("seed_document",), ("nemesis",),
               ("system",), ("versions",), ("notes",)]


def mut_test_json(m: Mutable) -> None:
    """test.json with a section the checker reads of the wrong type (254), not an object or not
    JSON (254), a directory (254), or a key the checker does not read set to anything (the verdict
    stays the base's)."""
    rng = m.rng
    test = parse(m.test or b"{}")
    if not isinstance(test, dict):
        test = {}
    how = rng.choice(["read", "read", "whole", "unread", "unread", "directory"])
    m.touched = None
    if how == "read":
        path = rng.choice(sorted(TEST_READ))
        value = rng.choice(TEST_READ[path])
        if len(path) == 2 and not isinstance(test.get(path[0]), dict):
            test[path[0]] = {}
        set_path(test, path, value)
        m.test = dump(test)
        m.note(f"test.json {'.'.join(path)} = {_short(value)}")
        m.kinds.append("refused")
    elif how == "whole":
        m.test = rng.choice([b"[]", b"null", b"5", b'"x"', b"", b"{", b"\x00\x00", b"\xff{}", b"{}{}",
                             b'{"checker": {"search_budget": 1e999}}'])
        m.note(f"test.json = {m.test[:30]!r}")
        m.kinds.append("refused")
    elif how == "unread":
        path = rng.choice(TEST_UNREAD)
        value = rng.choice(WRONG_TYPES + HOSTILE + OUT_OF_RANGE)
        set_path(test, path, value)
        m.test = dump(test)
        m.note(f"test.json {'.'.join(path)} = {_short(value)}")
        m.kinds.append("same")
        if rng.random() < 0.03:
            m.commands.append(("report",))
    else:
        m.test = None
        m.special["run/test.json"] = ("dir",)
        m.note("test.json is a directory")
        m.kinds.append("refused")


def _fancy(value: Any, rng: random.Random) -> str:
    """JSON text of `value` as another writer might spell it: keys in another order, spaces
    around the punctuation, some characters of strings as \\u escapes (ASCII ones too)."""
    sp = lambda: rng.choice(["", "", " ", "  ", "\t"])  # noqa: E731
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return "{" + sp() + ",".join(f"{sp()}{_fancy(k, rng)}{sp()}:{sp()}{_fancy(v, rng)}{sp()}"
                                      for k, v in items) + sp() + "}"
    if isinstance(value, list):
        return "[" + sp() + ",".join(sp() + _fancy(v, rng) + sp() for v in value) + sp() + "]"
    if isinstance(value, str):
        out = []
        for ch in value:
            if rng.random() < 0.3 and ord(ch) < 0x10000:
                out.append(f"\\u{ord(ch):04{rng.choice('xX')}}")
            else:
                out.append(json.dumps(ch, ensure_ascii=rng.random() < 0.5)[1:-1])
        return '"' + "".join(out) + '"'
    return json.dumps(value)


def mut_reformat(m: Mutable) -> None:
    """A few lines written as another JSON writer might: other key order, whitespace, \\u
    escapes, a CR before the newline, blanks around the object. Still the same lines: the
    verdict must be the base's."""
    name = _pick_file(m)
    lines = m.lines[name]
    for at in sorted(m.rng.sample(range(len(lines)), min(len(lines), m.rng.randint(1, 6)))):
        d = parse(lines[at])
        if not isinstance(d, dict) or not lines[at].endswith(b"\n"):
            continue
        text = _fancy(d, m.rng)
        pad = m.rng.choice(["", " ", "\t"])
        end = m.rng.choice(["\n", "\n", "\r\n", " \n"])
        m.replace(name, at, (pad + text + end).encode("utf-8", "surrogatepass"))
        m.note(f"{name}:{at + 1} reformatted")
    m.kinds.append("same-exact")


UNKNOWN_KEYS = ["extra", "note", "__proto__", "constructor", "", "k" * 300, "\u043a\u043b\u044e\u0447", "index2",
                "valu", "Type", "</script>", "\x1b[2J"]
UNKNOWN_VALUES: list[Any] = [None, True, 0, -1, 2**63 - 1, -(2**63), 1.5, "x", "</script>", "\x00\x1b[31m", [],
                             {"nested": {"deep": [1, {"a": None}]}}, [1, "two", None], "x" * 1000]


def mut_unknown_fields(m: Mutable) -> None:
    """Keys the readers do not read, added at the top of lines and inside their values and
    records (docs/FORMATS.md: unknown fields are ignored): the verdict must be the base's."""
    rng = m.rng
    name = _pick_file(m)
    lines = m.lines[name]
    for at in sorted(rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 6)))):
        d = parse(lines[at])
        if not isinstance(d, dict) or not lines[at].endswith(b"\n"):
            continue
        # objects with fields (the line, its value, a poll's records), not maps whose keys are data
        # (an assign's "from": {"fp-0": 412})
        spots = [p for p, v in leaves(d) if isinstance(v, dict)
                 and (p in ((), ("value",)) or (len(p) == 3 and p[:2] == ("value", "records")))]
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(spots)
            target = d
            for step in path:
                target = target[step]
            key = rng.choice(UNKNOWN_KEYS)
            if key not in target:
                target[key] = rng.choice(UNKNOWN_VALUES)
        m.replace(name, at, dump(d, rng.random() < 0.3) + b"\n")
        m.note(f"{name}:{at + 1} unknown fields")
    m.kinds.append("same-exact")


def mut_results_json(m: Mutable) -> None:
    """A results.json beside the run of another shape than check writes (not JSON, not an
    object, a key of the wrong type, a hostile string, a number beyond int64, cut short, a key
    gone): compare names the run and goes on, report and trace refuse or carry on; never a
    crash. (check is not run: it would write results.json anew.)"""
    rng = m.rng
    results = parse(m.base.results)
    how = rng.choice(["garbage", "not-object", "type", "hostile", "number", "cut", "missing"])
    if how == "garbage":
        data = rng.choice(GARBAGE + [b"", b"\x00" * 64, b"\xff\xfe{"])
    elif how == "not-object":
        data = rng.choice([b"[]", b"null", b"5", b'"valid"', b"true"])
    elif how == "cut":
        data = m.base.results[:rng.randrange(len(m.base.results))]
    else:
        fields = list(leaves(results))[1:]
        for _ in range(rng.randint(1, 4)):
            path, old = rng.choice(fields)
            try:
                if how == "missing" and isinstance(path[-1], str):
                    parent = results
                    for step in path[:-1]:
                        parent = parent[step]
                    parent.pop(path[-1], None)
                elif how == "type":
                    set_path(results, path, rng.choice([w for w in WRONG_TYPES if type(w) is not type(old)]))
                elif how == "hostile":
                    set_path(results, path, rng.choice(HOSTILE))
                else:
                    set_path(results, path, rng.choice(OUT_OF_RANGE + IN_RANGE_EXTREMES))
            except (KeyError, IndexError, TypeError):
                continue
            fields = list(leaves(results))[1:]
        data = dump(results, rng.random() < 0.3)
    m.extra["results.json"] = data
    m.note(f"results.json {how}: {data[:60]!r}")
    m.only_commands = True
    m.commands = [("trace", None)] + ([("compare",)] if rng.random() < 0.25 else []) + (
        [("report",)] if rng.random() < 0.01 else [])  # compare and report draw plots: 0.5 s and 5 s of CPU


def mut_partials(m: Mutable) -> None:
    """Leftover temporary files of killed writers beside results.json, history.edn and report.html
    (`.<name>.<16 hex>.partial`, or `.<name>.<pid>.partial` of earlier releases): regular files,
    which the next writer of that file removes; or a link into the sentinel folder, a folder, a
    FIFO, which it must neither follow nor hang on."""
    rng = m.rng
    for target in rng.sample(["results.json", "history.edn", "report.html"], rng.randint(1, 3)):
        middle = f"{rng.getrandbits(64):016x}" if rng.random() < 0.7 else str(rng.randint(2, 4_000_000))
        what = rng.choice(["file", "file", "file", "link", "dir", "fifo"])
        m.special[f"run/.{target}.{middle}.partial"] = {
            "file": ("file", b"half a file"), "link": ("link", "sentinel/out-existing"), "dir": ("dir",),
            "fifo": ("fifo",)}[what]
    m.note("partials: " + ", ".join(f"{k[4:]} ({v[0]})" for k, v in sorted(m.special.items())))
    m.kinds.append("same")
    m.commands.append(("export", "default"))


OUTPUT_DIRS = ("linear", "trace", "plots")
OUTPUT_FILES = ("results.json", "report.html", "history.html", "timeline.html", "history.edn")


def mut_symlinks(m: Mutable) -> None:
    """Output folders and files of the run as symbolic links out of it, into the sentinel
    folder: to a folder or file there, or to a path there that does not exist."""
    rng = m.rng
    for name in OUTPUT_DIRS + OUTPUT_FILES:
        if rng.random() < 0.5:
            m.special[f"run/{name}"] = ("link", f"sentinel/{name}-{rng.choice(['existing', 'dangling'])}")
    if not m.special:
        m.special["run/linear"] = ("link", "sentinel/linear-existing")
    m.note("symlinks: " + ", ".join(sorted(f"{k[4:]} -> {v[1]}" for k, v in m.special.items())))
    m.kinds.append("same")
    m.commands += [("trace", None), ("export", "default")]
    if rng.random() < 0.01:
        m.commands.append(("report",))


def mut_out_targets(m: Mutable) -> None:
    """export --out and compare --out at a target that exists and is not a regular file (a FIFO,
    a folder, a link into the sentinel folder): refused, or the link replaced, never followed."""
    which = m.rng.choice(["export", "compare"])
    what = m.rng.choice(["fifo", "dir", "link"])
    target = "export-out/h.edn" if which == "export" else "compare-out/compare.csv"
    m.special[target] = {"fifo": ("fifo",), "dir": ("dir",), "link": ("link", "sentinel/out-existing")}[what]
    m.note(f"{which} --out: {target} is a {what}")
    m.kinds.append("same")
    m.commands.append((which, "special"))


CLASSES: dict[str, Callable[[Mutable], None] | None] = {
    "corrupt-line": mut_corrupt_line,
    "torn-tail": mut_torn_tail,
    "truncate": mut_truncate,
    "final-cut-in-read": mut_final_cut_in_read,
    "flip-bytes": mut_flip_bytes,
    "lines": mut_lines,
    "numbers": mut_numbers,
    "wrong-type": mut_wrong_type,
    "hostile-string": mut_hostile,
    "hostile-everywhere": mut_hostile_everywhere,
    "huge-line": mut_huge_line,
    "drop-acked-read": mut_drop_acked_read,
    "final-value": mut_final_value,
    "poll-offset": mut_poll_offset,
    "ack-offset": mut_ack_offset,
    "incomplete": mut_incomplete,
    "empty-history": mut_empty_history,
    "test-json": mut_test_json,
    "symlinks": mut_symlinks,
    "out-targets": mut_out_targets,
    "reformat": mut_reformat,
    "unknown-fields": mut_unknown_fields,
    "results-json": mut_results_json,
    "partials": mut_partials,
    "combo": None,  # 2-4 of COMBINABLE at once
}
COMBINABLE = ["corrupt-line", "torn-tail", "flip-bytes", "lines", "numbers", "wrong-type", "hostile-string",
              "drop-acked-read", "poll-offset", "ack-offset", "incomplete", "final-value"]
# How many cases of each class per round of the schedule (the rest 1).
WEIGHTS = {"corrupt-line": 2, "lines": 2, "numbers": 2, "wrong-type": 2, "hostile-string": 2, "flip-bytes": 2,
           "combo": 3, "huge-line": 1, "out-targets": 1}
SCHEDULE = [cls for cls in CLASSES for _ in range(WEIGHTS.get(cls, 1))]
# Shares of the other commands (check runs on every case); the link classes add theirs.
SHARES = {"report": 0.0005, "trace": 0.08, "export": 0.06, "compare": 0.01}  # report 5 s of CPU, compare 0.5 s


def scheduled(i: int) -> tuple[str, int]:
    """The i-th case of a run of the bench or the test: (class, its number within the class)."""
    rounds, at = divmod(i, len(SCHEDULE))
    cls = SCHEDULE[at]
    return cls, rounds * SCHEDULE.count(cls) + SCHEDULE[:at].count(cls)


def make_case(seed: int, cls: str, n: int) -> Case:
    """Case `n` of class `cls` under `seed`: made from these three alone."""
    rng = random.Random(f"{seed}:{cls}:{n}")
    all_bases = bases()
    base = all_bases[rng.randrange(len(all_bases))]
    m = Mutable(base, rng)
    if cls == "combo":
        for name in rng.sample(COMBINABLE, rng.randint(2, 4)):
            CLASSES[name](m)
    else:
        CLASSES[cls](m)
    extra = list(m.commands)
    if m.only_commands:
        return Case(seed, cls, n, base, m.files(), m.special, m.touched, m.kind(), extra, "; ".join(m.notes))
    for command, share in SHARES.items():
        if rng.random() < share and not any(c[0] == command for c in extra):
            extra.append((command, None) if command == "trace" else
                         (command, rng.choice(["default", "out"])) if command == "export" else (command,))
    return Case(seed, cls, n, base, m.files(), m.special, m.touched, m.kind(), [("check",)] + extra,
                "; ".join(m.notes))


# -- running a case ----------------------------------------------------------------------

@dataclass(slots=True)
class Ran:
    argv: list[str]
    code: int | None  # None: killed by a signal
    signal: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    agree: str | None = None  # the readers' disagreement, if any
    compared: bool = False  # the run was loaded by both readers (the C reader read a changed file)


@dataclass(slots=True)
class Failure:
    kind: str  # exit / traceback / timeout / write-outside / verdict / readers / terminal / page / subprocess
    command: str
    detail: str


@dataclass(slots=True)
class Result:
    case: Case
    check_code: int | None
    failures: list[Failure]
    runs: list[Ran]
    seconds: float


class Layout:
    """A case's root: <root>/a/b/c/{run, sentinel, cwd, compare-out, export-out}, tmp, home."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.deep = root / "a" / "b" / "c"
        self.run = self.deep / "run"
        self.sentinel = self.deep / "sentinel"
        self.cwd = self.deep / "cwd"
        self.compare_out = self.deep / "compare-out"
        self.export_out = self.deep / "export-out"
        self.tmp = root / "tmp"
        self.home = root / "home"
        self.io = root / "io"

    def allowed(self) -> list[Path]:
        return [self.run, self.compare_out, self.export_out, self.tmp, self.home, self.io]


def write_case(case: Case, root: Path) -> Layout:
    lay = Layout(root)
    for d in (lay.run, lay.sentinel, lay.cwd, lay.compare_out, lay.export_out, lay.tmp, lay.home, lay.io):
        d.mkdir(parents=True, exist_ok=True)
    for name in OUTPUT_DIRS:
        (lay.sentinel / f"{name}-existing").mkdir()
        (lay.sentinel / f"{name}-existing" / "keep.txt").write_bytes(b"sentinel\n")
    for name in OUTPUT_FILES + ("out",):
        (lay.sentinel / f"{name}-existing").write_bytes(b"sentinel file\n")
    for name, data in case.files.items():
        (lay.run / name).write_bytes(data.replace(b"@ROOT@", str(root).encode()))
    for rel, spec in case.special.items():
        path = lay.deep / rel
        if spec[0] == "dir":
            path.mkdir(parents=True, exist_ok=True)
            (path / "inside.txt").write_bytes(b"x\n")
        elif spec[0] == "fifo":
            os.mkfifo(path)
        elif spec[0] == "file":
            path.write_bytes(spec[1])
        else:
            os.symlink(lay.deep / spec[1], path)
    return lay


def snapshot(lay: Layout) -> dict[str, tuple]:
    """Everything under the root but the places commands may write: kind, size, mtime, content hash."""
    skip = {str(p) for p in lay.allowed()}
    out: dict[str, tuple] = {}
    for top, dirs, files in os.walk(lay.root):
        if top in skip:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if str(Path(top, d)) not in skip or os.path.islink(Path(top, d))]
        for name in dirs + files:
            p = Path(top, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                out[str(p)] = ("file", st.st_size, st.st_mtime_ns, hashlib.sha1(p.read_bytes()).hexdigest())
            else:
                out[str(p)] = (stat.S_IFMT(st.st_mode), st.st_mtime_ns)
    # The --out targets that must keep their kind (a FIFO, a folder): refused, never replaced.
    for d in (lay.compare_out, lay.export_out):
        for p in d.iterdir() if d.is_dir() else ():
            st = os.lstat(p)
            if stat.S_ISFIFO(st.st_mode) or stat.S_ISDIR(st.st_mode):
                out[str(p)] = ("out", stat.S_IFMT(st.st_mode))
    return out


def _diff(before: dict, after: dict) -> list[str]:
    changed = []
    for p in sorted(before.keys() | after.keys()):
        a, b = before.get(p), after.get(p)
        if a != b:
            changed.append(f"{p}: {'new' if a is None else 'gone' if b is None else 'changed'}")
    return changed


def _child(argv: list[str], lay: Layout, agree: tuple[str, ...] | None, timeout: int) -> None:
    """In the forked child: run the command as the command line would and exit with its code;
    with `agree` (the files the case changed), then load the run by both readers (`_agree`)."""
    code = 255
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(timeout)
        with open("/proc/self/statm") as f:  # what the process maps already, plus 3 GB
            limit = int(f.read().split()[0]) * resource.getpagesize() + 3 * 1024**3
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.chdir(lay.cwd)
        os.environ.update(HOME=str(lay.home), TMPDIR=str(lay.tmp))
        tempfile.tempdir = None
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            out = os.open(lay.io / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, fd)
            os.close(out)
        enc, errors = (sys.__stdout__.encoding, sys.__stdout__.errors) if sys.__stdout__ else ("utf-8", "strict")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=enc, errors=errors)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=enc, errors="backslashreplace",
                                      line_buffering=True)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
        from fencepost.harness import cli
        try:
            code = cli.main(argv)
        except SystemExit as stop:
            c = stop.code
            code = 0 if c is None else c if isinstance(c, int) else (print(c, file=sys.stderr), 1)[1]
        sys.stdout.flush()
        sys.stderr.flush()
        if agree is not None:
            (lay.io / "code").write_text(str(code))
            compared, differ = _agree(lay.run, agree)
            if differ:
                (lay.io / "agree").write_text(differ)
            elif compared:
                (lay.io / "agreed").write_text("")
    except BaseException:
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
        code = 1
    finally:
        os._exit(code & 0xFF if isinstance(code, int) else 1)


def _agree(run: Path, changed: tuple[str, ...]) -> tuple[bool, str | None]:
    """(compared, how the C reader's load of the run differs from the exact Python reader's or None).
    Where the C reader gave up on every file the case changed, both loads are the exact
    reader's (of an unchanged file, the examples and bases agree) and are not compared."""
    from fencepost.harness.check import loading, native_load
    from tests.support.loading_support import assert_same_load

    if not native_load.available():
        return False, None
    final = run / FINAL
    try:
        tables = native_load.read_tables(run / HISTORY, final if final.is_file() else None, parallel=False)
    except Exception as e:
        return True, f"the C reader raised {type(e).__name__}: {e}"
    if not ((HISTORY in changed and tables.history is not None) or (FINAL in changed and tables.final is not None)):
        return False, None

    def load(native: bool):
        saved = native_load.available
        if not native:
            native_load.available = lambda: False
        try:
            return loading.load_run(run)
        except Exception as e:  # BadInput from test.json, or a crash: both must do the same
            return f"{type(e).__name__}: {e}"
        finally:
            native_load.available = saved

    exact, native = load(False), load(True)
    if isinstance(native, str) or isinstance(exact, str):
        return True, None if native == exact else f"C reader: {str(native)[:300]}; Python reader: {str(exact)[:300]}"
    try:
        assert_same_load(native, exact)
    except AssertionError as e:
        return True, f"the loads differ: {str(e)[:600]}"
    return True, None


def run_forked(argv: list[str], lay: Layout, *, agree: tuple[str, ...] | None = None, timeout: int = 60) -> Ran:
    """`fencepost ARGV` in a child forked from this process (harness.cli.main), its exit code
    as the command line gives it; with `agree`, the readers' agreement after it (Ran.agree)."""
    started = time.perf_counter()
    sys.stdout.flush()
    sys.stderr.flush()
    for name in ("code", "agree", "agreed"):
        with contextlib.suppress(FileNotFoundError):
            (lay.io / name).unlink()
    pid = os.fork()
    if pid == 0:
        _child(argv, lay, agree, timeout)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    ran = Ran(argv, code if code >= 0 else None, -code if code < 0 else None,
              _read(lay.io / "stdout"), _read(lay.io / "stderr"), time.perf_counter() - started)
    if agree is not None:
        ran.agree = _read(lay.io / "agree").decode("utf-8", "replace") or None
        ran.compared = ran.agree is not None or (lay.io / "agreed").exists()
        if ran.code is None and (lay.io / "code").exists():  # the command ended; the agreement was killed
            ran.agree = f"killed by signal {ran.signal} while loading it both ways"
            ran.code, ran.signal = int((lay.io / "code").read_text()), None
    return ran


def run_process(argv: list[str], lay: Layout, timeout: int = 120) -> Ran:
    started = time.perf_counter()
    env = {**os.environ, "HOME": str(lay.home), "TMPDIR": str(lay.tmp),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    exe = shutil.which("fencepost")
    cmd = [exe, *argv] if exe else [sys.executable, "-m", "fencepost.harness.cli", *argv]
    try:
        done = subprocess.run(cmd, cwd=lay.cwd, env=env, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        return Ran(argv, None, signal.SIGKILL, e.stdout or b"", e.stderr or b"", time.perf_counter() - started)
    code = done.returncode
    return Ran(argv, code if code >= 0 else None, -code if code < 0 else None, done.stdout, done.stderr,
               time.perf_counter() - started)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _trace_value(case: Case, value: str | None) -> str:
    if value is not None and "\x00" not in value and value:
        return value.replace("@ROOT@", "/nonexistent")
    rng = random.Random(f"{case.seed}:{case.cls}:{case.n}:trace")
    found = []
    for line in split_lines(case.files.get(HISTORY, b"")):
        d = parse(line)
        if isinstance(d, dict) and d.get("f") == "send" and isinstance(d.get("value"), dict):
            v = d["value"].get("value")
            if isinstance(v, str) and v and "\x00" not in v:
                found.append(v)
    return rng.choice(found).replace("@ROOT@", "/nonexistent") if found else "0-1"


def argv_of(command: tuple, case: Case, lay: Layout) -> list[str]:
    run = str(lay.run)
    if command[0] == "check":  # the summary as text mostly, as json or markdown for a share
        fmt = random.Random(f"{case.seed}:{case.cls}:{case.n}:format").choices(["text", "json", "markdown"],
                                                                               [7, 2, 1])[0]
        return ["check", run, "--jobs", "1"] + ([] if fmt == "text" else ["--format", fmt])
    if command[0] == "report":
        return ["report", run]
    if command[0] == "trace":  # a value mostly; an offset (of a topic the files name) for a share
        rng = random.Random(f"{case.seed}:{case.cls}:{case.n}:offset")
        if rng.random() < 0.25:
            topic = command[1] if command[1] and "\x00" not in command[1] else "fp"
            number = rng.choice([0, 1, 3, 2**63 - 1, 2**63, 10**30])
            return ["trace", run, "--offset", f"{topic.replace('@ROOT@', '/nonexistent')}/0/{number}", "--html"]
        return ["trace", run, _trace_value(case, command[1]), "--html"]
    if command[0] == "export":  # "default": into the run (RUN/history.edn); "out": --out FILE beside it
        out = lay.export_out / "h.edn" if command[1] in ("special", "out") else None
        return ["export", run, "--edn"] + (["--out", str(out)] if out else [])
    return ["compare", run, "--out", str(lay.compare_out)]


def _inert(ran: Ran, case: Case) -> list[str]:
    bad = []
    for stream, data in (("stdout", ran.stdout), ("stderr", ran.stderr)):
        found = sorted({f"0x{b:02x}" for b in data if b in CONTROL})
        if found:
            bad.append(f"{stream} holds control characters {', '.join(found)}")
    return bad


def _pages(lay: Layout) -> list[str]:
    bad = []
    for page in lay.run.rglob("*.html"):
        if page.is_symlink() or not page.is_file():
            continue
        text = page.read_bytes().lower()
        for marker in PAGE_MARKERS:
            if marker.encode() in text:
                bad.append(f"{page.relative_to(lay.run)} holds {marker!r} as it was")
        opened, closed = text.count(b"<script"), text.count(b"</script")
        if opened != closed:
            bad.append(f"{page.relative_to(lay.run)}: {opened} <script but {closed} </script")
    return bad


def run_case(case: Case, workdir: Path, *, subprocess_share: float = 0.0, agree: bool = True,
             keep: bool = False) -> Result:
    """Write `case` into a root of its own under `workdir`, run its commands, and judge them."""
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix=f"{case.cls}-{case.n}-", dir=workdir))
    failures: list[Failure] = []
    runs: list[Ran] = []
    check_code = None
    rng = random.Random(f"{case.seed}:{case.cls}:{case.n}:process")
    try:
        lay = write_case(case, root)
        before = snapshot(lay)
        for command in case.commands:
            argv = argv_of(command, case, lay)
            # generous: a machine loaded tenfold made compare take 20 s of wall clock (6 s alone)
            timeout = 300 if command[0] == "report" else 120
            as_process = rng.random() < subprocess_share
            name = command[0]
            changed = tuple(n for n in (HISTORY, FINAL) if case.files.get(n) != case.base.files.get(n))
            ran = run_forked(argv, lay, timeout=timeout, agree=changed if name == "check" and agree else None)
            runs.append(ran)
            if as_process:
                real = run_process(argv, lay, timeout=timeout * 2)
                if real.code != ran.code:
                    failures.append(Failure("subprocess", name, f"forked exit {ran.code}, real process exit "
                                                                f"{real.code}: {_tail(real.stderr)}"))
            if ran.code is None:
                kind = "timeout" if ran.signal in (signal.SIGALRM, signal.SIGKILL) else "exit"
                failures.append(Failure(kind, name, f"killed by signal {ran.signal} after {ran.seconds:.1f} s"))
            elif ran.code not in ALLOWED:
                failures.append(Failure("exit", name, f"exit {ran.code}: {_tail(ran.stderr)}"))
            if b"Traceback (most recent call last)" in ran.stderr + ran.stdout:
                failures.append(Failure("traceback", name, _tail(ran.stderr + ran.stdout)))
            for problem in _inert(ran, case):
                failures.append(Failure("terminal", name, problem))
            if name == "check":
                check_code = ran.code
                if ran.code is not None and ran.code in ALLOWED and ran.code not in case.expect:
                    failures.append(Failure("verdict", name, f"exit {ran.code}, expected one of "
                                                             f"{sorted(case.expect)} ({case.kind}); "
                                                             f"{_tail(ran.stdout, 300)}"))
                if ran.agree:
                    failures.append(Failure("readers", name, ran.agree[:600]))
            if case.cls == "out-targets" and name in ("export", "compare") and ran.code not in (254, None):
                spec = case.special.get("export-out/h.edn" if name == "export" else "compare-out/compare.csv")
                if spec and spec[0] in ("fifo", "dir"):
                    failures.append(Failure("out-target", name, f"--out target is a {spec[0]}: "
                                                                   f"exit {ran.code}, expected 254"))
        written = {"results.json": check_code in (0, 1, 2),
                   "history.edn": any(r.argv[0] == "export" and r.code == 0 and "--out" not in r.argv for r in runs)}
        for rel, spec in case.special.items():
            name = Path(rel).name
            target = name[1:].rsplit(".", 2)[0] if name.endswith(".partial") else None
            if spec[0] == "file" and target and written.get(target) and (lay.deep / rel).exists():
                failures.append(Failure("partial-left", "check", f"{name} is still there after {target} was written"))
        after = snapshot(lay)
        changed = _diff(before, after)
        if changed:
            failures.append(Failure("write-outside", "+".join(c[0] for c in case.commands),
                                    "; ".join(c.replace(str(root), "ROOT") for c in changed[:5])))
        for problem in _pages(lay):
            failures.append(Failure("page", "+".join(c[0] for c in case.commands), problem))
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return Result(case, check_code, failures, runs, time.perf_counter() - started)


def _tail(data: bytes, n: int = 400) -> str:
    text = data.decode("utf-8", "backslashreplace").strip()
    lines = [x for x in text.splitlines() if x.strip()]
    out = " | ".join(lines[-4:])
    return out if len(out) <= n else out[-n:]


def save_case(case: Case, folder: Path) -> Path:
    """The case's files (and a note of what was done) under `folder`, to look at or check by hand."""
    target = folder / f"{case.cls}-seed{case.seed}-case{case.n}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name, data in case.files.items():
        (target / name).write_bytes(data[:1_000_000])
    (target / "CASE.txt").write_text(
        f"base: {case.base.name}\nclass: {case.cls}\nmutation: {case.note}\nspecial: {case.special}\n"
        f"commands: {case.commands}\nexpected check exit: {sorted(case.expect)} ({case.kind})\n"
        f"reproduce: {case.reproduce()}\n")
    return target


def work_parent() -> str | None:
    """Where case roots go: memory (/dev/shm) where there is one, so fsyncs cost nothing."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def warm_up() -> None:
    """Import and run every command once in this process, so forked children start warm."""
    from fencepost.harness import cli
    base = bases()[0]
    with tempfile.TemporaryDirectory(prefix="fpmut-warm-", dir=work_parent()) as tmp:
        for name, data in base.files.items():
            Path(tmp, name).write_bytes(data)
        out = Path(tmp) / "out"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for argv in (["check", tmp, "--jobs", "1"], ["trace", tmp, "0-1", "--html"],
                         ["export", tmp, "--edn"], ["compare", tmp, "--out", str(out)]):
                cli.main(argv)


@contextlib.contextmanager
def prebuilt_parser():
    """fencepost's argument parser built once, here, while inside: each forked child gets it
    as `harness.cli.main` would build it (the same call, made earlier) and saves the ~20 ms of
    building 20 subcommands' parsers per command (parsing does not change a parser). Put back
    on leaving, so that nothing else in this process sees it (a test that replaces a command's
    `run` needs a parser built after)."""
    from fencepost.harness import cli
    own = cli.build_parser
    parser = own()
    cli.build_parser = lambda: parser
    try:
        yield
    finally:
        cli.build_parser = own
