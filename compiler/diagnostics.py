"""Diagnostics: errors for people.

Every stage that can reject input returns or raises a list of `Diagnostic`s, never
a bare exception. They are rendered like a compiler's messages:

    spec.yaml:14:13: error[E102] at $.workloads[0].tokens: must be > 0, got -5
       14 |     tokens: -5
          |             ^
       hint: ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

PathPart = str | int
Path = tuple[PathPart, ...]


def format_path(path: Sequence[PathPart]) -> str:
    """Render a path as JSONPath: ('workloads', 0, 'tokens') -> $.workloads[0].tokens."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "").replace("-", "").isalnum() and not part[:1].isdigit():
            out += f".{part}"
        else:
            out += "[" + repr(part) + "]"
    return out


def path_tuple(path: str) -> tuple:
    """Read a JSONPath back (the inverse of format_path for names and indices):
    '$.sites[1].power_kw' -> ('sites', 1, 'power_kw')."""
    out: list = []
    for name, index in re.findall(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]", path or ""):
        out.append(int(index) if index else name)
    return tuple(out)


@dataclass(frozen=True, order=True)
class Position:
    """1-based line and column in a source file."""

    line: int
    column: int


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: Path = ()
    position: Position | None = None
    hint: str | None = None
    severity: str = "error"

    def sort_key(self) -> tuple:
        pos = self.position or Position(10**9, 0)
        return (pos.line, pos.column, self.code, format_path(self.path), self.message)


@dataclass(frozen=True)
class Source:
    """The text a diagnostic points into."""

    filename: str
    text: str = ""
    lines: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, filename: str, text: str) -> "Source":
        return cls(filename, text, tuple(text.splitlines()))


# The CLI's exit codes, in one place (README and docs/ list them; every stage raises with these).
EXIT_OK = 0
EXIT_INTERNAL = 1     # an unexpected exception (a traceback with --debug)
EXIT_INVALID = 2      # the spec or catalog is invalid
EXIT_INFEASIBLE = 3   # no plan satisfies the spec (the conflicting constraints are named)
EXIT_DRIFT = 4        # --check: the rendered files differ from the output folder
EXIT_NO_PLAN = 5      # the solver found no plan within its node or time limit
EXIT_AUDIT = 6        # the plan failed its independent audit (an internal error)
EXIT_COST_RISE = 7    # diff --fail-above: the total rose by more than the threshold


class CompileError(Exception):
    """Raised by a stage with every diagnostic it found; the CLI prints them and exits
    with `exit_code`, one of the EXIT_ codes above."""

    def __init__(self, diagnostics: Iterable[Diagnostic], exit_code: int = EXIT_INVALID,
                 source: Source | None = None):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        self.exit_code = exit_code
        self.source = source
        super().__init__("\n".join(d.message for d in self.diagnostics))


# Characters that must not reach a terminal or a rendered line as they are: C0 and C1 controls
# (newlines, ESC and its sequences), the line and paragraph separators, and the bidirectional
# marks and overrides that make text read other than it is stored. UNPRINTABLE_IN_TEXT lets the
# tab and the newline of a multi-line text through.
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
UNPRINTABLE_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with each UNPRINTABLE character shown as its escape (\\x1b, \\n, \\u202e): one line,
    read as it is stored."""
    return UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def render(diagnostic: Diagnostic, source: Source | None) -> str:
    """One diagnostic as text: header line, source line with caret, hint. Everything in it may
    come from a hostile file (its name, the values a message quotes, the line itself), so no
    control or bidirectional character is printed as it is: escaped in the header and hint, and
    shown as U+FFFD in the quoted line, which keeps the caret under its column."""
    filename = source.filename if source else "<spec>"
    where = ""
    if diagnostic.position is not None:
        where = f"{diagnostic.position.line}:{diagnostic.position.column}:"
    else:
        where = ""
    at = f" at {format_path(diagnostic.path)}" if diagnostic.path or diagnostic.position else ""
    head = printable(f"{filename}:{where} {diagnostic.severity}[{diagnostic.code}]{at}: {diagnostic.message}")
    out = [head]
    pos = diagnostic.position
    if source is not None and pos is not None and 1 <= pos.line <= len(source.lines):
        text = UNPRINTABLE.sub("\ufffd", source.lines[pos.line - 1].replace("\t", " "))
        gutter = f"{pos.line:>5}"
        out.append(f"{gutter} | {text}")
        out.append(f"{' ' * len(gutter)} | {' ' * (pos.column - 1)}^")
    if diagnostic.hint:
        out.append(f"   hint: {printable(diagnostic.hint)}")
    return "\n".join(out)


def render_all(diagnostics: Iterable[Diagnostic], source: Source | None) -> str:
    items = sorted(diagnostics, key=Diagnostic.sort_key)
    return "\n".join(render(d, source) for d in items)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean' hint for a misspelt key or enum value, or None."""
    import difflib

    match = difflib.get_close_matches(str(word), sorted(set(map(str, choices))), n=1, cutoff=0.6)
    return f"did you mean '{match[0]}'?" if match else None
