"""What fencepost prints and serves is inert, whatever bytes a run directory or a spec holds
(issue 33, section 4; docs/RELIABILITY.md 7.4):

- control characters that reach a terminal (a CLI error, a corrupt line echoed by `check`, a
  trace, compare's table, serve's request log) come out escaped (harness/errors.py `printable`);
- data embedded in a page cannot end its script element (harness/report/page.py `script_json`):
  history.html, timeline.html, index.html;
- `fencepost serve` answers only requests addressed to it (the Host header: DNS rebinding),
  sends nosniff and a Content-Security-Policy, and answers an over-long path with 414;
- `fencepost compare` names a run whose results.json is malformed and counts it unknown;
- the TOML writer (replay's --print-script, shrink's shrunk.toml) writes every code point as
  TOML that parses back to it.

Real run directories (tests/support/synth), the real CLI in processes of its own, a real
`fencepost serve` on 127.0.0.1 at a free port. The browser's view of a hostile history.html:
tests/harness/test_browser_report.py.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tomllib
import unicodedata
from pathlib import Path

import orjson
import pytest

from fencepost.harness.errors import clip, printable, show
from fencepost.harness.run.spec import build_spec
from fencepost.harness.run.spec_toml import spec_toml, value_toml
from tests.support.cli import FENCEPOST, fencepost
from tests.support.paths import ROOT
from tests.support.synth.generate import GenConfig, generate

# One of each class that must never reach a terminal raw.
CONTROLS = {"ESC": "\x1b", "CR": "\r", "BEL": "\x07", "backspace": "\x08", "NUL": "\x00", "DEL": "\x7f",
            "C1 CSI": "\x9b", "C1 NEL": "\x85", "C1 OSC": "\x9d", "line separator": "\u2028",
            "paragraph separator": "\u2029", "LRE": "\u202a", "RLE": "\u202b", "PDF": "\u202c", "LRO": "\u202d",
            "RLO": "\u202e", "LRI": "\u2066", "RLI": "\u2067", "FSI": "\u2068", "PDI": "\u2069",
            "ALM": "\u061c", "RLM": "\u200f", "zero width space": "\u200b", "BOM": "\ufeff",
            "tag (outside the BMP)": "\U000e0041"}
HOSTILE = "\x1b[2J\x1b]0;owned\x07\r\x08 \x9b31m \x85\u2028\u2029 \u202egnp.exe \u2066x\u2069 \x7f \ufeff"
SCRIPT_BREAKERS = "</script><script>window.pwned=1</script> <!--<script> </SCRIPT > & \u2028\u2029"


def raw_controls(text: str, newlines: bool = True) -> list[str]:
    """The characters of `text` a terminal would act on (newline and tab aside, when allowed)."""
    allowed = "\n\t" if newlines else ""
    return sorted({f"U+{ord(c):04X}" for c in text
                   if c not in allowed and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")})


def make_run(run_dir: Path, lines: int = 400) -> Path:
    """A generated run directory (history.jsonl, final.jsonl, test.json); unchecked."""
    generate(GenConfig(seed=3, lines=lines)).write(run_dir)
    (run_dir / "test.json").write_bytes(orjson.dumps(build_spec({}, {"name": "hostile"}).to_json()))
    return run_dir


def edit_history(run_dir: Path, edit) -> None:
    path = run_dir / "history.jsonl"
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    edit(lines)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def first(lines: list[dict], **fields) -> dict:
    return next(line for line in lines if all(line.get(k) == v for k, v in fields.items()))


# --- the terminal ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONTROLS)
def test_printable_shows_every_control_class_as_an_escape(name):
    char = CONTROLS[name]
    text = f"a{char}b\nc"
    shown = printable(text)
    assert raw_controls(shown) == [] and shown.startswith("a\\u") and shown.endswith("b\nc"), (name, shown)
    assert "\n" not in printable(text, newlines=False)
    assert raw_controls(show(text), newlines=False) == [] and raw_controls(clip(text.encode()), False) == []
    # The escapes are JSON's: inside a JSON string they mean the same characters again.
    assert orjson.loads(f'"{printable(char)}"') == char
    assert printable("plain text, é, 漢字, 😀, tab\there") == "plain text, é, 漢字, 😀, tab\there"


def test_a_cli_error_naming_a_hostile_path_prints_it_escaped(tmp_path):
    where = tmp_path / f"copied{HOSTILE}run"
    where.mkdir()
    done = fencepost(tmp_path, "check", str(where))
    assert done.returncode == 254 and "is not a run directory" in done.stderr
    assert raw_controls(done.stderr) == [] and "\\u001b[2J" in done.stderr


def corrupt_run(run_dir: Path) -> Path:
    """A run whose history has a hostile error and, mid-file, a corrupt line of hostile bytes."""
    make_run(run_dir)

    def plant(lines):
        first(lines, type="info", f="send")["error"] = f"timed out {HOSTILE}"
    edit_history(run_dir, plant)
    lines = (run_dir / "history.jsonl").read_bytes().splitlines(keepends=True)
    lines.insert(5, f"garbage {HOSTILE}\n".encode())  # a corrupt line: echoed as an error
    (run_dir / "history.jsonl").write_bytes(b"".join(lines))
    return run_dir


def test_the_check_summary_echoes_corrupt_lines_and_errors_escaped(tmp_path):
    import io

    from fencepost.harness.check.checking import check_run
    from fencepost.harness.check.summary import summary_markdown

    out = io.StringIO()
    outcome = check_run(corrupt_run(tmp_path / "run"), write=False, out=out)
    for text in (out.getvalue(), summary_markdown(outcome.results, None)):
        assert "garbage" in text and "\\u001b[2J" in text and raw_controls(text) == [], text


@pytest.mark.slow
def test_fencepost_check_echoes_corrupt_lines_and_errors_escaped(tmp_path):
    run_dir = corrupt_run(tmp_path / "run")
    for fmt in ("text", "markdown"):
        done = fencepost(tmp_path, "check", str(run_dir), "--no-write", "--format", fmt)
        assert done.returncode in (0, 1, 2), done.stderr
        assert "garbage" in done.stdout, done.stdout
        assert raw_controls(done.stdout) == [] and raw_controls(done.stderr) == [], (fmt, done.stdout)
        assert "\\u001b[2J" in done.stdout


@pytest.mark.slow
def test_trace_prints_a_hostile_error_escaped(tmp_path):
    run_dir = make_run(tmp_path / "run")
    value = {}

    def plant(lines):
        line = first(lines, type="info", f="send")
        line["error"] = f"timed out {HOSTILE}"
        value["v"] = line["value"]["value"]
    edit_history(run_dir, plant)
    done = fencepost(tmp_path, "trace", str(run_dir), value["v"])
    assert done.returncode == 0, done.stderr
    assert "timed out" in done.stdout and raw_controls(done.stdout) == [], done.stdout


@pytest.mark.slow
def test_compare_prints_hostile_settings_escaped(tmp_path):
    run_dir = make_run(tmp_path / "runs" / "a")
    test = orjson.loads((run_dir / "test.json").read_bytes())
    test["nemesis"]["faults"] = f"kill{HOSTILE}"
    (run_dir / "test.json").write_bytes(orjson.dumps(test))
    (run_dir / "results.json").write_bytes(orjson.dumps({"valid": True, "anomaly_counts": {f"x{HOSTILE}": 0}}))
    for fmt in ("text", "json"):
        done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--format", fmt)
        assert done.returncode == 0, done.stderr
        assert "kill" in done.stdout and raw_controls(done.stdout) == [], (fmt, done.stdout)


# --- pages: embedded data cannot end its script element ----------------------------------------


def embedded_json(html: str) -> dict[str, str]:
    """id -> the text of each `<script type="application/json">` of a page, as the HTML parser
    ends it (at the first `</script`: the only way out of a script element)."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script', html, re.S | re.I)}


