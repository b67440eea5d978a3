"""An aqmlab scenario as ns-2.35 can run it: the translator's first half (docs/crosscheck.md).

:func:`make_plan` reads the *resolved* scenario (every default filled in, as ``aqmlab run`` writes
it into ``scenario.toml``) and the engine's flow plan (``_core.flow_plan``: each static flow's
drawn start time and its routes), and returns a :class:`Plan`: the nodes, the links with their ns-2
queue and its settings, and every flow with its ns-2 agent, sink and application and the values
they are given. :mod:`aqmlab.ns2.script` writes the plan as a Tcl script.

Every key ns-2.35 cannot express is refused with a :class:`~aqmlab.base.errors.ScenarioError`
whose text is ``<key path>: ns-2.35 cannot express ...`` (a measurement the ns-2 engine does not
make: ``<key path>: the ns-2.35 engine does not measure ...``). Mappings that are as close as ns-2
allows but not exact (ON/OFF sources) are listed in :attr:`Plan.notes`, which the results carry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .. import _core
from ..base.compat import tomllib
from ..base.errors import ScenarioError
from ..base.units import parse_duration, parse_rate, parse_size

CANNOT = "ns-2.35 cannot express"
NOT_MEASURED = "the ns-2.35 engine does not measure"
CANNOT_SIZE = "ns-2.35 cannot hold the routes of"
#: ns-2's RNG takes seeds 1 .. 2^31 - 2 (tools/rng.cc: RNG::command "seed")
NS2_SEED_SPAN = (1 << 31) - 2


def ns2_seed(seed: int) -> int:
    """The seed ns-2's ``defaultRNG`` gets for aqmlab seed ``seed``: ``1 + seed mod (2^31 - 2)``
    (ns-2 refuses 0, which would mean "seed from the clock", and values of 2^31 - 1 and above)."""
    return 1 + int(seed) % NS2_SEED_SPAN


def refuse(key: str, why: str) -> ScenarioError:
    return ScenarioError(f"{key}: {CANNOT} {why}")


@dataclass
class Queue:
    """A link's queue in ns-2: its class (after ``Queue/``), its ``queue-limit`` and its settings."""

    kind: str
    limit: int
    settings: list = field(default_factory=list)  # (name, value text)
    #: the aqmlab type reported in the results (``summary.links.<l>.aqm``)
    aqm: str = "droptail"
    #: state sampled into the time series: (aqmlab column, ns-2 variable)
    state: tuple = ()


@dataclass
class Link:
    """One simplex link of the ns-2 network (ns-2 links are one-way, as aqmlab's)."""

    name: str  # aqmlab's link name; "access" for a flow's own access links
    src: int  # node indices (= ns-2 node ids: the script creates them in this order)
    dst: int
    rate_bps: int
    delay_ns: int
    queue: Queue
    limit: int  # aqmlab's limit and unit, as the results report them
    queue_unit: str = "packets"
    measured: bool = False
    index: int = -1  # position among the network's links (-1: an access link)
    #: what the trace records on this link: "+" arrivals, "-" transmissions, "d" drops, "r" receptions
    trace: set = field(default_factory=set)


@dataclass
class Flow:
    fid: int
    group: int  # index into Plan.groups
    index: int  # within its group
    transport: str
    app: str
    src: int  # host node indices
    dst: int
    start_ns: int
    path: list  # link indices, data
    ack_path: list  # link indices, ACKs
    host: int = 0
    stop_ns: int | None = None
    size: int | None = None  # bulk transfer size (bytes)
    agent: str = ""  # ns-2 class of the sending agent
    sink: str = ""  # ns-2 class of the receiving agent
    settings: list = field(default_factory=list)  # (name, value text) for the agent
    sink_settings: list = field(default_factory=list)
    source: str = ""  # ns-2 application class (UDP)
    source_settings: list = field(default_factory=list)
    packet_size: int = 1000  # data packet size on the wire (TCP mss, UDP packet_size)
    rtt_prop_ns: int = 0


@dataclass
class Group:
    name: str
    transport: str
    app: str
    variant: str
    recovery: str
    priority: int
    frm: object
    to: object
    count: int
    mss: int = 0


