"""The report page, `RUN_DIR/report.html`, rendered from what the other report
modules computed, in the order a reader needs it: the verdict (coloured) and why;
the anomalies — each with its one-line definition, its examples in plain words, their
ops linked into the history viewer and each value or offset to its trace page — and
the linearizability counterexamples; the plots (embedded as data: URIs, so the file
renders on its own), each with how to read it; the faults the plots shade (a folded
table); then the run (settings, operations, history) and its configuration; links to
the run's files and node logs (relative); each stuck consumer's client log and stacks, and a
section listing every client log (client_links.py). Every term is defined on the page itself:
a downloaded report has no docs beside it.
"""
from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from fencepost.checkers.anomaly import DEFINITIONS
from fencepost.harness.check.premise import describe as describe_premise
from fencepost.harness.measures.bands import Band
from fencepost.harness.measures.lag import RealtimeLag
from fencepost.harness.report.client_links import clients_section, consumer_links
from fencepost.harness.report.history_viewer import HISTORY_PAGE
from fencepost.harness.report.inputs import RunInputs, example_targets, node_files, run_files, setting
from fencepost.harness.report.page import IMAGE_CHECK_SCRIPT, esc, href, page, verdict_badge
from fencepost.harness.report.plots import PlotFile
from fencepost.harness.report.scan import NO_TIME, ScannedHistory
from fencepost.harness.report.timeline_page import TIMELINE_PAGE
from fencepost.harness.report.trace import Target
from fencepost.harness.rundir.clients import ClientFiles, debug_was
from fencepost.harness.rundir.record import one_line, op_indices, verdict_word
from fencepost.harness.rundir.run_dirs import format_time, run_started

EXAMPLES_SHOWN = 3  # per anomaly in the table; the others fold away
EXAMPLE_CHARS = 400
FAULTS_LISTED = 300  # rows of the fault table; the plots show them all


def render_report(inputs: RunInputs, scan: ScannedHistory, bands: list[Band],
                  plots: list[PlotFile], lag: RealtimeLag | None = None,
                  traces: dict[Target, str] | None = None) -> str:
    """The page; `traces`: the trace page of each value and offset the examples name
    (relative paths)."""
    results = inputs.results or {}
    name = setting(inputs.test, "name") or inputs.run_dir.parent.name
    sections = [
        _header(name, inputs, results),
        _anomalies(results, traces or {}),
        _linearizability(results),
        _liveness(results, inputs.clients, debug_was(inputs.test)),
        clients_section(inputs.clients, _stuck_processes(results)),
        _plots(plots),
        _faults(bands),
        _summary(name, inputs, scan, bands, results, lag),
        _config(inputs.test),
        _files(inputs.run_dir),
    ]
    return page(f"{name} {inputs.run_dir.name}: {verdict_word(results.get('valid'))}",
                "\n".join(s for s in sections if s), script=IMAGE_CHECK_SCRIPT)


