"""The shape of the code, read from its source with ast (nothing is imported): which parts of
`compiler` import which, and what the solver's modules may hold.

A part is a subpackage (compiler.optimize, compiler.estimate, ...) or a top-level module
(compiler.pricing, compiler.plan, ...). Imports inside functions count: a function-local import
that only hides a cycle is still one.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "compiler"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 2 and (PKG / parts[1]).is_dir():
        return f"compiler.{parts[1]}"
    return ".".join(parts[:2])


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every compiler module `path` imports, absolute, with its line."""
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.append((".".join(base + ([node.module] if node.module else [])), node.lineno))
            elif node.module:
                out.append((node.module, node.lineno))
    return [(m, line) for m, line in out if m == "compiler" or m.startswith("compiler.")]


def part_graph() -> dict[str, dict[str, list[str]]]:
    """part -> imported part -> the `file:line`s that import it."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PKG.rglob("*.py")):
        a = _part(_module_name(path))
        for module, line in _imports(path):
            b = _part(module)
            if b != a and b != "compiler":
                graph[a][b].append(f"{path.relative_to(ROOT)}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The strongly connected parts of more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_sees_a_cycle():
    graph = {"a": {"b": ["x"]}, "b": {"c": ["y"]}, "c": {"a": ["z"]}, "d": {"a": ["w"]}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_graph_reads_function_local_imports():
    # estimate builds the options formulate prices: optimize imports estimate, inside a function
    # or not, and the graph sees it
    assert "compiler.estimate" in part_graph()["compiler.optimize"]


def test_no_import_cycle_between_compiler_parts():
    graph = part_graph()
    found = cycles(graph)
    where = [f"{a} -> {b}: {', '.join(graph[a][b][:3])}" for comp in found for a in comp for b in comp
             if b in graph.get(a, {})]
    assert not found, "import cycles between compiler parts:\n" + "\n".join(where)


# --- the solver's modules: tuned numbers live in one Settings object, comments carry no day's figures

SOLVER = PKG / "optimize"


def _numeric(node: ast.AST) -> bool:
    """Whether an expression is a number written out, or a collection or sum holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) or _numeric(node.right)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_numeric(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_numeric(v) for v in node.values)
    return False


def module_numbers(source: str) -> list[str]:
    """Module-level assignments of a number written out: `NAME = 20000`, `T = (1, 2)`."""
    return [f"{node.lineno}: {ast.unparse(node)[:80]}" for node in ast.parse(source).body
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _numeric(node.value)]


# a dollar amount, a duration or a date: what a day's run leaves in a comment
DATED = re.compile(r"\$\s?\d|\b\d+(?:\.\d+)?\s?(?:s|seconds|min|minutes)\b|\b20\d\d-\d\d(?:-\d\d)?\b")


def dated_figures(source: str) -> list[str]:
    """Lines of comments and docstrings that carry a dollar amount, a duration or a date."""
    texts = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                texts += [(node.body[0].lineno + k, line) for k, line in enumerate(doc.splitlines())]
    return [f"{line}: {text.strip()}" for line, text in sorted(texts) if DATED.search(text)]


def test_the_checks_see_what_they_look_for():
    assert module_numbers("A = 20000\nB = (1, 2)\nC = -1e-6\nD = 'x'\nE = other.value\nF = {'a': 1e5}\n") == [
        "1: A = 20000", "2: B = (1, 2)", "3: C = -1e-06", "6: F = {'a': 100000.0}"]
    found = dated_figures('"""Doc: took 11.4 s."""\nx = 1  # $7.78M on 2026-11-25\ny = 2  # the 3 sites\n')
    assert [f.split(":")[0] for f in found] == ["1", "2"]


def test_every_tuned_number_of_the_solver_is_in_its_settings():
    found = {p.name: module_numbers(p.read_text(encoding="utf-8")) for p in sorted(SOLVER.glob("*.py"))
             if p.name != "settings.py"}
    assert not {k: v for k, v in found.items() if v}, "numbers outside compiler/optimize/settings.py"


def test_no_comment_of_the_solver_carries_a_days_figures():
    found = {p.name: dated_figures(p.read_text(encoding="utf-8")) for p in sorted(SOLVER.glob("*.py"))}
    assert not {k: v for k, v in found.items() if v}, "figures of a day's run belong in benchmarks/LOG.md"


# Functions of the solver and the read-back still over 80 lines, to be split: the list may only
# shrink (a function split must leave it, and no other may join it).
LONG_YET: set[str] = set()


def test_the_strategy_reads_on_one_screen_and_no_solver_function_runs_long():
    assert len((SOLVER / "strategy.py").read_text(encoding="utf-8").splitlines()) < 200
    long = {f"{p.name}:{node.name}" for p in sorted([*SOLVER.glob("*.py"), *(PKG / "readback").glob("*.py")])
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80}
    assert long == LONG_YET, (f"over 80 lines: {sorted(long - LONG_YET)}; "
                              f"no longer, leave LONG_YET: {sorted(LONG_YET - long)}")


