"""`fencepost serve` (harness/serve.py): the run list (newest first, by verdict),
files and folders under the results folder, refusals of every path leading
outside it, a busy port, and the command itself in a process of its own.

Servers here listen on 127.0.0.1, port 0 (a free port). The in-process server
runs in a thread the fixture starts and joins.
"""
from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.serve import find_all, make_server
from tests.support.cli import FENCEPOST
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration
SECRET = "SECRET-CONTENT outside the results folder"


def _run(results: Path, test: str, stamp: str, valid: object = None, report: bool = True) -> Path:
    run_dir = results / test / stamp
    run_dir.mkdir(parents=True)
    (run_dir / "history.jsonl").write_text('{"index":0}\n')
    if valid is not None:
        (run_dir / "results.json").write_bytes(orjson.dumps(
            {"valid": valid, "anomaly_counts": {"lost-write": 2} if valid is False else {},
             "checked": {"ops": 1234, "partitions": 3, "seconds": 0.1}}))
    if report:
        (run_dir / "report.html").write_text(f"<html><body>report of {stamp}</body></html>")
    return run_dir


@pytest.fixture
def results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    _run(results, "kill-test", "20261120T080000-aaaaaa", valid=False)
    _run(results, "kill-test", "20261121T090000-bbbbbb", valid=True)
    _run(results, "pause-test", "20261121T100000-cccccc", valid="unknown")
    _run(results, "pause-test", "20261121T110000-dddddd", report=False)  # not checked yet
    # Names with their UTC offset (harness/rundir/run_dirs.py) sort among the older ones by
    # the moment they name: 09:30 at +0100 is 08:30 UTC.
    _run(results, "kill-test", "20261121T093000+0100-eeeeee", valid=True)
    _run(results, "kill-test", "20261121T120000Z-ffffff", valid=True)
    (results / "clusters" / "default").mkdir(parents=True)  # not a run
    (results / "latest").symlink_to("pause-test/20261121T110000-dddddd")
    (tmp_path / "secret.txt").write_text(SECRET)
    return results


