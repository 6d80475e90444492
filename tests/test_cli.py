"""The command line contract: routing, exit codes, no tracebacks."""

import subprocess
import sys

from compiler.cli import _route


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "compiler", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_a_first_argument_that_is_not_a_command_goes_to_compile():
    assert _route(["spec.yaml"]) == ["compile", "spec.yaml"]
    assert _route(["spec.yaml", "-o", "x"]) == ["compile", "spec.yaml", "-o", "x"]
    assert _route(["--debug", "spec.yaml"]) == ["compile", "--debug", "spec.yaml"]
    assert _route(["validate", "spec.yaml"]) == ["validate", "spec.yaml"]
    assert _route(["--help"]) == ["--help"]
    assert _route([]) == []


def test_missing_file_is_exit_2_with_a_located_message(tmp_path):
    r = run(str(tmp_path / "nope.yaml"))
    assert r.returncode == 2
    assert r.stderr.strip() == f"{tmp_path / 'nope.yaml'}: error[E001]: no such file"
    assert "Traceback" not in r.stderr


def test_usage_error_is_exit_2():
    r = run("compile", "--solver", "gurobi", "x.yaml")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_syntax_error_shows_line_and_caret(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: infra-compile/v1\nname: [unclosed\n")
    r = run("validate", str(bad))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:3:1: error[E003] at $: invalid YAML")
    assert "Traceback" not in r.stderr


def test_version_and_help():
    assert run("--version").stdout.startswith("infra-compile ")
    r = run("--help")
    assert r.returncode == 0 and "Exit codes" in r.stdout
