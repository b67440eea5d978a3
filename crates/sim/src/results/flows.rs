//! The flows table: one row per flow (docs/metrics.md, "flows.csv").

use super::{link_name, Derived, Interner, Run};
use crate::hosts::NO_SESSION;
use crate::measure::FlowCounters;
use crate::net::NO_MONITOR;
use crate::results::{Column, Table};
use aqm::{DropReason, Time};

/// The flows table's columns, in order (docs/metrics.md, "flows.csv"): the schema of every
/// engine's flows table. The emulator's and ns-2's tables follow it (Python reads it as
/// `aqmlab.run.summary.FLOW_COLUMNS`, through `_core.flow_columns`), and the memory estimate
/// counts it (`crate::budget`).
pub const COLUMNS: &[&str] = &[
    "flow_id",
    "group",
    "transport",
    "app",
    "variant",
    "recovery",
    "host",
    "session",
    "priority",
    "start_s",
    "rtt_prop_s",
    "throughput_bps",
    "goodput_bps",
    "delivered_bps",
    "goodput_m2b_bps",
    "goodput_m2c_bps",
    "share",
    "sent_pkts",
    "sent_bytes",
    "retx_pkts",
    "delivered_pkts",
    "delivered_bytes",
    "goodput_bytes",
    "bneck_arrivals",
    "bneck_tx_pkts",
    "drops_early",
    "drops_forced",
    "drops_matched_arrival",
    "drops_matched_victim",
    "drops_overflow",
    "drops_link_loss",
    "drops_total",
    "ack_drops",
    "timeouts",
    "rto_recovery_s",
    "fast_retransmits",
    "ce_marks",
    "ecn_reductions",
    "rtt_mean_s",
    "rtt_min_s",
    "completion_time_s",
    "stop_s",
    "measured_link",
    "path",
    "hop_drops",
    "ack_path",
    "ack_hop_drops",
];

/// The columns of [`COLUMNS`] whose values are strings (a few distinct ones each: categorical).
pub const CATEGORICAL: &[&str] = &[
    "group",
    "transport",
    "app",
    "variant",
    "recovery",
    "measured_link",
    "path",
    "hop_drops",
    "ack_path",
    "ack_hop_drops",
];

/// The table's columns in four parts: who the flow is, its rates, its counts in the window, and
/// where it ran.
pub(super) fn table(r: &Run, d: &Derived) -> Table {
    let mut t = Table::default();
    identity(&mut t, r, d);
    rates(&mut t, r, d);
    counts(&mut t, r, d);
    paths(&mut t, r, d);
    debug_assert!(t.columns.iter().map(|(n, _)| n.as_str()).eq(COLUMNS.iter().copied()), "flows::COLUMNS");
    t
}

/// Bytes within the window of each flow: a count of packets times the flow's packet size.
fn window_bytes<'a>(r: &'a Run, d: &'a Derived, pkts: fn(&FlowCounters) -> u32) -> impl Iterator<Item = u64> + 'a {
    r.flows.iter().zip(d.window.iter()).map(move |(fl, c)| FlowCounters::bytes(pkts(&c), fl.size))
}

/// A column of a per-flow count within the window.
fn window_count(d: &Derived, count: fn(&FlowCounters) -> u64) -> Column {
    Column::F64(d.window.iter().map(|c| count(&c) as f64).collect())
}

/// A value that depends on the flow's group only: categorical, one code per row and no string
/// allocated per row (at ten million flows these were five strings a row).
fn by_group(r: &Run, g: &dyn Fn(usize) -> String) -> Column {
    let mut levels: Vec<String> = Vec::new();
    let group_code: Vec<u32> = (0..r.sc.groups.len())
        .map(|k| {
            let v = g(k);
            let code = levels.iter().position(|l| *l == v).unwrap_or(levels.len());
            if code == levels.len() {
                levels.push(v);
            }
            code as u32
        })
        .collect();
    Column::Cat { codes: r.flows.iter().map(|fl| group_code[fl.group as usize]).collect(), levels }
}

