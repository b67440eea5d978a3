"""A :class:`~aqmlab.ns2.plan.Plan` written as an ns-2.35 Tcl script: the translator's second half.

The script builds the network (``simplex-link`` per aqmlab link, each with its queue, its
``queue-limit`` and every setting the plan gives), the flows (one agent, sink and application per
flow, fid = aqmlab's flow id), and what the engine reads back:

* ``trace.tr``: ns-2's packet trace (``+`` arrival at a queue, ``-`` start of transmission, ``d``
  drop, ``r`` reception at the far end), attached per link to the events the plan asks for
  (:attr:`~aqmlab.ns2.plan.Link.trace`) — never to every link;
* ``events.txt``: one line per fact the trace does not hold: ``C <tag> <fid> <nrexmit_>
  <ncwndcuts1_>`` (the TCP agents' counters at the warm-up and at the end), ``S <k> <link> <name>
  <value>`` (the discipline's state at sample k), ``W <k> <fid> <cwnd_> <srtt_> <tcpTick_>`` (a
  TCP sender at per-flow sample k) and ``E <time>`` (the end);
* on standard output, ``P <simulated seconds>`` every simulated second, for the progress bar.

Seeds: ``$defaultRNG seed`` gets :func:`~aqmlab.ns2.plan.ns2_seed` of the scenario's seed; every
random draw of the run (RED's, PI's and REM's tests, the ON/OFF periods) comes from it. The start
times are aqmlab's own draws (the engine's flow plan), written as ``$ns at``.
"""

from __future__ import annotations

from .plan import Plan, routes

#: every simulated second, a progress line
PROGRESS_S = 1.0


def _t(ns: int) -> str:
    s = f"{ns / 1e9:.9f}".rstrip("0").rstrip(".")
    return s or "0"


def _settings(var: str, settings) -> list[str]:
    return [f"    ${var} set {k} {v}" for k, v in settings]


PRELUDE = r"""
# what the trace records, link by link: + arrivals, - transmissions, d drops, r receptions
proc aq_trace {a b ops} {
    global ns tf
    set l [$ns link $a $b]
    set q [$l queue]
    if {[lsearch $ops d] >= 0} {
        set t [$ns create-trace Drop $tf $a $b]
        set dh [$l set drophead_]
        $t target [$dh target]
        $dh target $t
    }
    if {[lsearch $ops -] >= 0} {
        set t [$ns create-trace Deque $tf $a $b]
        $t target [$q target]
        $q target $t
    }
    if {[lsearch $ops r] >= 0} {
        set t [$ns create-trace Recv $tf $a $b]
        set ttl [$l set ttl_]
        $t target [$ttl target]
        $ttl target $t
    }
    if {[lsearch $ops +] >= 0} {
        $l add-to-head [$ns create-trace Enque $tf $a $b]
    }
}

proc aq_counters {tag} {
    global tcp ev
    foreach f [lsort -integer [array names tcp]] {
        puts $ev "C $tag $f [$tcp($f) set nrexmit_] [$tcp($f) set ncwndcuts1_]"
    }
}

proc aq_progress {t} {
    global ns dur
    puts "P $t"
    flush stdout
    set next [expr {$t + %(progress)s}]
    if {$next < $dur} { $ns at $next "aq_progress $next" }
}

proc aq_finish {} {
    global ns tf ev
    aq_counters end
    puts $ev "E [$ns now]"
    flush $tf
    close $tf
    close $ev
    exit 0
}
""" % {"progress": PROGRESS_S}


