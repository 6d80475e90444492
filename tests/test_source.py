"""The load stage: where every value and key came from, and what it refuses.

Positions are 1-based (line, column), as printed in diagnostics.
"""

from __future__ import annotations

import time

import pytest

from compiler.diagnostics import CompileError, Position
from compiler.source import MAX_BYTES, MAX_DEPTH, load, parse

BLOCK = """\
apiVersion: infra-compile/v1
sites:
  - name: aws-use1
    quotas:
      H100: 512
  - name: fra-dc1
"""

FLOW = """\
sites: [{name: a, pricing: [spot, on_demand]}, {name: b}]
window: {start_month: 0, deadline_days: 60}
"""

MULTILINE_FLOW = """\
traffic: {
  peak_rps: 50,
  input_tokens: 1000
}
pricing: [
    on_demand,
    spot
]
"""

QUOTED = """\
name: "quoted"
'key with quotes': 'x'
list:
- unindented
- "two"
"""

# (source, path, key?, (line, column))
POSITIONS = [
    (BLOCK, (), False, (1, 1)),
    (BLOCK, ("apiVersion",), False, (1, 13)),
    (BLOCK, ("apiVersion",), True, (1, 1)),
    (BLOCK, ("sites",), True, (2, 1)),
    (BLOCK, ("sites", 0), False, (3, 5)),                   # a block mapping in a list
    (BLOCK, ("sites", 0, "name"), False, (3, 11)),
    (BLOCK, ("sites", 0, "name"), True, (3, 5)),
    (BLOCK, ("sites", 0, "quotas", "H100"), False, (5, 13)),  # three levels deep
    (BLOCK, ("sites", 0, "quotas", "H100"), True, (5, 7)),
    (BLOCK, ("sites", 1, "name"), False, (6, 11)),
    (FLOW, ("sites",), False, (1, 8)),                      # a flow list
    (FLOW, ("sites", 0), False, (1, 9)),                    # a flow mapping inside it
    (FLOW, ("sites", 0, "name"), False, (1, 16)),
    (FLOW, ("sites", 0, "pricing"), True, (1, 19)),
    (FLOW, ("sites", 0, "pricing", 1), False, (1, 35)),     # a flow list in a flow mapping
    (FLOW, ("sites", 1, "name"), False, (1, 55)),
    (FLOW, ("window", "deadline_days"), False, (2, 41)),
    (FLOW, ("window", "deadline_days"), True, (2, 26)),
    (MULTILINE_FLOW, ("traffic", "input_tokens"), False, (3, 17)),
    (MULTILINE_FLOW, ("traffic", "input_tokens"), True, (3, 3)),
    (MULTILINE_FLOW, ("pricing", 1), False, (7, 5)),
    (QUOTED, ("name",), False, (1, 7)),                     # the opening quote
    (QUOTED, ("key with quotes",), True, (2, 1)),
    (QUOTED, ("list", 0), False, (4, 3)),                   # a list not indented under its key
    (QUOTED, ("list", 1), False, (5, 3)),
    # A path with no value of its own falls back to its nearest ancestor.
    (BLOCK, ("sites", 0, "missing", "deeper"), False, (3, 5)),
    (BLOCK, ("sites", 0, "missing"), True, (3, 5)),
]


@pytest.mark.parametrize("text,path,key,expected", POSITIONS)
def test_position_table(text, path, key, expected):
    doc = parse(text, "spec.yaml")
    assert doc.position(path, key=key) == Position(*expected)


def test_values_are_plain_python():
    doc = parse(FLOW + "n: 1.5e+3\nb: true\nz: null\nd: 2024-01-01\n")
    assert doc.data["sites"][0] == {"name": "a", "pricing": ["spot", "on_demand"]}
    assert doc.data["n"] == 1500.0 and doc.data["b"] is True and doc.data["z"] is None
    assert doc.data["d"] == "2024-01-01"   # timestamps stay text: the spec has none
    assert doc.source.filename == "<spec>" and doc.source.lines[0].startswith("sites:")


def error_of(text: str) -> tuple[str, str, Position | None]:
    with pytest.raises(CompileError) as info:
        parse(text, "spec.yaml")
    assert info.value.exit_code == 2
    d = info.value.diagnostics[0]
    return d.code, d.message, d.position


BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n"
    for a, b in zip("abcdefgh", "bcdefghi"))

# (source, code, message or None to skip, position or None to skip)
REFUSED = [
    ("", "E008", "the spec must be one YAML mapping; file is empty", (1, 1)),
    ("# only a comment\n", "E008", "the spec must be one YAML mapping; file is empty", (1, 1)),
    ("a: 1\n---\nb: 2\n", "E008", "the spec must be one YAML mapping; file is 2 YAML documents",
     (1, 1)),
    ("- 1\n- 2\n", "E008", "the spec must be a YAML mapping at the top level", (1, 1)),
    ("just text\n", "E008", "the spec must be a YAML mapping at the top level", (1, 1)),
    ("a: 1\nb: 2\na: 3\n", "E006", "duplicate key 'a' (first at line 1)", (3, 1)),
    ("w: {x: 1, x: 2}\n", "E006", "duplicate key 'x' (first at line 1)", (1, 11)),
    ("a: .nan\n", "E007", "number must be finite, got .nan", (1, 4)),
    ("a: [1, -.inf]\n", "E007", "number must be finite, got -.inf", (1, 8)),
    ("a: .Inf\n", "E007", "number must be finite, got .Inf", (1, 4)),
    ("a: [1, 2\n", "E003", None, None),
    ("a: 1\n  b: 2\n", "E003", None, (2, 4)),
    ("base: &b {x: 1}\nc:\n  <<: *b\n", "E003", "YAML merge keys ('<<') are not supported",
     (3, 3)),
    ("? [a, b]\n: 1\n", "E003", "mapping keys must be plain scalars", (1, 3)),
    ("a: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n", "E004",
     f"nesting deeper than {MAX_DEPTH} levels", None),
    ("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)) + "  " * 60 + "v: 1\n",
     "E004", f"nesting deeper than {MAX_DEPTH} levels", None),
    (BOMB, "E005", "too many alias expansions (more than 1000)", None),
    ("#" * (MAX_BYTES + 1), "E002", f"file is larger than {MAX_BYTES} bytes", None),
]


