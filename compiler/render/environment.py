"""The one place that builds the Jinja environment.

StrictUndefined (a missing view-model field is an error, not an empty string), fixed
whitespace rules, and escaping filters for every target language. Templates see view
models built from the Plan, never raw dicts from the spec.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import lru_cache

import jinja2

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


def md_cell(value: object) -> str:
    """Text safe inside a Markdown table cell: no pipe or newline can break the row."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return text.replace("\r", " ").replace("\n", " ")


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
    "hcl": hcl_string,
    "sh": shell_quote,
    "yaml": yaml_scalar,
    "k8s_name": k8s_name,
    "tf_id": tf_identifier,
}


@lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.filters.update(FILTERS)
    return env


def render_template(name: str, **view: object) -> str:
    """Render templates/<name> with a view model."""
    return environment().get_template(name).render(**view)
