//! The resolved scenario: a validated [`Scenario`] written back as a scenario file, with every
//! default filled in and every `--set` override applied.
//!
//! `aqmlab run` writes it as `scenario.toml` beside the results, so that a run says exactly what
//! was simulated (the RED thresholds it used, the TCP timers, the access links) and can be run again
//! from that file alone: loading the text gives back an equal [`Scenario`] (the round trip is tested
//! on every example and experiment, `tests/resolved.rs`).
//!
//! Values keep their units where that is exact (`"10ms"`, `"1Mb/s"`); the rest are plain numbers
//! (seconds, bits per second, bytes). Every flow group carries its full TCP configuration (so the
//! file has no global `[tcp]` table) and its `from` and `to` (with the route taken, as `path` and
//! `ack_path`, in a network written out). The network keeps its shape: a dumbbell's `[bottleneck]`
//! and `[reverse]`, a parking lot's or a star's `[topology]` builder with every link's keys, or every
//! link of a written-out network, one direction each.

use crate::scenario::{
    CaptureSpec, Endpoints, GroupSpec, LinkSpec, NodeKind, Scenario, Shape, StartSpec, TcpApp, TopoLink, Topology,
    Transport,
};
use crate::tcp::{CcConfig, Hystart, Recovery, RtoEstimator, TcpConfig};
use crate::topology::Metric;
use crate::traffic::cbr::Cbr;
use crate::traffic::dist::Dist;
use crate::traffic::onoff::OnOffSpec;
use crate::units::{OneOrMany, Rate};
use aqm::{AqmConfig, QueueUnit, Time};
use std::fmt::Write;
use toml::Value;

/// The scenario as TOML text, every default written out; `header` lines become leading comments.
pub fn to_toml(sc: &Scenario, header: &[&str]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    if !header.is_empty() {
        out.push('\n');
    }
    // every field, so that a new one cannot be forgotten here
    let Scenario {
        name,
        description,
        duration,
        warmup,
        seed,
        sample_interval,
        queue_snapshots,
        snapshot_poisson,
        flow_series_interval,
        latency,
        topology,
        access_limit,
        groups,
        captures,
    } = sc;
    let mut top = Section::new();
    top.put("name", Value::String(name.clone()));
    top.put("description", Value::String(description.clone()));
    top.write(&mut out, None);

    let mut s = Section::new();
    s.put("duration", dur(*duration));
    s.put("warmup", dur(*warmup));
    s.put("seed", int(*seed));
    s.put("sample_interval", dur(*sample_interval));
    s.put("queue_snapshots", Value::Boolean(*queue_snapshots));
    s.put("snapshot_times", Value::String(if *snapshot_poisson { "poisson" } else { "periodic" }.into()));
    if let Some(t) = flow_series_interval {
        s.put("flow_series_interval", dur(*t));
    }
    if *latency {
        // (written only when on: files of runs without it stay as they were)
        s.put("latency", Value::Boolean(true));
    }
    s.write(&mut out, Some("[simulation]"));

    network(topology, &mut out);

    let mut a = Section::new();
    a.put("limit", int(*access_limit));
    a.write(&mut out, Some("[access]"));

    for g in groups {
        group(g, topology, &mut out);
    }
    for c in captures {
        let CaptureSpec { link, arrivals, departures, drops, start, stop } = c;
        let mut s = Section::new();
        s.put("link", Value::String(topology.links[*link as usize].name.clone()));
        let at = [(*arrivals, "arrival"), (*departures, "departure"), (*drops, "drop")];
        s.put("at", Value::Array(at.iter().filter(|x| x.0).map(|x| Value::String(x.1.into())).collect()));
        s.put("start", dur(*start));
        s.put("stop", dur(*stop));
        s.write(&mut out, Some("[[pcap]]"));
    }
    out
}