@dataclass
class Plan:
    name: str
    description: str
    seed: int
    duration_ns: int
    warmup_ns: int
    sample_ns: int
    topology: dict  # type, routing, nodes (names)
    nodes: list  # node names, index = ns-2 node id
    links: list  # Link
    flows: list  # Flow
    groups: list  # Group
    notes: list = field(default_factory=list)
    series_ns: int | None = None  # simulation.flow_series_interval

    @property
    def ns2_seed(self) -> int:
        return ns2_seed(self.seed)

    def measured(self) -> list:
        return [i for i, l in enumerate(self.links) if l.measured]


# ----------------------------------------------------------------------------- units


def _ns(v) -> int:
    return int(round(parse_duration(v) * 1e9)) if isinstance(v, str) else int(round(float(v) * 1e9))


def _bps(v) -> int:
    r = parse_rate(v) if isinstance(v, str) else float(v)
    return int(round(r))


def _bytes(v) -> int:
    return parse_size(v) if isinstance(v, str) else int(v)


def _num(x: float) -> str:
    """A number as Tcl text, exact for integers and with every digit of a float."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _secs(ns: int) -> str:
    return f"{ns / 1e9:.9f}".rstrip("0").rstrip(".") or "0"


# ----------------------------------------------------------------------------- queues


def _buffer_sizes(sizes: set, key: str, link: dict, what: str) -> None:
    """A byte buffer whose discipline (ns-2's RED, PI) admits while the waiting bytes are below the
    limit, where aqmlab admits while they and the arrival fit: equal when every packet on the link
    has one size that divides the limit."""
    limit = int(link["limit"])
    if len(sizes) != 1 or limit % next(iter(sizes)):
        raise refuse(f"{key}.queue_unit",
                     f"a byte buffer for {what} exactly: ns-2.35 admits a packet while the waiting bytes are below "
                     f"the limit, aqmlab while they and the packet fit; the two agree only when every packet on the "
                     f"link has one size that divides limit = {limit} (sizes here: "
                     f"{', '.join(map(str, sorted(sizes))) or 'none'})")


def queue_for(link: dict, key: str, sizes: set) -> Queue:
    """The ns-2 queue of an aqmlab link (``link`` is its resolved table, ``key`` its key path,
    ``sizes`` the packet sizes that cross it)."""
    aqm = dict(link.get("aqm") or {"type": "droptail"})
    kind = aqm.pop("type")
    unit = link.get("queue_unit", "packets")
    limit = int(link["limit"])
    k = f"{key}.aqm"
    if float(link.get("loss_rate", 0.0)) != 0.0:
        raise ScenarioError(f"{key}.loss_rate: not translated to ns-2.35: its ErrorModule drops after the queue "
                            "(SimpleLink errormodule), aqmlab before it; give 0")
    if aqm.get("ecn"):
        raise ScenarioError(f"{k}.ecn: not translated to ns-2.35 (the crosscheck covers drops, not ECN marks); "
                            "give false")
    aqm.pop("ecn", None)
    if kind == "droptail":
        # ns-2's DropTail refuses an arrival when length + 1 >= limit_ (drop-tail.cc): it holds limit_ - 1
        # waiting packets, so aqmlab's limit L (waiting packets) is ns-2's L + 1; in bytes, it refuses
        # when bytes + size >= limit_ * mean_pktsize_, so mean_pktsize_ 1 and L + 1 are exact
        if unit == "bytes":
            return Queue("DropTail", limit + 1, [("queue_in_bytes_", "true"), ("mean_pktsize_", "1"),
                                                 ("drop_front_", "false"), ("summarystats_", "false")])
        return Queue("DropTail", limit + 1, [("queue_in_bytes_", "false"), ("drop_front_", "false"),
                                             ("summarystats_", "false")])
    if kind == "red":
        return _red(aqm, k, unit, limit, sizes, link, key)
    if kind == "pi":
        return _pi(aqm, k, unit, limit, sizes, link, key)
    if kind == "rem":
        return _rem(aqm, k, key, unit, limit)
    raise refuse(f"{k}.type", f"{kind!r}: ns-2.35 has no such queue (the translator maps droptail, red with "
                              "variant \"ns2\", pi and rem)")


def _red(a: dict, k: str, unit: str, limit: int, sizes: set, link: dict, key: str) -> Queue:
    if a["variant"] != "ns2":
        raise refuse(f"{k}.variant", f"RED variant {a['variant']!r}: ns-2.35's Queue/RED is variant \"ns2\" (it "
                                     "tests no arrival while at most one packet waits, admits the first arrival "
                                     "of the drop region untested, spaces drops by the \"wait\" rule and ages "
                                     "the average by whole packet times); give variant = \"ns2\"")
    if not a["uniformise"]:
        raise refuse(f"{k}.uniformise", "false: Queue/RED always spaces its drops by count (wait_ true is "
                                        "variant ns2's rule, wait_ false FJ93's); give true")
    if a["idle_rule"] != "link_idle":
        raise refuse(f"{k}.idle_rule", f"{a['idle_rule']!r}: Queue/RED starts an idle period when the link "
                                       "asks for a packet and finds the queue empty (\"link_idle\")")
    mean = int(a["mean_pkt_size"])
    byte_mode = a["mode"] == "byte"
    if byte_mode and int(a["max_pkt_size"]) != mean:
        raise refuse(f"{k}.max_pkt_size", f"{a['max_pkt_size']} apart from mean_pkt_size ({mean}): Queue/RED's "
                                          "byte mode scales by mean_pktsize_, which also sets its idle aging")
    s = [("queue_in_bytes_", "true" if unit == "bytes" else "false"), ("bytes_", "true" if byte_mode else "false"),
         ("mean_pktsize_", str(mean)), ("q_weight_", _num(a["w_q"])), ("linterm_", _num(1.0 / float(a["max_p"]))),
         ("gentle_", "true" if a["gentle"] else "false"), ("wait_", "true"), ("setbit_", "false"),
         ("use_mark_p_", "true"), ("mark_p_", "0.1"), ("drop_tail_", "true"), ("drop_front_", "false"),
         ("drop_rand_", "false"), ("ns1_compat_", "false"), ("adaptive_", "0"), ("cautious_", "0"),
         ("feng_adaptive_", "0"), ("summarystats_", "false")]
    qlim = limit
    if unit == "bytes":
        # thresholds and limit are counted in mean_pktsize_ units (red.cc reset(), enque())
        _buffer_sizes(sizes, key, link, "RED")
        if limit % mean:
            raise refuse(f"{key}.limit", f"{limit} bytes: Queue/RED's byte limit is limit_ * mean_pktsize_ "
                                         f"({mean}), so it must be a multiple of mean_pkt_size")
        qlim = limit // mean
        s += [("thresh_", _num(float(a["min_th"]) / mean)), ("maxthresh_", _num(float(a["max_th"]) / mean))]
    else:
        s += [("thresh_", _num(a["min_th"])), ("maxthresh_", _num(a["max_th"]))]
    return Queue("RED", qlim, s, "red", (("aqm_avg", "ave_"),))


def _pi(a: dict, k: str, unit: str, limit: int, sizes: set, link: dict, key: str) -> Queue:
    mean = int(a["mean_pkt_size"])
    byte_mode = a["mode"] == "byte"
    if byte_mode != (unit == "bytes"):
        raise refuse(f"{k}.mode" if byte_mode else f"{key}.queue_unit",
                     f"PI in {a['mode']} mode over a buffer in {unit}: Queue/PI measures and limits its queue in "
                     "one unit (queue_in_bytes_)")
    qlim = limit
    if byte_mode:
        _buffer_sizes(sizes, key, link, "PI")
        if limit % mean:
            raise refuse(f"{key}.limit", f"{limit} bytes: Queue/PI's byte limit is limit_ * mean_pktsize_ "
                                         f"({mean}), so it must be a multiple of mean_pkt_size")
        qlim = limit // mean
    # PI refuses an arrival when the queue (before it) is at limit_ (pi.cc enque): limit_ = L
    s = [("bytes_", "true" if byte_mode else "false"), ("queue_in_bytes_", "true" if byte_mode else "false"),
         ("a_", _num(a["a"])), ("b_", _num(a["b"])), ("w_", _num(a["w"])), ("qref_", _num(a["q_ref"])),
         ("mean_pktsize_", str(mean)), ("setbit_", "false")]
    return Queue("PI", qlim, s, "pi", (("aqm_p", "prob_"),))


def _rem(a: dict, k: str, key: str, unit: str, limit: int) -> Queue:
    if float(a["alpha"]) != 0.1:
        raise refuse(f"{k}.alpha", f"{a['alpha']}: Queue/REM's weight of the backlog mismatch is the constant 0.1 "
                                   "(rem.cc run_updaterule)")
    if unit != "packets":
        raise refuse(f"{key}.queue_unit",
                     "bytes with REM: Queue/REM's byte mode (qib_) also counts its input and backlog in mean-size "
                     "packets, where aqmlab's REM counts packets whatever the buffer's unit")
    # REM enqueues, then drops the arrival if the queue is at limit_ (rem.cc enque): it holds limit_ - 1
    s = [("gamma_", _num(a["gamma"])), ("phi_", _num(a["phi"])), ("inw_", _num(a["inw"])),
         ("mean_pktsize_", str(int(a["mean_pkt_size"]))), ("pupdtime_", _num(_ns(a["t_upd"]) / 1e9)),
         ("pbo_", _num(a["b0"])), ("markpkts_", "false"), ("qib_", "false")]
    return Queue("REM", limit + 1, s, "rem", (("aqm_p", "prob_"),))


# ----------------------------------------------------------------------------- TCP

#: the aqmlab variants ns-2.35 has as agents, with the recovery each agent implements
AGENTS = {"reno": ("Agent/TCP/Reno", "reno"), "newreno": ("Agent/TCP/Newreno", "newreno"),
          "sack": ("Agent/TCP/Sack1", "sack"), "vegas": ("Agent/TCP/Vegas", "reno")}

#: Agent/TCP variables every agent is given explicitly, whatever ns-2's defaults (the aqmlab sender
#: they correspond to: no SYN exchange, no header bytes, per-ACK window growth by one segment per
#: RTT in congestion avoidance, RFC 2988 timer with the minimum applied before the back-off, ...)
TCP_FIXED = [
    ("syn_", "false"), ("delay_growth_", "false"), ("useHeaders_", "false"), ("tcpip_base_hdr_size_", "40"),
    ("windowOption_", "1"), ("windowInitOption_", "1"), ("maxburst_", "0"), ("aggressive_maxburst_", "1"),
    ("rfc2988_", "true"), ("timestamps_", "false"), ("ts_resetRTO_", "false"), ("maxcwnd_", "0"),
    ("max_ssthresh_", "0"), ("overhead_", "0"), ("ecn_", "0"), ("slow_start_restart_", "true"),
    ("restart_bugfix_", "true"), ("bugFix_", "true"), ("precisionReduce_", "true"), ("T_SRTT_BITS", "3"),
    ("T_RTTVAR_BITS", "2"), ("rttvar_exp_", "2"), ("srtt_init_", "0"), ("rttvar_init_", "12"),
    ("decrease_num_", "0.5"), ("increase_num_", "1.0"), ("noFastRetrans_", "false"), ("frto_enabled_", "0"),
    ("sfrto_enabled_", "0"), ("LimTransmitFix_", "false"), ("SetCWRonRetransmit_", "true"), ("timerfix_", "true"),
    ("partial_ack_", "false"), ("exitFastRetrans_", "true"), ("QOption_", "0"), ("EnblRTTCtr_", "0"),
    ("CoarseTimer_", "0"), ("qs_enabled_", "false"), ("bugfix_ss_", "1"), ("control_increase_", "0"),
    ("oldCode_", "false"), ("numdupacksFrac_", "-1"), ("max_connects_", "-1"),
]
NEWRENO_FIXED = [("newreno_changes_", "0"), ("exit_recovery_fix_", "0")]
SINK_FIXED = [("ts_echo_bugfix_", "true"), ("ts_echo_rfc1323_", "false"), ("RFC2581_immediate_ack_", "true"),
              ("SYN_immediate_ack_", "true"), ("generateDSacks_", "false"), ("qs_enabled_", "false"),
              ("ecn_syn_", "false"), ("maxSackBlocks_", "3")]
#: the largest back-off multiplier aqmlab writes for "no cap" (tcp/presets.rs MAX_BACKOFF_EXP)
NO_BACKOFF_CAP = 1 << 20


def tcp_agent(t: dict, key: str) -> tuple[str, str, list, list]:
    """(agent class, sink class, agent settings, sink settings) for a group's resolved ``[flows.tcp]``."""
    variant = t["variant"]
    if variant not in AGENTS:
        raise refuse(f"{key}.variant", f"{variant!r}: ns-2.35's one-way agents are Reno, Newreno, Sack1 and Vegas "
                                       "(its Linux agents are a different code base)")
    agent, recovery = AGENTS[variant]
    if t["recovery"] != recovery:
        raise refuse(f"{key}.recovery", f"{t['recovery']!r} under variant {variant!r}: each ns-2 agent has its "
                                        f"own loss recovery ({recovery})")
    for flag in ("byte_counting", "ecn", "pacing", "l4s"):
        if t.get(flag):
            raise refuse(f"{key}.{flag}", "true: the one-way agents of ns-2.35 have no such option here "
                                          "(give false)")
    if not t["rto_restart_on_retransmit"]:
        raise refuse(f"{key}.rto_restart_on_retransmit", "false: ns-2's agents re-arm the timer on every "
                                                        "retransmission")
    iw = float(t["initial_window"])
    if not iw.is_integer():
        raise refuse(f"{key}.initial_window", f"{iw:g}: windowInit_ is a whole number of segments")
    if int(t["max_backoff"]) != NO_BACKOFF_CAP:
        raise refuse(f"{key}.max_backoff", f"{t['max_backoff']}: ns-2.35 doubles the RTO while it is below "
                                           "maxrto_ (tcp.cc rtt_backoff, rfc2988_ true); its cap of 64 comes only "
                                           "with rfc2988_ false, which also applies minrto_ after the back-off "
                                           "(the earlier releases' presets keep it before)")
    if variant == "vegas" and t["limited_transmit"]:
        raise refuse(f"{key}.limited_transmit", "true with Vegas: the Vegas agent has no Limited Transmit")
    mss = int(t["mss"])
    s = list(TCP_FIXED) + [
        ("packetSize_", str(mss)),  # the whole segment on the wire (useHeaders_ false: no 40 bytes added)
        ("window_", str(int(t["max_window"]))),
        ("windowInit_", str(int(iw))),
        ("minrto_", _num(parse_duration(t["min_rto"]))),
        ("rtxcur_init_", _num(parse_duration(t["initial_rto"]))),
        ("maxrto_", _num(parse_duration(t["max_rto"]))),
        ("tcpTick_", _num(parse_duration(t["clock_granularity"]))),
        ("numdupacks_", str(int(t["dupack_threshold"]))),
        ("singledup_", "1" if t["limited_transmit"] else "0"),
    ]
    if variant == "newreno":
        # the resolved scenario carries these two only where they are not ns-2.35's (1): the ns2-2.1b9
        # family's releases had 0 (tcp/presets.rs)
        s += NEWRENO_FIXED + [
            ("newreno_changes1_", "1" if t.get("newreno_impatient", True) else "0"),
            ("partial_window_deflation_", "1" if t.get("partial_window_deflation", True) else "0"),
        ]
    if variant == "vegas":
        s += [("v_alpha_", _num(t["vegas_alpha"])), ("v_beta_", _num(t["vegas_beta"])),
              ("v_gamma_", _num(t["vegas_gamma"]))]
    sink = "Agent/TCPSink/Sack1" if variant == "sack" else "Agent/TCPSink"
    ss = list(SINK_FIXED) + [("packetSize_", str(int(t["ack_size"])))]
    if t["delayed_ack"]:
        if int(t["delack_count"]) != 2:
            raise refuse(f"{key}.delack_count", f"{t['delack_count']}: ns-2's DelAck sink acknowledges every "
                                                "second segment")
        sink += "/DelAck"
        ss.append(("interval_", _num(parse_duration(t["delack_timeout"]))))
    return agent, sink, s, ss


# ----------------------------------------------------------------------------- the network


def _links_of(sc: dict) -> list[tuple[str, str, str, dict, str]]:
    """Every link of the network in aqmlab's order: (name, from, to, resolved table, key path)."""
    topo = sc.get("topology", {})
    shape = topo.get("type", "custom" if "routers" in topo else "dumbbell")
    if shape == "dumbbell":
        return [("bottleneck", "r1", "r2", sc["bottleneck"], "bottleneck"),
                ("reverse", "r2", "r1", sc["reverse"], "reverse")]
    if shape == "parking_lot":
        out = []
        rev = topo["reverse"]
        for i, h in enumerate(topo["hop"], start=1):
            back = dict(rev)
            back.setdefault("rate", h["rate"])
            back.setdefault("delay", h["delay"])
            out.append((f"r{i - 1}-r{i}", f"r{i - 1}", f"r{i}", h, f"topology.hop[{i - 1}]"))
            out.append((f"r{i}-r{i - 1}", f"r{i}", f"r{i - 1}", back, "topology.reverse"))
        return out
    if shape == "star":
        out = []
        for i in range(1, int(topo["leaves"]) + 1):
            out.append((f"l{i}-hub", f"l{i}", "hub", topo["link"], "topology.link"))
            out.append((f"hub-l{i}", "hub", f"l{i}", topo["reverse"], "topology.reverse"))
        return out
    return [(l["name"], l["from"], l["to"], l, f"topology.links[{i}]") for i, l in enumerate(topo["links"])]


#: the most nodes a translated scenario may have. ns-2.35's unicast routing keeps a route for every
#: pair of nodes, so its memory grows with their square: measured with ns-2.35 on the dumbbell (two
#: hosts per flow), 0.22, 0.60 and 2.0 GB of peak memory for 500, 1000 and 2000 flows (1002, 2002 and
#: 4002 nodes, about 125 bytes per pair), and 10 000 flows were killed by the kernel beyond 23 GB;
#: 8000 nodes is about 8 GB
NS2_MAX_NODES = 8000


def _check_size(n_nodes: int, hosts: list, groups: list) -> None:
    """Refuse a scenario whose nodes ns-2.35's all-pairs routing tables could not hold (the other
    outcome is a run killed for its memory, maybe hours into a reproduction)."""
    key, total = "topology.hosts", n_nodes
    if not hosts:  # two hosts per flow
        counts = [2 * int(g.get("count", 1)) for g in groups]
        total += sum(counts)
        for i, c in enumerate(counts):
            n_nodes += c
            if n_nodes > NS2_MAX_NODES:
                key = f"flows[{i}].count"
                break
    if total > NS2_MAX_NODES:
        raise ScenarioError(f"{key}: {CANNOT_SIZE} {total} nodes{'' if hosts else ' (two hosts per flow)'}: its "
                            "routing keeps a route for every pair of nodes, about 125 bytes each; at most "
                            f"{NS2_MAX_NODES} nodes (about {NS2_MAX_NODES // 2 - 1} flows on a dumbbell)")


def _router_names(sc: dict) -> tuple[list, list]:
    topo = sc.get("topology", {})
    shape = topo.get("type", "custom" if "routers" in topo else "dumbbell")
    if shape == "dumbbell":
        return ["r1", "r2"], []
    if shape == "parking_lot":
        return [f"r{i}" for i in range(int(topo["hops"]) + 1)], []
    if shape == "star":
        return ["hub"] + [f"l{i}" for i in range(1, int(topo["leaves"]) + 1)], []
    return list(topo.get("routers", [])), list(topo.get("hosts", []))


def _pick(v, i):
    return v[i % len(v)] if isinstance(v, list) else v


def _group_key(i: int) -> str:
    return f"flows[{i}]"


def _udp(g: dict, key: str, notes: list, name: str) -> tuple[str, list]:
    if g["app"] not in ("cbr", "onoff"):
        raise refuse(f"{key}.app", f"{g['app']!r}: ns-2.35 has no echoing probe agent with one-way delay records "
                                   "(the translator maps cbr and onoff)")
    size = int(g["packet_size"])
    rate = _bps(g["rate"])
    if g["app"] == "cbr":
        return "Application/Traffic/CBR", [("packetSize_", str(size)), ("rate_", str(rate)), ("random_", "0"),
                                           ("maxpkts_", "268435456")]
    if g["app"] == "onoff":
        on, off = parse_duration(g["on_time"]), parse_duration(g["off_time"])
        s = [("packetSize_", str(size)), ("rate_", str(rate)), ("burst_time_", _num(on)), ("idle_time_", _num(off))]
        notes.append(f"{key}: ON/OFF as ns-2's Application/Traffic/{'Pareto' if g['distribution'] == 'pareto' else 'Exponential'}, "
                     "the closest ns-2 has: it starts with an OFF period, draws each burst's length in packets "
                     "(int(x + 0.5), at least 1) and begins the OFF period one packet interval after the burst's "
                     "last packet; aqmlab starts ON, draws the ON time and sends round(ON / gap) packets in it")
        if g["distribution"] == "pareto":
            return "Application/Traffic/Pareto", s + [("shape_", _num(g["shape"]))]
    return "Application/Traffic/Exponential", s


def make_plan(scenario, seed: int | None = None, overrides=()) -> Plan:
    """Translate a scenario (a path, TOML text or dict, as :func:`aqmlab.run` takes it) into a
    :class:`Plan`; a key ns-2.35 cannot express raises :class:`~aqmlab.base.errors.ScenarioError`."""
    from ..run.source import check_overrides, check_seed, read_source

    src = read_source(scenario)
    ov = check_overrides(overrides)
    seed = check_seed(seed)
    text = _core.resolve(src.text, src.name, ov, seed)
    fp = json.loads(_core.flow_plan(src.text, src.name, ov, seed))
    return plan_from_resolved(tomllib.loads(text), fp)


def plan_from_resolved(sc: dict, fp: dict) -> Plan:
    """The plan of a resolved scenario ``sc`` (a parsed ``scenario.toml``) and its flow plan ``fp``."""
    sim = sc["simulation"]
    for flag, what in (("queue_snapshots", "queue snapshots"), ("latency", "per-packet delay distributions")):
        if sim.get(flag):
            raise ScenarioError(f"simulation.{flag}: {NOT_MEASURED} {what}; give false")
    if sc.get("pcap"):
        raise ScenarioError(f"pcap: {NOT_MEASURED} pcap traces; leave [[pcap]] out")
    routers, hosts = _router_names(sc)
    topo_type = sc.get("topology", {}).get("type", "custom" if "routers" in sc.get("topology", {}) else "dumbbell")
    nodes = routers + hosts
    node = {n: i for i, n in enumerate(nodes)}
    raw_links = _links_of(sc)
    groups_sc = sc["flows"]
    _check_size(len(nodes), hosts, groups_sc)

    # the packet sizes crossing each link (for the byte-buffer checks): data one way, ACKs the other
    sizes: dict = {name: set() for name, *_ in raw_links}
    for gi, g in enumerate(groups_sc):
        size = int(g["tcp"]["mss"]) if g["transport"] == "tcp" else int(g.get("packet_size", 1000))
        ack = int(g["tcp"]["ack_size"]) if g["transport"] == "tcp" else None
        for p in fp["groups"][gi]["pairs"]:
            for l in p.get("path", []):
                sizes[l].add(size)
            if ack is not None:
                for l in p.get("ack_path", []):
                    sizes[l].add(ack)

    links: list = []
    by_name: dict = {}
    seen_pairs: set = set()
    for idx, (name, a, b, spec, key) in enumerate(raw_links):
        if (a, b) in seen_pairs:
            raise refuse(f"{key}", f"a second link from {a!r} to {b!r}: ns-2 keeps one link per direction "
                                   "between two nodes")
        seen_pairs.add((a, b))
        q = queue_for(spec, key, sizes.get(name, set()))
        l = Link(name, node[a], node[b], _bps(spec["rate"]), _ns(spec["delay"]), q, int(spec["limit"]),
                 spec.get("queue_unit", "packets"), bool(spec.get("monitor", False)), idx)
        # a measured link records everything; another one its drops, with its queue's arrivals and
        # transmissions when the reason of a drop depends on the queue's length (not DropTail)
        l.trace = {"+", "-", "d"} if l.measured or q.kind != "DropTail" else {"d"}
        by_name[name] = len(links)
        links.append(l)

    access_limit = int(sc["access"]["limit"])
    notes: list = []
    flows: list = []
    groups: list = []
    host = 0
    fid = 0
    for gi, g in enumerate(groups_sc):
        key = _group_key(gi)
        transport, app = g["transport"], g["app"]
        if transport == "tcp" and app != "bulk":
            raise refuse(f"{key}.app", f"{app!r}: the translator runs bulk TCP transfers (ns-2's FTP) only; "
                                       "short connections and web sessions open agents at run time")
        variant = recovery = "none"
        agent = sink = ""
        settings: list = []
        sink_settings: list = []
        source, source_settings = "", []
        if transport == "tcp":
            agent, sink, settings, sink_settings = tcp_agent(g["tcp"], f"{key}.tcp")
            variant, recovery = g["tcp"]["variant"], g["tcp"]["recovery"]
            psize = int(g["tcp"]["mss"])
        else:
            source, source_settings = _udp(g, key, notes, g["name"])
            psize = int(g["packet_size"])
        grp = Group(g["name"], transport, app, variant, recovery, int(g.get("priority", 1)), g.get("from"),
                    g.get("to"), int(g["count"]), psize if transport == "tcp" else 0)
        groups.append(grp)
        stop = _ns(g["stop"]) if "stop" in g else None
        size = _bytes(g["size"]) if transport == "tcp" and "size" in g else None
        pairs = fp["groups"][gi]["pairs"]
        for i, p in enumerate(pairs):
            frm, to = p["from"], p["to"]
            path = [by_name[n] for n in p["path"]]
            ack_path = [by_name[n] for n in p["ack_path"]]
            # a flow at a router gets hosts of its own, joined by two access links each way
            if frm in hosts:
                s = node[frm]
            else:
                s = len(nodes)
                nodes.append(f"s{host}")
                rate, delay = _bps(_pick(g["sender_rate"], i)), _ns(_pick(g["sender_delay"], i))
                up = Link("access", s, node[frm], rate, delay, Queue("DropTail", access_limit + 1), access_limit,
                          trace={"+", "d"})
                down = Link("access", node[frm], s, rate, delay, Queue("DropTail", access_limit + 1), access_limit,
                            trace={"r", "d"})
                links += [up, down]
                path.insert(0, len(links) - 2)
                ack_path.append(len(links) - 1)
            if to in hosts:
                d = node[to]
            else:
                d = len(nodes)
                nodes.append(f"d{host}")
                rate, delay = _bps(_pick(g["receiver_rate"], i)), _ns(_pick(g["receiver_delay"], i))
                down = Link("access", node[to], d, rate, delay, Queue("DropTail", access_limit + 1), access_limit,
                            trace={"r", "d"})
                up = Link("access", d, node[to], rate, delay, Queue("DropTail", access_limit + 1), access_limit,
                          trace={"d"})
                links += [down, up]
                path.append(len(links) - 2)
                ack_path.insert(0, len(links) - 1)
            # (a flow that starts or ends at a host node of a network written out: its first link's
            # arrivals and its last link's receptions are what the flow sent and got)
            links[path[0]].trace |= {"+"}
            links[path[-1]].trace |= {"r"}
            links[ack_path[-1]].trace |= {"r"}
            f = Flow(fid, gi, i, transport, app, s, d, int(p["start_ns"]), path, ack_path, host, stop, size, agent,
                     sink, settings, sink_settings, source, source_settings, psize,
                     sum(links[x].delay_ns for x in path + ack_path))
            flows.append(f)
            fid += 1
            host += 1
    if any(n in hosts for g in groups_sc for n in ([g.get("to")] if not isinstance(g.get("to"), list) else g["to"])):
        _check_destination_routes(flows, links, nodes)
    return Plan(sc.get("name", "scenario"), sc.get("description", ""), int(sim["seed"]), _ns(sim["duration"]),
                _ns(sim["warmup"]), _ns(sim["sample_interval"]),
                {"type": topo_type, "routing": sc.get("topology", {}).get("routing", "hops"), "nodes": routers + hosts},
                nodes, links, flows, groups, notes,
                _ns(sim["flow_series_interval"]) if "flow_series_interval" in sim else None)


def _check_destination_routes(flows: list, links: list, nodes: list) -> None:
    """ns-2 forwards by destination: every node must send all packets for one host the same way."""
    nxt: dict = {}
    for f in flows:
        for path, dst in ((f.path, f.dst), (f.ack_path, f.src)):
            for li in path:
                l = links[li]
                k = (l.src, dst)
                if nxt.setdefault(k, li) != li:
                    raise refuse(f"flows[{f.group}].path", f"two routes from {nodes[l.src]!r} to host "
                                                          f"{nodes[dst]!r}: ns-2 forwards by destination, one "
                                                          "next hop per node")


def routes(plan: Plan) -> dict:
    """Each node's next hop towards each destination: {(node, destination): link index}."""
    out: dict = {}
    for f in plan.flows:
        for path, dst in ((f.path, f.dst), (f.ack_path, f.src)):
            for li in path:
                out[(plan.links[li].src, dst)] = li
    return out


__all__ = ["Plan", "Link", "Flow", "Group", "Queue", "make_plan", "plan_from_resolved", "ns2_seed", "routes",
           "CANNOT", "NOT_MEASURED"]
