"""What an emulation run will do: the scenario resolved by the engine (`_core.emulation_plan`),
checked for what emulation supports, with each TCP group's Linux congestion control.

Mapping of the scenario's TCP variants onto Linux (docs/emulation.md):

=================  ==================================  ============================================
scenario variant   Linux congestion control            loss recovery
=================  ==================================  ============================================
``reno``           ``reno``                            SACK off: Linux's NewReno (RFC 6582); Linux
                                                       has no plain Reno recovery
``newreno``        ``reno``                            SACK off (NewReno)
``sack``           ``reno``                            SACK on (RFC 6675-style, Linux's own)
``cubic``          ``cubic``                           SACK on if ``tcp.recovery`` is ``sack``
``vegas``          ``vegas`` (module ``tcp_vegas``)    SACK on if ``tcp.recovery`` is ``sack``
``bbr``            ``bbr`` (module ``tcp_bbr``: v1)    SACK on if ``tcp.recovery`` is ``sack``
``dctcp``          ``dctcp`` (module ``tcp_dctcp``)    SACK on if ``tcp.recovery`` is ``sack``
``prague``         ``prague`` (out-of-tree)            SACK on if ``tcp.recovery`` is ``sack``
=================  ==================================  ============================================

A variant whose module this kernel does not offer (``net.ipv4.tcp_available_congestion_control``)
is a one-line plan error naming ``flows[i].tcp.variant``.

``--cc NAME`` (every TCP group) or ``--cc GROUP=NAME`` replaces the congestion control with any
module the kernel offers (``bbr``, ...); SACK still follows the group's recovery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import PlanError
from .netns import MAX_PAIRS

LINUX_CC = {"reno": "reno", "newreno": "reno", "sack": "reno", "cubic": "cubic", "vegas": "vegas", "bbr": "bbr",
             "dctcp": "dctcp", "prague": "prague"}
#: modules no mainline kernel has, and where they come from
OUT_OF_TREE = {"prague": "tcp_prague is an out-of-tree module (the L4S team's kernel tree)"}
APPS = ("bulk", "cbr", "onoff")
MAX_LEVEL = 8
MIN_MSS, MAX_MTU = 128, 9000
UDP_MIN = 28 + 12


def available_cc() -> list[str]:
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


@dataclass
class Group:
    index: int
    name: str
    transport: str
    app: str
    plan: dict
    cc: str | None = None
    sack: bool = False
    mtu: int = 1500

    @property
    def pairs(self) -> list[dict]:
        return self.plan["pairs"]


@dataclass
class Spec:
    plan: dict
    groups: list[Group]
    n_pairs: int
    receiver_mtu: int
    warnings: list[str] = field(default_factory=list)
    cmd_group: Group | None = None


def parse_cc(options) -> dict[str | None, str]:
    """``--cc`` values: ``NAME`` for every TCP group (key None) or ``GROUP=NAME``."""
    out: dict[str | None, str] = {}
    if isinstance(options, str):
        options = [options]
    if isinstance(options, dict):
        return dict(options)
    for o in options or ():
        g, sep, name = o.partition("=")
        if not sep:
            g, name = None, o
        name = name.strip()
        if not name:
            raise PlanError(f"--cc {o}: give a congestion control name, e.g. --cc bbr or --cc tcp=cubic")
        out[g.strip() if g else None] = name
    return out


def prepare(plan: dict, cc_options=(), cmd_group: str | None = None) -> Spec:
    """Check `plan` for emulation and resolve each group's congestion control and MTU."""
    cc_opt = parse_cc(cc_options)
    avail = available_cc()
    names = [g["name"] for g in plan["groups"]]
    for g in cc_opt:
        if g is not None and g not in names:
            raise PlanError(f"--cc {g}={cc_opt[g]}: no flow group named {g!r} (groups: {', '.join(names)})")
    groups = []
    n_pairs = sum(len(g["pairs"]) for g in plan["groups"])
    if n_pairs > MAX_PAIRS:
        raise PlanError(f"flows: {n_pairs} host pairs; emulation supports at most {MAX_PAIRS}")
    for i, g in enumerate(plan["groups"]):
        path = f"flows[{i}]"
        if g["app"] not in APPS:
            app = g["app"]
            raise PlanError(f'{path}.app: "{app}" cannot be emulated yet; aqmlab emulate runs bulk TCP and cbr or '
                            "onoff UDP groups")
        if g["priority"] > MAX_LEVEL:
            raise PlanError(f"{path}.priority: emulation carries priority levels 1-{MAX_LEVEL} in the DSCP class "
                            f"selector bits, got {g['priority']}")
        grp = Group(i, g["name"], g["transport"], g["app"], g)
        if g["transport"] == "tcp":
            t = g["tcp"]
            if not MIN_MSS <= t["mss"] <= MAX_MTU:
                raise PlanError(f"{path}.tcp.mss: emulation needs {MIN_MSS}-{MAX_MTU} bytes (the packet size on the "
                                f"wire, headers included), got {t['mss']}")
            explicit = g["name"] in cc_opt or None in cc_opt
            cc = cc_opt.get(g["name"], cc_opt.get(None, LINUX_CC.get(t["variant"], t["variant"])))
            if avail and cc not in avail:
                where = f"--cc {cc}" if explicit else f"{path}.tcp.variant: {t['variant']!r} runs as Linux's {cc!r}, which"
                hint = OUT_OF_TREE.get(cc, f"try `modprobe tcp_{cc}`")
                raise PlanError(f"{where} is not offered by this kernel (available: {' '.join(avail)}; {hint})")
            grp.cc = cc
            grp.sack = t["recovery"] == "sack"
            grp.mtu = t["mss"]
        else:
            size = g["udp"]["packet_size"]
            if not UDP_MIN <= size <= MAX_MTU:
                raise PlanError(f"{path}.packet_size: emulation needs {UDP_MIN}-{MAX_MTU} bytes (IP and UDP headers "
                                f"and the agent's 12-byte sequence header included), got {size}")
            grp.mtu = max(1500, size)
        groups.append(grp)
    spec = Spec(plan, groups, n_pairs, max([1500] + [g.mtu for g in groups]))
    if plan["bottleneck"]["rate_bps"] > 1e9:
        spec.warnings.append("bottleneck.rate: above 1 Gb/s the forwarder cannot keep up (docs/emulation.md, limits)")
    if cmd_group is not None:
        match = [g for g in groups if g.name == cmd_group]
        if not match:
            raise PlanError(f"--cmd-group {cmd_group}: no flow group of that name (groups: {', '.join(names)})")
        spec.cmd_group = match[0]
    elif groups:
        spec.cmd_group = groups[0]
    return spec
