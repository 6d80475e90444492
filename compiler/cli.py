"""The command line: parse arguments, call the pipeline, print. No logic beyond that.

Exit codes (the contract CI relies on): 0 done; 2 invalid input (usage or spec);
3 infeasible; 4 --check found drift; 5 the solver gave no plan in time; 6 internal error:
the plan failed its independent audit (compiler.audit; nothing is written); 7 diff
--fail-above: the total rose by more than the threshold.
"""

from __future__ import annotations

import json
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from compiler.diagnostics import (EXIT_AUDIT, EXIT_COST_RISE, EXIT_DRIFT, EXIT_INFEASIBLE,  # noqa: F401
                                  EXIT_INTERNAL, EXIT_INVALID, EXIT_NO_PLAN, EXIT_OK)  # re-exported for callers and tests
from compiler.catalog.freshness import DEFAULT_MAX_AGE_DAYS
from compiler.optimize.settings import DEFAULT as SETTINGS

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Compile a declarative ML/GPU platform spec into a costed fleet plan, "
         "Terraform, Slurm and Kubernetes files and a design-review report.\n\n"
         "`infra-compile SPEC` is `infra-compile compile SPEC`.\n\n"
         "Exit codes: 0 done, 2 invalid input, 3 infeasible, 4 --check found drift, "
         "5 no plan within the node or time limit, 6 internal error: the plan failed its "
         "independent audit, 7 diff --fail-above: the total rose by more than allowed.",
)


class Format(str, Enum):
    text = "text"
    json = "json"


class DiffFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"     # a pull-request comment


class Solver(str, Enum):
    auto = "auto"
    cbc = "cbc"
    highs = "highs"


def _stderr():
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _stdout():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=200 if not sys.stdout.isatty() else None)


