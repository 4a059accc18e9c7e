"""The whole history as the HTML pages embed it (history.html, timeline.html):
compact, self-contained, and decoded by a few lines of plain JavaScript
(`DECODE_JS`, the browser's own gzip: DecompressionStream).

`HistoryColumns` is a history scan observer (harness/report/scan.py): it is handed
every readable line, in file order, and keeps one row per line —

| column | int32 per row |
|---|---|
| `line` | history line (index) minus the previous row's (the first: its index) |
| `dt` | time in µs minus the previous row's (when a gap does not fit in 32 bits: `time` holds absolute ns as float64 instead) |
| `proc` | process, a code into `meta.procs` ("nemesis" among them) |
| `type` | 0 invoke, 1 ok, 2 fail, 3 info |
| `f` | a code into `meta.fs` |
| `part` | the partitions the op touched, a code into `meta.parts` (lists of `topic-partition`), -1 none; an invoke carries its completion's too |
| `err` | the error, a code into `meta.errors`, -1 none |
| `pair` | the row of the other half of its invoke/completion pair, minus this row; 0 none |

— and each line's `value` as JSON text (newline-separated, one per row, "" for none),
streamed into a gzip compressor as the scan goes, so a million lines never sit in
memory as strings. Pairs are the scan's (a completion pairs with the pending invoke
of its process) and, for the nemesis, the fault bands' (bands.pair_actions).

On the page: `<script type="application/json" id="history-meta">` (the dictionaries,
counts, anomaly-linked lines), `<script type="application/octet-stream" id="history-cols">`
(base64 of the gzipped columns, in the order of `COLUMNS`, each `meta.rows` int32s
little-endian, then `time` when present) and, optionally, `id="history-text"` (base64
of the gzipped value text).
"""
from __future__ import annotations

import base64
import zlib
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from fencepost.harness.measures.bands import NemesisOp, pair_actions
from fencepost.harness.report.page import json_script
from fencepost.harness.report.scan import NO_TIME, ScannedHistory
from fencepost.harness.rundir.history import NEMESIS, TYPES, Op

COLUMNS = ("line", "dt", "proc", "type", "f", "part", "err", "pair")
TYPE_CODES = {name: code for code, name in enumerate(TYPES)}
GZIP_LEVEL = 4  # the value text of 1M lines: level 4 compresses 2.4x faster than 6, for 17% more bytes
TEXT_BATCH = 4096  # rows of value text handed to the compressor at once
INT32_MAX = 2**31 - 1
_dumps = orjson.dumps


@dataclass(frozen=True, slots=True)
class HistoryBlobs:
    meta: dict[str, Any]
    columns: bytes  # gzipped
    text: bytes  # gzipped

    def script_tags(self, with_text: bool = True) -> str:
        """The data as the pages embed it (see the module doc)."""
        tags = [json_script("history-meta", self.meta),
                f'<script type="application/octet-stream" id="history-cols">'
                f'{base64.b64encode(self.columns).decode("ascii")}</script>']
        if with_text:
            tags.append(f'<script type="application/octet-stream" id="history-text">'
                        f'{base64.b64encode(self.text).decode("ascii")}</script>')
        return "".join(tags)