/// `flow_id` to `rtt_prop_s`: the flow, its group's names, its host and when it started.
fn identity(t: &mut Table, r: &Run, _d: &Derived) {
    let (sc, flows, n) = (r.sc, r.flows, r.flows.len());
    t.push("flow_id", Column::I64((0..n as i64).collect()));
    t.push("group", by_group(r, &|k| sc.groups[k].name.clone()));
    t.push("transport", by_group(r, &|k| sc.groups[k].transport_name().into()));
    t.push("app", by_group(r, &|k| sc.groups[k].app_name().into()));
    t.push("variant", by_group(r, &|k| sc.groups[k].variant_name().into()));
    t.push(
        "recovery",
        by_group(r, &|k| match &sc.groups[k].transport {
            crate::scenario::Transport::Tcp { cfg, .. } => cfg.recovery.name().into(),
            crate::scenario::Transport::Udp { .. } => "none".into(),
        }),
    );
    t.push("host", Column::I64(flows.iter().map(|fl| fl.host as i64).collect()));
    // web response connections: index of their session within the run (-1 for other flows)
    t.push(
        "session",
        Column::I64(flows.iter().map(|fl| if fl.session == NO_SESSION { -1 } else { fl.session as i64 }).collect()),
    );
    t.push("priority", Column::I64(flows.iter().map(|fl| fl.prio as i64).collect()));
    t.push("start_s", Column::F64(flows.iter().map(|fl| fl.start as f64 / 1e9).collect()));
    t.push(
        "rtt_prop_s",
        Column::F64(flows.iter().map(|fl| r.net.hosts[fl.host as usize].rtt_prop as f64 / 1e9).collect()),
    );
}