def assert_inert(html: str, ids: set[str]) -> list:
    blobs = embedded_json(html)
    assert ids <= set(blobs), sorted(blobs)
    for name in ids:
        text = blobs[name]
        # The HTML tokenizer leaves script data only at `</script`, and `<!--` with `<script`
        # after it makes it skip the next `</script>`: neither may appear in the data.
        for bad in ("<!--", "<script", "</script", "<", ">"):
            assert bad not in text.lower(), (name, bad, text[:300])
    return [orjson.loads(blobs[name]) for name in sorted(ids)]


def write_pages(run_dir: Path) -> None:
    """history.html and timeline.html as `fencepost report` writes them (without the plots)."""
    from fencepost.harness.measures.bands import nemesis_bands
    from fencepost.harness.report.history_data import HistoryColumns
    from fencepost.harness.report.history_viewer import write_history_page
    from fencepost.harness.report.scan import scan_history
    from fencepost.harness.report.timeline_page import write_timeline_page

    columns = HistoryColumns()
    scan = scan_history(run_dir, observers=[columns])
    blobs = columns.finish(scan, set(), run_dir.name)
    write_history_page(run_dir, blobs)
    write_timeline_page(run_dir, blobs, nemesis_bands(scan.nemesis, scan.last_time))


def hostile_history_run(run_dir: Path) -> Path:
    """A run whose history holds script-breaking text in an error, a node killed and a nemesis op's f."""
    make_run(run_dir)

    def plant(lines):
        first(lines, type="info", f="send")["error"] = SCRIPT_BREAKERS
        t = lines[-1]["time"]
        lines += [{"index": len(lines), "time": t + 1, "process": "nemesis", "type": "invoke",
                   "f": "kill", "value": {"target": SCRIPT_BREAKERS}},
                  {"index": len(lines) + 1, "time": t + 2, "process": "nemesis", "type": "info",
                   "f": "kill", "value": {"nodes": [SCRIPT_BREAKERS]}},
                  {"index": len(lines) + 2, "time": t + 3, "process": "nemesis", "type": "invoke",
                   "f": f"x{SCRIPT_BREAKERS}", "value": None}]
    edit_history(run_dir, plant)
    return run_dir