/// `[topology]` and the links: the dumbbell's `[bottleneck]` and `[reverse]`, a builder's `link`,
/// `hop` and `reverse`, or every link of a network written out (one direction each).
fn network(t: &Topology, out: &mut String) {
    let mut head = Section::new();
    match t.shape {
        Shape::Dumbbell => head.put("type", Value::String("dumbbell".into())),
        Shape::ParkingLot { hops } => {
            head.put("type", Value::String("parking_lot".into()));
            head.put("hops", int(hops));
        }
        Shape::Star { leaves } => {
            head.put("type", Value::String("star".into()));
            head.put("leaves", int(leaves));
        }
        Shape::Custom => {
            let names = |k: NodeKind| {
                Value::Array(t.nodes.iter().filter(|n| n.kind == k).map(|n| Value::String(n.name.clone())).collect())
            };
            head.put("routers", names(NodeKind::Router));
            head.put("hosts", names(NodeKind::Host));
        }
    }
    head.put(
        "routing",
        Value::String(
            match t.routing {
                Metric::Hops => "hops",
                Metric::Delay => "delay",
            }
            .into(),
        ),
    );
    head.write(out, Some("[topology]"));
    let l = &t.links;
    match t.shape {
        Shape::Dumbbell => {
            link(&l[0].spec, Some(l[0].monitor), Section::new(), "[bottleneck]", "bottleneck.aqm", out);
            link(&l[1].spec, Some(l[1].monitor), Section::new(), "[reverse]", "reverse.aqm", out);
        }
        Shape::ParkingLot { .. } => {
            // forward hops at even indices, each followed by its way back
            let fwd: Vec<&TopoLink> = l.iter().step_by(2).collect();
            let rev: Vec<&TopoLink> = l.iter().skip(1).step_by(2).collect();
            link(&fwd[0].spec, Some(fwd[0].monitor), Section::new(), "[topology.link]", "topology.link.aqm", out);
            for h in &fwd {
                link(&h.spec, Some(h.monitor), Section::new(), "[[topology.hop]]", "topology.hop.aqm", out);
            }
            // the way back takes each hop's rate and delay unless the scenario set one for all
            let r = rev[0];
            let mut keys = Section::new();
            let same = |get: fn(&TopoLink) -> f64| rev.iter().zip(&fwd).all(|(b, f)| get(b) == get(f));
            let skip_rate = same(|x| x.spec.rate_bps);
            let skip_delay = same(|x| x.spec.delay as f64);
            keys.put("monitor", Value::Boolean(r.monitor));
            link_keys(&r.spec, keys, !skip_rate, !skip_delay, "[topology.reverse]", "topology.reverse.aqm", out);
        }
        Shape::Star { .. } => {
            link(&l[0].spec, Some(l[0].monitor), Section::new(), "[topology.link]", "topology.link.aqm", out);
            link(&l[1].spec, Some(l[1].monitor), Section::new(), "[topology.reverse]", "topology.reverse.aqm", out);
        }
        Shape::Custom => {
            for x in l {
                let mut s = Section::new();
                s.put("name", Value::String(x.name.clone()));
                s.put("from", Value::String(t.nodes[x.from as usize].name.clone()));
                s.put("to", Value::String(t.nodes[x.to as usize].name.clone()));
                s.put("duplex", Value::Boolean(false));
                link(&x.spec, Some(x.monitor), s, "[[topology.links]]", "topology.links.aqm", out);
            }
        }
    }
}

/// Keys in the order they are put, written as `key = value` lines.
struct Section(Vec<(String, Value)>);

impl Section {
    fn new() -> Self {
        Section(Vec::new())
    }
    fn put(&mut self, k: &str, v: Value) {
        self.0.push((k.to_string(), v));
    }
    fn write(&self, out: &mut String, head: Option<&str>) {
        if let Some(h) = head {
            let _ = writeln!(out, "\n{h}");
        }
        for (k, v) in &self.0 {
            let _ = writeln!(out, "{} = {}", key(k), v);
        }
    }
}

fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn int<T: TryInto<i64>>(v: T) -> Value {
    Value::Integer(v.try_into().unwrap_or(i64::MAX))
}

/// A duration as a string in the largest unit that keeps it exact: "10ms", "1.5s" is "1500ms".
pub fn dur(ns: Time) -> Value {
    let s = if ns == 0 {
        "0s".to_string()
    } else if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else if ns % 1_000_000 == 0 {
        format!("{}ms", ns / 1_000_000)
    } else if ns % 1_000 == 0 {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    };
    Value::String(s)
}

/// Seconds held as `f64` (distribution means): written as the duration in nanoseconds they came from.
fn secs(s: f64) -> Value {
    dur((s * 1e9).round() as Time)
}

/// A rate with a unit: the largest that divides it exactly ("10Mb/s"), else b/s.
pub fn rate(bps: f64) -> Value {
    if bps.fract() == 0.0 && bps.abs() < 9e15 {
        let v = bps as i64;
        for (unit, f) in [("Gb/s", 1_000_000_000), ("Mb/s", 1_000_000), ("kb/s", 1_000)] {
            if v % f == 0 && v != 0 {
                return Value::String(format!("{}{unit}", v / f));
            }
        }
        return Value::String(format!("{v}b/s"));
    }
    Value::String(format!("{bps}b/s")) // (a rate always carries its unit)
}