def test_the_docs_a_newcomer_reads_first_stay_short_and_undated():
    """README under 120 lines, docs/optimizer.md under 500, and no issue numbers in either (their
    readers cannot see them); the optimizer's dated runs belong in benchmarks/LOG.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    optimizer = (ROOT / "docs" / "optimizer.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 120 and len(optimizer.splitlines()) < 500
    for text in (readme, optimizer):
        assert not re.search(r"(?i)\bissue\s*#?\d+|#\d{2,}\b", text)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", optimizer)


def test_only_the_solve_stage_imports_the_solvers():
    """pulp and highspy are imported in compiler/optimize only: the Problem, the read-back and the
    report's pricing read plain data."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path.is_relative_to(SOLVER):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] in ("pulp", "highspy")]
    assert not found, found
    assert "compiler.optimize" not in part_graph()["compiler.readback"]
    assert "compiler.optimize" not in part_graph()["compiler.appraise"]


def test_every_compiler_package_ships():
    """pyproject.toml lists its packages by name: a new one left out would be missing from a
    plain (non-editable) install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {_module_name(p) for p in PKG.rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)


# --- docs/architecture.md: the stages and every module's place in them

ARCHITECTURE = ROOT / "docs" / "architecture.md"
# a module named as the page names it: `compiler/render/runbook.py`
MODULE_PATH = re.compile(r"`(compiler/[\w/]*?\w+\.py)`")


def documented_modules(text: str) -> set[str]:
    """The modules under compiler/ a page names, as paths from the repository root."""
    return set(MODULE_PATH.findall(text))


def test_the_module_check_reads_what_the_page_writes():
    text = "- `compiler/render/runbook.py`: RUNBOOK.md\n| x | `compiler/spec.py` |\n`compiler/render/` and plan.py"
    assert documented_modules(text) == {"compiler/render/runbook.py", "compiler/spec.py"}


def test_the_architecture_page_lists_every_module_and_only_modules_that_exist():
    named = documented_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    present = {p.relative_to(ROOT).as_posix() for p in PKG.rglob("*.py")}
    assert not present - named, f"modules missing from docs/architecture.md: {sorted(present - named)}"
    assert not named - present, f"docs/architecture.md names modules that do not exist: {sorted(named - present)}"


def test_the_architecture_page_names_the_stage_values():
    """The stage table names each stage's value by its class, and each class is where it says."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    for cls, module in [("Document", "source.py"), ("Spec", "spec.py"), ("Candidates", "candidates.py"),
                        ("Problem", "problem.py"), ("Solution", "problem.py"), ("Plan", "plan.py"),
                        ("Catalog", "catalog/model.py"), ("Finding", "audit/context.py")]:
        assert f"`{cls}`" in text, cls
        assert re.search(rf"^class {cls}\b", (PKG / module).read_text(encoding="utf-8"), re.M), (cls, module)


def test_docs_cite_only_what_users_have():
    """Users have the repository, not the design notes it was built from nor the issue tracker."""
    found = [f"{p.name}:{n}" for p in sorted((ROOT / "docs").glob("*.md"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"DESIGN\.md|\.\./shared\b|/work/shared|(?i:\bissue\s*#?\d+)", line)]
    assert not found, found


# --- one comparison of plans: months aligned and placements compared in compiler/compare.py only

COMPARE = "compiler/compare.py"


def month_alignments(source: str) -> list[str]:
    """Calls that line one plan's months up against another's: `<calendar>.index(<y>.start)` (a
    calendar's index of some plan's start; `ca.index(cb.start)` too)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "index"
                and any(isinstance(n, ast.Attribute) and n.attr == "start" for a in node.args for n in ast.walk(a))):
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def two_plan_functions(source: str) -> list[str]:
    """Functions that take two Plans (annotated `Plan`, compiler.plan's) and do not hand them to
    compare()."""
    tree = ast.parse(source)
    if not any(isinstance(n, ast.ImportFrom) and n.module == "compiler.plan" and any(a.name == "Plan" for a in n.names)
               for n in ast.walk(tree)):
        return []                 # another Plan (the solver's) or none
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            plans = [a for a in node.args.args if a.annotation is not None and ast.unparse(a.annotation) == "Plan"]
            calls = {ast.unparse(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
            if len(plans) >= 2 and "compare" not in calls:
                out.append(f"{node.lineno}: {node.name}")
    return out


def test_the_comparison_checks_see_what_they_look_for():
    assert month_alignments("k = ca.index(cb.start)\nj = max(0, base.calendar.index(plan.start))\n"
                            "first = calendar.index(calendar.name(0)[:4] + '-01')\n") == [
        "1: ca.index(cb.start)", "2: base.calendar.index(plan.start)"]
    found = two_plan_functions("from compiler.plan import Plan\ndef f(a: Plan, b: Plan):\n    return 1\n"
                               "def g(a: Plan, b: Plan):\n    return compare(a, b)\ndef h(a: Plan, n: int):\n    pass\n")
    assert found == ["2: f"]


def test_only_the_comparison_module_aligns_two_plans_months_or_compares_them():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == COMPARE:
            continue
        source = path.read_text(encoding="utf-8")
        found += [f"{name}:{x}" for x in month_alignments(source) + two_plan_functions(source)]
    assert not found, "plans compared outside compiler/compare.py:\n" + "\n".join(found)
    # and the diff, the runbook's changes and the report's read it
    for user in ("compiler/diff.py", "compiler/render/changes.py"):
        assert any(m == "compiler.compare" for m, _ in _imports(ROOT / user)), user
    assert any(m == "compiler.render.changes" for m, _ in _imports(ROOT / "compiler/report/replan.py"))


# --- typed plan values: no dict on the Plan, no text read back by the report or the render ------

PLAN = PKG / "plan.py"
MAPPINGS = {"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "OrderedDict"}
# No field of a dataclass in compiler/plan.py may be a mapping: costs, estimates and a workload's
# spec inputs are typed records too (CostBreakdown, SiteCost, EstimateFigures, SpecInputs).


def dict_fields(source: str) -> list[str]:
    """'Class.field' for each field of a dataclass in `source` whose annotation holds a mapping
    type anywhere (dict[str, X] | None, tuple[Mapping, ...] ...)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef) or not any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                ann = item.annotation
                text = ann.value if isinstance(ann, ast.Constant) and isinstance(ann.value, str) else ast.unparse(ann)
                names = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Attribute)}
                if names & MAPPINGS:
                    out.append(f"{node.name}.{item.target.id}")
    return out