class HistoryColumns:
    """The observer that builds the blobs (see the module doc); `finish` once the scan is done."""

    def __init__(self) -> None:
        self.line = array("q")
        self.time = array("q")
        self.proc = array("i")
        self.type = array("i")
        self.f = array("i")
        self.part = array("i")
        self.err = array("i")
        self._procs: dict[Any, int] = {}
        self._fs: dict[str, int] = {}
        self._errors: dict[str, int] = {}
        self._parts: dict[frozenset[str], int] = {}
        self._part_names: list[frozenset[str]] = []  # by code
        self._single: dict[tuple[str, int], int] = {}  # one partition's code, looked up fast
        self._text: list[bytes] = []
        self._gzip = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        self._compressed: list[bytes] = []
        self._add_line, self._add_time, self._add_proc = self.line.append, self.time.append, self.proc.append
        self._add_type, self._add_f, self._add_part = self.type.append, self.f.append, self.part.append
        self._add_err = self.err.append

    def __call__(self, op: Op) -> None:
        # Runs once per history line: lookups kept local (a million lines: ~2 s of the report).
        self._add_line(op.index)
        self._add_time(op.time)
        process = op.process
        code = self._procs.get(process)
        if code is None:
            code = self._procs[process] = len(self._procs)
        self._add_proc(code)
        self._add_type(TYPE_CODES[op.type])
        f = op.f
        code = self._fs.get(f)
        if code is None:
            code = self._fs[f] = len(self._fs)
        self._add_f(code)
        value = op.value
        if process == NEMESIS:
            self._add_part(-1)
        elif f == "send":  # validated by the reader: topic and partition are there
            key = (value["topic"], value["partition"])
            code = self._single.get(key)
            if code is None:
                code = self._single[key] = self._code(frozenset((f"{key[0]}-{key[1]}",)))
            self._add_part(code)
        else:
            self._add_part(self._part_of(f, op.type, value))
        error = op.error
        if error is None:
            self._add_err(-1)
        else:
            code = self._errors.get(error)
            if code is None:
                code = self._errors[error] = len(self._errors)
            self._add_err(code)
        text = self._text
        text.append(b"" if value is None else _dumps(value))
        if len(text) >= TEXT_BATCH:
            self._flush_text()

    def _part_of(self, f: str, type_: str, value: Any) -> int:
        """The partitions of a poll's records or of an assign (a send's: in __call__)."""
        if f == "poll" and type_ == "ok":
            names = {f"{r['topic']}-{r['partition']}" for r in value["records"]}
        elif f == "assign" and isinstance(value, dict) and isinstance(value.get("partitions"), list):
            names = {f"{tp[0]}-{tp[1]}" for tp in value["partitions"]}
        else:
            return -1
        return self._code(frozenset(names)) if names else -1

    def _code(self, names: frozenset[str]) -> int:
        code = self._parts.get(names)
        if code is None:
            code = self._parts[names] = len(self._part_names)
            self._part_names.append(names)
        return code

    def _flush_text(self) -> None:
        if self._text:
            self._compressed.append(self._gzip.compress(b"\n".join(self._text) + b"\n"))
            self._text = []

    def finish(self, scan: ScannedHistory, linked: set[int], run_name: str) -> HistoryBlobs:
        """The blobs, with pairs and the invokes' partitions filled in from `scan`."""
        self._flush_text()
        self._compressed.append(self._gzip.flush())
        text = b"".join(self._compressed)
        self._compressed = []
        rows = len(self.line)
        line = np.frombuffer(self.line, dtype=np.int64) if rows else np.zeros(0, np.int64)
        part = np.frombuffer(self.part, dtype=np.int32).copy() if rows else np.zeros(0, np.int32)
        pair = np.zeros(rows, dtype=np.int64)
        self._pair_clients(scan, line, pair, part)
        self._pair_nemesis(scan.nemesis, scan.last_time, line, pair)
        time_ns = np.frombuffer(self.time, dtype=np.int64) if rows else np.zeros(0, np.int64)
        micros = (time_ns + 500) // 1000
        dt = np.diff(micros, prepend=0)
        time_column = b""
        if rows and (dt.max() > INT32_MAX or dt.min() < -INT32_MAX):
            dt[:] = 0  # `time` carries it instead
            time_column = time_ns.astype("<f8").tobytes()
        columns = [np.diff(line, prepend=0), dt, self.proc, self.type, self.f, part, self.err, pair]
        raw = b"".join(np.asarray(c, dtype="<i4").tobytes() for c in columns) + time_column
        procs = sorted(self._procs, key=self._procs.__getitem__)
        meta = {
            "run": run_name, "rows": rows, "lines": scan.lines, "unreadable": scan.unreadable,
            "columns": list(COLUMNS), "time": "abs-ns-f64" if time_column else "delta-us",
            "procs": [str(p) for p in procs], "nemesis": NEMESIS, "types": list(TYPES),
            "fs": sorted(self._fs, key=self._fs.__getitem__),
            "parts": [sorted(names) for names in self._part_names],
            "errors": sorted(self._errors, key=self._errors.__getitem__),
            "linked": sorted(linked), "end": int(scan.last_time),
        }
        return HistoryBlobs(meta, zlib.compress(raw, GZIP_LEVEL, wbits=31), text)

    def _pair_clients(self, scan: ScannedHistory, line: np.ndarray, pair: np.ndarray,
                      part: np.ndarray) -> None:
        """Client pairs from the scan; an invoke takes its completion's partitions
        (a poll's invoke names none), or their union with its own."""
        done = scan.complete_index != NO_TIME
        if not done.any():
            return
        invoke_row = np.searchsorted(line, scan.invoke_index[done])
        complete_row = np.searchsorted(line, scan.complete_index[done])
        pair[invoke_row] = complete_row - invoke_row
        pair[complete_row] = invoke_row - complete_row
        mine, theirs = part[invoke_row], part[complete_row]
        part[invoke_row] = np.where(mine == -1, theirs, mine)
        for at in np.flatnonzero((mine != -1) & (theirs != -1) & (mine != theirs)):
            union = self._part_names[mine[at]] | self._part_names[theirs[at]]
            part[invoke_row[at]] = part[complete_row[at]] = self._code(union)

    @staticmethod
    def _pair_nemesis(nemesis: list[NemesisOp], end: int, line: np.ndarray, pair: np.ndarray) -> None:
        for action in pair_actions(nemesis, end):
            if action.invoke_index is not None and action.info_index is not None:
                a, b = np.searchsorted(line, [action.invoke_index, action.info_index])
                pair[a], pair[b] = b - a, a - b


