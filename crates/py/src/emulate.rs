//! Bindings of `aqmlab emulate`: the resolved scenario as the emulator needs it, TUN devices, and
//! the forwarder (`crates/emu`), run with the GIL released.
//!
//! This file is the only place where the emulator reads the simulator's validated `Scenario`:
//! [`plan`] turns it into plain JSON (links, groups, host pairs with their start times and
//! ON/OFF bursts drawn from the simulator's own random streams), and [`forwarder_config`] into the
//! forwarder's [`emu::Config`].

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aqm::rng::Rng;
use aqm::{DropReason, QueueUnit, Time};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{json, Value};
use sim::hosts::start_time;
use sim::scenario::{TcpApp, Transport};
use sim::traffic::onoff::UdpSource;

/// Load and validate (the simulator's memory budget does not apply: nothing is simulated). The
/// emulator builds a dumbbell with data from r1 to r2: other networks are refused.
fn scenario(text: &str, overrides: &[String], name: &str) -> PyResult<sim::Scenario> {
    crate::no_panic(|| {
        let sc = sim::load(text, overrides, name).map_err(crate::scenario_err)?;
        if sc.bottleneck().is_none() {
            return Err(crate::scenario_err(sim::ScenarioError::new(
                "topology",
                "aqmlab emulate runs the dumbbell only; simulate other networks with aqmlab run",
            )));
        }
        for (i, g) in sc.groups.iter().enumerate() {
            if g.endpoints.iter().any(|e| (e.src, e.dst) != (0, 1)) {
                return Err(crate::scenario_err(sim::ScenarioError::new(
                    format!("flows[{i}].from"),
                    "aqmlab emulate sends data from r1 to r2 only; simulate two-way traffic with aqmlab run",
                )));
            }
        }
        Ok(sc)
    })
}

/// The dumbbell's bottleneck and reverse links (the scenario was checked by [`scenario`]).
fn dumbbell(sc: &sim::Scenario) -> (&sim::scenario::LinkSpec, &sim::scenario::LinkSpec) {
    (&sc.topology.links[0].spec, &sc.topology.links[1].spec)
}

fn link_json(l: &sim::scenario::LinkSpec) -> Value {
    json!({
        "rate_bps": l.rate_bps,
        "delay_ns": l.delay,
        "limit": l.limit.value,
        "queue_unit": if l.limit.unit == QueueUnit::Packets { "packets" } else { "bytes" },
        "aqm": l.aqm.name(),
        "loss_rate": l.loss_rate,
    })
}

/// ON/OFF bursts of a UDP source from `start` until `end`: `[first packet time, packets]`, the
/// packets of a burst leaving at `first + floor(k · 8 · size · 10^9 / rate)` (traffic::onoff).
/// The source is driven as the engine drives it (`sim::apps`): its horizon is `end`, and a time
/// at which it is still searching for a non-empty ON period is resumed, not counted as a packet.
fn bursts(mut src: UdpSource, start: Time, end: Time) -> Vec<(Time, u64)> {
    let mut out: Vec<(Time, u64)> = Vec::new();
    src.set_horizon(end);
    let mut t = src.start(start);
    let mut periods = None;
    while t < end {
        if src.searching() {
            t = src.resume(t);
            continue;
        }
        if periods != Some(src.on_periods) {
            periods = Some(src.on_periods);
            out.push((t, 0));
        }
        out.last_mut().expect("burst").1 += 1;
        t = src.advance();
    }
    out
}

