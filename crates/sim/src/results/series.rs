//! Time-indexed tables: the measured links' time series (one row per sample per link), the queue
//! snapshots (M10) and the per-flow series.

use super::{link_name, Interner, Run};
use crate::results::{Column, Table};

pub(super) fn tables(r: &Run) -> (Table, Option<Table>, Option<Table>) {
    let sc = r.sc;
    // every measured link is sampled at every sample time: interleave them time by time
    let mons = r.monitors;
    let rows = mons.first().map_or(0, |m| m.series.time.len());
    let per_row = |get: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
        (0..rows).flat_map(|k| (0..mons.len()).map(move |m| (k, m))).map(|(k, m)| get(m, k)).collect()
    };
    let mut ts = Table::default();
    ts.push("time_s", Column::F64(per_row(&|m, k| mons[m].series.time[k])));
    ts.push("link", Column::cat((0..rows).flat_map(|_| mons.iter().map(|m| link_name(r, m.link).to_string()))));
    ts.push("queue_pkts", Column::F64(per_row(&|m, k| mons[m].series.qlen[k])));
    ts.push("queue_bytes", Column::F64(per_row(&|m, k| mons[m].series.qbytes[k])));
    ts.push("utilisation", Column::F64(per_row(&|m, k| mons[m].series.util[k])));
    ts.push("drops", Column::F64(per_row(&|m, k| mons[m].series.drops[k])));
    // the AQMs' state variables: one column per name any measured link has (NaN for the others)
    let mut names: Vec<&str> = Vec::new();
    for m in mons {
        for n in m.series.state_names {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    for name in names {
        let col = per_row(&|m, k| {
            let s = &mons[m].series;
            s.state_names.iter().position(|n| *n == name).map_or(f64::NAN, |i| s.state[i][k])
        });
        ts.push(&format!("aqm_{name}"), Column::F64(col));
    }
    // a flow's group name and transport, for the per-packet and per-sample tables: categorical
    // columns (one string per group, whatever the rows: tens of millions of rows would otherwise
    // cost a string each, in Rust and again in Python)
    let by_group = |flows: &[i64], name: &dyn Fn(&crate::scenario::GroupSpec) -> String| {
        let mut col = Interner::default();
        for &f in flows {
            let g = r.flows[f as usize].group;
            col.push(&[g], || name(&sc.groups[g as usize]));
        }
        col.column()
    };
    let group = |g: &crate::scenario::GroupSpec| g.name.clone();
    let transport = |g: &crate::scenario::GroupSpec| g.transport_name().to_string();
    let snapshots = sc.queue_snapshots.then(|| {
        let s = r.snaps;
        let mut st = Table::default();
        st.push("time_s", Column::F64(s.t.clone()));
        st.push("link", Column::cat(s.link.iter().map(|&l| link_name(r, l).to_string())));
        st.push("position_from_tail", Column::I64(s.pos.clone()));
        st.push("queue_len", Column::I64(s.len.clone()));
        st.push("flow_id", Column::I64(s.flow.clone()));
        st.push("group", by_group(&s.flow, &group));
        st.push("transport", by_group(&s.flow, &transport));
        st
    });
    let flow_series = sc.flow_series_interval.map(|_| {
        let fs = r.fseries;
        let mut st = Table::default();
        st.push("time_s", Column::F64(fs.time.clone()));
        st.push("flow_id", Column::I64(fs.flow.clone()));
        st.push("group", by_group(&fs.flow, &group));
        st.push("transport", by_group(&fs.flow, &transport));
        st.push("throughput_bps", Column::F64(fs.thr.clone()));
        st.push("goodput_bps", Column::F64(fs.good.clone()));
        st.push("cwnd", Column::F64(fs.cwnd.clone()));
        st.push("pacing_rate_bps", Column::F64(fs.pacing.clone()));
        st.push("srtt_s", Column::F64(fs.srtt.clone()));
        st.push("retx_pkts", Column::F64(fs.retx.clone()));
        st
    });
    (ts, snapshots, flow_series)
}