# Decodes the embedded data (module doc) into `window.HistoryData.load()`'s model:
# typed arrays per column (absolute lines, times in seconds), the value texts, and meta.
DECODE_JS = r"""
var HistoryData = (function () {
  function bytesOf(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    var bin = atob(el.textContent.trim());
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function gunzip(bytes) {
    if (typeof DecompressionStream === "undefined")
      throw new Error("this browser cannot decompress the embedded history (no DecompressionStream): " +
                      "open the page in a current Chromium, Firefox or Safari");
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  async function load(withText) {
    var meta = JSON.parse(document.getElementById("history-meta").textContent);
    var n = meta.rows, raw = await gunzip(bytesOf("history-cols")), cols = {};
    meta.columns.forEach(function (name, k) {
      cols[name] = new Int32Array(raw.buffer, raw.byteOffset + k * 4 * n, n);
    });
    var line = new Float64Array(n), time = new Float64Array(n), acc = 0, us = 0;
    for (var i = 0; i < n; i++) { acc += cols.line[i]; line[i] = acc; }
    if (meta.time === "abs-ns-f64") {
      var abs = new Float64Array(raw.slice(meta.columns.length * 4 * n).buffer);
      for (var j = 0; j < n; j++) time[j] = abs[j] / 1e9;
    } else {
      for (var k = 0; k < n; k++) { us += cols.dt[k]; time[k] = us / 1e6; }
    }
    var text = null, textBytes = withText ? bytesOf("history-text") : null;
    if (textBytes) {
      text = new TextDecoder().decode(await gunzip(textBytes)).split("\n");
      text.length = n;
    }
    return {meta: meta, n: n, line: line, time: time, proc: cols.proc, type: cols.type, f: cols.f,
            part: cols.part, err: cols.err, pair: cols.pair, text: text,
            rowOfLine: function (index) {  // binary search: lines are in order
              var lo = 0, hi = n - 1;
              while (lo <= hi) { var mid = (lo + hi) >> 1;
                if (line[mid] === index) return mid;
                if (line[mid] < index) lo = mid + 1; else hi = mid - 1; }
              return -1;
            }};
  }
  return {load: load};
})();
"""
