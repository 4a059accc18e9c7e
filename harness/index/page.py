"""results/index.html: every run and campaign of a results folder on one static page,
refreshed after every `fencepost run` and after every run of a campaign.

Rules:
- Self-contained: the runs are data inside the page, the filtering is a script inside it,
  every link is relative to the results folder. So the page works opened from disk, from a
  copied folder or a downloaded CI artifact, with no server (`fencepost serve` serves it too).
- Filters: system, release, truncation, faults, verdict and campaign (a choice each, from
  the values present), and words to search for in a run's path; the filters are kept in the
  page's address (`index.html#verdict=invalid&truncation=hw`), so a filtered view can be
  linked to.
- Written atomically (a reader sees the old page or the new one).
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from urllib.parse import quote

from fencepost.harness.errors import printable
from fencepost.harness.index.tree import CampaignInfo, RunInfo, scan
from fencepost.harness.report.page import esc, href, json_script, page, script_json
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.run_dirs import format_time

INDEX_FILE = "index.html"
FILTERS = ("system", "release", "truncation", "faults", "verdict", "campaign")

STYLE = """
#filters label { margin-right: 1em; white-space: nowrap; }
#filters select, #filters input { margin-left: 0.3em; }
tr.row-valid td.verdict-cell { background: #e5f4e6; }
tr.row-invalid td.verdict-cell { background: #fbe3e3; }
tr.row-unknown td.verdict-cell { background: #fff0de; }
.green { color: #2E7D32; font-weight: bold; } .red { color: #C62828; font-weight: bold; }
td.when { white-space: nowrap; }
"""

SCRIPT = r"""
document.addEventListener("DOMContentLoaded", function () {
  var data = JSON.parse(document.getElementById("index-data").textContent);
  var filters = %FILTERS%;
  var box = document.getElementById("filters");
  var selects = {};
  function campaignName(run) { return run.campaign || ""; }
  function value(run, key) {
    return key === "campaign" ? campaignName(run) : String(run[key] === null ? "" : run[key]);
  }
  filters.forEach(function (key) {
    var values = Array.from(new Set(data.runs.map(function (r) { return value(r, key); }))).sort();
    var label = document.createElement("label");
    label.textContent = key;
    var select = document.createElement("select");
    select.id = "filter-" + key;
    select.appendChild(new Option("all", ""));
    values.forEach(function (v) { select.appendChild(new Option(v === "" ? "(none)" : v, v === "" ? "\u0000" : v)); });
    label.appendChild(select);
    box.appendChild(label);
    selects[key] = select;
    select.addEventListener("change", update);
  });
  var words = document.getElementById("search");
  words.addEventListener("input", update);
  function fromHash() {
    var params = new URLSearchParams(location.hash.slice(1));
    filters.forEach(function (key) { if (params.has(key)) selects[key].value = params.get(key) || "\u0000"; });
    if (params.has("q")) words.value = params.get("q");
  }
  function toHash() {
    var params = new URLSearchParams();
    filters.forEach(function (key) {
      var v = selects[key].value;
      if (v) params.set(key, v === "\u0000" ? "" : v);
    });
    if (words.value) params.set("q", words.value);
    var text = params.toString();
    history.replaceState(null, "", text ? "#" + text : location.pathname);
  }
  var body = document.getElementById("runs-body");
  function update() {
    var shown = 0, text = words.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (row, i) {
      var run = data.runs[i];
      var ok = filters.every(function (key) {
        var want = selects[key].value;
        return !want || (want === "\u0000" ? value(run, key) === "" : value(run, key) === want);
      }) && (!text || run.relative.toLowerCase().indexOf(text) >= 0);
      row.hidden = !ok;
      if (ok) shown += 1;
    });
    document.getElementById("shown").textContent = shown + " of " + data.runs.length + " run(s) shown";
    document.body.setAttribute("data-shown", String(shown));
    toHash();
  }
  fromHash();
  update();
  window.addEventListener("hashchange", function () { fromHash(); update(); });
});
"""


def write_index(results: Path) -> Path:
    """Scan `results` and write RESULTS/index.html; its path."""
    runs, campaigns = scan(results)
    path = results / INDEX_FILE
    write_atomically(path, index_html(results, runs, campaigns))
    return path


def refresh_index(results: Path) -> Path | None:
    """write_index, for the end of a run or campaign: a failure is said on stderr, never raised
    (the run's own results stand without the index)."""
    import sys
    try:
        return write_index(results)
    except Exception as e:  # the index is a convenience; the run is what matters
        print(printable(f"fencepost: results index not refreshed: {type(e).__name__}: {e}"), file=sys.stderr)
        return None


def index_html(results: Path, runs: list[RunInfo], campaigns: list[CampaignInfo]) -> str:
    data = {"runs": [_row(r) for r in runs]}
    body = [f"<h1>fencepost results</h1><p class=\"muted\">{len(runs)} run(s) and {len(campaigns)} campaign(s) "
            f"in <code>{esc(results.resolve())}</code>, newest first. This page is a file: it works from a copied "
            f"folder or a downloaded artifact.</p>"]
    if campaigns:
        body.append(_campaigns(campaigns))
    body.append('<h2>Runs</h2><div id="filters"></div><p><label>search <input id="search" type="search" '
                'placeholder="words in the run\'s path"></label> <span id="shown" class="muted"></span></p>')
    body.append(_runs(runs))
    body.append(json_script("index-data", data))
    return page("fencepost results", "\n".join(body), STYLE, SCRIPT.replace("%FILTERS%", script_json(list(FILTERS))))


def _row(run: RunInfo) -> dict:
    data = asdict(run)
    data["campaign"] = run.campaign.split("/")[1] if run.campaign and run.campaign.count("/") >= 2 else run.campaign
    return {k: data[k] for k in ("relative", *FILTERS)}


def _campaigns(campaigns: list[CampaignInfo]) -> str:
    rows = []
    for c in campaigns:
        tally = ", ".join(f"{v} {n}" for v, n in sorted(c.verdicts.items())) or "no run finished"
        state = ('<span class="red">surprises: ' + str(c.surprises) + "</span>" if c.surprises
                 else '<span class="green">as expected</span>' if c.finished else "")
        link = (f'<a class="report" href="{href(c.relative + "/report.html")}">report</a>' if c.has_report
                else f'<a href="{href(c.relative + "/")}">files</a>')
        runs = f'<a href="#campaign={esc(quote(c.name))}">{esc(c.name)}</a>'
        rows.append(f'<tr class="campaign" data-campaign="{esc(c.relative)}"><td>{runs}</td>'
                    f"<td>{esc(format_time(c.started_at))}</td><td>{esc(c.shard or '')}</td>"
                    f'<td class="num">{c.finished}/{c.planned}</td><td>{esc(tally)}</td><td>{state}</td>'
                    f"<td>{link}</td></tr>")
    return ("<h2>Campaigns</h2><table id=\"campaigns\"><thead><tr><th>campaign</th><th>started</th><th>shard</th>"
            "<th class=\"num\">runs</th><th>verdicts</th><th>expectations</th><th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _runs(runs: list[RunInfo]) -> str:
    rows = []
    for r in runs:
        word = r.verdict.replace(" ", "-")
        link = (f'<a class="report" href="{href(r.relative + "/report.html")}">report</a>' if r.has_report
                else '<span class="muted">no report</span>')
        anomalies = ", ".join(f"{esc(k)} {n}" for k, n in sorted(r.anomaly_counts.items(), key=lambda kv: -kv[1])[:3])
        campaign = _row(r)["campaign"]
        where = f"{esc(campaign)}: {esc(r.run_id)}" if r.run_id else esc(r.test)
        rows.append(f'<tr class="run row-{esc(word)}" data-run="{esc(r.relative)}" data-verdict="{esc(r.verdict)}">'
                    f'<td class="verdict-cell">{esc(r.verdict)}</td>'
                    f'<td class="when">{esc(format_time(r.started_at))}</td>'
                    f"<td>{esc(r.system)}</td><td>{esc(r.release)}</td><td>{esc(r.truncation)}</td>"
                    f"<td>{esc(r.faults)}</td><td>{where}</td>"
                    f'<td><a class="files" href="{href(r.relative + "/")}">{esc(r.name)}</a></td>'
                    f"<td>{anomalies or ('none' if r.verdict != 'not checked' else '')}</td><td>{link}</td></tr>")
    return ("<table id=\"runs\"><thead><tr><th>verdict</th><th>started</th><th>system</th><th>release</th>"
            "<th>truncation</th><th>faults</th><th>test or campaign run</th><th>run</th><th>anomalies</th><th></th>"
            f"</tr></thead><tbody id=\"runs-body\">{''.join(rows)}</tbody></table>")