/// A size with its unit, `"12000B"` (a size always carries its unit).
fn bytes(b: f64) -> Value {
    if b.fract() == 0.0 && b.abs() < 9e15 {
        Value::String(format!("{}B", b as i64))
    } else {
        Value::String(format!("{b}B"))
    }
}

/// A link's keys after `pre` (and `monitor`), then its discipline as `[<aqm_path>]`.
fn link(l: &LinkSpec, monitor: Option<bool>, mut pre: Section, head: &str, aqm_path: &str, out: &mut String) {
    if let Some(m) = monitor {
        pre.put("monitor", Value::Boolean(m));
    }
    link_keys(l, pre, true, true, head, aqm_path, out);
}

fn link_keys(l: &LinkSpec, mut s: Section, rate_: bool, delay: bool, head: &str, aqm_path: &str, out: &mut String) {
    let LinkSpec { rate_bps, delay: d, limit, aqm, loss_rate } = l;
    if rate_ {
        s.put("rate", rate(*rate_bps));
    }
    if delay {
        s.put("delay", dur(*d));
    }
    s.put("limit", int(limit.value));
    s.put(
        "queue_unit",
        Value::String(match limit.unit {
            QueueUnit::Packets => "packets".into(),
            QueueUnit::Bytes => "bytes".into(),
        }),
    );
    s.put("loss_rate", Value::Float(*loss_rate));
    s.write(out, Some(head));
    aqm_section(aqm, aqm_path, out);
}

/// `[<path>]` with `type` first, then every parameter of the discipline (sorted by name).
fn aqm_section(aqm: &AqmConfig, path: &str, out: &mut String) {
    let mut s = Section::new();
    s.put("type", Value::String(aqm.name().into()));
    let mut nested = Vec::new();
    if let Ok(Value::Table(t)) = Value::try_from(aqm) {
        for (k, v) in t {
            match v {
                Value::Table(sub) => nested.push((k, sub)),
                v => s.put(&k, v),
            }
        }
    }
    // a sub-table (e.g. CHOKeW-RED's `red`) written inline keeps the section readable
    for (k, sub) in nested {
        s.put(&k, Value::Table(sub));
    }
    s.write(out, Some(&format!("[{path}]")));
}

fn many<T: Clone>(v: &OneOrMany<T>, f: impl Fn(&T) -> Value) -> Value {
    match v {
        OneOrMany::One(x) => f(x),
        OneOrMany::Many(xs) => Value::Array(xs.iter().map(f).collect()),
    }
}

fn dist(d: &Dist, q: fn(f64) -> Value) -> Value {
    let mut t = toml::Table::new();
    match *d {
        Dist::Const(x) => return q(x),
        Dist::Exponential { mean } => {
            t.insert("exponential".into(), q(mean));
        }
        Dist::Pareto { mean, shape, max } => {
            let mut p = toml::Table::new();
            p.insert("mean".into(), q(mean));
            p.insert("shape".into(), Value::Float(shape));
            if let Some(m) = max {
                p.insert("max".into(), q(m));
            }
            t.insert("pareto".into(), Value::Table(p));
        }
        Dist::Uniform { lo, hi } => {
            t.insert("uniform".into(), Value::Array(vec![q(lo), q(hi)]));
        }
    }
    Value::Table(t)
}

fn group(g: &GroupSpec, t: &Topology, out: &mut String) {
    let GroupSpec {
        name,
        count,
        transport,
        start,
        stop,
        priority,
        in_profile,
        sender_rate: _,
        sender_delay: _,
        receiver_rate: _,
        receiver_delay: _,
        endpoints: _,
    } = g;
    let mut s = Section::new();
    s.put("name", Value::String(name.clone()));
    s.put("count", int(*count));
    s.put("transport", Value::String(g.transport_name().into()));
    s.put("app", Value::String(g.app_name().into()));
    s.put(
        "start",
        match *start {
            StartSpec::At(t) => dur(t),
            StartSpec::Uniform(lo, hi) => {
                let mut t = toml::Table::new();
                t.insert("uniform".into(), Value::Array(vec![dur(lo), dur(hi)]));
                Value::Table(t)
            }
        },
    );
    if let Some(t) = stop {
        s.put("stop", dur(*t));
    }
    s.put("priority", int(*priority));
    s.put("in_profile", Value::Boolean(*in_profile));
    group_ends(g, t, &mut s);
    let tcp = match transport {
        Transport::Tcp { cfg, app } => {
            tcp_app(app, &mut s);
            Some(tcp_section(cfg))
        }
        Transport::Udp { cbr, probe: Some(p), .. } => {
            s.put("interval", dur(cbr.interval));
            s.put("packet_size", int(cbr.size));
            s.put("echo", Value::Boolean(p.echo));
            None
        }
        Transport::Udp { cbr, onoff, probe: None } => {
            udp_source(cbr, onoff.as_ref(), &mut s);
            None
        }
    };
    s.write(out, Some("[[flows]]"));
    if let Some(t) = tcp {
        t.write(out, Some("[flows.tcp]"));
    }
}