/// The scenario resolved for emulation (JSON): what `aqmlab emulate` sets up and runs.
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new(), seed=None))]
pub fn emulation_plan(text: &str, name: &str, overrides: Vec<String>, seed: Option<u64>) -> PyResult<String> {
    let sc = scenario(text, &overrides, name)?;
    let seed = seed.unwrap_or(sc.seed);
    let mut host = 0usize;
    let mut flow_id = 0usize;
    let mut groups = Vec::new();
    for g in &sc.groups {
        let stop = g.stop.unwrap_or(Time::MAX);
        let (tcp, udp, size) = match &g.transport {
            Transport::Tcp { cfg, app } => (
                json!({
                    "variant": cfg.variant,
                    "recovery": cfg.recovery.name(),
                    "mss": cfg.mss,
                    "initial_window": cfg.initial_window,
                    "max_window": cfg.max_window,
                    "min_rto_ns": cfg.min_rto,
                    "delayed_ack": cfg.delayed_ack,
                    "ecn": cfg.ecn,
                }),
                Value::Null,
                match app {
                    TcpApp::Bulk { size } => json!(size),
                    _ => Value::Null,
                },
            ),
            Transport::Udp { cbr, .. } => {
                (Value::Null, json!({ "rate_bps": cbr.rate_bps, "packet_size": cbr.size }), Value::Null)
            }
        };
        let mut pairs = Vec::new();
        for i in 0..g.count as usize {
            let mut rng = Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
            let start = start_time(g.start, &mut rng);
            let (sr, sd) = (g.sender_rate.get(i).0, g.sender_delay.get(i).0);
            let (rr, rd) = (g.receiver_rate.get(i).0, g.receiver_delay.get(i).0);
            let bursts = match &g.transport {
                Transport::Udp { cbr, onoff: Some(o), .. } if start < sc.duration => {
                    let rng = Rng::stream(seed, &format!("onoff:{}", g.name), i as u64);
                    json!(bursts(UdpSource::new(*cbr, Some((*o, rng))), start, sc.duration.min(stop)))
                }
                _ => Value::Null,
            };
            pairs.push(json!({
                "host": host,
                "flow_id": flow_id,
                "start_ns": start,
                "sender_rate_bps": sr,
                "sender_delay_ns": sd,
                "receiver_rate_bps": rr,
                "receiver_delay_ns": rd,
                "rtt_prop_ns": 2 * (sd + rd) + dumbbell(&sc).0.delay + dumbbell(&sc).1.delay,
                "bursts": bursts,
            }));
            host += 1;
            flow_id += g.static_flows().min(1) as usize;
        }
        groups.push(json!({
            "name": g.name,
            "transport": g.transport_name(),
            "app": g.app_name(),
            "count": g.count,
            "priority": g.priority,
            "in_profile": g.in_profile,
            "stop_ns": g.stop,
            "tcp": tcp,
            "udp": udp,
            "size": size,
            "pairs": pairs,
        }));
    }
    let plan = json!({
        "name": sc.name,
        "description": sc.description,
        "seed": seed,
        "duration_ns": sc.duration,
        "warmup_ns": sc.warmup,
        "sample_interval_ns": sc.sample_interval,
        "queue_snapshots": sc.queue_snapshots,
        "flow_series_interval_ns": sc.flow_series_interval,
        "bottleneck": link_json(dumbbell(&sc).0),
        "reverse": link_json(dumbbell(&sc).1),
        "access_limit": sc.access_limit,
        "groups": groups,
        "aqmlab_version": env!("CARGO_PKG_VERSION"),
    });
    Ok(plan.to_string())
}

fn link_config(l: &sim::scenario::LinkSpec) -> emu::LinkConfig {
    emu::LinkConfig { rate_bps: l.rate_bps, delay: l.delay, limit: l.limit, aqm: l.aqm.clone(), loss_rate: l.loss_rate }
}

/// The forwarder's configuration for a scenario: host pair `i` (numbered across groups in file
/// order) is reached through port `pair_ports[i]`.
fn forwarder_config(sc: &sim::Scenario, seed: u64, net: &Net) -> PyResult<emu::Config> {
    let mut pairs = Vec::new();
    for g in &sc.groups {
        for i in 0..g.count as usize {
            let port =
                *net.pair_ports.get(pairs.len()).ok_or_else(|| PyRuntimeError::new_err("pair_ports: too short"))?;
            pairs.push(emu::PairConfig {
                port,
                sender_rate_bps: g.sender_rate.get(i).0,
                sender_delay: g.sender_delay.get(i).0,
                receiver_rate_bps: g.receiver_rate.get(i).0,
                receiver_delay: g.receiver_delay.get(i).0,
            });
        }
    }
    Ok(emu::Config {
        bottleneck: link_config(dumbbell(sc).0),
        reverse: link_config(dumbbell(sc).1),
        access_limit: sc.access_limit,
        pairs,
        sender_base: net.sender_base,
        receiver_base: net.receiver_base,
        receiver_port: net.receiver_port,
        duration: sc.duration,
        warmup: sc.warmup,
        sample_interval: sc.sample_interval,
        queue_snapshots: sc.queue_snapshots,
        seed,
        max_packet: net.max_packet,
    })
}