def write_script(plan: Plan, trace_path: str = "trace.tr", events_path: str = "events.txt") -> str:
    """The Tcl script of ``plan``; it writes its trace and events to the two paths given."""
    p = plan
    out = [
        f"# ns-2.35 script written by aqmlab from scenario {p.name!r}, seed {p.seed}",
        f"# (ns-2's defaultRNG seed {p.ns2_seed} = 1 + seed mod (2^31 - 2)); see docs/crosscheck.md",
        "set ns [new Simulator]",
        "global defaultRNG",
        f"$defaultRNG seed {p.ns2_seed}",
        f"set tf [open {{{trace_path}}} w]",
        f"set ev [open {{{events_path}}} w]",
        f"set dur {_t(p.duration_ns)}",
        PRELUDE,
        "# nodes: routers first, then each flow's own hosts (node i is ns-2 node id i)",
        f"for {{set i 0}} {{$i < {len(p.nodes)}}} {{incr i}} {{ set n($i) [$ns node] }}",
        "",
        "# links: rate (b/s), delay (s), queue; then the queue's limit and settings",
    ]
    for l in p.links:
        q = l.queue
        out.append(f"$ns simplex-link $n({l.src}) $n({l.dst}) {l.rate_bps} {_t(l.delay_ns)} {q.kind}")
        out.append(f"$ns queue-limit $n({l.src}) $n({l.dst}) {q.limit}")
        if q.settings:
            out.append(f"set q [[$ns link $n({l.src}) $n({l.dst})] queue]")
            out += [f"$q set {k} {v}" for k, v in q.settings]
        if l.trace:
            out.append(f"aq_trace $n({l.src}) $n({l.dst}) {{{' '.join(sorted(l.trace))}}}")
    if p.topology["type"] == "custom":
        # routes as aqmlab computed them, installed over ns-2's own at time 0 (ns-2 forwards by
        # destination; plan.make_plan checked that one next hop per node and destination suffices)
        out += ["", "proc aq_routes {} {", "    global ns n"]
        for (node, dst), li in sorted(routes(p).items()):
            l = p.links[li]
            out.append(f"    $n({node}) add-route [$n({dst}) id] [[$ns link $n({l.src}) $n({l.dst})] head]")
        out += ["}", "$ns at 0 aq_routes"]

    out += ["", "# agents, one procedure per group: every setting written out"]
    for gi, g in enumerate(p.groups):
        f0 = next((f for f in p.flows if f.group == gi), None)
        if f0 is None or g.transport != "tcp":
            continue
        out.append(f"proc aq_tcp_{gi} {{}} {{")
        out.append(f"    set a [new {f0.agent}]")
        out += _settings("a", f0.settings)
        out += ["    return $a", "}"]
        out.append(f"proc aq_sink_{gi} {{}} {{")
        out.append(f"    set a [new {f0.sink}]")
        out += _settings("a", f0.sink_settings)
        out += ["    return $a", "}"]

    out += ["", "# flows: fid = aqmlab's flow id"]
    for f in p.flows:
        s, d, fid = f.src, f.dst, f.fid
        if f.transport == "tcp":
            out += [
                f"set tcp({fid}) [aq_tcp_{f.group}]",
                f"$tcp({fid}) set fid_ {fid}",
                f"$ns attach-agent $n({s}) $tcp({fid})",
                f"set sink({fid}) [aq_sink_{f.group}]",
                f"$ns attach-agent $n({d}) $sink({fid})",
                f"$ns connect $tcp({fid}) $sink({fid})",
                f"set app({fid}) [$tcp({fid}) attach-app FTP]",
            ]
            if f.size is not None:
                out.append(f"$ns at {_t(f.start_ns)} \"$app({fid}) send {f.size}\"")
            else:
                out.append(f"$ns at {_t(f.start_ns)} \"$app({fid}) start\"")
            if f.stop_ns is not None:
                # no segment not sent before: the agent's data ends at the highest sequence number sent
                out.append(f"$ns at {_t(f.stop_ns)} \"$tcp({fid}) advance 0\"")
        else:
            out += [
                f"set udp({fid}) [new Agent/UDP]",
                f"$udp({fid}) set packetSize_ {f.packet_size}",
                f"$udp({fid}) set fid_ {fid}",
                f"$ns attach-agent $n({s}) $udp({fid})",
                f"set sink({fid}) [new Agent/Null]",
                f"$ns attach-agent $n({d}) $sink({fid})",
                f"$ns connect $udp({fid}) $sink({fid})",
                f"set app({fid}) [new {f.source}]",
            ]
            out += [f"$app({fid}) set {k} {v}" for k, v in f.source_settings]
            out += [f"$app({fid}) attach-agent $udp({fid})", f"$ns at {_t(f.start_ns)} \"$app({fid}) start\""]
            if f.stop_ns is not None:
                out.append(f"$ns at {_t(f.stop_ns)} \"$app({fid}) stop\"")

    sampled = [(i, l) for i, l in enumerate(p.links) if l.measured and l.queue.state]
    if sampled:
        out += ["", "# the disciplines' state every sample interval", "proc aq_sample {k} {", "    global ns ev n dur"]
        for i, l in sampled:
            out.append(f"    set q [[$ns link $n({l.src}) $n({l.dst})] queue]")
            for col, var in l.queue.state:
                out.append(f"    puts $ev \"S $k {i} {col} [$q set {var}]\"")
        out += [f"    set t [expr {{($k + 1) * {p.sample_ns / 1e9!r}}}]",
                "    if {$t < $dur} { $ns at $t \"aq_sample [expr {$k + 1}]\" }", "}", "$ns at 0 \"aq_sample 0\""]
    if p.series_ns and any(f.transport == "tcp" for f in p.flows):
        # each TCP sender's window and smoothed RTT (ns-2 keeps it in ticks, times 8) for the per-flow series
        out += ["", "proc aq_fsample {k} {", "    global ns ev tcp dur",
                "    foreach f [lsort -integer [array names tcp]] {",
                "        puts $ev \"W $k $f [$tcp($f) set cwnd_] [$tcp($f) set srtt_] [$tcp($f) set tcpTick_]\"",
                "    }",
                f"    set t [expr {{($k + 1) * {p.series_ns / 1e9!r}}}]",
                "    if {$t < $dur} { $ns at $t \"aq_fsample [expr {$k + 1}]\" }", "}",
                f"$ns at {p.series_ns / 1e9!r} \"aq_fsample 1\""]
    out += [
        "",
        f"$ns at {_t(p.warmup_ns)} \"aq_counters warmup\"",
        "$ns at 0 \"aq_progress 0\"",
        f"$ns at {_t(p.duration_ns)} \"aq_finish\"",
        "$ns run",
        "",
    ]
    return "\n".join(out)


__all__ = ["write_script"]
