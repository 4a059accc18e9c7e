"""`fencepost serve`: an HTTP server over the results folder — the list of runs
(newest first, coloured by verdict) and every file under the folder, nothing else.

- `/` lists the campaigns (each with its tally and a link to its report) and the
  runs: every directory under the folder, however deep (a campaign's runs sit
  under `campaigns/<name>/<time>-<hex>/runs/<id>/run/`), holding a history,
  test.json or results.json (harness/index/tree.py; symlinks such as `latest`
  are not followed), newest first by the time that starts a run's name (with
  its UTC offset, or in the older form without; else its modification time),
  each with its verdict from results.json, its op count, its anomalies, a link
  to its report.html and to its files; a campaign's runs are named by campaign
  and run id.
- Any other path is a file or folder under the results folder: files are sent
  as they are (streamed), folders as a listing. A path with a `..` part is
  refused (403), and so is one that resolves — symlinks followed — outside the
  folder (403); a missing one is 404; one longer than MAX_PATH characters, or
  with a part longer than MAX_NAME bytes, 414.
- Only requests addressed to this server are answered (DNS rebinding: a page of
  another site whose name is made to point at 127.0.0.1 must not read the runs):
  the Host header must name the address it listens on, `localhost`, 127.0.0.1 or
  [::1], with its port (none for port 80; a target in absolute form,
  `GET http://host:port/path`, is judged by its host instead); when it listens on every address
  (0.0.0.0, ::), any IP address too (a rebinding needs a name). Others: 421.
- Every answer says `X-Content-Type-Options: nosniff` (a file is what its type
  says, never sniffed into HTML) and carries CONTENT_SECURITY_POLICY: the run's
  pages keep their inline scripts, styles and embedded images, and can reach
  nothing but this server (no other origin, no framing, no forms, no <base>).
- The request log (stderr) is escaped (harness/errors.py `printable`): a request
  line with control characters cannot drive the terminal.

`ResultsServer` is the stdlib's ThreadingHTTPServer: one thread per request,
joined by `server_close()` (daemon_threads off); a connection idle for
REQUEST_TIMEOUT s is dropped so that no request thread can hang forever.
"""
from __future__ import annotations

import errno
import ipaddress
import mimetypes
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Sequence, TextIO
from urllib.parse import quote, unquote, urlsplit

from fencepost.harness.errors import BadInput, printable
from fencepost.harness.index.tree import CampaignInfo, scan
from fencepost.harness.report.page import esc, page, verdict_badge
from fencepost.harness.rundir.names import REPORT_FILE
from fencepost.harness.rundir.record import verdict_word
from fencepost.harness.rundir.run_dirs import format_time

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
REQUEST_TIMEOUT = 5.0
TEXT_SUFFIXES = (".jsonl", ".log", ".txt", ".md", ".edn", ".toml", ".csv")
ANOMALIES_LISTED = 4
MAX_PATH = 4096  # characters of a request's path, as sent (Linux's PATH_MAX)
MAX_NAME = 255  # bytes of one part of it, decoded (Linux's NAME_MAX)
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
# The run's pages (report, history, timeline, index, trace, linear) are self-contained: inline
# script and style, plots as data: images. Nothing may come from or go to another origin.
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; "
                           "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
                           "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


@dataclass(slots=True)
class RunEntry:
    test: str
    name: str
    relative: str  # path under the results folder, with "/"
    started: datetime
    valid: Any  # results.json's `valid`; None when the run was not checked
    checked: bool
    has_report: bool
    ops: int | None = None
    anomaly_counts: dict[str, int] = field(default_factory=dict)


def find_all(results: Path) -> tuple[list[RunEntry], list[CampaignInfo]]:
    """(runs, campaigns) under `results`, newest first (harness/index/tree.py)."""
    runs, campaigns = scan(results)
    names = {c.relative: c.name for c in campaigns}
    entries = [RunEntry(
        test=(f"{names[r.campaign]} / {r.run_id}" if r.campaign else r.test or "(no test name)"), name=r.name,
        relative=r.relative, started=r.started_at, valid=r.valid, checked=r.verdict != "not checked",
        has_report=r.has_report, ops=r.ops, anomaly_counts=dict(r.anomaly_counts)) for r in runs]
    return entries, campaigns


