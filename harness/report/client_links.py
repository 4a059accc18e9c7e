"""The report's links to the client logs (harness/rundir/clients.py reads them): beside each
stuck-consumer finding, that consumer's log and native stacks, or why it has none; and the
"Client logs" section, a row per process with a log — stuck, crashed or not closed — saying
why it was written. Every name and reason is escaped; only files clients.py found inside the
run directory are linked (relative links: the report works served and as a file beside them).
"""
from __future__ import annotations

from typing import Any

from fencepost.harness.report.page import esc, href
from fencepost.harness.rundir.clients import ClientFiles, ClientLog


def consumer_links(clients: ClientFiles, process: Any, debug: str | None) -> str:
    """What follows a stuck consumer's finding: its client log (and why it was first written) and
    its stacks, or a sentence saying why there is none. `debug`: test.json's clients.debug."""
    entry = clients.logs.get(process) if type(process) is int else None
    if entry is not None and entry.log is not None:
        why = f" (why: {esc(entry.reasons[0])})" if entry.reasons else " (why: not known, the section below says)"
        return (f' &mdash; <span class="client-files">client log {_log_link(entry)}{why}'
                f"{_stacks_links(entry, ', native stacks ')}</span>")
    if type(process) is not int:
        said = "no client log (the finding's process is not a number)"
    elif debug == "":
        said = "no client log (clients.debug was off)"
    elif debug is None:
        said = "no client log (test.json does not record clients.debug: a run from before client logs)"
    else:
        said = ("no client log (clients.debug was on; the workload did not find this consumer stuck, "
                "crashed or unclosed while it ran)")
    return f' &mdash; <span class="client-files muted">{said}{_stacks_links(entry, "; native stacks ")}</span>'


def clients_section(clients: ClientFiles, stuck: set[int]) -> str:
    """The "Client logs" section; "" when clients/ holds nothing. `stuck`: the processes with a
    stuck-consumer finding."""
    if not clients:
        return ""
    rows = []
    for process, entry in clients.logs.items():
        tag = ' <span class="tag bad">stuck-consumer finding</span>' if process in stuck else ""
        if entry.log is None:
            why = '<span class="muted">no log beside these stacks</span>'
        elif entry.reasons:
            why = "<ul>" + "".join(f"<li>{esc(reason)}</li>" for reason in entry.reasons) + "</ul>"
        else:
            why = f'<span class="muted">not known: {esc(entry.unreadable or "no header line")}</span>'
        files = [_log_link(entry)] if entry.log is not None else []
        files += [f'<a class="client-stacks" href="{href(p)}">{esc(p)}</a>' for p in entry.stacks]
        rows.append(f'<tr class="client" data-process="{process}"><td class="num">{process}{tag}</td>'
                    f'<td class="client-why">{why}</td><td>{"<br>".join(files)}</td></tr>')
    parts = ['<h2 id="clients-section">Client logs</h2><p class="muted">A consumer\'s own log &mdash; '
             "librdkafka's debug lines (the contexts of <code>clients.debug</code>) and the workload's notes of "
             "what each poll returned &mdash; is kept in a ring and written to <code>clients/</code> only when "
             "that consumer was stuck, crashed or did not close in time; why is its header line. The native "
             "stacks of every thread of the harness (gdb) lie beside it, taken when it first became stuck and "
             "when its close was given up on.</p>"]
    if rows:
        parts.append('<table id="client-logs"><tr><th class="num">process</th><th>why it was written</th>'
                     f'<th>files</th></tr>{"".join(rows)}</table>')
    if clients.problem:
        parts.append(f'<p class="muted">{esc(clients.problem)}</p>')
    if clients.unlinked:
        items = "".join(f"<li>{esc(line)}</li>" for line in clients.unlinked)
        parts.append(f'<p class="muted">Not linked:</p><ul id="clients-unlinked" class="muted">{items}</ul>')
    return "".join(parts)


def _log_link(entry: ClientLog) -> str:
    assert entry.log is not None  # linked only where the client wrote its log
    return f'<a class="client-log" href="{href(entry.log)}">{esc(entry.log)}</a>'


def _stacks_links(entry: ClientLog | None, lead: str) -> str:
    if entry is None or not entry.stacks:
        return ""
    return lead + ", ".join(f'<a class="client-stacks" href="{href(p)}">{esc(p.rsplit("/", 1)[-1])}</a>'
                            for p in entry.stacks)