def _header(name: str, inputs: RunInputs, results: dict[str, Any]) -> str:
    valid = results.get("valid") if inputs.results is not None else None
    parts = [f"<h1>{esc(name)} <span class=\"muted\">{esc(inputs.run_dir.name)}</span></h1>",
             f'<p id="verdict">verdict: {verdict_badge(valid)} <span class="muted">&mdash; '
             f'{esc(_VERDICT_MEANS[verdict_word(valid)])}</span></p>',
             '<p class="muted">Contents: <a href="#anomalies-section">anomalies</a> &middot; '
             '<a href="#liveness-section">liveness</a> &middot; '
             + ('<a href="#clients-section">client logs</a> &middot; ' if inputs.clients else '') +
             f'<a href="#plots-section">plots</a> &middot; <a href="#faults-section">faults</a> &middot; '
             f'<a href="#run-section">the run</a> &middot; <a href="#config-section">configuration</a> &middot; '
             f'<a href="#files-section">files</a> &middot; <a href="{HISTORY_PAGE}">history viewer</a> &middot; '
             f'<a href="{TIMELINE_PAGE}">timeline</a></p>']
    unmet = describe_premise(results.get("premise") or {})
    if unmet:
        items = "".join(f"<li>{esc(line)}</li>" for line in unmet)
        parts.append(f'<p id="premise" data-premise="{esc(str((results.get("premise") or {}).get("verdict")))}">'
                     f'<span class="verdict unknown">PREMISE NOT MET</span> <span class="muted">&mdash; a '
                     f'scenario did not set up what it exists to test, so the verdict above says nothing about '
                     f'it:</span></p><ul id="premise-findings">{items}</ul>')
    reasons = [str(r) for r in results.get("reasons") or []]
    if inputs.results is None:
        reasons.insert(0, "the run was not checked (no results.json)")
    if reasons:
        items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
        parts.append(f'<p>{"Why unknown" if verdict_word(valid) == "unknown" else "Also"}:</p>'
                     f'<ul id="reasons">{items}</ul>')
    if inputs.notes:
        parts.append('<ul class="muted">' + "".join(f"<li>{esc(n)}</li>" for n in inputs.notes)
                     + "</ul>")
    return "\n".join(parts)


_VERDICT_MEANS = {
    "valid": "no anomaly that makes a run invalid was found, and everything could be judged",
    "invalid": "an anomaly that makes a run invalid was found (below)",
    "unknown": "the run could not be judged in full (why: below); anomalies found are listed all the same",
}


