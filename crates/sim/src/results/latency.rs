//! Latency results (docs/metrics.md, "Latency distributions"): percentiles of each recorded
//! flow's one-way delay and RTT in the flows table, of each group's in the summary, and the
//! distributions themselves as the `latency` table (one row per non-empty histogram bucket).

use super::{Column, Run, Table};
use crate::latency::{FlowLatency, LogHist, NOT_RECORDED};
use serde_json::{json, Map, Value};

/// The percentiles reported, and their column suffixes.
const PCTS: [(f64, &str); 4] = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p999")];

/// The two distributions and their column prefixes.
fn metrics(f: &FlowLatency) -> [(&'static str, &LogHist); 2] {
    [("owd", &f.owd), ("rtt", &f.rtt)]
}

/// `<m>_p50_s` ... `<m>_max_s`, `owd_mean_s` and `<m>_samples` of `h`.
fn stats(m: &str, h: &LogHist) -> Vec<(String, f64)> {
    let s = |ns: f64| ns / 1e9;
    let mut v: Vec<(String, f64)> = PCTS.iter().map(|(q, k)| (format!("{m}_{k}_s"), s(h.quantile(*q)))).collect();
    v.push((format!("{m}_max_s"), if h.n > 0 { s(h.max as f64) } else { f64::NAN }));
    if m == "owd" {
        // (no `rtt_mean_s`: the flows table has it already, over the whole run: docs/metrics.md)
        v.push((format!("{m}_mean_s"), s(h.mean())));
    }
    v.push((format!("{m}_samples"), h.n as f64));
    v
}

/// The flows table's latency columns (none when the run records no latency). Connections of
/// short and web groups, and flows not recorded, have NaN (their group's entry in the summary has
/// the connections' distribution).
pub(super) fn flow_columns(r: &Run, t: &mut Table) {
    let Some(l) = r.lat else { return };
    let empty = FlowLatency::default();
    let n = r.flows.len();
    let per_flow: Vec<Vec<(String, f64)>> = (0..n)
        .map(|i| {
            let recorded = l.of_flow(i);
            let f = recorded.unwrap_or(&empty);
            metrics(f)
                .iter()
                .flat_map(|(m, h)| stats(m, h))
                .map(|(k, v)| (k, if recorded.is_some() { v } else { f64::NAN }))
                .collect()
        })
        .collect();
    let names: Vec<String> = metrics(&empty).iter().flat_map(|(m, h)| stats(m, h)).map(|(k, _)| k).collect();
    for (c, name) in names.iter().enumerate() {
        t.push(name, Column::F64(per_flow.iter().map(|row| row[c].1).collect()));
    }
}

/// A group's distributions: its flows' histograms merged (a short or web group: its
/// connections'); `None` if the group is not recorded.
fn group_latency(r: &Run, gi: usize) -> Option<FlowLatency> {
    let l = r.lat?;
    let s = l.group_slot[gi];
    if s != NOT_RECORDED {
        return Some(l.slots[s as usize].clone());
    }
    let mut out: Option<FlowLatency> = None;
    for (i, f) in r.flows.iter().enumerate().take(l.flow_slot.len()) {
        if f.group as usize == gi {
            if let Some(h) = l.of_flow(i) {
                let o = out.get_or_insert_with(FlowLatency::default);
                o.owd.merge(&h.owd);
                o.rtt.merge(&h.rtt);
            }
        }
    }
    out
}

/// The latency keys of group `gi`'s summary entry (nothing when it is not recorded).
pub(super) fn group_keys(r: &Run, gi: usize, out: &mut Map<String, Value>) {
    if let Some(f) = group_latency(r, gi) {
        for (m, h) in metrics(&f) {
            for (k, v) in stats(m, h) {
                out.insert(k, json!(v));
            }
        }
    }
}

/// The `latency` table: per recorded flow (a short or web group's connections: `flow_id` -1)
/// and metric (`owd`, `rtt`), one row per non-empty bucket: `delay_s` (the bucket's value),
/// `count` (samples in it) and `cdf` (the fraction at or below it).
pub(super) fn table(r: &Run) -> Option<Table> {
    let l = r.lat?;
    let (mut flow, mut group, mut metric, mut delay, mut count, mut cdf) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut rows = |fid: i64, g: &str, f: &FlowLatency| {
        for (m, h) in metrics(f) {
            for (v, c, frac) in h.cdf() {
                flow.push(fid);
                group.push(g.to_string());
                metric.push(m.to_string());
                delay.push(v / 1e9);
                count.push(c as f64);
                cdf.push(frac);
            }
        }
    };
    for (i, f) in r.flows.iter().enumerate().take(l.flow_slot.len()) {
        if let Some(h) = l.of_flow(i) {
            rows(i as i64, &r.sc.groups[f.group as usize].name, h);
        }
    }
    for (gi, &s) in l.group_slot.iter().enumerate() {
        if s != NOT_RECORDED {
            rows(-1, &r.sc.groups[gi].name, &l.slots[s as usize]);
        }
    }
    let mut t = Table::default();
    t.push("flow_id", Column::I64(flow));
    t.push("group", Column::cat(group.into_iter()));
    t.push("metric", Column::cat(metric.into_iter()));
    t.push("delay_s", Column::F64(delay));
    t.push("count", Column::F64(count));
    t.push("cdf", Column::F64(cdf));
    Some(t)
}