/// Where a group's flows run (`from`, `to`, and on a network written out the routes taken) and
/// their access links (for the ends at routers).
fn group_ends(g: &GroupSpec, t: &Topology, s: &mut Section) {
    let endpoints = &g.endpoints;
    // flow i uses endpoints[i % len], so equal-length lists say it exactly
    let node = |n: u32| Value::String(t.nodes[n as usize].name.clone());
    let ends = |get: fn(&Endpoints) -> u32| {
        let v: Vec<u32> = endpoints.iter().map(get).collect();
        if v.iter().all(|&n| n == v[0]) {
            node(v[0])
        } else {
            Value::Array(v.into_iter().map(node).collect())
        }
    };
    if !endpoints.is_empty() {
        s.put("from", ends(|e| e.src));
        s.put("to", ends(|e| e.dst));
        if t.shape == Shape::Custom && endpoints.len() == 1 {
            // a network written out may offer several routes: the ones taken, explicitly
            let nodes = |r: u32| {
                let ls = &t.routes[r as usize];
                let mut v = vec![node(t.links[ls[0] as usize].from)];
                v.extend(ls.iter().map(|&l| node(t.links[l as usize].to)));
                Value::Array(v)
            };
            s.put("path", nodes(endpoints[0].fwd));
            s.put("ack_path", nodes(endpoints[0].rev));
        }
    }
    let at_host =
        |get: fn(&Endpoints) -> u32| endpoints.iter().any(|e| t.nodes[get(e) as usize].kind == NodeKind::Host);
    if !at_host(|e| e.src) {
        s.put("sender_rate", many(&g.sender_rate, |r: &Rate| rate(r.0)));
        s.put("sender_delay", many(&g.sender_delay, |d| dur(d.0)));
    }
    if !at_host(|e| e.dst) {
        s.put("receiver_rate", many(&g.receiver_rate, |r: &Rate| rate(r.0)));
        s.put("receiver_delay", many(&g.receiver_delay, |d| dur(d.0)));
    }
}

/// A TCP group's application.
fn tcp_app(app: &TcpApp, s: &mut Section) {
    match app {
        TcpApp::Bulk { size } => {
            if let Some(b) = size {
                s.put("size", int(*b));
            }
        }
        TcpApp::Short(sp) => {
            s.put("arrival_rate", Value::Float(sp.arrival_rate));
            if let Some(d) = &sp.size {
                s.put("size", dist(d, bytes));
            }
            if let Some(d) = &sp.duration {
                s.put("flow_duration", dist(d, secs));
            }
        }
        TcpApp::Web(w) => {
            s.put("response_size", dist(&w.response, bytes));
            s.put("think_time", dist(&w.think, secs));
            s.put("request_size", int(w.request_size));
        }
    }
}

/// A UDP group's source: CBR, and its ON/OFF periods.
fn udp_source(cbr: &Cbr, onoff: Option<&OnOffSpec>, s: &mut Section) {
    s.put("rate", rate(cbr.rate_bps as f64));
    s.put("packet_size", int(cbr.size));
    if let Some(o) = onoff {
        let (on, shape) = match o.on {
            Dist::Pareto { mean, shape, .. } => (mean, Some(shape)),
            Dist::Exponential { mean } => (mean, None),
            ref d => (d.mean(), None),
        };
        s.put("on_time", secs(on));
        s.put("off_time", secs(o.off.mean()));
        s.put("distribution", Value::String(if shape.is_some() { "pareto" } else { "exponential" }.into()));
        if let Some(a) = shape {
            s.put("shape", Value::Float(a));
        }
    }
}