def _summary(name: str, inputs: RunInputs, scan: ScannedHistory, bands: list[Band],
             results: dict[str, Any], lag: RealtimeLag | None) -> str:
    test = inputs.test
    rows: list[tuple[str, str]] = [("test", esc(name)), ("run", esc(inputs.run_dir.name))]
    started = run_started(inputs.run_dir.name)
    if started is not None:
        rows.append(("started", esc(format_time(started))))
    for label, paths, unit in (("system", ("system",), ""), ("backend", ("backend",), ""),
                               ("nodes", ("nodes",), ""), ("truncation", ("truncation",), ""),
                               ("flush", ("flush",), ""), ("time limit", ("time_limit",), " s"),
                               ("rate", ("rate",), " ops/s"), ("seed", ("seed",), "")):
        value = setting(test, *paths)
        if value == "":  # the spec's "let fencepost choose" (docs/RUN.md)
            rows.append((label, "(default)"))
        elif value is not None:
            rows.append((label, esc(f"{value}{unit}")))
    if test.get("protocol"):
        rows.append(("protocol", esc(test["protocol"])))
    if isinstance(test.get("versions"), dict):
        rows.append(("versions", esc(", ".join(f"{k} {v}" for k, v in test["versions"].items() if v is not None))))
    rows.append(("nemesis", esc(_nemesis_setting(test))))
    topic = _topic_setting(test)
    if topic:
        rows.append(("topic", esc(topic)))
    counts = scan.type_counts()
    never = int((scan.complete == NO_TIME).sum()) if scan.ops else 0
    rows.append(("operations", f'<span id="op-counts">{scan.ops:,} client ops: '
                               f'<b>{counts["ok"]:,}</b> ok, <b>{counts["fail"]:,}</b> fail, '
                               f'<b>{counts["info"]:,}</b> info</span>'
                               + (f" ({never:,} never completed)" if never else "")))
    rows.append(("by kind", _by_f_table(scan)))
    kinds = Counter(b.kind for b in bands)
    nemesis_text = f"{len(scan.nemesis):,} nemesis ops"
    if kinds:
        nemesis_text += ": " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    rows.append(("nemesis activity", esc(nemesis_text)))
    history = f"{scan.lines:,} lines"
    if scan.unreadable:
        history += f" ({scan.unreadable:,} could not be read)"
    rows.append(("history", esc(history) + f' &mdash; <a href="{HISTORY_PAGE}">the history viewer</a> '
                            f'(every line: filters, search, invoke and completion together), '
                            f'<a href="{TIMELINE_PAGE}">the timeline</a> (a lane per process, to hover)'))
    if lag is not None and lag.series:
        worst = max(lag.series.values(), key=lambda s: s.worst()[0])
        amount, when = worst.worst()
        rows.append(("realtime lag", esc(f"worst {amount / 1e9:.3f} s: process {worst.process}'s poll at "
                                         f"{when / 1e9:.3f} s (the plot: per consumer, over time)")))
    checked = results.get("checked")
    if isinstance(checked, dict):
        rows.append(("checked", esc(f"{checked.get('ops', '?')} ops in {checked.get('partitions', '?')} "
                                    f"partition(s) in {checked.get('seconds', '?')} s")))
        totals = (results.get("stats") or {}).get("totals")
        if isinstance(totals, dict) and totals:
            rows.append(("check stats", esc(", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                                      for k, v in totals.items()))))
    errors, warnings = results.get("errors") or [], results.get("warnings") or []
    if errors or warnings:
        shown = "".join(f"<li>{esc(line)}</li>" for line in list(errors)[:5])
        rows.append(("input problems", f"{len(errors)} error(s), {len(warnings)} warning(s) "
                                       f"(results.json lists them)<ul>{shown}</ul>"))
    body = "".join(f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows)
    return f'<h2 id="run-section">The run</h2><table id="summary">{body}</table>'


def _nemesis_setting(test: dict[str, Any]) -> str:
    nemesis = test.get("nemesis")
    if isinstance(nemesis, str):
        return nemesis or "none"
    if not isinstance(nemesis, dict):
        return "not given in test.json"
    faults = str(nemesis.get("faults", "")).strip()
    if faults in ("", "none"):
        return "none"
    text = faults
    if nemesis.get("schedule"):
        text += f"; schedule {nemesis['schedule']}"
        if nemesis.get("schedule") != "scripted" and nemesis.get("interval") is not None:
            text += f", every {nemesis['interval']} s"
    return text


def _topic_setting(test: dict[str, Any]) -> str:
    topic = test.get("topic")
    if isinstance(topic, dict):
        name, partitions = topic.get("name"), topic.get("partitions")
        rf, min_isr = topic.get("replication_factor"), topic.get("min_insync_replicas")
    else:
        name, partitions = topic, test.get("partitions")
        rf, min_isr = test.get("replication_factor"), test.get("min_insync_replicas")
    if name is None:
        return ""
    parts = [str(name)]
    if partitions is not None:
        parts.append(f"{partitions} partition(s)")
    if rf is not None:
        parts.append(f"replication factor {rf}")
    if min_isr is not None:
        parts.append(f"min.insync.replicas {min_isr}")
    return ", ".join(parts)


def _by_f_table(scan: ScannedHistory) -> str:
    if not scan.ops:
        return '<span class="muted">none</span>'
    rows = []
    for code, f in enumerate(scan.fs):
        mine = scan.type[scan.f == code]
        counts = [int((mine == t).sum()) for t in range(3)]
        rows.append(f"<tr><td>{esc(f)}</td>" + "".join(f'<td class="num">{n:,}</td>' for n in counts)
                    + "</tr>")
    return ('<table id="by-f"><tr><th>f</th><th class="num">ok</th><th class="num">fail</th>'
            f'<th class="num">info</th></tr>{"".join(rows)}</table>')


def _anomalies(results: dict[str, Any], traces: dict[Target, str]) -> str:
    counts = results.get("anomaly_counts")
    head = '<h2 id="anomalies-section">Anomalies</h2>'
    if not isinstance(counts, dict):
        return head + '<p class="muted">Not checked: no anomalies to show.</p>'
    if not counts:
        return head + '<p id="no-anomalies">No anomalies found.</p>'
    invalid = {name for name in _list(results.get("invalid_anomalies")) if isinstance(name, str)}
    given = results.get("anomalies")
    examples: dict[str, Any] = given if isinstance(given, dict) else {}
    order = sorted(counts, key=lambda name: (name not in invalid, name))
    rows = []
    for name in order:
        items = [e for e in _list(examples.get(name)) if isinstance(e, dict)]
        shown = "".join(f"<div class=\"example\">{_example(e, traces)}</div>" for e in items[:EXAMPLES_SHOWN])
        if len(items) > EXAMPLES_SHOWN:
            rest = "".join(f"<div class=\"example\">{_example(e, traces)}</div>" for e in items[EXAMPLES_SHOWN:])
            shown += f"<details><summary>{len(items) - EXAMPLES_SHOWN} more example(s)</summary>{rest}</details>"
        tag = ('<span class="tag bad">makes the run invalid</span>' if name in invalid
               else '<span class="tag">informational</span>')
        meaning = DEFINITIONS.get(name, "")
        rows.append(f'<tr class="anomaly" data-anomaly="{esc(name)}"><td><b>{esc(name)}</b><br>{tag}'
                    f'<div class="definition">{esc(meaning)}</div></td>'
                    f'<td class="num count">{_count(counts[name])}</td><td>{shown}</td></tr>')
    return (head + '<table id="anomalies"><thead><tr><th>anomaly: what it means</th>'
            '<th class="num">count</th><th>examples: ops link to their lines in the history viewer; '
            '<i>trace</i> follows a value or an offset through the whole run</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
            '<p class="muted">An op is an invoke and its completion, shown as their two history lines '
            '(<i>a</i>&ndash;<i>b</i>). A poll "returned" a record when the consumer got it; the final read '
            'is a fresh consumer reading every partition to its end after the run healed; a replica\'s high '
            'watermark is the offset below which its records are committed. results.json holds up to 20 '
            'examples of each anomaly.</p>')


def _count(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else esc(n)


def _example(example: dict[str, Any], traces: dict[Target, str]) -> str:
    text = one_line(example, EXAMPLE_CHARS)
    links = _op_links(example.get("ops"))
    traced = [f'<a class="trace" href="{href(traces[target])}">{esc(_trace_label(target))}</a>'
              for target in example_targets(example) if target in traces]
    return (f'<span class="mono">{esc(text)}</span>' + (f"<br>ops: {links}" if links else "")
            + (f"<br>trace: {', '.join(traced)}" if traced else ""))


def _trace_label(target: Target) -> str:
    if target.value is not None:
        return f"value {target.value}"
    return f"offset {target.topic}-{target.partition}/{target.offset}"


def _op_links(ops: Any) -> str:
    """The ops of an example as links: an [invoke, completion] pair as `4–5`."""
    if not isinstance(ops, list):
        return ""
    parts = []
    for op in ops:
        indices = op_indices(op)
        if indices:
            parts.append("&ndash;".join(f'<a class="op" href="{HISTORY_PAGE}#i{i}">{i}</a>'
                                        for i in indices))
    return ", ".join(parts)


def _linearizability(results: dict[str, Any]) -> str:
    linear = results.get("linearizability")
    if not isinstance(linear, dict):
        return ""
    failing = [(name, item) for name, item in sorted(linear.items())
               if isinstance(item, dict) and item.get("linearizable") is False]
    if not failing:
        return ""
    rows = []
    for name, item in failing:
        file = item.get("counterexample_file")
        link = f'<a href="{href(file)}">counterexample</a>' if isinstance(file, str) else "no page written"
        rows.append(f"<tr><td>{esc(name)}</td><td>{esc(item.get('method', ''))}</td><td>{link}</td></tr>")
    return ("<h2>Not linearizable</h2><p class=\"muted\">No single log, in real-time order, explains "
            "every ack, poll and the final read of these partitions. Each page shows a smallest set of "
            "operations that cannot be put in such an order, why, and links to their lines.</p>"
            "<table><tr><th>partition</th><th>method</th><th></th></tr>"
            f"{''.join(rows)}</table>")


_LIVENESS_KINDS = {
    "fatal-marker": "a node's log says the system gave up on a partition or on itself",
    "unavailable": "a partition acknowledged no write for longer than the threshold, with no fault to explain it",
    "no-recovery": "after the final heal, writes to a partition were sent and none was acknowledged",
    "stuck-consumer": "a consumer's realtime lag at its last poll, after the final heal, above the threshold",
}


def _liveness(results: dict[str, Any], clients: ClientFiles, debug: str | None) -> str:
    """The liveness verdict (beside safety, never part of the verdict above) and its findings, each
    stuck consumer with its client log (`debug`: test.json's clients.debug). results.json may come
    from anywhere: every value is escaped, a number shown only if it is one."""
    section = results.get("liveness")
    head = '<h2 id="liveness-section">Liveness</h2>'
    if not isinstance(section, dict):
        return head + '<p class="muted">Not judged (no liveness section in results.json).</p>'
    verdict = section.get("verdict") or ("failed" if section.get("findings") else "ok")
    th = _dict(section.get("thresholds"))
    colour = {"ok": "valid", "failed": "invalid"}.get(verdict, "unknown") if isinstance(verdict, str) else "unknown"
    parts = [head, f'<p id="liveness-verdict">liveness: <span class="verdict {colour}" '
                   f'data-liveness="{esc(verdict)}">{esc(str(verdict).upper())}'
                   f'</span> <span class="muted">&mdash; whether the cluster went on working: a verdict of its '
                   f'own, beside safety, never part of the verdict above</span></p>']
    kinds = _dict(section.get("kinds"))
    rows = "".join(f"<tr><td>{esc(kind)}</td><td>{esc(why)}</td><td>{_count(kinds.get(kind, 0))}</td></tr>"
                   for kind, why in _LIVENESS_KINDS.items())
    parts.append(f'<table id="liveness-kinds"><tr><th>finding</th><th>meaning</th><th>count</th></tr>{rows}</table>')
    if th:
        parts.append(f'<p class="muted">Thresholds: no ack for {_g(th.get("unavailable_s", "?"))} s outside every '
                     f'fault band and the {_g(th.get("grace_s", "?"))} s after it; a lag above '
                     f'{_g(th.get("stuck_lag_s", "?"))} s.</p>')
    items = [f"<li>{esc(m.get('node', ''))}: <code>{esc(m.get('line', ''))}</code></li>"
             for m in _list(section.get("fatal_markers")) if isinstance(m, dict)]
    items += [f"<li>{esc(w.get('partition'))}: no write acknowledged from {_g(w.get('from_s'))} s to "
              f"{_g(w.get('to_s'))} s; from {_g(_at(w.get('unexplained'), 0))} s to "
              f"{_g(_at(w.get('unexplained'), 1))} s no fault explains it</li>"
              for w in _list(section.get("unavailable")) if isinstance(w, dict)]
    recovery = _dict(section.get("recovery"))
    items += [f"<li>{esc(key)}: no write acknowledged after the final heal</li>"
              for key, seconds in _dict(recovery.get("partitions")).items() if seconds is None]
    items += [f"<li>consumer {esc(str(c.get('process')))}: {_g(c.get('lag_s'))} s behind at its last poll "
              f"({_g(c.get('last_poll_s'))} s; worst {_g(c.get('worst_lag_s'))} s)"
              f"{consumer_links(clients, c.get('process'), debug)}</li>"
              for c in _list(section.get("stuck_consumers")) if isinstance(c, dict)]
    if items:
        parts.append(f'<ul id="liveness-findings">{"".join(items)}</ul>')
    done = {k: v for k, v in _dict(recovery.get("partitions")).items() if v is not None}
    if done:
        shown = ", ".join(f"{esc(k)} {_g(v)} s" for k, v in done.items())
        parts.append(f'<p class="muted">Recovery: from the final heal ({_g(recovery.get("healed_at_s", 0))} s) to '
                     f'the first acknowledged write: {shown}.</p>')
    return "".join(parts)


def _stuck_processes(results: dict[str, Any]) -> set[int]:
    stuck = _dict(results.get("liveness")).get("stuck_consumers")
    return {c["process"] for c in _list(stuck) if isinstance(c, dict) and type(c.get("process")) is int}


def _g(value: Any) -> str:
    """A number as `:g` shows it; anything else escaped as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}"
    return esc(value)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _at(value: Any, i: int) -> Any:
    return value[i] if isinstance(value, list) and len(value) > i else "?"


def _plots(plots: list[PlotFile]) -> str:
    figures = []
    for plot in plots:
        data = base64.b64encode(plot.path.read_bytes()).decode("ascii")
        relative = f"plots/{plot.path.name}"
        read = f"<br><i>Reading it:</i> {esc(plot.read)}" if plot.read else ""
        figures.append(f'<figure id="plot-{esc(plot.name)}"><img src="data:image/png;base64,{data}" '
                       f'alt="{esc(plot.title)}"><figcaption><b>{esc(plot.title)}</b>: '
                       f'{esc(plot.caption)} (<a href="{href(relative)}">{esc(relative)}</a>){read}'
                       f"</figcaption></figure>")
    return ('<h2 id="plots-section">Plots</h2><p class="muted">Time on every x axis is seconds since the run '
            "started. Shaded: what the nemesis did, a band per fault from the moment it began injecting it "
            "to the moment its undoing ended, a colour per kind (the legend); scenarios as a strip along the "
            "top. The fault table below lists the bands.</p>" + "".join(figures))


def _faults(bands: list[Band]) -> str:
    """The nemesis bands the plots shade, as a table (folded: it can be long)."""
    if not bands:
        return '<h2 id="faults-section">Faults</h2><p class="muted">No nemesis activity in the history.</p>'
    rows = []
    for band in bands[:FAULTS_LISTED]:
        what = band.label + (f" (in {band.scenario})" if band.scenario and band.kind != "scenario" else "")
        rows.append(f'<tr><td class="num">{band.start / 1e9:.3f}</td><td class="num">{band.end / 1e9:.3f}</td>'
                    f'<td class="num">{(band.end - band.start) / 1e9:.3f}</td><td>{esc(band.kind)}</td>'
                    f"<td>{esc(what)}</td></tr>")
    more = (f'<p class="muted">... and {len(bands) - FAULTS_LISTED:,} more (the history has them all).</p>'
            if len(bands) > FAULTS_LISTED else "")
    return (f'<h2 id="faults-section">Faults</h2><details id="faults"><summary>{len(bands):,} fault band(s), '
            f'as the plots shade them</summary><table><tr><th class="num">from (s)</th><th class="num">to (s)</th>'
            f'<th class="num">lasting (s)</th><th>kind</th><th>what</th></tr>{"".join(rows)}</table>'
            f"{more}</details>")


def _config(test: dict[str, Any]) -> str:
    if not test:
        return '<h2 id="config-section">Configuration</h2><p class="muted">No test.json.</p>'
    text = orjson.dumps(test, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    return (f'<h2 id="config-section">Configuration</h2><p class="muted">test.json: the test as it was run</p>'
            f'<pre id="config">{esc(text)}</pre>')


def _files(run_dir: Path) -> str:
    items = [f'<li><a href="{HISTORY_PAGE}">{HISTORY_PAGE}</a> (the history viewer)</li>',
             f'<li><a href="{TIMELINE_PAGE}">{TIMELINE_PAGE}</a> (the timeline)</li>']
    items += [f'<li><a href="{href(name)}">{esc(name)}</a></li>' for name in run_files(run_dir)]
    nodes = node_files(run_dir)
    node_items = "".join(f'<li><a class="node-log" href="{href(name)}">{esc(name)}</a></li>'
                         for name in nodes)
    logs = (f"<h3>Node logs</h3><ul id=\"node-logs\">{node_items}</ul>" if nodes
            else '<p class="muted">No node logs (nodes/) in this run directory.</p>')
    return f'<h2 id="files-section">Files</h2><ul id="files">{"".join(items)}</ul>{logs}'