/// The addressing plan and ports of an emulated network.
struct Net {
    pair_ports: Vec<u16>,
    receiver_port: u16,
    sender_base: u32,
    receiver_base: u32,
    max_packet: usize,
}

/// Create a TUN device named `name` inside the network namespace bound at `netns_path`;
/// returns its file descriptor (the device disappears when it is closed).
#[pyfunction]
pub fn tun_open(netns_path: &str, name: &str) -> PyResult<RawFd> {
    emu::tun::open_in_netns(netns_path, name).map_err(|e| PyOSError::new_err(e.to_string()))
}

/// The forwarder of one emulation run. `run()` blocks (GIL released) until the run ends and
/// returns its report; `stop()` (from another thread) ends it early; `now_s` is its progress.
#[pyclass]
pub struct Forwarder {
    cfg: Mutex<Option<emu::Config>>,
    ports: Vec<RawFd>,
    t0: u64,
    stop: Arc<AtomicBool>,
    now: Arc<AtomicU64>,
}

#[pymethods]
impl Forwarder {
    /// `ports`: descriptors, port i = `ports[i]`; `pair_ports[i]`: the port of host pair i's
    /// sender; `receiver_port`: the receivers' port; host pair i's addresses are
    /// `sender_base + i + 1` and `receiver_base + i + 1`; `t0`: time 0 on CLOCK_MONOTONIC (ns).
    #[new]
    #[pyo3(signature = (text, name, overrides, seed, ports, pair_ports, receiver_port, sender_base, receiver_base, max_packet, t0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        text: &str,
        name: &str,
        overrides: Vec<String>,
        seed: Option<u64>,
        ports: Vec<RawFd>,
        pair_ports: Vec<u16>,
        receiver_port: u16,
        sender_base: u32,
        receiver_base: u32,
        max_packet: usize,
        t0: u64,
    ) -> PyResult<Self> {
        let sc = scenario(text, &overrides, name)?;
        let seed = seed.unwrap_or(sc.seed);
        let net = Net { pair_ports, receiver_port, sender_base, receiver_base, max_packet };
        let cfg = forwarder_config(&sc, seed, &net)?;
        Ok(Forwarder {
            cfg: Mutex::new(Some(cfg)),
            ports,
            t0,
            stop: Arc::new(AtomicBool::new(false)),
            now: Arc::new(AtomicU64::new(0)),
        })
    }

    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cfg = self.cfg.lock().expect("lock").take().ok_or_else(|| PyRuntimeError::new_err("already run"))?;
        let (ports, t0, stop, now) = (self.ports.clone(), self.t0, self.stop.clone(), self.now.clone());
        let res = py.detach(move || emu::run(cfg, &ports, t0, &stop, &now));
        match res {
            Ok((report, timing)) => report_to_py(py, &report, &timing),
            Err(emu::RunError::Interrupted) => Err(PyKeyboardInterrupt::new_err("interrupted")),
            Err(e) => Err(crate::SimulationError::new_err(format!("forwarder: {e}"))),
        }
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    #[getter]
    fn now_s(&self) -> f64 {
        self.now.load(Ordering::Relaxed) as f64 / 1e9
    }
}

/// CLOCK_MONOTONIC in ns (as `time.monotonic_ns()`).
#[pyfunction]
pub fn monotonic_ns() -> u64 {
    emu::monotonic_ns()
}

fn columns<'py>(py: Python<'py>, cols: Vec<(&str, Vec<f64>)>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, v) in cols {
        out.append((name, PyList::new(py, v)?))?;
    }
    Ok(out)
}

