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


FILTERS = {
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