# --- pages --------------------------------------------------------------------------------


def runs_page(results: Path, runs: list[RunEntry], campaigns: Sequence[CampaignInfo] = ()) -> str:
    if not runs:
        body = (f"<h1>fencepost runs</h1><p>No runs yet in {esc(results)}: "
                f"<code>fencepost run</code> writes them there.</p>")
        return page("fencepost runs", body)
    rows = []
    for run in runs:
        word = verdict_word(run.valid) if run.checked else "unknown"
        verdict = verdict_badge(run.valid) if run.checked else '<span class="muted">not checked</span>'
        link = quote(run.relative)
        report = (f'<a class="report" href="/{esc(link)}/{REPORT_FILE}">report</a>' if run.has_report
                  else '<span class="muted">no report</span>')
        anomalies = ", ".join(f"{esc(name)} {n}" for name, n in
                              sorted(run.anomaly_counts.items(), key=lambda kv: -_int(kv[1]))[:ANOMALIES_LISTED])
        if len(run.anomaly_counts) > ANOMALIES_LISTED:
            anomalies += ", …"
        rows.append(f'<tr class="run row-{word}" data-run="{esc(run.relative)}" data-verdict="{word}">'
                    f'<td class="verdict-cell">{verdict}</td><td>{esc(run.test)}</td>'
                    f'<td><a class="files" href="/{esc(link)}/">{esc(run.name)}</a></td>'
                    f'<td>{esc(format_time(run.started))}</td>'
                    f'<td class="num">{"" if run.ops is None else f"{run.ops:,}"}</td>'
                    f"<td>{anomalies or ('none' if run.checked else '')}</td><td>{report}</td></tr>")
    index = (' The same as a file that works without a server: <a href="/index.html">index.html</a>, '
             'filterable.' if (results / "index.html").is_file() else "")
    body = (f"<h1>fencepost runs</h1><p class=\"muted\">{len(runs)} run(s) in {esc(results)}, "
            f"newest first.{index}</p>{_campaigns_table(campaigns)}<h2>Runs</h2>"
            f"<table id=\"runs\"><thead><tr><th>verdict</th><th>test</th><th>run</th>"
            f'<th>started</th><th class="num">ops</th><th>anomalies</th><th></th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")
    return page("fencepost runs", body)


def _campaigns_table(campaigns: Sequence[CampaignInfo]) -> str:
    if not campaigns:
        return ""
    rows = []
    for c in campaigns:
        link = quote(c.relative)
        tally = ", ".join(f"{esc(v)} {n}" for v, n in sorted(c.verdicts.items())) or "no run finished"
        report = (f'<a class="report" href="/{esc(link)}/report.html">report</a>' if c.has_report
                  else '<span class="muted">no report yet</span>')
        surprises = f'<span class="tag bad">{c.surprises} surprise(s)</span>' if c.surprises else ""
        rows.append(f'<tr class="campaign" data-campaign="{esc(c.relative)}"><td>{esc(c.name)}</td>'
                    f'<td><a href="/{esc(link)}/">{esc(c.relative.rsplit("/", 1)[-1])}</a></td>'
                    f"<td>{esc(format_time(c.started_at))}</td><td>{esc(c.shard or '')}</td>"
                    f'<td class="num">{c.finished}/{c.planned}</td><td>{tally} {surprises}</td><td>{report}</td></tr>')
    return ("<h2>Campaigns</h2><table id=\"campaigns\"><thead><tr><th>campaign</th><th>directory</th>"
            "<th>started</th><th>shard</th><th class=\"num\">runs</th><th>verdicts</th><th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def folder_page(url_path: str, folder: Path) -> str:
    entries = []
    try:
        children = sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name))
    except OSError as e:
        children = []
        entries.append(f"<li class=\"muted\">cannot list this folder: {esc(e.strerror or e)}</li>")
    for child in children:
        name = child.name + ("/" if child.is_dir() else "")
        size = ""
        if child.is_file():
            size = f' <span class="muted">{_size(child.stat().st_size)}</span>'
        entries.append(f'<li><a href="{esc(quote(name))}">{esc(name)}</a>{size}</li>')
    report = (f'<p><a class="report" href="{REPORT_FILE}"><b>the report</b></a></p>'
              if (folder / REPORT_FILE).is_file() else "")
    body = (f'<p><a href="/">&larr; all runs</a></p><h1>{esc(url_path)}</h1>{report}'
            f'<ul id="entries">{"".join(entries)}</ul>')
    return page(url_path, body)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# --- the server ---------------------------------------------------------------------------