/// `throughput_bps` to `share`: the rates over the window (docs/metrics.md's definitions).
fn rates(t: &mut Table, r: &Run, d: &Derived) {
    let (sc, flows, n) = (r.sc, r.flows, r.flows.len());
    let (end, warmup) = (sc.duration, sc.warmup);
    let rate = |bytes: u64| d.rate(bytes);
    t.push("throughput_bps", Column::F64(d.thrs().collect()));
    t.push("goodput_bps", Column::F64(window_bytes(r, d, |c| c.unique_pkts).map(rate).collect()));
    t.push("delivered_bps", Column::F64(window_bytes(r, d, |c| c.delivered_pkts).map(rate).collect()));
    // M2b ([CHOKeD] Eq. 4.1): (received - received retransmissions) / the flow's own active
    // time within the window; M2c ([TWL]): largest sequence received x packet size / run length
    t.push(
        "goodput_m2b_bps",
        Column::F64(
            flows
                .iter()
                .zip(d.window.iter())
                .map(|(fl, c)| {
                    let active = fl.stop.min(end).saturating_sub(fl.start.max(warmup)) as f64 / 1e9;
                    let first = c.delivered_pkts - c.delivered_retx_pkts.min(c.delivered_pkts);
                    let bits = FlowCounters::bytes(first, fl.size) as f64 * 8.0;
                    if active > 0.0 {
                        bits / active
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
        ),
    );
    t.push(
        "goodput_m2c_bps",
        Column::F64(
            flows
                .iter()
                .zip(r.ctr)
                .map(|(fl, c)| {
                    let size = fl.size as f64;
                    c.max_seq_rcvd as f64 * size * 8.0 / (end as f64 / 1e9)
                })
                .collect(),
        ),
    );
    t.push("share", Column::F64((0..n).map(|i| d.thr(i) / d.cap(i)).collect()));
}

/// `sent_pkts` to `stop_s`: the counts within the window, RTT, completion and stop.
fn counts(t: &mut Table, r: &Run, d: &Derived) {
    let n = r.flows.len();
    let f = |x: u64| x as f64;
    let at = |get: fn(&crate::monitor::AtLink) -> u64| {
        Column::F64(
            (0..n)
                .map(|i| match d.at(i) {
                    (NO_MONITOR, _) => f64::NAN,
                    (_, a) => get(&a) as f64,
                })
                .collect(),
        )
    };
    t.push("sent_pkts", window_count(d, |c| c.sent_pkts as u64));
    t.push("sent_bytes", Column::F64(window_bytes(r, d, |c| c.sent_pkts).map(f).collect()));
    t.push("retx_pkts", window_count(d, |c| c.retx_pkts as u64));
    t.push("delivered_pkts", window_count(d, |c| c.delivered_pkts as u64));
    t.push("delivered_bytes", Column::F64(window_bytes(r, d, |c| c.delivered_pkts).map(f).collect()));
    t.push("goodput_bytes", Column::F64(window_bytes(r, d, |c| c.unique_pkts).map(f).collect()));
    t.push("bneck_arrivals", at(|a| a.arrivals as u64));
    t.push("bneck_tx_pkts", at(|a| a.tx_pkts as u64));
    for reason in DropReason::ALL {
        t.push(
            &format!("drops_{}", reason.name()),
            Column::F64(d.window.iter().map(|c| f(c.drops[reason.index()] as u64)).collect()),
        );
    }
    t.push("drops_total", window_count(d, |c| c.total_drops()));
    t.push("ack_drops", window_count(d, |c| c.ack_drops as u64));
    t.push("timeouts", window_count(d, |c| c.timeouts as u64));
    t.push("rto_recovery_s", Column::F64(d.window.iter().map(|c| c.rto_ms as f64 / 1e3).collect()));
    t.push("fast_retransmits", window_count(d, |c| c.fast_retx as u64));
    t.push("ce_marks", window_count(d, |c| c.ce_marks as u64));
    t.push("ecn_reductions", window_count(d, |c| c.ecn_reductions as u64));
    t.push(
        "rtt_mean_s",
        Column::F64(
            d.window
                .iter()
                .map(|c| if c.rtt_samples > 0 { c.rtt_sum_ns / c.rtt_samples as f64 / 1e9 } else { f64::NAN })
                .collect(),
        ),
    );
    t.push(
        "rtt_min_s",
        Column::F64(d.window.iter().map(|c| if c.rtt_samples > 0 { c.rtt_min_ns / 1e9 } else { f64::NAN }).collect()),
    );
    t.push("completion_time_s", Column::F64((0..n).map(|i| d.fct(i)).collect()));
    t.push(
        "stop_s",
        Column::F64(
            r.flows.iter().map(|fl| if fl.stop == Time::MAX { f64::NAN } else { fl.stop as f64 / 1e9 }).collect(),
        ),
    );
}

/// Where the flow ran: the link its throughput refers to, its paths and its drops hop by hop
/// (categorical: flows share a handful of distinct paths and drop patterns).
fn paths(t: &mut Table, r: &Run, d: &Derived) {
    let n = r.flows.len();
    t.push(
        "measured_link",
        Column::cat((0..n).map(|i| match d.at(i).0 {
            NO_MONITOR => String::new(),
            m => link_name(r, r.monitors[m as usize].link).to_string(),
        })),
    );
    let mut key = Vec::new();
    for (ack, col, drops) in [(false, "path", "hop_drops"), (true, "ack_path", "ack_hop_drops")] {
        let (mut paths, mut counts) = (Interner::default(), Interner::default());
        for i in 0..n {
            let route = &r.routes[i];
            let path = r.net.path(route, ack);
            // every access link has the same name
            key.clear();
            key.extend(path.iter().map(|&l| if (l as usize) < r.net.core { l } else { u32::MAX }));
            paths.push(&key, || path.iter().map(|&l| link_name(r, l)).collect::<Vec<_>>().join(" "));
            key.clear();
            let c = d.window.get(i);
            let total = if ack { c.ack_drops as u64 } else { c.total_drops() };
            let len = path.len() as u8;
            key.extend((0..len).map(|h| r.hop_drops.get(i as u32, ack, h, route.fwd_len, len, total) as u32));
            counts.push(&key, || key.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "));
        }
        t.push(col, paths.column());
        t.push(drops, counts.column());
    }
}
