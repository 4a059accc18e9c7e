"""`fencepost export --edn`: the history in Jepsen's kafka-workload EDN form,
read back with a small EDN reader and compared op by op."""
from __future__ import annotations

import re
from dataclasses import dataclass

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fencepost.harness.cli import main
from fencepost.harness.edn import edn, export_edn, keyword


@dataclass(frozen=True)
class Keyword:
    """An EDN keyword, as the reader below returns it (`:send` -> Keyword("send")):
    never equal to a string, so a test tells `:send` from `"send"`."""

    name: str


K = Keyword
_TOKEN = re.compile(r"""[\s,]*(?:(?P<open>[\[{(])|(?P<close>[\]})])|(?P<string>"(?:[^"\\]|\\.)*")"""
                    r"""|(?P<atom>[^\s,\[\]{}()"]+))""", re.S)
_STRING_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def read_edn(text: str):
    """A small EDN reader: maps, vectors, lists, strings, keywords, ints,
    floats, nil, true, false, ##Inf/##-Inf/##NaN. Vectors become tuples."""
    value, end = _read(text, 0)
    if text[end:].strip(" ,\n"):
        raise ValueError(f"trailing text: {text[end:]!r}")
    return value


def _read(text, pos):
    m = _TOKEN.match(text, pos)
    if not m or m.end() == pos and not m.group(0):
        raise ValueError(f"cannot read at {pos}: {text[pos:pos + 20]!r}")
    if m.group("open"):
        closer = {"[": "]", "{": "}", "(": ")"}[m.group("open")]
        items, pos = [], m.end()
        while True:
            close = _TOKEN.match(text, pos)
            if close and close.group("close"):
                if close.group("close") != closer:
                    raise ValueError(f"{close.group('close')} closes {m.group('open')}")
                pos = close.end()
                break
            item, pos = _read(text, pos)
            items.append(item)
        if closer == "}":
            if len(items) % 2:
                raise ValueError("a map needs an even number of forms")
            return dict(zip(items[::2], items[1::2])), pos
        return tuple(items), pos
    if m.group("string"):
        body = m.group("string")[1:-1]
        out, i = [], 0
        while i < len(body):
            c = body[i]
            if c == "\\":
                e = body[i + 1]
                if e == "u":
                    out.append(chr(int(body[i + 2:i + 6], 16)))
                    i += 6
                    continue
                out.append(_STRING_ESCAPES[e])
                i += 2
            else:
                out.append(c)
                i += 1
        return "".join(out), m.end()
    atom = m.group("atom")
    if atom is None:
        raise ValueError(f"unexpected {m.group(0)!r} at {pos}")
    if atom.startswith(":"):
        return Keyword(atom[1:]), m.end()
    fixed = {"nil": None, "true": True, "false": False, "##Inf": float("inf"),
             "##-Inf": float("-inf")}
    if atom in fixed:
        return fixed[atom], m.end()
    if atom == "##NaN":
        return float("nan"), m.end()
    if re.fullmatch(r"[-+]?\d+", atom):
        return int(atom), m.end()
    return float(atom), m.end()


def line(index, process, type_, f, value=None, **more):
    d = {"index": index, "time": 10 * index, "process": process, "type": type_, "f": f}
    if value is not None:
        d["value"] = value
    d.update(more)
    return d


def write_history(run_dir, lines):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "history.jsonl").write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in lines))
    return run_dir


TRICKY = 'say "hi"\\ \n\ttab\r \x01 \x7f é 🦀'