def test_history_and_timeline_pages_embed_hostile_text_inertly(tmp_path):
    run_dir = hostile_history_run(tmp_path / f"run{SCRIPT_BREAKERS.replace('/', '')}")
    write_pages(run_dir)
    meta, = assert_inert((run_dir / "history.html").read_text(), {"history-meta"})
    assert SCRIPT_BREAKERS in meta["errors"]
    timeline = (run_dir / "timeline.html").read_text()
    meta, bands, colours = assert_inert(timeline, {"history-meta", "timeline-bands", "timeline-colours"})
    assert SCRIPT_BREAKERS in meta["errors"] and any(SCRIPT_BREAKERS in part for band in bands for part in band[2:])
    assert "<!--<script>" not in timeline and "</script><script>window" not in timeline


def test_the_results_index_embeds_hostile_run_names_inertly(tmp_path):
    from fencepost.harness.index.page import write_index

    results = tmp_path / "results"
    run_dir = make_run(results / f"t{SCRIPT_BREAKERS.replace('/', '')}" / "20261121T101500-abc123")
    test = orjson.loads((run_dir / "test.json").read_bytes())
    test.update(name=SCRIPT_BREAKERS, system=f"own{SCRIPT_BREAKERS}", truncation=SCRIPT_BREAKERS)
    (run_dir / "test.json").write_bytes(orjson.dumps(test))
    html = write_index(results).read_text()
    data, = assert_inert(html, {"index-data"})
    assert data["runs"][0]["truncation"] == SCRIPT_BREAKERS


def test_script_json_escapes_what_html_reads_and_json_gives_back():
    from fencepost.harness.report.page import script_json

    value = {"a<b": [SCRIPT_BREAKERS, "&amp;", 1, None, 2.5], "e": "\u2028\u2029\U0001f600"}
    text = script_json(value)
    assert not set(text) & set("<>&\u2028\u2029") and orjson.loads(text) == value