fn report_to_py<'py>(py: Python<'py>, r: &emu::Report, t: &emu::Timing) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    // flows: identity, then window and whole-run counters
    let f = &r.flows;
    let ip = |a: u32| std::net::Ipv4Addr::from(a).to_string();
    let fl = PyDict::new(py);
    fl.set_item("proto", f.iter().map(|x| x.key.proto).collect::<Vec<_>>())?;
    fl.set_item("s_addr", f.iter().map(|x| ip(x.key.s_addr)).collect::<Vec<_>>())?;
    fl.set_item("s_port", f.iter().map(|x| x.key.s_port).collect::<Vec<_>>())?;
    fl.set_item("r_addr", f.iter().map(|x| ip(x.key.r_addr)).collect::<Vec<_>>())?;
    fl.set_item("r_port", f.iter().map(|x| x.key.r_port).collect::<Vec<_>>())?;
    fl.set_item("first_seen_s", f.iter().map(|x| x.first_seen as f64 / 1e9).collect::<Vec<_>>())?;
    for (prefix, total) in [("", false), ("total_", true)] {
        let c = |x: &emu::core::FlowReport| if total { x.total } else { x.window };
        macro_rules! col {
            ($name:literal, $($field:ident).+) => {
                fl.set_item(format!("{prefix}{}", $name), f.iter().map(|x| c(x).$($field).+).collect::<Vec<_>>())?;
            };
        }
        col!("sent_pkts", pkts.sent_pkts);
        col!("sent_bytes", sent_bytes);
        col!("retx_pkts", pkts.retx_pkts);
        col!("bneck_arrivals", bneck_arrivals);
        col!("bneck_tx_pkts", bneck_tx_pkts);
        col!("bneck_tx_bytes", bneck_tx_bytes);
        col!("ack_drops", pkts.ack_drops);
        col!("delivered_pkts", pkts.delivered_pkts);
        col!("delivered_bytes", delivered_bytes);
        col!("delivered_retx_bytes", delivered_retx_bytes);
        col!("ce_marks", pkts.ce_marks);
        col!("progress_bytes", progress_bytes);
        col!("rev_pkts", rev_pkts);
        for reason in DropReason::ALL {
            fl.set_item(
                format!("{prefix}drops_{}", reason.name()),
                f.iter().map(|x| c(x).pkts.drops[reason.index()]).collect::<Vec<_>>(),
            )?;
        }
    }
    d.set_item("flows", fl)?;

    let b = &r.bottleneck;
    let bd = PyDict::new(py);
    let drops = PyDict::new(py);
    for reason in DropReason::ALL {
        if reason != DropReason::LinkLoss {
            drops.set_item(reason.name(), b.window.stats.drops[reason.index()])?;
        }
    }
    bd.set_item("aqm", b.aqm)?;
    bd.set_item("capacity_bps", b.capacity_bps)?;
    bd.set_item("delay_s", b.delay_s)?;
    bd.set_item("limit", b.limit.value)?;
    bd.set_item("queue_unit", if b.limit.unit == QueueUnit::Packets { "packets" } else { "bytes" })?;
    bd.set_item("arrivals", b.window.stats.arrivals)?;
    bd.set_item("transmitted", b.window.stats.transmitted)?;
    bd.set_item("transmitted_bytes", b.window.stats.transmitted_bytes)?;
    bd.set_item("drops", drops)?;
    bd.set_item("drops_total", b.window.stats.drops.iter().sum::<u64>())?;
    bd.set_item("link_loss_drops", b.window.link_loss)?;
    bd.set_item("queue_mean_pkts", b.window.queue_mean_pkts)?;
    bd.set_item("queue_mean_bytes", b.window.queue_mean_bytes)?;
    bd.set_item("queue_max_pkts", b.window.queue_max_pkts)?;
    bd.set_item("delay_mean_s", b.window.delay_mean_s)?;
    bd.set_item("delay_p50_s", b.window.delay_p50_s)?;
    bd.set_item("delay_p95_s", b.window.delay_p95_s)?;
    bd.set_item("delay_p99_s", b.window.delay_p99_s)?;
    bd.set_item("delay_samples", b.window.delay_samples)?;
    d.set_item("bottleneck", bd)?;

    let s = &r.series;
    let mut cols = vec![
        ("time_s", s.time.clone()),
        ("queue_pkts", s.qlen.clone()),
        ("queue_bytes", s.qbytes.clone()),
        ("utilisation", s.util.clone()),
        ("drops", s.drops.clone()),
    ];
    let names: Vec<String> = s.state_names.iter().map(|n| format!("aqm_{n}")).collect();
    for (n, v) in names.iter().zip(&s.state) {
        cols.push((n.as_str(), v.clone()));
    }
    d.set_item("timeseries", columns(py, cols)?)?;
    if let Some(sn) = &r.snapshots {
        let sd = PyDict::new(py);
        sd.set_item("time_s", sn.t.clone())?;
        sd.set_item("position_from_tail", sn.pos.clone())?;
        sd.set_item("queue_len", sn.len.clone())?;
        sd.set_item("flow", sn.flow.clone())?;
        sd.set_item("count", sn.count)?;
        d.set_item("snapshots", sd)?;
    }
    let c = &r.counts;
    let cd = PyDict::new(py);
    cd.set_item("packets_read", c.read)?;
    cd.set_item("packets_written", c.written)?;
    cd.set_item("packets_dropped", c.dropped)?;
    cd.set_item("packets_unroutable", c.unroutable)?;
    cd.set_item("packets_in_flight", c.in_flight)?;
    d.set_item("counts", cd)?;
    let td = PyDict::new(py);
    td.set_item("writes", t.writes)?;
    td.set_item("late_mean_s", t.late_mean_ns / 1e9)?;
    td.set_item("late_p50_s", t.late_p50_ns as f64 / 1e9)?;
    td.set_item("late_p99_s", t.late_p99_ns as f64 / 1e9)?;
    td.set_item("late_p999_s", t.late_p999_ns as f64 / 1e9)?;
    td.set_item("late_max_s", t.late_max_ns as f64 / 1e9)?;
    td.set_item("late_over_1ms", t.late_over_1ms)?;
    td.set_item("write_errors", t.write_errors)?;
    td.set_item("wakeups", t.wakeups)?;
    td.set_item("cpu_s", t.cpu_ns as f64 / 1e9)?;
    td.set_item("wall_s", t.wall_ns as f64 / 1e9)?;
    td.set_item("runqueue_wait_s", t.runqueue_wait_ns as f64 / 1e9)?;
    td.set_item("after_end", t.after_end)?;
    td.set_item("nice", if t.niced { emu::io::FORWARDER_NICE } else { 0 })?;
    d.set_item("timing", td)?;
    Ok(d)
}