fn tcp_section(cfg: &TcpConfig) -> Section {
    let TcpConfig {
        variant,
        cc,
        recovery,
        mss,
        ack_size,
        initial_window,
        max_window,
        min_rto,
        initial_rto,
        max_rto,
        max_backoff_exp,
        granularity,
        dupack_threshold,
        limited_transmit,
        rto_restart_on_retransmit,
        newreno_impatient,
        partial_window_deflation,
        delayed_ack,
        delack_count,
        delack_timeout,
        byte_counting,
        ecn,
        pacing,
        l4s,
        rack,
        tlp,
        prr,
        hystart,
        rto_estimator,
        min_rtt_window,
    } = cfg;
    let mut s = Section::new();
    s.put("variant", Value::String((*variant).into()));
    s.put(
        "recovery",
        Value::String(
            match recovery {
                Recovery::Reno => "reno",
                Recovery::NewReno => "newreno",
                Recovery::Sack => "sack",
            }
            .into(),
        ),
    );
    match *cc {
        CcConfig::Reno => {}
        CcConfig::Vegas { alpha, beta, gamma } => {
            s.put("vegas_alpha", Value::Float(alpha));
            s.put("vegas_beta", Value::Float(beta));
            s.put("vegas_gamma", Value::Float(gamma));
        }
        CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
            s.put("cubic_c", Value::Float(c));
            s.put("cubic_beta", Value::Float(beta));
            s.put("cubic_fast_convergence", Value::Boolean(fast_convergence));
            s.put("cubic_tcp_friendly", Value::Boolean(tcp_friendly));
        }
        CcConfig::Bbr => {}
        CcConfig::Dctcp { g } | CcConfig::Prague { g } => s.put("dctcp_g", Value::Float(g)),
    }
    s.put("mss", int(*mss));
    s.put("ack_size", int(*ack_size));
    s.put("initial_window", Value::Float(*initial_window));
    s.put("max_window", int(*max_window));
    s.put("min_rto", dur(*min_rto));
    s.put("initial_rto", dur(*initial_rto));
    s.put("max_rto", dur(*max_rto));
    s.put("max_backoff", int(1u64 << (*max_backoff_exp).min(62)));
    s.put("clock_granularity", dur(*granularity));
    s.put("dupack_threshold", int(*dupack_threshold));
    s.put("limited_transmit", Value::Boolean(*limited_transmit));
    s.put("rto_restart_on_retransmit", Value::Boolean(*rto_restart_on_retransmit));
    // NewReno's partial-ACK handling: written when it is not ns-2.35's (the ns2-2.1b9 family's,
    // the modern preset's timer), so that the other resolved scenarios are unchanged
    if !*newreno_impatient {
        s.put("newreno_impatient", Value::Boolean(false));
    }
    if !*partial_window_deflation {
        s.put("partial_window_deflation", Value::Boolean(false));
    }
    s.put("delayed_ack", Value::Boolean(*delayed_ack));
    s.put("delack_count", int(*delack_count));
    s.put("delack_timeout", dur(*delack_timeout));
    s.put("byte_counting", Value::Boolean(*byte_counting));
    s.put("ecn", Value::Boolean(*ecn));
    // (for the earlier variants written only when on, so that their resolved scenarios are
    // unchanged; always for those whose defaults turn them on)
    let new_variant = matches!(cc, CcConfig::Bbr | CcConfig::Dctcp { .. } | CcConfig::Prague { .. });
    if *pacing || new_variant {
        s.put("pacing", Value::Boolean(*pacing));
    }
    if *l4s || new_variant {
        s.put("l4s", Value::Boolean(*l4s));
    }
    // Linux's loss recovery and timer (written when on, so that the ns-2 presets' resolved
    // scenarios are unchanged)
    if *rack {
        s.put("rack", Value::Boolean(true));
        s.put("tlp", Value::Boolean(*tlp));
        s.put("prr", Value::Boolean(*prr));
        s.put("min_rtt_window", dur(*min_rtt_window));
    }
    if *hystart != Hystart::Off {
        s.put("hystart", Value::String(hystart.name().into()));
    }
    if *rto_estimator != RtoEstimator::Rfc6298 {
        s.put("rto_estimator", Value::String(rto_estimator.name().into()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_rates_keep_units_when_exact() {
        assert_eq!(dur(10_000_000).as_str(), Some("10ms"));
        assert_eq!(dur(1_500_000_000).as_str(), Some("1500ms"));
        assert_eq!(dur(7).as_str(), Some("7ns"));
        assert_eq!(dur(0).as_str(), Some("0s"));
        assert_eq!(rate(1e6).as_str(), Some("1Mb/s"));
        assert_eq!(rate(1.5e6).as_str(), Some("1500kb/s"));
        assert_eq!(rate(999.0).as_str(), Some("999b/s"));
        assert_eq!(rate(0.5).as_str(), Some("0.5b/s")); // always with its unit
        assert_eq!(bytes(12000.0).as_str(), Some("12000B"));
    }
}