@pytest.mark.parametrize("text,code,message,position", REFUSED,
                         ids=[f"{r[1]}-{i}" for i, r in enumerate(REFUSED)])
def test_refused_table(text, code, message, position):
    got_code, got_message, got_position = error_of(text)
    assert got_code == code
    if message is not None:
        assert got_message == message
    if position is not None:
        assert got_position == Position(*position)


def test_a_billion_laughs_is_refused_at_once():
    # 9^9 (387 million) values if expanded; refusal takes milliseconds, so a one-second
    # bound has a wide margin on any machine and only trips if the limit stops working.
    start = time.perf_counter()
    assert error_of(BOMB)[0] == "E005"
    assert time.perf_counter() - start < 1.0


def test_pathological_nesting_is_an_error_not_a_traceback():
    text = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    assert error_of(text)[0] in ("E003", "E004")


def test_every_duplicate_key_is_reported_at_once():
    with pytest.raises(CompileError) as info:
        parse("a: 1\na: 2\nb: {c: 1, c: 2}\n")
    assert [(d.code, d.position.line) for d in info.value.diagnostics] == [("E006", 2),
                                                                           ("E006", 3)]


@pytest.mark.parametrize("content,message", [
    (bytes(range(256)), "binary file: contains NUL bytes"),
    (b"name: \xff\xfe junk\n", "not UTF-8 text (byte 6)"),
    (b"a: 1\n\x00\n", "binary file: contains NUL bytes"),
])
def test_binary_junk_is_refused_by_load(tmp_path, content, message):
    path = tmp_path / "junk.yaml"
    path.write_bytes(content)
    if content == bytes(range(256)):
        message = "not UTF-8 text (byte 128)"
    with pytest.raises(CompileError) as info:
        load(path)
    [d] = info.value.diagnostics
    assert (d.code, d.message) == ("E001", message)
    assert info.value.source.filename == str(path)


def test_load_refuses_missing_files_directories_and_big_files(tmp_path):
    for path, message in [(tmp_path / "nope.yaml", "no such file"),
                          (tmp_path, "is a directory, not a spec file")]:
        with pytest.raises(CompileError) as info:
            load(path)
        assert [(d.code, d.message) for d in info.value.diagnostics] == [("E001", message)]
    big = tmp_path / "big.yaml"
    big.write_text("#" * (MAX_BYTES + 1))
    with pytest.raises(CompileError) as info:
        load(big)
    assert info.value.diagnostics[0].code == "E002"


def test_load_reads_a_good_file(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(BLOCK, encoding="utf-8")
    doc = load(path)
    assert doc.data["sites"][1] == {"name": "fra-dc1"}
    assert doc.source.filename == str(path) and doc.source.text == BLOCK


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_a_spec_path_that_is_no_regular_file_is_refused_before_reading(tmp_path, kind):
    """A FIFO with no writer or /dev/zero as the spec would block or read forever: refused before
    a byte is read (E001, exit 2), in a child process with a timeout so a regression fails the
    test instead of hanging it."""
    import os
    import subprocess
    import sys

    if kind == "fifo":
        path = tmp_path / "spec.yaml"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path = "/dev/zero"
    else:
        path = tmp_path / "specs"
        path.mkdir()
    run = subprocess.run([sys.executable, "-m", "compiler", "validate", str(path)], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"{path}: error[E001]: is a "), run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr) < 300


def test_no_control_or_bidi_character_of_a_hostile_file_reaches_the_terminal(tmp_path):
    """A name with a terminal escape and a right-to-left override, in a file whose own name has
    one: the error names them escaped, quotes the line with U+FFFD in their place (the caret
    stays under its column), and prints none of them as they are."""
    import subprocess
    import sys

    path = tmp_path / "spec\x1b[2J.yaml"
    path.write_text("apiVersion: infra-compile/v1\nname: bad\u202egpj.exe\nhorizon_months: 1\n"
                    "sites: []\nworkloads: []\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "compiler", "validate", str(path)], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    err = run.stderr
    assert not any(c in err for c in ("\x1b", "\u202e")), repr(err)
    assert "spec\\x1b[2J.yaml" in err and "\\u202e" in err
    line = next(ln for ln in err.splitlines() if ln.lstrip().startswith("2 |"))
    caret = err.splitlines()[err.splitlines().index(line) + 1]
    assert line.index("\ufffd") > 0 and caret.index("^") == line.index("bad")