def test_the_report_page_escapes_what_results_json_says(tmp_path):
    """report.html's own HTML (not embedded data): every value of results.json is escaped."""
    from fencepost.harness.measures.lag import RealtimeLag
    from fencepost.harness.report.html import render_report
    from fencepost.harness.report.inputs import load_inputs
    from fencepost.harness.report.scan import scan_history

    run_dir = make_run(tmp_path / "run")
    tag = "<img src=x onerror=window.pwned=1>"
    (run_dir / "results.json").write_bytes(orjson.dumps({
        "valid": False, "anomaly_counts": {tag: 1}, "anomalies": {tag: [{"explanation": tag, "ops": [1]}]},
        "reasons": [tag], "errors": [tag], "warnings": [], "checked": {"ops": tag, "partitions": tag},
        "liveness": {"verdict": tag, "kinds": {tag: 1}, "thresholds": {"unavailable_s": tag, "grace_s": tag,
                                                                       "stuck_lag_s": tag},
                     "fatal_markers": [{"node": tag, "line": tag}, tag],
                     "unavailable": [{"partition": tag, "from_s": tag, "to_s": 2.0, "unexplained": [tag]}],
                     "recovery": {"healed_at_s": tag, "partitions": {tag: None, "fp-0": tag}},
                     "stuck_consumers": [{"process": tag, "lag_s": tag, "last_poll_s": 1, "worst_lag_s": [tag]}]},
        "premise": {"verdict": tag}, "invalid_anomalies": [tag, {"a": 1}, [2]],
        "linearizability": {tag: {"method": tag, "counterexample_file": tag, "linearizable": False},
                            "fp-0": {"linearizable": False, "counterexample_file": "//attacker.example/x.html"},
                            "fp-1": {"linearizable": False, "counterexample_file": "javascript:window.pwned=1"}}}))
    scan = scan_history(run_dir, observers=[])
    html = render_report(load_inputs(run_dir), scan, [], [], RealtimeLag(), {})
    assert "<img src=x" not in html, html[html.find("<img src=x") - 200:][:400]
    assert 'href="//' not in html and 'href="javascript:' not in html and "counterexample</a>" in html