def _run(fn, debug: bool, fmt: Format = Format.text) -> int:
    """Run a command body; turn CompileError into messages and codes."""
    from compiler.diagnostics import CompileError, render_all

    try:
        return fn()
    except CompileError as exc:
        if fmt is Format.json:
            print(json.dumps({"ok": False, "exit_code": exc.exit_code,
                              "diagnostics": [_diag_json(d, exc.source) for d in exc.diagnostics]},
                             indent=2, sort_keys=True))
        print(render_all(exc.diagnostics, exc.source), file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # `infra-compile catalog | head`: the reader left; not an error of ours.
        sys.stdout = None  # keep the interpreter from flushing into the closed pipe at exit
        return EXIT_OK
    except KeyboardInterrupt:
        _stop_children()
        # Output is swapped in whole (compiler.output): the directory holds either the
        # previous tree or, if Ctrl-C came after the swap, the complete new one; never a mix.
        print("infra-compile: interrupted; no partial output was written.", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: say so plainly, traceback only on --debug
        if debug:
            raise
        print(f"infra-compile: internal error: {type(exc).__name__}: {exc}\n"
              "  rerun with --debug for a traceback, and please report it.", file=sys.stderr)
        return EXIT_INTERNAL


def _stop_children() -> None:
    """End the solver processes this compile started (CBC finishes its search after a SIGINT).

    pulp waits on its CBC child without killing it when the wait is interrupted, so on
    Ctrl-C the solver would go on running, orphaned, for as long as its search takes.
    Only our own children named cbc are signalled (Linux /proc; elsewhere this does nothing).
    """
    import os
    import signal

    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return
    def is_solver(pid: str) -> bool:
        # Only the solver: a host process embedding the CLI may have children of its own.
        try:
            return Path(f"/proc/{pid}/comm").read_text().strip() == "cbc"
        except OSError:
            return False

    pids = []
    for task in tasks:
        try:
            pids += [int(k) for k in (task / "children").read_text().split() if is_solver(k)]
        except (OSError, ValueError):
            continue
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    # Reap them (briefly) so no zombie is left behind for init to collect.
    import time

    deadline = time.monotonic() + 2.0
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                break
            time.sleep(0.02)


def _diag_json(d, source) -> dict:
    from compiler.diagnostics import format_path

    return {"code": d.code, "severity": d.severity, "message": d.message,
            "path": format_path(d.path), "file": source.filename if source else None,
            "line": d.position.line if d.position else None,
            "column": d.position.column if d.position else None, "hint": d.hint}


SpecArg = typer.Argument(..., help="The platform spec (YAML).", show_default=False)
CatalogOpt = typer.Option(None, "--catalog", help="A catalog overlay file (negotiated prices, new GPUs).")
DebugOpt = typer.Option(False, "--debug", help="Show tracebacks of internal errors.")
FormatOpt = typer.Option(Format.text, "--format", help="Output format.")
AllowUnpricedOpt = typer.Option(
    False, "--allow-unpriced-regions",
    help="A cloud site in a region where the catalog prices no instance of its provider is a "
         "warning (E215) instead of an error; such a site gets no candidates.")


def _print_warnings(diagnostics, source) -> None:
    """A valid spec's warnings, rendered like errors, on stderr."""
    from compiler.diagnostics import render_all

    print(render_all(diagnostics, source), file=sys.stderr)


@app.command("compile")
def compile_cmd(
    spec: Path = SpecArg,
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Output directory [default: build/<spec name>]."),
    catalog: Optional[Path] = CatalogOpt,
    solver: Solver = typer.Option(
        Solver.auto, "--solver",
        help="MILP solver. auto: CBC (bundled) on small platforms, HiGHS where the month windows or the "
             f"improving rounds run (services over several months, or {SETTINGS.min_integers:,}+ integer "
             "variables; docs/optimizer.md)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit", min=0.1, help="Solver time limit, seconds."),
    gap: Optional[float] = typer.Option(None, "--gap", min=0.0, max=1.0, help="Relative MIP gap to stop at, e.g. 0.005."),
    max_nodes: Optional[int] = typer.Option(
        None, "--max-nodes", min=0, show_default=False,
        help=f"Stop the solver's search after N branch-and-bound nodes [default: {SETTINGS.max_nodes}; for "
             f"HiGHS going on from the improving rounds {SETTINGS.highs_nodes}, or below "
             f"{SETTINGS.settle_max_integers:,} integer variables {SETTINGS.settle_after} and then up to "
             f"{SETTINGS.settle_nodes} pruned at {SETTINGS.settle_gap:.0%}; no search after them on platforms "
             f"of {SETTINGS.search_max:,}+ integer variables; 0: no limit]. "
             "Unlike --time-limit, the plan it stops at is the same on every machine."),
    check: bool = typer.Option(False, "--check", help="Render in memory and compare with DIR; exit 4 on drift."),
    baseline: Optional[Path] = typer.Option(
        None, "--baseline", help="The plan.json of the plan deployed or approved before this one: the reserved "
                                 "terms and nodes it bought before the spec's start are held, not bought again."),
    start_from: Optional[Path] = typer.Option(
        None, "--start-from", help="A plan.json the search starts from where it is still a plan of SPEC (a "
                                   "what-if that only relaxes it then ends no dearer); nothing held, no move priced."),
    fmt: Format = FormatOpt,
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No summary."),
    allow_unpriced_regions: bool = AllowUnpricedOpt,
    max_price_age: int = typer.Option(
        DEFAULT_MAX_AGE_DAYS, "--max-price-age", min=0, metavar="DAYS",
        help="Warn (C010) where a site's prices in the catalog are older than DAYS."),
    appraise_limits: bool = typer.Option(
        False, "--appraise-limits",
        help="Where two or more operability limits bind, price each alone (one more solve a limit)."),
    debug: bool = DebugOpt,
) -> None:
    """Validate, estimate, optimize and render SPEC into DIR."""

    def body() -> int:
        from compiler import output, pipeline

        if out is not None and not check:
            output.check_target(out)    # before the solve: a folder it would refuse is said at once
        err = _stderr()
        status = None
        if err.is_terminal and not quiet:
            status = err.status("compiling...")
            status.start()
        try:
            def progress(msg: str) -> None:
                if status is not None:
                    status.update(msg)
            started = time.perf_counter()
            result = pipeline.compile_spec(spec, pipeline.CompileOptions(
                catalog=str(catalog) if catalog else None, solver=solver.value,
                time_limit=time_limit, gap=gap, progress=progress, max_nodes=max_nodes,
                allow_unpriced_regions=allow_unpriced_regions, warn=_print_warnings,
                baseline=str(baseline) if baseline else None,
                start_from=str(start_from) if start_from else None, max_price_age_days=max_price_age,
                appraise_limits=appraise_limits))
        finally:
            if status is not None:
                status.stop()
        out_dir = out or Path("build") / result.plan.spec_name
        if check:
            d = output.drift(result.artifacts, out_dir)
            if fmt is Format.json:
                print(json.dumps({"clean": d.clean, "changed": list(d.changed),
                                  "missing": list(d.missing), "extra": list(d.extra)}, indent=2))
            if d.clean:
                if fmt is Format.text:
                    print(f"{out_dir}: up to date ({len(result.artifacts)} files)")
                return EXIT_OK
            for label, names in (("differs", d.changed), ("missing", d.missing), ("extra", d.extra)):
                for name in names:
                    print(f"{out_dir / name}: {label}", file=sys.stderr)
            print(f"infra-compile: {out_dir} is out of date with {spec}; "
                  f"run `infra-compile {spec} -o {out_dir}` and commit the result.", file=sys.stderr)
            return EXIT_DRIFT
        written = output.write(result.artifacts, out_dir)
        if fmt is Format.json:
            from compiler.plan import to_dict

            print(json.dumps({"ok": True, "out": str(out_dir), "files": sorted(result.artifacts),
                              "plan": to_dict(result.plan)}, indent=2, sort_keys=True))
        elif not quiet:
            try:
                from compiler.report.summary import print_summary

                print_summary(result.plan, _stdout(), time.perf_counter() - started,
                              result.seconds.get("optimize", 0.0) + result.seconds.get("unlimited", 0.0))
            except ImportError:
                pass
            print(f"wrote {len(result.artifacts)} files to {written}")
        return EXIT_OK

    raise typer.Exit(_run(body, debug, fmt))


@app.command()
def validate(spec: Path = SpecArg, catalog: Optional[Path] = CatalogOpt,
             fmt: Format = FormatOpt, allow_unpriced_regions: bool = AllowUnpricedOpt,
             debug: bool = DebugOpt) -> None:
    """Check SPEC against the schema and the semantic rules; print every error at once."""

    def body() -> int:
        from compiler import pipeline

        warnings: list = []

        def warn(diagnostics, source) -> None:
            _print_warnings(diagnostics, source)
            warnings.extend(_diag_json(d, source) for d in diagnostics)

        parsed, _, _ = pipeline.validate(spec, str(catalog) if catalog else None,
                                         allow_unpriced_regions=allow_unpriced_regions, warn=warn)
        if fmt is Format.json:
            print(json.dumps({"ok": True, "diagnostics": warnings, "spec": parsed.name}, indent=2))
        else:
            print(f"{spec}: ok ({len(parsed.workloads)} workloads, {len(parsed.sites)} sites)")
        return EXIT_OK

    raise typer.Exit(_run(body, debug, fmt))


@app.command()
def estimate(spec: Path = SpecArg, catalog: Optional[Path] = CatalogOpt,
             fmt: Format = FormatOpt, allow_unpriced_regions: bool = AllowUnpricedOpt,
             debug: bool = DebugOpt) -> None:
    """Show, per workload, every candidate considered and why options were rejected."""

    def body() -> int:
        from compiler import pipeline
        from compiler.estimate import table

        candidates, _ = pipeline.estimate(spec, str(catalog) if catalog else None,
                                          allow_unpriced_regions=allow_unpriced_regions,
                                          warn=_print_warnings)
        if fmt is Format.json:
            print(json.dumps(table.to_json(candidates), indent=2, sort_keys=True))
        else:
            table.render_table(candidates, _stdout())
        return EXIT_OK

    raise typer.Exit(_run(body, debug, fmt))


@app.command()
def diff(plan_a: Path = typer.Argument(..., help="The old plan.json (the base)."),
         plan_b: Path = typer.Argument(..., help="The new plan.json (the head)."),
         fmt: DiffFormat = typer.Option(DiffFormat.text, "--format",
                                        help="Output format; markdown is a pull-request comment."),
         fail_above: Optional[float] = typer.Option(
             None, "--fail-above", metavar="PERCENT", min=0.0,
             help="Exit 7 when the total rises by more than PERCENT percent from the old plan to "
                  "the new (e.g. 5); the output is written either way."),
         debug: bool = DebugOpt) -> None:
    """What changed between two plans: cost, each plan's status, gap and catalog, pools, placements
    and estimates. Exit 0, or 7 past --fail-above."""

    def body() -> int:
        from compiler import diff as plan_diff
        from compiler.diff_comment import over_threshold, render_comment

        d = plan_diff.diff_plans(*plan_diff.read_plans(plan_a, plan_b))
        threshold = None if fail_above is None else fail_above / 100.0
        if fmt is DiffFormat.json:
            print(json.dumps(plan_diff.diff_to_json(d), indent=2, sort_keys=True))
        elif fmt is DiffFormat.markdown:
            sys.stdout.write(render_comment(d, threshold))
        else:
            plan_diff.render_diff(d, _stdout())
        if over_threshold(d, threshold):
            print(f"infra-compile: the total rose by more than {fail_above:g}% "
                  f"({plan_diff.percent_text(d)})", file=sys.stderr)
            return EXIT_COST_RISE
        return EXIT_OK

    raise typer.Exit(_run(body, debug, Format.json if fmt is DiffFormat.json else Format.text))


@app.command()
def sweep(spec: Path = SpecArg,
          scenarios: Path = typer.Argument(..., help="The scenarios file (YAML; docs/sweep.md).",
                                           show_default=False),
          out: Optional[Path] = typer.Option(None, "-o", "--out",
                                             help="Output directory [default: build/<spec name>-sweep]."),
          workers: Optional[int] = typer.Option(
              None, "--workers", min=1, help="Local processes compiling at once [default: one per CPU]."),
          scheduler: Optional[str] = typer.Option(
              None, "--scheduler", metavar="ADDRESS",
              help="A Dask scheduler (tcp://host:8786) to run the compiles on instead of local processes."),
          solver: Solver = typer.Option(Solver.auto, "--solver", help="MILP solver, as for compile."),
          max_nodes: Optional[int] = typer.Option(None, "--max-nodes", min=0, show_default=False,
                                                  help="As for compile."),
          gap: Optional[float] = typer.Option(None, "--gap", min=0.0, max=1.0, help="As for compile."),
          fmt: Format = FormatOpt,
          quiet: bool = typer.Option(False, "-q", "--quiet", help="No table."),
          allow_unpriced_regions: bool = AllowUnpricedOpt,
          debug: bool = DebugOpt) -> None:
    """Compile SPEC under every scenario of SCENARIOS and write them side by side: index.html
    (table and charts), scenarios.csv and .json, and each scenario's own folder. A scenario that
    fails is reported in its row; the others go on. Exit 0 once every scenario has run, 2 if
    the spec or a scenario is invalid (nothing is solved then)."""

    def body() -> int:
        from compiler import output
        from compiler import sweep as sweeps

        if out is not None:
            output.check_target(out)    # before the compiles: a folder it would refuse is said at once
        prepared = sweeps.prepare(spec, scenarios, solver=solver.value, max_nodes=max_nodes, gap=gap,
                                  allow_unpriced_regions=allow_unpriced_regions)
        err = _stderr()
        progress = None
        if err.is_terminal and not quiet:
            from rich.progress import Progress

            progress = Progress(console=err, transient=True)
            task = progress.add_task(f"{len(prepared.jobs)} scenarios", total=len(prepared.jobs))
            progress.start()

        def done(outcome) -> None:
            if progress is not None:
                progress.update(task, advance=1, description=f"{outcome.name} done")

        try:
            table, files = sweeps.sweep(prepared, workers=workers, scheduler=scheduler, on_done=done)
        finally:
            if progress is not None:
                progress.stop()
        out_dir = out or Path("build") / f"{prepared.spec_name}-sweep"
        output.write(files, out_dir)
        if fmt is Format.json:
            print(files["scenarios.json"], end="")
        elif not quiet:
            from compiler.sweep.table import render_table

            render_table(table, _stdout())
            print(f"wrote {len(files)} files to {out_dir} (open {out_dir / 'index.html'})")
        return EXIT_OK

    raise typer.Exit(_run(body, debug, fmt))


catalog_app = typer.Typer(
    invoke_without_command=True, no_args_is_help=False, rich_markup_mode=None,
    help="Print the hardware, price and model catalog (with any overlay applied); "
         "`catalog refresh PROVIDER` reads a cloud's prices again from its public price list.")
app.add_typer(catalog_app, name="catalog")


class Provider(str, Enum):
    aws = "aws"
    azure = "azure"
    gcp = "gcp"


@catalog_app.callback()
def catalog_cmd(ctx: typer.Context, catalog: Optional[Path] = CatalogOpt,
                section: Optional[str] = typer.Option(None, "--section", help="gpus, instances, regions, onprem, fabrics, storage, models or sources."),
                region: Optional[list[str]] = typer.Option(
                    None, "--region", metavar="REGION[,REGION...]",
                    help="Only these regions' prices (repeat the option or separate by commas)."),
                gpu: Optional[list[str]] = typer.Option(
                    None, "--gpu", metavar="GPU[,GPU...]", help="Only instances and on-prem nodes of these GPUs."),
                provider: Optional[list[str]] = typer.Option(
                    None, "--provider", metavar="PROVIDER[,PROVIDER...]",
                    help="Only these clouds' (aws, gcp, azure) instances, storage and egress."),
                fmt: Format = FormatOpt, debug: bool = DebugOpt) -> None:
    """Print the hardware, price and model catalog (with any overlay applied); --region, --gpu and
    --provider narrow the tables and the JSON alike."""
    ctx.obj = {"catalog": catalog}
    if ctx.invoked_subcommand is not None:
        if region or gpu or provider:
            # `catalog --region X refresh aws` would otherwise read every region's price list.
            given = [f"'--{k}'" for k, v in (("region", region), ("gpu", gpu), ("provider", provider)) if v]
            raise typer.BadParameter(f"it narrows the listing, not `{ctx.invoked_subcommand}`: give "
                                     f"`{ctx.invoked_subcommand}` its own options after its name",
                                     param_hint=" / ".join(given))
        return

    def body() -> int:
        from compiler import pipeline
        from compiler.catalog import tables

        cat = pipeline.load_catalog(str(catalog) if catalog else None)
        filters = tables.make_filters(cat, region, gpu, provider)
        if fmt is Format.json:
            print(json.dumps(tables.catalog_json(cat, section, filters), indent=2, sort_keys=True))
        else:
            tables.render_catalog(cat, _stdout(), section, filters)
        return EXIT_OK

    raise typer.Exit(_run(body, debug, fmt))


@catalog_app.command("refresh")
def catalog_refresh(
    ctx: typer.Context,
    provider: Provider = typer.Argument(..., help="The cloud whose prices to read: aws, azure or gcp."),
    regions: Optional[list[str]] = typer.Option(
        None, "--regions", "--region", metavar="REGION[,REGION...]",
        help="Only these regions (repeat the option or separate by commas) [default: every region the "
             "price list has for the catalog's instances; for AWS that is many GB of offer files]."),
    out: Optional[Path] = typer.Option(
        None, "-o", "--out", help="The overlay file to write (an existing one keeps what other providers' "
                                  "refreshes and its own sources wrote) [default: print it to stdout]."),
    catalog: Optional[Path] = CatalogOpt,
    debug: bool = DebugOpt,
) -> None:
    """Read PROVIDER's list prices (on-demand, spot, 1- and 3-year commitments) for the catalog's
    instances from its public price list and write them as a catalog overlay (use it with --catalog).
    Nothing is written unless the whole refresh succeeded. GCP needs an API key in
    INFRA_COMPILE_GCP_API_KEY (or GOOGLE_API_KEY); docs/catalog.md, "Refreshing prices"."""
    base = catalog or (ctx.obj or {}).get("catalog")

    def body() -> int:
        from compiler.catalog import refresh
        from compiler.catalog.refresh.regions import split

        err = _stderr()
        status = err.status(f"{provider.value}: starting") if err.is_terminal else None
        if status is not None:
            status.start()
        try:
            outcome = refresh.run(provider.value, regions=split(regions), out=out,
                                  catalog_path=str(base) if base else None,
                                  progress=status.update if status is not None else (lambda text: None))
        finally:
            if status is not None:
                status.stop()
        if out is None:
            sys.stdout.write(outcome.text)
        print("\n".join(outcome.summary), file=sys.stderr)
        return EXIT_OK

    raise typer.Exit(_run(body, debug))


COMMANDS = {"compile", "validate", "estimate", "diff", "sweep", "catalog"}
TOP_LEVEL_FLAGS = {"--help", "-h", "--version"}


def _route(argv: list[str]) -> list[str]:
    """`infra-compile SPEC ...` means `infra-compile compile SPEC ...`."""
    if argv and argv[0] not in COMMANDS and argv[0] not in TOP_LEVEL_FLAGS:
        return ["compile", *argv]
    return argv


def main(argv: list[str] | None = None) -> None:
    args = _route(list(sys.argv[1:] if argv is None else argv))
    if args == ["--version"]:
        from compiler import __version__

        print(f"infra-compile {__version__}")
        raise SystemExit(0)
    # click exits 2 on usage errors, which is the contract's "invalid input".
    app(args=args, prog_name="infra-compile")


if __name__ == "__main__":
    main()
