"""Scenarios as independent compiles, on a local process pool or a Dask cluster.

    compile_job(job) -> Outcome          one scenario's compile; runs in a worker
    run_jobs(jobs, workers=, scheduler=, on_done=) -> tuple[Outcome, ...]   in the jobs' order

A job carries its inputs as text (the scenario's spec and catalog overlay) and the solve options,
and an outcome carries every file the compile renders: a worker needs no shared disk, so the same
function runs in a local process or on a Dask worker started on a laptop, a Slurm allocation
(dask-jobqueue) or Kubernetes (dask-kubernetes). A compile is deterministic (node limits, one
thread, a fixed seed), so where a job runs does not change a byte of its outcome; the sweep writes
the files on the machine that asked. A scenario that fails (invalid, infeasible, no plan) comes
back as an outcome with its exit code and messages; it never stops the others.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class Job:
    name: str
    spec_text: str
    overlay_text: str | None
    solver: str = "auto"
    max_nodes: int | None = None
    gap: float | None = None
    time_limit: float | None = None
    allow_unpriced_regions: bool = False
    start_from: str | None = None       # the base plan's plan.json text: the search starts from it


@dataclass(frozen=True)
class Outcome:
    name: str
    exit_code: int                               # 0, or the code `infra-compile` would exit with
    messages: str = ""                           # the diagnostics, as the CLI prints them
    artifacts: Mapping[str, str] = field(default_factory=dict)   # path -> text (exit 0 only)
    seconds: float = 0.0                         # the compile's wall time (not written anywhere)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def compile_job(job: Job) -> Outcome:
    """Compile one scenario from its texts, in a scratch folder that is removed after. Errors of
    the spec or the solve are the outcome; only a bug in the compiler raises."""
    import time

    from compiler.diagnostics import CompileError, render_all
    from compiler.pipeline import CompileOptions, compile_spec

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="infra-compile-sweep-") as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(job.spec_text, encoding="utf-8")
        overlay = None
        if job.overlay_text is not None:
            overlay = Path(tmp) / "catalog.yaml"
            overlay.write_text(job.overlay_text, encoding="utf-8")
        start_from = None
        if job.start_from is not None:
            start_from = Path(tmp) / "base-plan.json"
            start_from.write_text(job.start_from, encoding="utf-8")
        options = CompileOptions(catalog=None if overlay is None else str(overlay), solver=job.solver,
                                 max_nodes=job.max_nodes, gap=job.gap, time_limit=job.time_limit,
                                 allow_unpriced_regions=job.allow_unpriced_regions,
                                 start_from=None if start_from is None else str(start_from))
        try:
            result = compile_spec(spec, options)
        except CompileError as exc:
            text = render_all(exc.diagnostics, exc.source)
            # the scratch folder's name means nothing to the reader: name the scenario's files
            text = text.replace(str(spec), f"{job.name}/spec.yaml")
            if overlay is not None:
                text = text.replace(str(overlay), f"{job.name}/catalog.yaml")
            return Outcome(job.name, exc.exit_code, text, {}, time.perf_counter() - t0)
    return Outcome(job.name, 0, "", dict(result.artifacts), time.perf_counter() - t0)


def _quiet_worker() -> None:
    """A pool worker leaves Ctrl-C to the sweep: the terminal sends SIGINT to the whole process
    group, and a worker's own KeyboardInterrupt would only print a traceback from inside the pool
    before the sweep terminates it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local(jobs: Sequence[Job], workers: int, on_done: Callable[[Outcome], None]) -> list[Outcome]:
    """A process pool of `workers` (spawned: no state inherited from the caller). Ctrl-C cancels
    what has not started and terminates the running workers before it propagates."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    by_name: dict[str, Outcome] = {}
    if workers <= 1:
        for job in jobs:
            by_name[job.name] = out = compile_job(job)
            on_done(out)
        return [by_name[j.name] for j in jobs]
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_worker)
    try:
        futures = {pool.submit(compile_job, job): job.name for job in jobs}
        for fut in as_completed(futures):
            by_name[futures[fut]] = out = fut.result()
            on_done(out)
    except BaseException:
        # shutdown(cancel_futures=True) drops the queued jobs but waits out the running ones (a
        # compile can take minutes); the executor has no public way to stop its workers
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [by_name[j.name] for j in jobs]


CONNECT_SECONDS = 30   # how long to wait for the Dask scheduler before giving up


def _dask(jobs: Sequence[Job], scheduler: str, on_done: Callable[[Outcome], None]) -> list[Outcome]:
    """Submit every job to the Dask scheduler at `scheduler` (tcp://host:8786); results come back
    to this process. Ctrl-C cancels every job on the cluster."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        from compiler.diagnostics import CompileError, Diagnostic

        raise CompileError([Diagnostic("E706", "--scheduler needs Dask's distributed package",
                                       hint="pip install 'infra-compile[dask]'")]) from None
    from compiler.diagnostics import CompileError, Diagnostic

    by_name: dict[str, Outcome] = {}
    try:
        client = Client(scheduler, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CompileError([Diagnostic("E707", f"cannot reach the Dask scheduler at '{scheduler}' "
                                       f"({type(exc).__name__}: {exc})",
                                       hint="start it (dask scheduler) or check the address: tcp://host:8786")]) from None
    with client:
        futures = [client.submit(compile_job, job, key=f"infra-compile-{k}-{job.name}", pure=False)
                   for k, job in enumerate(jobs)]
        try:
            for fut in as_completed(futures):
                out = fut.result()
                by_name[out.name] = out
                on_done(out)
        except BaseException:
            client.cancel(futures)
            raise
    return [by_name[j.name] for j in jobs]


def run_jobs(jobs: Sequence[Job], workers: int | None = None, scheduler: str | None = None,
             on_done: Callable[[Outcome], None] = lambda _o: None) -> tuple[Outcome, ...]:
    """Every job's outcome, in the jobs' order (whatever order they finish in)."""
    if scheduler:
        return tuple(_dask(jobs, scheduler, on_done))
    n = workers if workers else min(len(jobs), os.cpu_count() or 1)
    return tuple(_local(jobs, max(1, n), on_done))