/// The forwarder core's speed on synthetic congested traffic through a scenario's network (no
/// I/O, no privileges): `{packets, cpu_s, packets_per_s, drops, ...}` (per second of the thread's CPU time).
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new(), packets=1_000_000))]
pub fn emu_bench<'py>(
    py: Python<'py>,
    text: &str,
    name: &str,
    overrides: Vec<String>,
    packets: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = scenario(text, &overrides, name)?;
    let net = Net {
        pair_ports: vec![0; sc.n_hosts()],
        receiver_port: 1,
        sender_base: 0x0a01_0000,
        receiver_base: 0x0a02_0000,
        max_packet: 1500,
    };
    let cfg = forwarder_config(&sc, sc.seed, &net)?;
    let r = py.detach(move || emu::bench::run(cfg, packets));
    let d = PyDict::new(py);
    d.set_item("packets", r.packets)?;
    d.set_item("cpu_s", r.cpu_ns as f64 / 1e9)?;
    d.set_item("packets_per_s", r.packets_per_sec())?;
    d.set_item("drops", r.report.bottleneck.window.stats.drops.iter().sum::<u64>())?;
    d.set_item("arrivals", r.report.bottleneck.window.stats.arrivals)?;
    d.set_item("transmitted", r.report.bottleneck.window.stats.transmitted)?;
    d.set_item("queue_mean_pkts", r.report.bottleneck.window.queue_mean_pkts)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(emu_bench, m)?)?;
    m.add_function(wrap_pyfunction!(emulation_plan, m)?)?;
    m.add_function(wrap_pyfunction!(tun_open, m)?)?;
    m.add_function(wrap_pyfunction!(monotonic_ns, m)?)?;
    m.add_class::<Forwarder>()?;
    Ok(())
}
