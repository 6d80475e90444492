"""The one place that builds the Jinja environment.

StrictUndefined (a missing view-model field is an error, not an empty string), fixed
whitespace rules, and escaping filters for every target language. Templates see view
models built from the Plan, never raw dicts from the spec.

Markdown templates (`*.md.j2`) are rendered by a second environment of the same rules whose
`finalize` escapes every interpolated string (md_text) unless a filter already made it Markdown
(an `Md`: md_text, md_cell, md_code, or md_raw for text a view writes as Markdown on purpose).
A name, status or title read from a plan file can then never start a heading, break a table,
open an HTML tag or comment, make a link, or put a control or bidirectional character in the
file, whatever field it is in: no template has to remember a filter for it to be escaped.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import lru_cache

import jinja2

from compiler.diagnostics import UNPRINTABLE
from compiler.resources import templates_dir


def hcl_string(value: object) -> str:
    """A double-quoted HCL string literal; escapes quotes, backslashes and interpolation."""
    text = str(value)
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    text = text.replace("${", "$${").replace("%{", "%%{")
    return f'"{text}"'


def shell_quote(value: object) -> str:
    """One shell word, quoted only when it has to be."""
    return shlex.quote(str(value))


def yaml_scalar(value: object) -> str:
    """A YAML scalar that reads back as exactly this value (JSON is valid YAML 1.2 flow)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


_DNS_LABEL = re.compile(r"[^a-z0-9-]+")


def k8s_name(value: object) -> str:
    """An RFC 1123 label: lowercase alphanumerics and '-', at most 63 characters."""
    text = _DNS_LABEL.sub("-", str(value).lower()).strip("-")
    return text[:63].rstrip("-") or "x"


def tf_identifier(value: object) -> str:
    """A Terraform block label: letters, digits, '_' and '-', starting with a letter."""
    text = re.sub(r"[^A-Za-z0-9_-]", "_", str(value))
    return text if text[:1].isalpha() else f"r_{text}"


def money(value: object, signed: bool = False) -> str:
    """USD for people: '$1,234,567', '$0.42' below ten dollars; '+$1,200' / '-$300' when signed,
    and no sign on an amount that shows as zero (a '+$0' would claim a direction it does not have)."""
    amount = float(value)  # type: ignore[arg-type]
    digits = 2 if 0 < abs(amount) < 10 else 0
    text = f"${abs(amount):,.{digits}f}"
    if round(abs(amount), digits) == 0:
        return text
    if amount < 0:
        return f"-{text}"
    return f"+{text}" if signed else text


def percent(value: object, digits: int = 1, signed: bool = False) -> str:
    """A ratio as a percentage: 0.4123 -> '41.2%'; like money, no sign on what shows as zero."""
    pct = float(value) * 100  # type: ignore[arg-type]
    if round(pct, digits) == 0:
        return f"{0:.{digits}f}%"
    return f"{pct:{'+' if signed else ''}.{digits}f}%"


class Md(str):
    """Text that is Markdown already (escaped, or written as Markdown by the compiler itself):
    the Markdown environment's finalize passes it through as it is."""

    __slots__ = ()


def _shown(match: re.Match) -> str:
    """A control or bidirectional character as its escape, as diagnostics.printable shows it."""
    return match.group(0).encode("unicode_escape").decode("ascii")


# What the text of a Markdown line can make markup of, each escaped only where it can (normal
# text, "<0.1%" or a host range "node[01-08]", is left as it is):
_MD_INLINE = re.compile(
    r"\\(?=[!-/:-@\[-`{-~]|$)"        # a backslash that would escape what follows (or the template's next)
    r"|\|"                             # a table's cell boundary (in GitHub's tables even in a code span)
    r"|`"                              # a code span
    r"|<(?![\s\d=]|$)|<(?=.*>)"        # HTML: a tag, comment, declaration or autolink ('<' then '>')
    r"|&(?=#?\w+;)"                    # an entity or character reference (&#8238; is U+202E)
    r"|(?<=!)\["                       # an image
    r"|\](?=[(\[])",                   # a link: ']' then '(' or '['
    re.S)