# --- fencepost serve ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`fencepost serve --port 0` over a results folder with one run; (port, results, process)."""
    results = tmp_path_factory.mktemp("serve") / "results"
    run_dir = make_run(results / "t" / "20261121T101500-abc123")
    (run_dir / "report.html").write_text("<html><body>the report</body></html>")
    server = subprocess.Popen([sys.executable, "-c", FENCEPOST, "serve", "--port", "0", "--results", str(results)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
        assert match, "fencepost serve did not print its address"
        yield int(match.group(1)), results, server
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        server.stdout.close()
        server.stderr.close()


def raw_request(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `request` as it is; (status, headers, body) of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(1 << 16):
            answer += chunk
    if not answer:
        return 0, {}, b""  # the connection was closed without an answer
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("iso-8859-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), headers, body


def get(port: int, path: str, host: str | None = "127.0.0.1:{port}") -> tuple[int, dict[str, str], bytes]:
    lines = [f"GET {path} HTTP/1.1"] + ([f"Host: {host.format(port=port)}"] if host is not None else [])
    return raw_request(port, ("\r\n".join([*lines, "Connection: close", "", ""])).encode("iso-8859-1"))


def test_serve_answers_only_requests_addressed_to_it(served):
    port, _, _ = served
    for host in ("127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "[::1]:{port}"):
        assert get(port, "/", host)[0] == 200, host
    for host in ("attacker.example:{port}", "attacker.example", "127.0.0.1.attacker.example:{port}",
                 "localhost.attacker.example:{port}", "127.0.0.1:1", "127.0.0.1", "", "[::1]:1",
                 "127.0.0.1:{port}@attacker.example", None):
        status, headers, body = get(port, "/t/20261121T101500-abc123/report.html", host)
        assert status == 421 and b"the report" not in body, (host, status)
        assert headers["x-content-type-options"] == "nosniff"


def test_serve_sends_nosniff_and_a_content_security_policy_everywhere(served):
    port, _, _ = served
    for path in ("/", "/t/20261121T101500-abc123/", "/t/20261121T101500-abc123/report.html",
                 "/t/20261121T101500-abc123/history.jsonl", "/nothing", "/t/20261121T101500-abc123"):
        status, headers, _ = get(port, path)
        assert status in (200, 301, 404), path
        assert headers["x-content-type-options"] == "nosniff", path
        policy = {d.split()[0]: d.split()[1:] for d in headers["content-security-policy"].split(";") if d.strip()}
        assert policy["default-src"] == ["'self'"] and policy["connect-src"] == ["'self'"], policy
        assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]
        assert policy["form-action"] == ["'none'"] and policy["object-src"] == ["'none'"]
        sources = {s for values in policy.values() for s in values}
        assert sources <= {"'self'", "'none'", "'unsafe-inline'", "data:"}, sources  # no other origin


def test_serve_answers_over_long_paths_with_414_and_goes_on(served):
    port, _, server = served
    for path in ("/" + "a" * 300, "/t/" + "b" * 5000, "/" + "c/" * 3000, "/%41" * 2000, "/" + "d" * 70000):
        status, headers, _ = get(port, path)
        assert status == 414, (len(path), status)
    assert get(port, "/")[0] == 200  # still serving


def test_serve_logs_requests_with_control_characters_escaped(served):
    port, _, server = served
    status, _, _ = raw_request(port, b"GET /\x1b[2J\x1b]0;owned\x07\x9b/x HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                     b"User-Agent: \x1b[31m\r\nConnection: close\r\n\r\n" % port)
    assert status == 404
    get(port, "/marker-after-the-hostile-request")
    log = ""
    while "marker-after-the-hostile-request" not in log:
        log += server.stderr.readline()
    assert "Traceback" not in log and raw_controls(log) == [], log
    assert "\\u001b[2J" in log


# --- compare: a malformed results.json of one run ------------------------------------------------

MALFORMED = {
    "not-an-object": b"[1, 2]",
    "not-json": b"{\"valid\": tru",
    "nan": b"{\"valid\": true, \"anomaly_counts\": {\"lost-write\": NaN}}",
    "huge-number": b"{\"valid\": false, \"anomaly_counts\": {\"lost-write\": 1e400}}",
    "huge-integer": b"{\"valid\": false, \"anomaly_counts\": {\"lost-write\": 123456789012345678901234567890}}",
    "counts-a-list": b"{\"valid\": false, \"anomaly_counts\": [\"lost-write\"]}",
    "count-a-string": b"{\"valid\": false, \"anomaly_counts\": {\"lost-write\": \"many\"}}",
    "negative-count": b"{\"valid\": false, \"anomaly_counts\": {\"lost-write\": -3}}",
    "valid-a-string": b"{\"valid\": \"yes\", \"anomaly_counts\": {}}",
    "liveness-wrong": b"{\"valid\": true, \"anomaly_counts\": {}, \"liveness\": {\"findings\": \"x\", \"kinds\": 3}}",
    "invalid-utf8": b"{\"valid\": true, \"anomaly_counts\": {\"\xff\xfe\": 1}}",
    "a-directory": None,
}


def malformed_runs(runs: Path) -> None:
    make_run(runs / "good")
    (runs / "good" / "results.json").write_bytes(orjson.dumps({"valid": True, "anomaly_counts": {}}))
    for name, content in MALFORMED.items():
        run_dir = make_run(runs / name, lines=60)
        if content is None:
            (run_dir / "results.json").mkdir()
        else:
            (run_dir / "results.json").write_bytes(content)


@pytest.mark.slow
def test_compare_names_a_run_with_a_malformed_results_json_and_counts_it_unknown(tmp_path):
    malformed_runs(tmp_path / "runs")
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for name in MALFORMED:
        assert f"runs/{name}/results.json" in done.stderr, (name, done.stderr)
    row, = orjson.loads(done.stdout)
    assert (row["runs"], row["unknown"]) == (1 + len(MALFORMED), len(MALFORMED)), row


def test_collect_counts_each_malformed_results_json_unknown(tmp_path):
    from fencepost.harness.compare.collect import collect

    malformed_runs(tmp_path / "runs")
    said: list[str] = []
    found = {r.run_dir.name: r for r in collect([tmp_path / "runs"], say=said.append)}
    assert found["good"].verdict == "valid"
    for name in MALFORMED:
        assert found[name].verdict == "unknown" and found[name].anomaly_counts == {}, name
        assert any(f"{name}/results.json" in line and "counted unknown" in line for line in said), (name, said)


# --- TOML ---------------------------------------------------------------------------------------


def code_point_classes() -> dict[str, str]:
    """Up to 40 code points of each Unicode category (ASCII and C1 whole), and the edges of the
    planes and of the surrogate block, by class."""
    classes: dict[str, list[str]] = {"ascii": [chr(c) for c in range(0x80)], "c1": [chr(c) for c in range(0x80, 0xA0)],
                                     "edges": [chr(c) for c in (0xD7FF, 0xE000, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000,
                                                                0x1F600, 0xE0041, 0xFFFFF, 0x100000, 0x10FFFF)]}
    for c in range(0xA0, 0x110000, 7):
        if not 0xD800 <= c <= 0xDFFF:
            bucket = classes.setdefault(unicodedata.category(chr(c)), [])
            if len(bucket) < 40:
                bucket.append(chr(c))
    return {name: "".join(chars) for name, chars in classes.items()}


def test_value_toml_writes_each_code_point_class_as_toml_that_reads_back():
    for name, text in code_point_classes().items():
        written = value_toml(text)
        assert tomllib.loads(f"v = {written}\n")["v"] == text, name
        assert written.isascii() and raw_controls(written) == [], name
    keys = {f"k{c}": c for c in ("\x00", "\x7f", "\x9b", "\u2028", "\u202e", "\U0001f600", "\U0010ffff", '"', "\\")}
    assert tomllib.loads(f"v = {value_toml(keys)}\n")["v"] == keys
    with pytest.raises(ValueError, match="lone surrogate U\\+D800"):
        value_toml("a\ud800")


@pytest.mark.slow
def test_value_toml_writes_every_code_point_as_toml_that_reads_back():
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    written = value_toml(text)
    assert written.isascii() and tomllib.loads(f"v = {written}\n")["v"] == text


def test_a_hostile_comment_in_shrunk_toml_stays_a_comment():
    """shrink's comment names the run directory given: whatever it holds, the file parses."""
    spec = build_spec({}, {"name": "shrunk", "nemesis.faults": "kill"})
    text = spec_toml(spec, comment=f"fencepost shrink runs/a{HOSTILE}\U0001f600\x00\nrun it: name = 1")
    data = tomllib.loads(text)
    assert data["name"] == "shrunk" and raw_controls(text) == []


@pytest.mark.slow
def test_replay_print_script_writes_a_non_bmp_target_as_toml(tmp_path):
    target = f"one{HOSTILE}\U0001f600\U0010ffff"
    t0 = 5_000_000_000
    lines = [{"index": 0, "time": t0, "process": "nemesis", "type": "invoke", "f": "kill", "value": {"target": target}},
             {"index": 1, "time": t0 + 10**8, "process": "nemesis", "type": "info", "f": "kill",
              "value": {"target": target, "nodes": ["n2"]}}]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    spec = build_spec({}, {"backend": "netns", "time_limit": 20, "nemesis.faults": "kill", "seed": 7})
    (run_dir / "test.json").write_bytes(orjson.dumps({**spec.to_json(), "versions": {"fencepost": "x"}}))
    done = fencepost(tmp_path, "replay", str(run_dir), "--print-script")
    assert done.returncode == 0, done.stderr
    assert tomllib.loads(done.stdout)["nemesis"]["script"] == [{"at": 0.0, "action": f"start kill:{target}"}]
    assert raw_controls(done.stdout) == []


def test_host_headers_are_read_strictly():
    from fencepost.harness.serve import allowed_hosts, split_host

    assert split_host("127.0.0.1:8080") == ("127.0.0.1", 8080) and split_host("[::1]:80") == ("[::1]", 80)
    assert split_host("localhost") == ("localhost", None)
    for bad in ("", ":80", "[::1", "[::1]x", "a@b:80", "a:b", "a:123456", "a b:80", "a/b:80", "a:٣"):
        assert split_host(bad)[0] is None, bad
    assert allowed_hosts("::1", "::1") == {"localhost", "127.0.0.1", "[::1]"}
    assert "myhost" in allowed_hosts("MyHost", "10.0.0.1") and "10.0.0.1" in allowed_hosts("MyHost", "10.0.0.1")


def test_replay_and_shrink_say_recorded_actions_escaped():
    from fencepost.harness.replay.script import Entry, Unit

    said = Unit((Entry(1.5, f"start kill:{HOSTILE}"), Entry(3.0, "stop kill"))).describe()
    assert said.startswith("start kill:\\u001b[2J") and raw_controls(said, newlines=False) == []
