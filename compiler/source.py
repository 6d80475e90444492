"""The load stage: YAML text -> Document (plain values + a path -> position map).

YAML is composed (not constructed) with pyyaml's safe machinery so every value keeps
its line and column; values are then built by hand so we can enforce limits on size,
nesting depth and alias expansion (a "billion laughs" file is refused quickly) and
report duplicate keys and non-finite numbers, which pyyaml accepts silently.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, Mapping

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from compiler.diagnostics import CompileError, Diagnostic, Path, Position, Source

MAX_BYTES = 1 << 20          # 1 MiB: a platform spec is a few KiB
MAX_DEPTH = 32               # the spec language nests five levels deep
MAX_EVENT_DEPTH = 100        # refused before composing: pyyaml's composer recurses
MAX_NODES = 200_000          # values after alias expansion
MAX_ALIASES = 1_000          # alias references


class _Loader(yaml.SafeLoader):
    """pyyaml's safe loader, but `2.0e12` and `1e9` are numbers as in YAML 1.2.

    YAML 1.1 (pyyaml) demands a dot and a signed exponent, so the DESIGN.md example's
    `tokens: 2.0e12` would otherwise arrive as a string.
    """


_FLOAT = "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != _FLOAT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_FLOAT, re.compile(r"""^(?:
     [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))

# The compiler's own data files (the built-in catalog: trusted, shipped, read by every compile)
# are composed by libyaml where pyyaml has it: the same nodes and marks, ten times faster. Users'
# files keep the pure-Python parser, whose error messages the diagnostics are written against.
_TRUSTED: type = _Loader
if getattr(yaml, "__with_libyaml__", False):
    class _LibyamlLoader(yaml.CSafeLoader):
        """libyaml's safe loader with _Loader's YAML 1.2 numbers."""

    _LibyamlLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _TRUSTED = _LibyamlLoader


