"""Network namespaces, TUN devices, addresses and processes of one emulation run.

Everything a run creates is registered in a :class:`Network` the moment it exists and removed by
:meth:`Network.close`, which the emulator calls on every exit path (normal end, error, Ctrl-C,
SIGTERM). What a killed run (SIGKILL, power loss) leaves behind is found by its name at the start
of the next run and removed by :func:`sweep`: namespaces are named ``aqmlab-<pid>-<run>-<role>``
and belong to a dead process. TUN devices need no sweep: they are not persistent and vanish with
the forwarder's descriptors; the agents die with the emulator (PR_SET_PDEATHSIG).

Addressing plan (the same in every run): host pair ``i`` (numbered across flow groups in file
order) has sender address ``10.1.0.0 + i + 1`` in its group's namespace and receiver address
``10.2.0.0 + i + 1`` in the receivers' namespace; pair 0 is ``10.1.0.1`` → ``10.2.0.1``. The
namespaces have no other interface than ``lo`` and the TUN device ``aqm0``, so no packet can leave
them except through the forwarder.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..base.errors import EmulationError

PREFIX = "aqmlab-"
NETNS_DIR = Path("/run/netns")
SENDER_BASE = int(ipaddress.IPv4Address("10.1.0.0"))
RECEIVER_BASE = int(ipaddress.IPv4Address("10.2.0.0"))
SENDER_NET = "10.1.0.0/16"
RECEIVER_NET = "10.2.0.0/16"
MAX_PAIRS = 65534
TUN = "aqm0"
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21

_NAME = re.compile(r"^aqmlab-(\d+)-")
_runs = 0


def sender_addr(i: int) -> str:
    return str(ipaddress.IPv4Address(SENDER_BASE + i + 1))


def receiver_addr(i: int) -> str:
    return str(ipaddress.IPv4Address(RECEIVER_BASE + i + 1))


def _caps() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def privilege_problem() -> str | None:
    """Why this process cannot emulate (one line), or None."""
    caps = _caps()
    if not (caps >> CAP_NET_ADMIN & 1 and caps >> CAP_SYS_ADMIN & 1):
        return ("aqmlab emulate needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces "
                "and TUN devices; run it with sudo")
    if shutil.which("ip") is None:
        return "aqmlab emulate needs the `ip` command of iproute2 (Debian: apt-get install iproute2)"
    if not Path("/dev/net/tun").exists():
        return "aqmlab emulate needs /dev/net/tun (the tun kernel module: modprobe tun)"
    return None


def ip(*args: str, stdin: str | None = None) -> str:
    """Run `ip ARGS`; raises EmulationError with ip's own message."""
    r = subprocess.run(["ip", *args], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise EmulationError(f"ip {' '.join(args[:4])}: {msg[-1] if msg else f'exit status {r.returncode}'}")
    return r.stdout


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"aqmlab" in cmd or b"python" in cmd or b"pytest" in cmd


def _namespaces() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(PREFIX))
    except OSError:
        return []


def _kill_members(ns: str):
    """SIGKILL every process whose network namespace is `ns`."""
    try:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    except OSError:
        return
    for p in pids:
        try:
            os.kill(int(p), signal.SIGKILL)
        except (ProcessLookupError, ValueError, PermissionError):
            pass


def _delete(ns: str):
    _kill_members(ns)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def sweep() -> list[str]:
    """Remove the namespaces (and their processes) of runs whose process is gone; returns them."""
    gone = []
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not _pid_alive(int(m.group(1))):
            _delete(ns)
            gone.append(ns)
    return gone


def leftovers(pid: int | None = None) -> list[str]:
    """Namespaces of aqmlab runs present now (of process `pid` only, if given)."""
    names = _namespaces()
    return names if pid is None else [n for n in names if n.startswith(f"{PREFIX}{pid}-")]


class Network:
    """The namespaces, TUN descriptors and processes of one run."""

    def __init__(self):
        global _runs
        _runs += 1
        self.tag = f"{PREFIX}{os.getpid()}-{_runs}"
        self.namespaces: list[str] = []
        self.fds: list[int] = []
        self.procs: list[subprocess.Popen] = []
        self.closed = False

    def namespace(self, role: str) -> str:
        name = f"{self.tag}-{role}"
        self.namespaces.append(name)  # registered first: a half-made namespace is still removed
        ip("netns", "add", name)
        return name

    def tun(self, ns: str) -> int:
        from .. import _core

        try:
            fd = _core.tun_open(str(NETNS_DIR / ns), TUN)
        except OSError as e:
            raise EmulationError(f"cannot create a TUN device: {e}")
        self.fds.append(fd)
        return fd

    def sysctl(self, ns: str, settings: dict[str, object]):
        args = [f"{k}={v}" for k, v in settings.items()]
        r = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-e", "-w", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise EmulationError(f"sysctl in {ns}: {r.stderr.strip() or r.returncode}")

    def configure(self, ns: str, commands: list[str]):
        """`ip -n NS -batch -` over `commands`."""
        ip("-n", ns, "-batch", "-", stdin="\n".join(commands) + "\n")

    def spawn(self, ns: str, argv: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)
        self.procs.append(p)
        return p

    def tun_drops(self) -> int:
        """Packets the TUN devices' queues dropped (the forwarder did not read them in time)."""
        total = 0
        for ns in self.namespaces:
            try:
                out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", TUN], capture_output=True, text=True)
                import json

                for dev in json.loads(out.stdout or "[]"):
                    total += int(dev.get("stats64", {}).get("tx", {}).get("dropped", 0))
            except (OSError, ValueError):
                pass
        return total

    def close(self):
        """Stop every process, close the TUN devices, delete the namespaces. Idempotent; never raises."""
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.terminate()
                except OSError:
                    pass
        deadline = time.monotonic() + 2.0
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                try:
                    p.kill()
                    p.wait(2.0)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            for f in (p.stdin, p.stdout, p.stderr):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
        for ns in self.namespaces:
            _kill_members(ns)
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
