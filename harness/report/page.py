"""What the HTML pages of fencepost share (the report, the history viewer, the run
list of `fencepost serve`): the page frame with its inline style sheet (pages are
self-contained: no external CSS, JS or fonts), escaping, data embedded in a script
element (`script_json`), relative links, and the verdict's words and colours.
"""
from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

import orjson

from fencepost.harness.rundir.record import verdict_word

VERDICT_COLOURS = {"valid": "#2E7D32", "invalid": "#C62828", "unknown": "#E65100"}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 1.5em 2em; color: #1d1d1d; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
pre, code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
                   font-size: 0.88em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; border: 1px solid #e4e4e4; }
a { color: #1558b0; }
.verdict { display: inline-block; padding: 0.25em 0.8em; border-radius: 0.3em; color: white;
           font-weight: bold; letter-spacing: 0.05em; }
.valid { background: #2E7D32; } .invalid { background: #C62828; } .unknown { background: #E65100; }
.muted { color: #666; }
.tag { font-size: 0.78em; padding: 0.05em 0.4em; border-radius: 0.3em; background: #eee; }
.tag.bad { background: #fde0e0; color: #8e1b1b; }
.definition { color: #555; font-size: 0.85em; max-width: 24em; margin-top: 0.3em; }
figure { margin: 1em 0 2em 0; }
figure img { max-width: 100%; border: 1px solid #e4e4e4; }
figcaption { color: #555; font-size: 0.9em; }
tr.row-valid td.verdict-cell { background: #e5f4e6; }
tr.row-invalid td.verdict-cell { background: #fbe3e3; }
tr.row-unknown td.verdict-cell { background: #fff0de; }
"""

# Marks each image once the page has loaded: data-loaded="yes" when it decoded
# (naturalWidth > 0), "no" when it did not; body gets data-images-checked.
IMAGE_CHECK_SCRIPT = """
window.addEventListener("load", function () {
  for (var i = 0; i < document.images.length; i++) {
    var img = document.images[i];
    img.setAttribute("data-loaded", img.complete && img.naturalWidth > 0 ? "yes" : "no");
  }
  document.body.setAttribute("data-images-checked", "yes");
});
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


# In a script element's text the HTML parser acts on `</script` (the end), and on `<!--`
# followed by `<script` (after which it skips the next `</script>`): with `<`, `>` and `&`
# written as JSON escapes neither can occur. U+2028/2029 too, for older JavaScript parsers.
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                   0x2028: "\\u2028", 0x2029: "\\u2029"}


def script_json(value: Any) -> str:
    """`value` as JSON text to put between `<script type="application/json" id=...>` and
    `</script>`: whatever strings it holds, it cannot end or change the script element, and
    JSON.parse of the element's text gives `value` back. Every page that embeds data uses it."""
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return text.translate(_SCRIPT_ESCAPES)


def json_script(element_id: str, value: Any) -> str:
    """The whole element: `<script type="application/json" id="ELEMENT_ID">` and `script_json`."""
    return f'<script type="application/json" id="{esc(element_id)}">{script_json(value)}</script>'


def href(relative_path: str) -> str:
    """A relative link to a file of the run directory, percent-encoded, escaped; never to another
    host or a scheme (`//host/x` and `/x` become `./x` forms, a colon is percent-encoded)."""
    link = quote(relative_path)
    return esc("./" + link.lstrip("/") if link.startswith("/") else link)


def verdict_badge(valid: Any) -> str:
    word = verdict_word(valid)
    return f'<span class="verdict {word}" data-verdict="{word}">{word.upper()}</span>'


def page(title: str, body: str, extra_style: str = "", script: str = "") -> str:
    """A whole HTML document: everything inline."""
    script_tag = f"<script>{script}</script>" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}{extra_style}</style>{script_tag}</head>"
            f"<body>\n{body}\n</body></html>\n")