def _check_depth(text: str, source: Source) -> None:
    """Refuse deep nesting from the event stream, before the recursive composer sees it."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_EVENT_DEPTH:
                mark = event.start_mark
                raise CompileError([Diagnostic("E004", f"nesting deeper than {MAX_DEPTH} levels", (),
                                               Position(mark.line + 1, mark.column + 1))], 2, source)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


@dataclass(frozen=True)
class Document:
    """A parsed spec: the plain data and where each value and key came from."""

    data: Any
    source: Source
    value_positions: Mapping[Path, Position]
    key_positions: Mapping[Path, Position]

    def position(self, path: Path, *, key: bool = False) -> Position | None:
        """Position of `path` (its key when `key`), else of its nearest ancestor."""
        path = tuple(path)
        if key and path in self.key_positions:
            return self.key_positions[path]
        while True:
            if path in self.value_positions:
                return self.value_positions[path]
            if not path:
                return None
            path = path[:-1]


class _Builder:
    def __init__(self, source: Source):
        self.source = source
        self.constructor = SafeConstructor()
        self.values: dict[Path, Position] = {}
        self.keys: dict[Path, Position] = {}
        self.errors: list[Diagnostic] = []
        self.nodes = 0
        self.aliases = 0
        self.seen_nodes: set[int] = set()

    @staticmethod
    def _pos(node: Node) -> Position:
        return Position(node.start_mark.line + 1, node.start_mark.column + 1)

    def _fatal(self, code: str, message: str, node: Node, path: Path, hint: str | None = None):
        self.errors.append(Diagnostic(code, message, path, self._pos(node), hint))
        raise CompileError(self.errors, 2, self.source)

    def build(self, node: Node, path: Path, depth: int) -> Any:
        self.nodes += 1
        if id(node) in self.seen_nodes:
            # The same node reached twice: an alias. Count expansions, not just references.
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                self._fatal("E005", f"too many alias expansions (more than {MAX_ALIASES})",
                            node, path, "a spec has no need of YAML anchors at this scale")
        self.seen_nodes.add(id(node))
        if self.nodes > MAX_NODES:
            self._fatal("E005", f"document expands to more than {MAX_NODES} values",
                        node, path, "YAML aliases may be expanding exponentially")
        if depth > MAX_DEPTH:
            self._fatal("E004", f"nesting deeper than {MAX_DEPTH} levels", node, path)
        self.values.setdefault(path, self._pos(node))
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if isinstance(node, SequenceNode):
            return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self._fatal("E003", "YAML merge keys ('<<') are not supported", key_node, path)
                if not isinstance(key_node, ScalarNode):
                    self._fatal("E003", "mapping keys must be plain scalars", key_node, path)
                key = self._scalar(key_node, path)
                if not isinstance(key, str):
                    key = str(key)
                child = path + (key,)
                if key in out:
                    first = self.keys.get(child)
                    where = f" (first at line {first.line})" if first else ""
                    self.errors.append(Diagnostic("E006", f"duplicate key '{key}'{where}", child,
                                                  self._pos(key_node), "remove one of the two"))
                    continue
                self.keys[child] = self._pos(key_node)
                out[key] = self.build(value_node, child, depth + 1)
            return out
        self._fatal("E003", "unsupported YAML node", node, path)

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        try:
            value = self.constructor.construct_object(node)
        except yaml.YAMLError as exc:
            self.errors.append(Diagnostic("E003", f"bad scalar: {exc.problem or exc}", path,
                                          self._pos(node)))
            return None
        except ValueError:
            # Python refuses int() of more than 4300 digits; no spec figure comes close.
            self.errors.append(Diagnostic("E007", f"number is too large ({len(node.value)} digits)",
                                          path, self._pos(node), "write a plain number"))
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.errors.append(Diagnostic("E007", f"number must be finite, got {node.value}", path,
                                          self._pos(node), "write a plain number"))
            return None
        if not isinstance(value, (str, int, float, bool, type(None))):
            # Timestamps, binary, sets: nothing in the spec language uses them.
            return node.value
        return value


def parse(text: str, filename: str = "<spec>", *, trusted: bool = False) -> Document:
    """Parse YAML text into a Document, or raise CompileError with every problem found.
    `trusted`: one of the compiler's own data files (composed by libyaml where available)."""
    source = Source.of(filename, text)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise CompileError([Diagnostic("E002", f"file is larger than {MAX_BYTES} bytes")], 2, source)
    try:
        if not trusted:             # the compiler's own files are not hostile
            _check_depth(text, source)
        nodes = list(yaml.compose_all(text, Loader=_TRUSTED if trusted else _Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Position(mark.line + 1, mark.column + 1) if mark else None
        msg = f"invalid YAML: {exc.problem or exc.context or 'syntax error'}"
        raise CompileError([Diagnostic("E003", msg, (), pos)], 2, source) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise CompileError([Diagnostic("E003", f"invalid YAML: {exc}")], 2, source) from None
    if len(nodes) != 1 or nodes[0] is None:
        what = "empty" if not nodes or nodes[0] is None else f"{len(nodes)} YAML documents"
        raise CompileError([Diagnostic("E008", f"the spec must be one YAML mapping; file is {what}",
                                       (), Position(1, 1))], 2, source)
    builder = _Builder(source)
    try:
        data = builder.build(nodes[0], (), 0)
    except RecursionError:
        raise CompileError([Diagnostic("E004", f"nesting deeper than {MAX_DEPTH} levels")], 2,
                           source) from None
    if builder.errors:
        raise CompileError(builder.errors, 2, source)
    if not isinstance(data, dict):
        raise CompileError([Diagnostic("E008", "the spec must be a YAML mapping at the top level",
                                       (), Position(1, 1))], 2, source)
    return Document(data, source, dict(builder.values), dict(builder.keys))


class Unreadable(Exception):
    """Why read_regular did not read a file: `why` is missing, directory, special (a FIFO, device
    or socket: `detail` says which), large (`size` bytes, over the limit) or error (`detail`: the
    system's reason). Each reader turns it into its own error code and hint."""

    def __init__(self, why: str, detail: str = "", size: int = 0) -> None:
        super().__init__(why, detail)
        self.why, self.detail, self.size = why, detail, size


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes, or Unreadable. Every file
    from outside (a spec, a catalog overlay, a plan.json) is read here: it is opened without
    blocking and checked before a byte is read, since a FIFO with no writer, /dev/zero or a
    terminal would never end, and it is read no further than the limit even if it grows."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Unreadable("missing") from None
    except IsADirectoryError:
        raise Unreadable("directory") from None
    except OSError as exc:
        raise Unreadable("error", exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Unreadable("directory")
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise Unreadable("special", kind)
        if info.st_size > limit:
            raise Unreadable("large", size=info.st_size)
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:          # it grew after the check
                raise Unreadable("large", size=size)
            chunks.append(chunk)
    except OSError as exc:
        raise Unreadable("error", exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str | os.PathLike, limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of `path` (read_regular), or Unreadable: why "text" where the bytes are not
    UTF-8 or hold a NUL (a binary file), `detail` saying which."""
    raw = read_regular(path, limit)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable("text", f"not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise Unreadable("text", "binary file: contains NUL bytes")
    return text


def load(path: str | FsPath) -> Document:
    """Read and parse a spec file."""
    name = str(path)
    try:
        text = read_text(path)
    except Unreadable as exc:
        if exc.why == "large":
            raise CompileError([Diagnostic("E002", f"file is larger than {MAX_BYTES} bytes")], 2,
                               Source.of(name, "")) from None
        message = {"missing": "no such file", "directory": "is a directory, not a spec file",
                   "special": f"is {exc.detail}, not a spec file", "text": exc.detail}.get(
            exc.why, f"cannot read: {exc.detail}")
        raise CompileError([Diagnostic("E001", message)], 2, Source.of(name, "")) from None
    return parse(text, name)