@pytest.fixture
def server(results: Path):
    server = make_server(results, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              name="fencepost serve (test)")
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _get(server, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=False, skip_accept_encoding=True)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_runs_are_listed_newest_first_each_with_its_verdict(results, server, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")  # names without an offset are read as local time
    time.tzset()
    try:
        status, headers, body = _get(server, "/")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    rows = re.findall(r'<tr class="run row-(\w+)" data-run="([^"]+)" data-verdict="(\w+)">', body.decode())
    assert rows == [("valid", "kill-test/20261121T120000Z-ffffff", "valid"),
                    ("unknown", "pause-test/20261121T110000-dddddd", "unknown"),
                    ("unknown", "pause-test/20261121T100000-cccccc", "unknown"),
                    ("valid", "kill-test/20261121T090000-bbbbbb", "valid"),
                    ("valid", "kill-test/20261121T093000+0100-eeeeee", "valid"),
                    ("invalid", "kill-test/20261120T080000-aaaaaa", "invalid")]
    page = body.decode()
    assert 'href="/kill-test/20261120T080000-aaaaaa/report.html"' in page
    assert 'href="/kill-test/20261121T093000%2B0100-eeeeee/report.html"' in page
    assert "2026-11-21 12:00:00 UTC" in page and "2026-11-21 09:30:00 +01:00" in page
    assert "lost-write 2" in page and "1,234" in page and "not checked" in page
    assert [run.checked for run in find_all(results)[0]] == [True, False, True, True, True, True]


def test_files_and_folders_under_the_results_folder_are_served(results, server):
    status, headers, body = _get(server, "/kill-test/20261120T080000-aaaaaa/report.html")
    assert (status, body) == (200, b"<html><body>report of 20261120T080000-aaaaaa</body></html>")
    assert headers["content-type"] == "text/html; charset=utf-8"
    status, headers, body = _get(server, "/kill-test/20261120T080000-aaaaaa/history.jsonl")
    assert status == 200 and headers["content-type"] == "text/plain; charset=utf-8"
    status, headers, _ = _get(server, "/kill-test/20261120T080000-aaaaaa")
    assert status == 301 and headers["location"] == "/kill-test/20261120T080000-aaaaaa/"
    status, _, body = _get(server, "/kill-test/20261120T080000-aaaaaa/")
    assert status == 200 and b'href="report.html"' in body and b'href="results.json"' in body
    status, _, body = _get(server, "/latest/history.jsonl")  # a symlink inside the folder
    assert (status, body) == (200, b'{"index":0}\n')
    status, headers, body = _get(server, "/kill-test/20261120T080000-aaaaaa/report.html", "HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    assert _get(server, "/kill-test/nothing-here")[0] == 404


def test_paths_with_parent_parts_are_refused(server):
    for path in ("/../secret.txt", "/kill-test/../../secret.txt", "/%2e%2e/secret.txt",
                 "/kill-test/..%2f..%2fsecret.txt", "/kill-test/%2E%2E/%2E%2E/secret.txt",
                 "/..\\secret.txt"):
        status, _, body = _get(server, path)
        assert status == 403 and b"paths outside the results folder are refused" in body, path
        assert b"SECRET-CONTENT" not in body


def test_absolute_paths_and_symlinks_leading_outside_are_not_served(results, server, tmp_path):
    (results / "escape").symlink_to(tmp_path)  # a folder outside
    (results / "kill-test" / "secret").symlink_to(tmp_path / "secret.txt")  # a file outside
    for path in ("/escape/secret.txt", "/kill-test/secret", "/escape/"):
        status, _, body = _get(server, path)
        assert status == 403 and b"leads outside the results folder" in body, path
        assert b"SECRET-CONTENT" not in body
    # An absolute file path is taken as a path under the results folder: not found there.
    for path in (str(tmp_path / "secret.txt"), "/" + str(tmp_path / "secret.txt")):
        status, _, body = _get(server, path)
        assert status == 404 and b"SECRET-CONTENT" not in body, path
    # A target in absolute form names its host: another host's is not this server's to answer.
    status, _, body = _get(server, "http://example.invalid" + str(tmp_path / "secret.txt"))
    assert status == 421 and b"SECRET-CONTENT" not in body
    host, port = server.server_address[:2]
    status, _, body = _get(server, f"http://{host}:{port}" + str(tmp_path / "secret.txt"))
    assert status == 404 and b"SECRET-CONTENT" not in body
    status, _, body = _get(server, "/%00secret.txt")
    assert status == 403 and b"SECRET-CONTENT" not in body


def test_a_busy_port_and_a_missing_folder_are_refused_with_what_to_do(results, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BadInput, match=f"port {port} on 127.0.0.1 is in use.*--port"):
            make_server(results, "127.0.0.1", port)
    with pytest.raises(BadInput, match="no such folder"):
        make_server(tmp_path / "none", "127.0.0.1", 0)


def test_fencepost_serve_on_a_busy_port_exits_254_saying_so(results):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cli = subprocess.run([sys.executable, "-c", FENCEPOST, "serve", "--port", str(port),
                              "--results", str(results)], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    assert cli.returncode == 254
    assert f"port {port} on 127.0.0.1 is in use" in cli.stderr and "Traceback" not in cli.stderr


def test_fencepost_serve_lists_runs_until_it_is_stopped(results):
    process = subprocess.Popen([sys.executable, "-c", FENCEPOST, "serve", "--port", "0",
                                "--results", str(results)], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        match = re.search(r"at http://127\.0\.0\.1:(\d+)/", first)
        assert match, f"no address in {first!r}; stderr: {process.stderr.read() if process.poll() is not None else ''}"
        connection = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=10)
        connection.request("GET", "/")
        response = connection.getresponse()
        assert response.status == 200 and b"kill-test" in response.read()
        connection.close()
    finally:
        os.kill(process.pid, signal.SIGTERM)
        returncode = process.wait(timeout=30)
        process.stdout.close()
        process.stderr.close()
    assert returncode == 0