def test_the_dict_field_check_sees_a_mapping_field():
    planted = ("@dataclass(frozen=True)\nclass Plan:\n    a: int\n    rows: tuple[dict[str, Any], ...] = ()\n"
               "    by: 'Mapping[str, float] | None' = None\n\n"
               "class NotData:\n    free: dict = {}\n")
    assert dict_fields(planted) == ["Plan.rows", "Plan.by"]


def test_the_plan_has_no_dict_typed_field():
    """The Plan's values are typed, frozen records (BreakEven, CostBreakdown, EstimateFigures ...):
    the report, the render, the diff and the audit read fields, never keys."""
    assert dict_fields(PLAN.read_text(encoding="utf-8")) == []


# Calls that read facts out of text: splitting, matching, prefixes, JSON and YAML.
PARSING = {"split", "rsplit", "partition", "rpartition", "splitlines", "match", "fullmatch", "search",
           "findall", "finditer", "group", "groups", "startswith", "endswith", "loads", "load", "load_all",
           "safe_load", "safe_load_all"}
# Functions under compiler/render/ and compiler/report/ allowed one of them, each with why. Any
# other function that calls one fails the check: a view model takes the typed fact from the Plan.
READS_TEXT = {
    "compiler/render/__init__.py:_check_names": "checks a rendered name against SAFE_NAME, reads nothing back",
    "compiler/render/environment.py:_shown": "escaping: a control character shown as its escape",
    "compiler/render/environment.py:md_text": "escaping: Markdown's inline syntax",
    "compiler/render/environment.py:csv_field": "escaping: a CSV cell that a spreadsheet would run as a formula",
    "compiler/render/environment.py:is_markdown": "a template's file name",
    "compiler/report/charts.py:_inline": "matplotlib's SVG ids namespaced per chart; reads no fact back",
}


def text_readers(source: str) -> dict[str, set[str]]:
    """Each function (Class.method for methods) of `source` that calls one of PARSING: the calls."""
    out: dict[str, set[str]] = defaultdict(set)

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, scope + [child.name])
                continue
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                    and child.func.attr in PARSING):
                out[".".join(scope) or "<module>"].add(child.func.attr)
            visit(child, scope)
    visit(ast.parse(source), [])
    return dict(out)


def test_the_text_check_sees_plan_text_parsed():
    planted = ('import re\n'
               'def families(plan):\n'
               '    return [b.split(" at ")[0] for b in plan.binding_constraints]\n'
               'class Row:\n'
               '    def months(self):\n'
               '        first, _, last = self.text.partition("-")\n'
               '        return re.match(r"\\d+", first).group(0)\n'
               'def fine(plan):\n'
               '    return ", ".join(b.family for b in plan.binding_constraints)\n'
               'def hpas(files):\n'
               '    return [d for t in files.values() for d in yaml.safe_load_all(t)]\n')
    assert text_readers(planted) == {"families": {"split"}, "Row.months": {"partition", "match", "group"},
                                     "hpas": {"safe_load_all"}}


def test_no_report_or_render_function_reads_facts_back_from_text():
    found = {f"{path.relative_to(ROOT)}:{fn}": calls
             for folder in ("render", "report") for path in sorted((PKG / folder).glob("*.py"))
             for fn, calls in text_readers(path.read_text(encoding="utf-8")).items()}
    assert not {k: v for k, v in found.items() if k not in READS_TEXT}, "typed facts, not text read back"
    assert set(READS_TEXT) <= set(found), "an allowed reader no longer reads text: drop it from READS_TEXT"
