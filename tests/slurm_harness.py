"""Load generated Slurm files into a real slurmctld/slurmd and test-submit every job.

Follows shared/VALIDATORS.md: the generated slurm.conf is copied with only the keys that
must differ on a test machine taken out (controller host, auth, ports, state and spool
dirs), and a wrapper file sets those and `Include`s the copy. Nodes point at 127.0.0.1;
GPU device files become symlinks to /dev/null. slurmctld runs in the foreground, one
slurmd per NodeName line (`slurmd -G` first: it parses gres.conf), and each job script
goes through `sbatch --test-only`. Every daemon is stopped and waited for on exit.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

OVERRIDDEN = ("SlurmctldHost", "AuthType", "CredType", "StateSaveLocation", "SlurmdSpoolDir",
              "SlurmctldPidFile", "SlurmdPidFile", "SlurmctldPort", "SlurmdPort",
              "SlurmdTimeout", "SlurmUser", "SlurmdUser", "SlurmctldLogFile", "SlurmdLogFile",
              "SlurmdParameters", "ResumeProgram", "SuspendProgram")
POWER_PROGRAMS = {"ResumeProgram": "resume.sh", "SuspendProgram": "suspend.sh"}

# Log lines that come from the test machine, not from the generated files.
BENIGN = (
    "Configured MailProg is invalid",            # no mail program in a container
    "mpi/pmix",                                  # Debian's PMIx plugin without libpmix
    "Couldn't load specified plugin name for mpi/pmix",
    "MPI: Cannot create context for mpi/pmix",
    "Could not open job state file",             # fresh state directory
    "Could not open reservation state file",
    "Could not open node state file",
    "Could not open front_end state file",
    "Could not open trigger state file",
    "NOTE: Trying backup state save file",
    "xcpuinfo_hwloc_topo_load",                  # containers hide the CPU topology
    "High latency for 1000 calls to gettimeofday",  # a busy shared test machine
)


def available() -> bool:
    return all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "sbatch", "sinfo"))


def free_port_block(size: int = 1024, tries: int = 200) -> int:
    """The first port of `size` consecutive free TCP ports on 127.0.0.1, so that two test runs
    on one machine (or a slurmctld left behind) never meet on the same ports."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    top = max(_ephemeral_low() - size, 10001)   # below the kernel's ephemeral ports, which outgoing
    for _ in range(tries):          # connections (slurmctld's to its slurmds) take at random
        base = rng.randrange(10000, top)
        if all(_port_free(p) for p in range(base, base + size)):
            return base
    raise RuntimeError(f"no {size} consecutive free ports found")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class SlurmHarness:
    def __init__(self, conf_dir: Path, work: Path, port_base: int | None = None):
        self.conf_dir = Path(conf_dir)
        self.work = Path(work)
        self.port_base = port_base if port_base is not None else free_port_block()
        self.procs: list[subprocess.Popen] = []
        self.env = dict(os.environ, SLURM_CONF=str(self.work / "slurm.conf"))
        self.node_lines: list[tuple[str, str]] = []   # (first node, hostlist)
        self.nodes: list[str] = []                      # every static node, expanded
        self.cloud_nodes: list[str] = []                # State=CLOUD nodes: no slurmd until resumed
        self.programs: dict[str, Path] = {}             # power-saving programs, as installed here
        self.gres_output: dict[str, str] = {}

    # -- setup ---------------------------------------------------------------
    def _prepare(self) -> None:
        w = self.work
        for d in ("state", "spool", "log", "dev"):
            (w / d).mkdir(parents=True, exist_ok=True)
        for name in [f"nvidia{i}" for i in range(16)] + [f"renderD{128 + i}" for i in range(16)]:
            link = w / "dev" / name
            if not link.exists():
                link.symlink_to("/dev/null")
        keys = re.compile(r"^(%s)=" % "|".join(OVERRIDDEN), re.IGNORECASE)
        lines = []
        port = self.port_base + 2
        for line in (self.conf_dir / "slurm.conf").read_text().splitlines():
            key = line.split("=", 1)[0]
            if key in POWER_PROGRAMS:
                # The generated program, installed executable where the wrapper points.
                src = self.conf_dir / POWER_PROGRAMS[key]
                dst = w / POWER_PROGRAMS[key]
                shutil.copy(src, dst)
                dst.chmod(0o755)
                self.programs[key] = dst
                continue
            if keys.match(line):
                continue
            if line.startswith("NodeName=") and "State=CLOUD" in line.split():
                self.cloud_nodes.extend(self._expand(line.split()[0].split("=", 1)[1]))
            elif line.startswith("NodeName="):
                hostlist = line.split()[0].split("=", 1)[1]
                first = self._first_host(hostlist)
                self.node_lines.append((first, hostlist))
                # One slurmd per node, each on its own port (a port range per line).
                count = len(self._expand(hostlist))
                self.nodes.extend(self._expand(hostlist))
                line += f" NodeAddr=127.0.0.1 Port=[{port}-{port + count - 1}]" if count > 1 \
                    else f" NodeAddr=127.0.0.1 Port={port}"
                port += count
            lines.append(line)
        (w / "generated.conf").write_text("\n".join(lines) + "\n")
        gres = (self.conf_dir / "gres.conf").read_text()
        gres = gres.replace("File=/dev/nvidia", f"File={w}/dev/nvidia")
        gres = gres.replace("File=/dev/dri/renderD", f"File={w}/dev/renderD")
        (w / "gres.conf").write_text(gres)
        for name in ("topology.conf", "cgroup.conf"):
            shutil.copy(self.conf_dir / name, w / name)
        (w / "slurm.conf").write_text("\n".join([
            f"Include {w}/generated.conf",
            f"SlurmctldHost={socket.gethostname().split('.')[0]}",
            "AuthType=auth/none", "CredType=cred/none", "SlurmUser=root",
            f"StateSaveLocation={w}/state", f"SlurmdSpoolDir={w}/spool/%n",
            f"SlurmctldPidFile={w}/slurmctld.pid", f"SlurmdPidFile={w}/slurmd-%n.pid",
            f"SlurmctldPort={self.port_base}", f"SlurmdPort={self.port_base + 1}",
            "SlurmdTimeout=30", "SlurmdParameters=config_overrides",
            f"SlurmctldLogFile={w}/log/slurmctld.log", f"SlurmdLogFile={w}/log/slurmd-%n.log",
            *(f"{key}={path}" for key, path in sorted(self.programs.items())),
        ]) + "\n")

    @staticmethod
    def _expand(hostlist: str) -> list[str]:
        out = []
        for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", hostlist):
            m = re.match(r"^([^\[]*)\[(\d+)-(\d+)\]$", part)
            if not m:
                out.append(part)
                continue
            width = len(m.group(2))
            out += [f"{m.group(1)}{i:0{width}d}" for i in range(int(m.group(2)), int(m.group(3)) + 1)]
        return out

    @staticmethod
    def _first_host(hostlist: str) -> str:
        m = re.match(r"^([^\[]*)\[(\d+)", hostlist)
        return f"{m.group(1)}{m.group(2)}" if m else hostlist

    # -- daemons -------------------------------------------------------------
    def _spawn(self, *argv: str, log: str) -> subprocess.Popen:
        out = open(self.work / "log" / log, "w")
        proc = subprocess.Popen(list(argv), env=self.env, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        self.procs.append(proc)
        return proc

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def _wait(self, predicate, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a daemon exited while waiting for {what}:\n{self.log_text()}")
            if predicate():
                return
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}:\n{self.log_text()}")

    def start(self) -> "SlurmHarness":
        self._prepare()
        (self.work / "spool").mkdir(exist_ok=True)
        self._spawn("slurmctld", "-D", "-c", log="slurmctld.out")
        self._wait(lambda: self.run("sinfo", "-h").returncode == 0, "slurmctld")
        for node in self.nodes:
            (self.work / "spool" / node).mkdir(exist_ok=True)
        for node, _ in self.node_lines:
            gres = self.run("slurmd", "-G", "-N", node)
            if gres.returncode != 0:
                raise RuntimeError(f"slurmd -G -N {node} failed:\n{gres.stdout}{gres.stderr}")
            self.gres_output[node] = gres.stdout + gres.stderr
        for node in self.nodes:
            self._spawn("slurmd", "-D", "-N", node, log=f"slurmd-{node}.out")
        self._wait(lambda: not self.not_idle(), "every node to become idle", timeout=60)
        return self

    def not_idle(self) -> list[str]:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %T").stdout.split("\n")
        states = dict(line.split() for line in out if line.strip())
        return [n for n in self.nodes + self.cloud_nodes if not states.get(n, "").startswith("idle")]

    def node_state(self, node: str) -> str:
        return self.run("sinfo", "-h", "-N", "-n", node, "-o", "%T").stdout.strip()

    def gres(self, node: str) -> str:
        return self.run("scontrol", "show", "node", node).stdout

    def test_job(self, script: Path) -> subprocess.CompletedProcess:
        return self.run("sbatch", "--test-only", str(script))

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()

    def __enter__(self) -> "SlurmHarness":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- logs ----------------------------------------------------------------
    def log_text(self) -> str:
        parts = []
        for f in sorted((self.work / "log").glob("*")):
            parts.append(f"--- {f.name}\n{f.read_text(errors='replace')}")
        return "\n".join(parts)

    def errors(self) -> list[str]:
        """error:/fatal: lines in every log that the test machine does not explain."""
        bad = []
        for line in self.log_text().splitlines():
            if re.search(r"\b(error|fatal)\b:", line) and not any(b in line for b in BENIGN):
                bad.append(line)
        return bad