def test_one_topic_history_in_jepsen_form(tmp_path):
    assign = {"partitions": [["fp", 0], ["fp", 2]], "from": "beginning"}
    lines = [
        line(0, 0, "invoke", "send", {"topic": "fp", "partition": 2, "value": "0-1"}),
        line(1, 1, "invoke", "poll"),
        line(2, 0, "ok", "send", {"topic": "fp", "partition": 2, "value": "0-1", "offset": 7,
                                  "leader_epoch": 3}),
        line(3, 1, "ok", "poll", {"records": [
            {"topic": "fp", "partition": 2, "offset": 7, "value": "0-1"},
            {"topic": "fp", "partition": 0, "offset": 3, "value": "4-4"},
            {"topic": "fp", "partition": 2, "offset": 8, "value": TRICKY}]}),
        line(4, 2, "invoke", "send", {"topic": "fp", "partition": 0, "value": "2-1"}),
        line(5, 2, "info", "send", {"topic": "fp", "partition": 0, "value": "2-1"},
             error=f"timed out: {TRICKY}"),
        line(6, 1, "invoke", "assign", assign),
        line(7, 1, "ok", "assign", assign),
        line(8, "nemesis", "info", "start-partition", {"grudge": {"n1": ["n2", "n3"]},
                                                       "odd key": 1.5, "none": None}),
        line(9, 1, "invoke", "poll"),
        line(10, 1, "fail", "poll", error="not assigned"),
        line(11, 3, "invoke", "crash"),
        line(12, 3, "info", "crash"),
    ]
    run_dir = write_history(tmp_path / "run", lines)
    result = export_edn(run_dir)
    assert result.path == run_dir / "history.edn" and result.ops == len(lines)
    assert result.problems.errors == []
    text = result.path.read_text(encoding="utf-8")
    ops = [read_edn(edn_line) for edn_line in text.splitlines()]

    def op(index, type_, process, f, value, **more):
        d = {K("index"): index, K("time"): 10 * index, K("type"): K(type_),
             K("process"): process, K("f"): K(f), K("value"): value}
        d.update({K(k.replace("_", "-") + ("?" if k == "seek_to_beginning" else "")): v
                  for k, v in more.items()})
        return d

    assert ops == [
        op(0, "invoke", 0, "send", ((K("send"), 2, "0-1"),)),
        op(1, "invoke", 1, "poll", ((K("poll"),),)),
        op(2, "ok", 0, "send", ((K("send"), 2, (7, "0-1")),)),
        op(3, "ok", 1, "poll", ((K("poll"), {2: ((7, "0-1"), (8, TRICKY)), 0: ((3, "4-4"),)}),)),
        op(4, "invoke", 2, "send", ((K("send"), 0, "2-1"),)),
        {**op(5, "info", 2, "send", ((K("send"), 0, "2-1"),)), K("error"): f"timed out: {TRICKY}"},
        op(6, "invoke", 1, "assign", (0, 2), seek_to_beginning=True),
        op(7, "ok", 1, "assign", (0, 2), seek_to_beginning=True),
        op(8, "info", K("nemesis"), "start-partition",
           {K("grudge"): {K("n1"): ("n2", "n3")}, "odd key": 1.5, K("none"): None}),
        op(9, "invoke", 1, "poll", ((K("poll"),),)),
        {**op(10, "fail", 1, "poll", ((K("poll"),),)), K("error"): "not assigned"},
        op(11, "invoke", 3, "crash", None),
        op(12, "info", 3, "crash", None),
    ]
    # Jepsen's key order, one map per line.
    assert text.splitlines()[0].startswith("{:index 0, :time 0, :type :invoke, :process 0, :f :send, ")


def test_several_topics_key_by_topic_and_partition(tmp_path):
    lines = [
        line(0, 0, "invoke", "send", {"topic": "a", "partition": 1, "value": "0-1"}),
        line(1, 0, "ok", "send", {"topic": "a", "partition": 1, "value": "0-1", "offset": 0}),
        line(2, 1, "invoke", "poll"),
        line(3, 1, "ok", "poll", {"records": [{"topic": "b", "partition": 1, "offset": 4,
                                               "value": "x"}]}),
    ]
    run_dir = write_history(tmp_path / "run", lines)
    out = tmp_path / "elsewhere.edn"
    export_edn(run_dir, out)
    ops = [read_edn(text) for text in out.read_text().splitlines()]
    assert ops[1][K("value")] == ((K("send"), "a-1", (0, "0-1")),)
    assert ops[3][K("value")] == ((K("poll"), {"b-1": ((4, "x"),)}),)


def test_bad_lines_are_left_out_and_reported(tmp_path, capsys):
    run_dir = write_history(tmp_path / "run", [line(0, 0, "invoke", "poll"),
                                               line(1, 0, "okk", "poll"),
                                               line(2, 1, "invoke", "poll")])
    assert main(["export", str(run_dir), "--edn"]) == 0
    captured = capsys.readouterr()
    assert "1 bad line(s) were left out" in captured.err and 'field "type"' in captured.err
    assert f"wrote 2 ops to {run_dir / 'history.edn'}" in captured.out
    assert [read_edn(t)[K("index")] for t in (run_dir / "history.edn").read_text().splitlines()] \
        == [0, 2]


def test_the_export_verb_checks_its_arguments(tmp_path, capsys):
    assert main(["export", str(tmp_path), "--edn"]) == 254
    assert "not a run directory" in capsys.readouterr().err
    run_dir = write_history(tmp_path / "run", [line(0, 0, "invoke", "poll")])
    assert main(["export", str(run_dir)]) == 254
    assert "--edn" in capsys.readouterr().err
    assert main(["export", str(run_dir), "--edn", "--out", str(tmp_path / "no" / "x.edn")]) == 254
    assert main(["export", str(run_dir), "--edn", "--out", str(tmp_path / "x.edn")]) == 0
    assert (tmp_path / "x.edn").exists()


@given(st.text())
def test_any_string_reads_back_as_itself(text):
    assert read_edn(edn(text)) == text


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20))
def test_json_values_read_back(value):
    def expected(v):
        if isinstance(v, list):
            return tuple(expected(i) for i in v)
        if isinstance(v, dict):
            return {(K(k) if keyword(k).startswith(":") else k): expected(i) for k, i in v.items()}
        return v

    assert read_edn(edn(value)) == expected(value)


def test_keywords_only_where_edn_allows_them():
    assert keyword("start-partition") == ":start-partition"
    assert keyword("seek-to-beginning?") == ":seek-to-beginning?"
    assert keyword("2fast") == '"2fast"' and keyword("a b") == '"a b"' and keyword("") == '""'
    assert keyword("a/b") == '"a/b"' and keyword("-1") == '"-1"'