class ResultsServer(ThreadingHTTPServer):
    daemon_threads = False  # request threads are joined by server_close()

    def __init__(self, results: Path, address: tuple[str, int], log: TextIO | None = None):
        self.results = results.resolve()
        self.log = log
        super().__init__(address, ResultsHandler)
        self.hosts = allowed_hosts(address[0], str(self.server_address[0]))  # an IP address: a str

    def addressed_to_me(self, host_header: str | None) -> bool:
        """Whether a request's Host header names this server (module doc)."""
        if host_header is None:
            return False
        name, port = split_host(host_header.strip().lower())
        bound_port = self.server_address[1]
        if name is None or (port != bound_port if port is not None else bound_port != 80):
            return False
        if name in self.hosts:
            return True
        return self.hosts_any_ip and _is_ip(name)

    @property
    def hosts_any_ip(self) -> bool:
        return self.server_address[0] in WILDCARD_HOSTS

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"


class ResultsHandler(BaseHTTPRequestHandler):
    server: ResultsServer
    timeout = REQUEST_TIMEOUT
    server_version = "fencepost-serve"

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def end_headers(self) -> None:
        """Every answer (the stdlib's error pages too) carries nosniff and the policy."""
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("Referrer-Policy", "no-referrer")
        super().end_headers()

    def _answer(self, send_body: bool) -> None:
        authority = urlsplit(self.path).netloc  # an absolute-form target names the host itself
        if not self.server.addressed_to_me(authority or self.headers.get("Host")):
            return self._refuse(HTTPStatus.MISDIRECTED_REQUEST, "this server answers only requests addressed "
                                "to it (the Host header): open it at the address it printed", send_body)
        if len(self.path) > MAX_PATH:
            return self._refuse(HTTPStatus.REQUEST_URI_TOO_LONG, f"paths longer than {MAX_PATH} characters "
                                "are refused", send_body)
        url_path = unquote(urlsplit(self.path).path)
        parts = url_path.split("/")
        if any(len(part.encode("utf-8", "replace")) > MAX_NAME for part in parts):
            return self._refuse(HTTPStatus.REQUEST_URI_TOO_LONG, f"no file name is longer than {MAX_NAME} "
                                "bytes", send_body)
        if "\x00" in url_path or any(part == ".." or "\\" in part for part in parts):
            return self._refuse(HTTPStatus.FORBIDDEN, "paths outside the results folder are refused",
                                send_body)
        relative = [part for part in parts if part not in ("", ".")]
        root = self.server.results
        if not relative:
            return self._send_html(runs_page(root, *find_all(root)), send_body)
        target = root.joinpath(*relative)
        try:
            resolved = target.resolve()
            if not resolved.is_relative_to(root):
                return self._refuse(HTTPStatus.FORBIDDEN, "this path leads outside the results folder",
                                    send_body)
            is_dir, is_file = resolved.is_dir(), resolved.is_file()
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a name the system refuses
            return self._refuse(HTTPStatus.NOT_FOUND, "no such file", send_body)
        if is_dir:
            if not url_path.endswith("/"):  # so that the folder's relative links work
                self.send_response(HTTPStatus.MOVED_PERMANENTLY)
                self.send_header("Location", quote(url_path) + "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self._send_html(folder_page(url_path, resolved), send_body)
        if not is_file:
            return self._refuse(HTTPStatus.NOT_FOUND, "no such file", send_body)
        self._send_file(resolved, send_body)

    def _send_file(self, path: Path, send_body: bool) -> None:
        try:
            file = open(path, "rb")
        except OSError as e:
            return self._refuse(HTTPStatus.FORBIDDEN, f"cannot read it: {e.strerror}", send_body)
        with file:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type(path))
            self.send_header("Content-Length", str(os.fstat(file.fileno()).st_size))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if send_body:
                try:
                    shutil.copyfileobj(file, self.wfile, 1 << 20)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the browser went away

    def _send_html(self, text: str, send_body: bool, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _refuse(self, status: HTTPStatus, why: str, send_body: bool) -> None:
        shown = self.path if len(self.path) <= 200 else self.path[:200] + "..."
        text = page(f"{status.value} {status.phrase}",
                    f'<h1>{status.value} {esc(status.phrase)}</h1><p>{esc(shown)}: {esc(why)}.</p>'
                    f'<p><a href="/">all runs</a></p>')
        self._send_html(text, send_body, status)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log is not None:
            print(printable(f"{self.address_string()} - {format % args}", newlines=False), file=self.server.log,
                  flush=True)


def allowed_hosts(given: str, bound: str) -> frozenset[str]:
    """The names a Host header may give for a server given `given` (--host) and bound to `bound`."""
    names = {*LOCAL_NAMES}
    for host in (given, bound):
        host = host.lower()
        names.add(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    return frozenset(names)


def split_host(header: str) -> tuple[str | None, int | None]:
    """(name, port) of a Host header (`name`, `name:port`, `[v6]:port`); name None if malformed."""
    if header.startswith("["):
        end = header.find("]")
        if end < 0:
            return None, None
        name, rest = header[:end + 1], header[end + 1:]
        if rest and not rest.startswith(":"):
            return None, None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text = header.partition(":")
        port_text = port_text if colon else None
    if not name or any(c in name for c in "@/\\ ") or (port_text is not None and not (
            port_text.isascii() and port_text.isdigit() and len(port_text) <= 5)):
        return None, None
    return name, None if port_text is None else int(port_text)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


def content_type(path: Path) -> str:
    if path.suffix in TEXT_SUFFIXES:
        return "text/plain; charset=utf-8"
    if path.suffix == ".json":
        return "application/json"
    guessed, _ = mimetypes.guess_type(path.name)
    if guessed is None:
        return "application/octet-stream"
    return f"{guessed}; charset=utf-8" if guessed.startswith("text/") else guessed


def make_server(results: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                log: TextIO | None = None) -> ResultsServer:
    """A server bound to host:port (port 0: a free one) over `results`; BadInput
    when the folder is missing or the address cannot be used."""
    if not results.is_dir():
        raise BadInput(f"--results {results}: no such folder; runs are written to the results "
                       f"folder by `fencepost run` (default ./results); give the folder that holds them")
    try:
        return ResultsServer(results, (host, port), log)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise BadInput(f"port {port} on {host} is in use (another `fencepost serve`?): stop "
                           f"what uses it, or choose another port with --port") from None
        if e.errno == errno.EACCES:
            raise BadInput(f"port {port} on {host} needs privileges this user lacks: choose a port "
                           f"above 1023 with --port") from None
        if isinstance(e, socket.gaierror) or e.errno == errno.EADDRNOTAVAIL:
            raise BadInput(f"--host {host}: not an address of this machine ({e.strerror or e}); "
                           f"give one of its addresses, e.g. 127.0.0.1") from None
        raise BadInput(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def serve(server: ResultsServer, out: TextIO = sys.stdout) -> None:
    """Serve until interrupted (Ctrl-C); the server is closed on the way out."""
    print(f"serving {server.results} at {server.url} (Ctrl-C to stop)", file=out, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