_MD_ESCAPE = {"<": "&lt;", "&": "&amp;"}
# Line breaks and tabs: a space (the line, the row, the heading goes on).
_MD_BREAK = re.compile("\r\n|[\r\n\t\u2028\u2029]")
# What makes a block of a line's start: a heading ('#'), a quote ('>'), a link reference
# definition or footnote ('[').
_MD_LEADING = re.compile(r"^(\s*)([#>\[])")


def md_text(value: object) -> Md:
    """Any text as inert Markdown on one line, whatever it holds: each control, line-breaking
    or bidirectional character (diagnostics.UNPRINTABLE, the rule for terminals) shown as its
    escape (\\x1b, \\u202e), a line break or tab as a space, and what would make markup escaped: a pipe,
    a backtick, a '<' that could open a tag, comment or autolink, an entity, link brackets, a
    leading '#' or '>' (and a backslash before any of them). The text then reads as it is
    stored and leaves the line, the table row or the heading it is in as the template wrote
    them. Text without such characters is returned unchanged."""
    if isinstance(value, Md):
        return value
    text = UNPRINTABLE.sub(_shown, _MD_BREAK.sub(" ", str(value)))
    text = _MD_INLINE.sub(lambda m: _MD_ESCAPE.get(m.group(0), "\\" + m.group(0)), text)
    return Md(_MD_LEADING.sub(r"\1\\\2", text))


def md_cell(value: object) -> Md:
    """Text safe inside a Markdown table cell: no pipe or newline can break the row (md_text)."""
    return md_text(value)


def md_code(value: object) -> Md:
    """The text of a code span (the template writes the backticks): no backtick to close it
    early, no pipe to split a table cell, no control or bidirectional character; '<' and the
    brackets stay as they are, since a code span shows them literally."""
    if isinstance(value, Md):
        return value
    text = _MD_BREAK.sub(" ", str(value)).replace("`", "'").replace("|", "\\|")
    return Md(UNPRINTABLE.sub(_shown, text))


def md_raw(value: object) -> Md:
    """Markdown the compiler wrote on purpose (a view's bold or code span around escaped
    names, a macro's table): passed through as it is. Never for text read from outside."""
    return Md(value)


def _md_finalize(value: object) -> object:
    """Every `{{ ... }}` of a Markdown template: a string is escaped unless it is Md already;
    numbers, booleans and None print as they are (nothing in them is markup)."""
    if isinstance(value, str):
        return md_text(value)
    if isinstance(value, jinja2.runtime.Undefined):
        return value
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    return md_text(value)


_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_field(value: object) -> str:
    """One RFC 4180 CSV field; text that a spreadsheet would run as a formula is defused."""
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, float):
        text = f"{value:.2f}"
    else:
        text = str(value)
    if not isinstance(value, (int, float)) and text.startswith(_CSV_FORMULA):
        text = "'" + text
    if any(c in text for c in ',"\r\n'):
        text = '"' + text.replace('"', '""') + '"'
    return text


FILTERS = {
    "csv": csv_field,
    "money": money,
    "percent": percent,
    "md_cell": md_cell,
    "md": md_text,
    "md_code": md_code,
    "md_raw": md_raw,
    "hcl": hcl_string,
    "sh": shell_quote,
    "yaml": yaml_scalar,
    "k8s_name": k8s_name,
    "tf_id": tf_identifier,
}


@lru_cache(maxsize=None)
def environment(markdown: bool = False) -> jinja2.Environment:
    """THE Jinja environment; `markdown`: the same, with every interpolated string escaped as
    Markdown (md_text) unless it is Md already."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
        finalize=_md_finalize if markdown else None,
    )
    env.filters.update(FILTERS)
    return env


def is_markdown(name: str) -> bool:
    """A template whose output is Markdown (RUNBOOK.md, report.md, the diff's comment)."""
    return name.endswith(".md.j2")


def render_template(name: str, **view: object) -> str:
    """Render templates/<name> with a view model (a Markdown template escapes every field)."""
    return environment(is_markdown(name)).get_template(name).render(**view)
