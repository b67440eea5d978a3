"""One emulation run: build the network, start the forwarder and the agents, collect, tear down."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from .. import _core
from ..base.errors import EmulationError, Terminated
from ..run.result import Result
from ..run.source import read_source
from .netns import (RECEIVER_BASE, RECEIVER_NET, SENDER_BASE, TUN, Network, privilege_problem,
                    receiver_addr, sender_addr, sweep)
from .plan import Spec, prepare

AGENT = str(Path(__file__).with_name("agent.py"))
SINK_PORT = 9  # discard (RFC 863)
SETUP_MARGIN_NS = 300_000_000
RTT_SAMPLE_NS = 100_000_000

COMMON_SYSCTL = {
    "net.ipv6.conf.all.disable_ipv6": 1,
    "net.ipv6.conf.default.disable_ipv6": 1,
    "net.ipv4.tcp_no_metrics_save": 1,
}


class _Signals:
    """SIGTERM raises Terminated in the main thread for the duration of a run."""

    def __init__(self):
        self.old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            def on_term(signum, frame):
                raise Terminated()

            self.old = signal.signal(signal.SIGTERM, on_term)
        return self

    def shield(self):
        """From now on (cleanup), ignore SIGINT and SIGTERM."""
        if self.old is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.int_old = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
            if hasattr(self, "int_old"):
                signal.signal(signal.SIGINT, self.int_old)
        return False


def _dscp(level: int, in_profile: bool) -> int:
    """The DSCP of a priority level and in-profile mark (class selector bits, AF drop precedence 1)."""
    return ((min(max(level, 1), 8) - 1) << 3) | (2 if in_profile else 0)


class _Agent:
    def __init__(self, net: Network, ns: str, cfg: dict, label: str):
        self.label = label
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = net.spawn(ns, [sys.executable, "-u", AGENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=self.err, text=True, bufsize=1)
        self.proc.stdin.write(json.dumps(cfg) + "\n")
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        try:
            self.err.seek(0)
            lines = [x for x in self.err.read().strip().splitlines() if x.strip()]
            return lines[-1] if lines else ""
        except (OSError, ValueError):
            return ""

    def fail(self, what: str):
        tail = self.stderr_tail()
        raise EmulationError(f"the {self.label} agent {what}" + (f": {tail}" if tail else ""))

    def wait_ready(self, timeout: float):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if r else ""
        if line.strip() != "ready":
            self.fail("did not start")

    def start(self, t0: int):
        self.proc.stdin.write(json.dumps({"t0_ns": t0}) + "\n")
        self.proc.stdin.flush()

    def result(self, timeout: float) -> dict:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("did not report its results")
        lines = [x for x in (out or "").splitlines() if x.strip()]
        if not lines:
            self.fail(f"exited with status {self.proc.returncode} without results")
        return json.loads(lines[-1])


def _build(net: Network, spec: Spec) -> tuple[list[int], list[int], int, list[str]]:
    """Namespaces, TUN devices, addresses, routes. Returns (port fds, port of each host pair,
    receivers' port, sender namespace of each group)."""
    plan = spec.plan
    fds, pair_ports, group_ns = [], [], []
    for g in spec.groups:
        ns = net.namespace(f"s{g.index}")
        fds.append(net.tun(ns))
        group_ns.append(ns)
        settings = dict(COMMON_SYSCTL)
        if g.transport == "tcp":
            t = g.plan["tcp"]
            settings.update({"net.ipv4.tcp_sack": int(g.sack), "net.ipv4.tcp_ecn": 1 if t["ecn"] else 0})
        net.sysctl(ns, settings)
        if g.transport == "tcp":
            # the namespace's default, for a user command: the kernel allows only the modules of
            # net.ipv4.tcp_allowed_congestion_control outside the initial namespace (the agents set
            # theirs per socket, which root may do for any module)
            try:
                net.sysctl(ns, {"net.ipv4.tcp_congestion_control": g.cc})
            except EmulationError:
                pass
        hosts = [p["host"] for p in g.pairs]
        cmds = ["link set lo up", f"link set {TUN} mtu {g.mtu} txqueuelen 10000 up"]
        cmds += [f"addr add {sender_addr(h)}/32 dev {TUN}" for h in hosts]
        route = f"route add {RECEIVER_NET} dev {TUN} src {sender_addr(hosts[0])}"
        if g.transport == "tcp":
            t = g.plan["tcp"]
            route += f" initcwnd {max(1, round(t['initial_window']))} rto_min {max(1, round(t['min_rto_ns'] / 1e6))}ms"
        net.configure(ns, cmds + [route])
        _qdisc(ns)
        pair_ports += [len(fds) - 1] * len(hosts)
    rns = net.namespace("r")
    fds.append(net.tun(rns))
    net.sysctl(rns, dict(COMMON_SYSCTL, **{"net.ipv4.tcp_reflect_tos": 1, "net.ipv4.tcp_ecn": 2}))
    cmds = ["link set lo up", f"link set {TUN} mtu {spec.receiver_mtu} txqueuelen 10000 up"]
    cmds += [f"addr add {receiver_addr(i)}/32 dev {TUN}" for i in range(spec.n_pairs)]
    cmds.append(f"route add 10.1.0.0/16 dev {TUN} src {receiver_addr(0)}")
    for g in spec.groups:
        if g.transport != "tcp":
            continue
        t = g.plan["tcp"]
        window = min(t["max_window"] * t["mss"], 1 << 30)
        for p in g.pairs:
            h = p["host"]
            cmds.append(f"route add {sender_addr(h)}/32 dev {TUN} src {receiver_addr(h)} window {window} "
                        f"quickack {0 if t['delayed_ack'] else 1}")
    net.configure(rns, cmds)
    _qdisc(rns)
    del plan
    return fds, pair_ports, len(fds) - 1, group_ns + [rns]


def _qdisc(ns: str):
    """A plain FIFO on the TUN device (no second AQM in the sending host, whatever the system's
    default qdisc); the forwarder's access link is the host's real output queue."""
    subprocess.run(["tc", "-n", ns, "qdisc", "replace", "dev", TUN, "root", "pfifo", "limit", "10000"],
                   capture_output=True)


def _sender_cfg(spec: Spec, g, duration: int, warmup: int) -> dict:
    flows = []
    for p in g.pairs:
        h = p["host"]
        f = {"flow_id": p["flow_id"], "src": sender_addr(h), "dst": receiver_addr(h), "start_ns": p["start_ns"],
             "stop_ns": g.plan["stop_ns"], "tos": _dscp(g.plan["priority"], g.plan["in_profile"]) << 2}
        if g.transport == "tcp":
            f.update(kind="tcp", cc=g.cc, size=g.plan["size"])
        else:
            f.update(kind="udp", rate_bps=g.plan["udp"]["rate_bps"], packet_size=g.plan["udp"]["packet_size"],
                     bursts=p["bursts"])
        flows.append(f)
    return {"role": "sender", "port": SINK_PORT, "duration_ns": duration, "warmup_ns": warmup,
            "rtt_sample_ns": RTT_SAMPLE_NS, "series_ns": spec.plan.get("flow_series_interval_ns"), "flows": flows}


def emulate(
    scenario,
    seed: int | None = None,
    overrides: Sequence[str] = (),
    cc=(),
    cmd: Sequence[str] | None = None,
    cmd_group: str | None = None,
    server: Sequence[str] | None = None,
    progress: Callable[[float], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> Result:
    """Emulate a scenario with real Linux TCP/UDP through aqmlab's queues; returns a Result like
    :func:`aqmlab.run` (``summary["emulation"]`` tells how the run went).

    ``cc``: ``"bbr"`` or ``["tcp=cubic", ...]`` replaces the Linux congestion control of every / one TCP
    group. ``cmd``: argv of a command run at time 0 in the namespace of group ``cmd_group`` (default: the
    first), as host pair 0 of that group; ``server``: argv of a command run in the receivers' namespace
    before time 0. Needs root. Raises ``ScenarioError`` for a bad scenario and ``EmulationError`` (one line)
    for anything emulation cannot do.
    """
    from .results import assemble

    log = log or (lambda s: None)
    src = read_source(scenario)
    plan = json.loads(_core.emulation_plan(src.text, src.name, list(overrides), seed))
    spec = prepare(plan, cc, cmd_group)
    problem = privilege_problem()
    if problem:
        raise EmulationError(problem)
    for w in spec.warnings:
        log(f"warning: {w}")
    removed = sweep()
    if removed:
        log(f"removed {len(removed)} network namespace(s) left by an interrupted run: {', '.join(removed)}")
    duration, warmup = plan["duration_ns"], plan["warmup_ns"]
    net = Network()
    fw = None
    box: dict = {}
    th = None
    t_wall = time.perf_counter()
    cmd_info = None
    with _Signals() as sig:
        try:
            fds, pair_ports, rport, nss = _build(net, spec)
            receiver = _Agent(net, nss[-1], {"role": "receiver", "port": SINK_PORT, "duration_ns": duration,
                                             "warmup_ns": warmup}, "receiver")
            senders = [_Agent(net, nss[g.index], _sender_cfg(spec, g, duration, warmup), f"{g.name!r} sender")
                       for g in spec.groups]
            agents = [receiver] + senders
            for a in agents:
                a.wait_ready(20.0)
            if server:
                net.spawn(nss[-1], list(server), stdin=subprocess.DEVNULL)
            t0 = _core.monotonic_ns() + SETUP_MARGIN_NS
            fw = _core.Forwarder(src.text, src.name, list(overrides), seed, fds, pair_ports, rport, SENDER_BASE,
                                 RECEIVER_BASE, spec.receiver_mtu, t0)

            def forward():
                try:
                    box["report"] = fw.run()
                except BaseException as e:  # noqa: BLE001 - handed to the main thread
                    box["error"] = e

            th = threading.Thread(target=forward, name="aqmlab-forwarder", daemon=True)
            th.start()
            for a in agents:
                a.start(t0)
            user = None
            if cmd:
                time.sleep(max(t0 - _core.monotonic_ns(), 0) / 1e9)
                host = spec.cmd_group.pairs[0]["host"]
                env = dict(os.environ, AQMLAB_SENDER=sender_addr(host), AQMLAB_RECEIVER=receiver_addr(host),
                           AQMLAB_DURATION=f"{duration / 1e9:g}", AQMLAB_PORT=str(SINK_PORT))
                try:
                    user = net.spawn(nss[spec.cmd_group.index], list(cmd), env=env, stdin=subprocess.DEVNULL)
                except OSError as e:
                    raise EmulationError(f"cannot run {cmd[0]}: {e}")
                cmd_info = {"argv": list(cmd), "group": spec.cmd_group.name, "sender": sender_addr(host),
                            "receiver": receiver_addr(host)}
            while th.is_alive():
                th.join(0.1)
                now = fw.now_s
                if progress is not None:
                    progress(now)
                if now < duration / 1e9 - 0.5:
                    for a in agents:
                        if a.proc.poll() is not None:
                            a.fail(f"stopped early (exit status {a.proc.returncode})")
            if "error" in box:
                raise box["error"]
            if user is not None:
                rc = user.poll()
                cmd_info["exit_status"] = rc
                cmd_info["finished"] = rc is not None
            reports = [a.result(15.0) for a in agents]
            tun_drops = net.tun_drops()
        finally:
            sig.shield()
            if fw is not None:
                fw.stop()
            if th is not None:
                th.join(10.0)
            net.close()
    wall = time.perf_counter() - t_wall
    res = assemble(spec, box["report"], reports[0], reports[1:], overrides=list(overrides), cmd=cmd_info,
                   tun_drops=tun_drops, wall=wall)
    return res
