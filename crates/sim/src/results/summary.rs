//! The run summary (`summary.json`): the scenario, the network, one entry per measured link (and,
//! for a dumbbell, the bottleneck), one per flow group, fairness, and the engine's counts.

use super::{link_name, Derived, Run};
use crate::measure::jain;
use crate::monitor::{AtLinkSum, LinkMonitor};
use crate::net::NO_MONITOR;
use crate::scenario::{GroupSpec, Shape};
use aqm::{DropReason, QueueUnit};
use serde_json::{json, Map, Value};

pub(super) fn summary(r: &Run, d: &Derived) -> Value {
    let sc = r.sc;
    let end = sc.duration;
    let n = r.flows.len();
    let mut links = Map::new();
    for m in r.monitors {
        links.insert(link_name(r, m.link).into(), link_summary(r, d, m));
    }
    // the dumbbell's bottleneck, as before topologies: its link entry, with the CE marks its
    // flows' receivers saw
    let bottleneck =
        (sc.topology.shape == Shape::Dumbbell).then(|| links.get("bottleneck").cloned()).flatten().map(|mut b| {
            b["ce_marks"] = json!(d.window.iter().map(|c| c.ce_marks as u64).sum::<u64>());
            b
        });
    let groups: Vec<Value> = sc.groups.iter().enumerate().map(|(gi, g)| group_summary(r, d, gi, g)).collect();
    let is_tcp: Vec<bool> = r.flows.iter().map(|fl| fl.tcp).collect();
    // probes measure the network; they are not traffic sharing it
    let probe: Vec<bool> = r.flows.iter().map(|fl| sc.groups[fl.group as usize].is_probe()).collect();
    let thr_all: Vec<f64> = d.thrs().zip(&probe).filter(|(_, p)| !**p).map(|(x, _)| x).collect();
    let tcp_thr: Vec<f64> = d.thrs().zip(&is_tcp).filter(|(_, t)| **t).map(|(x, _)| x).collect();
    let tcp_good: Vec<f64> = (0..r.flows.len()).zip(&is_tcp).filter(|(_, t)| **t).map(|(i, _)| d.goodput(i)).collect();
    let topo = &sc.topology;
    let mut summary = json!({
        "scenario": {
            "name": sc.name,
            "description": sc.description,
            "seed": r.seed,
            "duration_s": end as f64 / 1e9,
            "warmup_s": sc.warmup as f64 / 1e9,
            "window_s": d.w,
            "flows": n,
            "aqmlab_version": env!("CARGO_PKG_VERSION"),
        },
        "topology": {
            "type": topo.shape.name(),
            "routing": topo.routing.name(),
            "nodes": topo.nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>(),
            "links": topo.links.iter().map(|l| json!({
                "name": l.name,
                "from": topo.nodes[l.from as usize].name,
                "to": topo.nodes[l.to as usize].name,
                "rate_bps": l.spec.rate_bps,
                "delay_s": l.spec.delay as f64 / 1e9,
                "aqm": l.spec.aqm.name(),
                "monitored": l.monitor,
            })).collect::<Vec<_>>(),
        },
        "links": links,
        "groups": groups,
        "fairness": {
            "jain_throughput_all": jain(&thr_all),
            "jain_throughput_tcp": jain(&tcp_thr),
            "jain_goodput_tcp": jain(&tcp_good),
        },
        "engine": {
            "events": r.engine.events,
            "packets_created": r.engine.created,
            "packets_delivered": r.engine.delivered,
            "packets_dropped": r.engine.dropped,
            "packets_in_flight": r.engine.in_flight,
            "data_packets_delivered": r.ctr.iter().map(|c| c.delivered_pkts as u64).sum::<u64>(),
            "conservation": "ok",
        },
    });
    if let Some(b) = bottleneck {
        summary["bottleneck"] = b;
    }
    let mut summary = clean_nan(summary);
    if sc.queue_snapshots {
        summary["queue_snapshots"] = json!({
            "count": r.snaps.count,
            "interval_s": sc.sample_interval as f64 / 1e9,
            "times": if sc.snapshot_poisson { "poisson" } else { "periodic" },
        });
    }
    summary
}

/// One measured link over the window: utilisation, queue, queueing delay, drops by reason, and
/// what each group (and the ACKs of all) sent through it.
fn link_summary(r: &Run, d: &Derived, mon: &LinkMonitor) -> Value {
    let sc = r.sc;
    let w = d.w;
    let l = mon.link as usize;
    let link = r.net.class(l);
    let tl = &sc.topology.links[l];
    let q = &link.aqm.as_ref().expect("a measured link has a queue").queue;
    let ws = mon.window_start.as_ref();
    let win = mon.window_summary(&q.stats, (sc.duration - sc.warmup) as f64);
    let qs = win.stats;
    let cap = link.rate_bps as f64;
    let mut drops = Map::new();
    // drops at the queue; random link loss happens before the queue and is reported apart
    // (`link_loss_drops`)
    for reason in DropReason::ALL {
        if reason != DropReason::LinkLoss {
            drops.insert(reason.name().into(), json!(qs.drops[reason.index()]));
        }
    }
    let total_drops: u64 = qs.drops.iter().sum();
    // per group: data packets of its flows here, and their drops here (all causes, loss
    // included); the ACKs' drops here
    let mut per_group: Vec<Option<(AtLinkSum, u64)>> = vec![None; sc.groups.len()];
    let mut ack_drops = 0;
    for (i, fl) in r.flows.iter().enumerate() {
        let route = &r.routes[i];
        let (fwd, rev) = (r.net.path(route, false), r.net.path(route, true));
        if let Some(h) = fwd.iter().position(|&x| x == mon.link) {
            let e = per_group[fl.group as usize].get_or_insert((AtLinkSum::default(), 0));
            e.0.add(&mon.flow_in_window(i));
            let total = d.window.get(i).total_drops();
            e.1 += r.hop_drops.get(i as u32, false, h as u8, route.fwd_len, fwd.len() as u8, total);
        }
        if let Some(h) = rev.iter().position(|&x| x == mon.link) {
            let total = d.window.get(i).ack_drops as u64;
            ack_drops += r.hop_drops.get(i as u32, true, h as u8, route.fwd_len, rev.len() as u8, total);
        }
    }
    let mut groups = Map::new();
    for (gi, e) in per_group.iter().enumerate() {
        if let Some((a, dropped)) = e {
            let thr = d.rate(a.tx_bytes);
            groups.insert(
                sc.groups[gi].name.clone(),
                json!({
                    "arrivals": a.arrivals,
                    "transmitted": a.tx_pkts,
                    "drops": dropped,
                    "throughput_bps": thr,
                    "share": thr / cap,
                }),
            );
        }
    }
    let acks = mon.acks.since(&ws.map_or(AtLinkSum::default(), |w| w.acks));
    let topo = &sc.topology;
    json!({
        "name": tl.name,
        "index": l,
        "from": topo.nodes[tl.from as usize].name,
        "to": topo.nodes[tl.to as usize].name,
        "aqm": tl.spec.aqm.name(),
        "capacity_bps": cap,
        "delay_s": tl.spec.delay as f64 / 1e9,
        "limit": tl.spec.limit.value,
        "queue_unit": if tl.spec.limit.unit == QueueUnit::Packets { "packets" } else { "bytes" },
        "utilisation": qs.transmitted_bytes as f64 * 8.0 / (cap * w),
        "throughput_bps": qs.transmitted_bytes as f64 * 8.0 / w,
        "arrivals": qs.arrivals,
        "transmitted": qs.transmitted,
        "drops": drops,
        "drops_total": total_drops,
        "link_loss_drops": win.link_loss,
        "drop_ratio": if qs.arrivals > 0 { total_drops as f64 / qs.arrivals as f64 } else { 0.0 },
        "queue_pkts_start": ws.map_or(0, |w| w.queue_pkts),
        "queue_pkts_end": q.len(),
        "state_bytes": q.state_bytes(),
        "queue_mean_pkts": win.queue_mean_pkts,
        "queue_mean_bytes": win.queue_mean_bytes,
        "queue_max_pkts": win.queue_max_pkts,
        "delay_mean_s": win.delay_mean_s,
        "delay_p50_s": win.delay_p50_s,
        "delay_p95_s": win.delay_p95_s,
        "delay_p99_s": win.delay_p99_s,
        "delay_samples": win.delay_samples,
        "groups": groups,
        "acks": {
            "arrivals": acks.arrivals,
            "transmitted": acks.tx_pkts,
            "drops": ack_drops,
            "throughput_bps": d.rate(acks.tx_bytes),
        },
    })
}

fn group_summary(r: &Run, d: &Derived, gi: usize, g: &GroupSpec) -> Value {
    let topo = &r.sc.topology;
    let idx: Vec<usize> = (0..r.flows.len()).filter(|&i| r.flows[i].group as usize == gi).collect();
    let members = || idx.iter().map(|&i| d.window.get(i));
    let mut fcts: Vec<f64> = idx.iter().map(|&i| d.fct(i)).filter(|x| x.is_finite()).collect();
    let thr: Vec<f64> = idx.iter().map(|&i| d.thr(i)).collect();
    let good: Vec<f64> = idx.iter().map(|&i| d.goodput(i)).collect();
    // (+ 0.0: the sum of no flows is -0.0 in IEEE arithmetic; a group without flows has 0 b/s)
    let sum_thr: f64 = thr.iter().sum::<f64>() + 0.0;
    let sum_good: f64 = good.iter().sum::<f64>() + 0.0;
    // the share of the capacity of the flows' measured links: summed per link
    let mut measured: Vec<u32> = Vec::new();
    for &i in &idx {
        let m = d.at(i).0;
        if !measured.contains(&m) {
            measured.push(m);
        }
    }
    let cap = |m: u32| d.link_rate(m);
    let share = match measured.as_slice() {
        // no flows yet (a short or web group): zero, of the sum's sign
        [] => sum_thr,
        [m] => sum_thr / cap(*m),
        _ => measured
            .iter()
            .map(|&m| idx.iter().filter(|&&i| d.at(i).0 == m).map(|&i| d.thr(i)).sum::<f64>() / cap(m))
            .sum(),
    };
    let mut drops = Map::new();
    for reason in DropReason::ALL {
        drops.insert(reason.name().into(), json!(members().map(|c| c.drops[reason.index()] as u64).sum::<u64>()));
    }
    // the fraction of the group's data packets lost, of those whose fate was decided in the window
    // (dropped anywhere on the path, or delivered): docs/metrics.md, "groups"
    let lost: u64 = members().map(|c| c.total_drops()).sum();
    let fated = lost + members().map(|c| c.delivered_pkts as u64).sum::<u64>();
    let loss = if fated > 0 { lost as f64 / fated as f64 } else { f64::NAN };
    fcts.sort_by(|a, b| a.total_cmp(b));
    let fct_mean = if fcts.is_empty() { f64::NAN } else { fcts.iter().sum::<f64>() / fcts.len() as f64 };
    let fct_median = if fcts.is_empty() { f64::NAN } else { fcts[fcts.len() / 2] };
    // time in recovery from retransmission timeouts: in all, the longest, and how many flows spent
    // more than a tenth of the window in it (the printed summary's note, docs/tcp.md)
    let window_ms = r.sc.duration.saturating_sub(r.sc.warmup) / 1_000_000;
    let rto_ms: u64 = members().map(|c| c.rto_ms as u64).sum();
    let rto_max_ms = members().map(|c| c.rto_ms).max().unwrap_or(0);
    let rto_flows = members().filter(|c| c.rto_ms as u64 * 10 > window_ms).count();
    let node = |n: u32| topo.nodes[n as usize].name.clone();
    let ends = |f: fn(&crate::scenario::Endpoints) -> u32| {
        let mut names: Vec<String> = Vec::new();
        for e in &g.endpoints {
            let n = node(f(e));
            if !names.contains(&n) {
                names.push(n);
            }
        }
        if names.len() == 1 {
            json!(names[0])
        } else {
            json!(names)
        }
    };
    // the group's route through the network, when all its flows share one
    let route = |f: fn(&crate::scenario::Endpoints) -> u32| {
        let first = f(&g.endpoints[0]);
        g.endpoints.iter().all(|e| f(e) == first).then(|| {
            topo.routes[first as usize].iter().map(|&l| topo.links[l as usize].name.clone()).collect::<Vec<_>>()
        })
    };
    let mut v = json!({
        "name": g.name,
        "transport": g.transport_name(),
        "app": g.app_name(),
        "variant": g.variant_name(),
        "from": ends(|e| e.src),
        "to": ends(|e| e.dst),
        "path": route(|e| e.fwd),
        "ack_path": route(|e| e.rev),
        "measured_link": match measured.as_slice() {
            [m] if *m != NO_MONITOR => json!(link_name(r, r.monitors[*m as usize].link)),
            _ => Value::Null,
        },
        "completed": fcts.len(),
        "completion_time_mean_s": fct_mean,
        "completion_time_median_s": fct_median,
        "flows": idx.len(),
        "throughput_bps": sum_thr,
        "goodput_bps": sum_good,
        "share": share,
        "throughput_per_flow_bps": sum_thr / idx.len() as f64,
        "goodput_per_flow_bps": sum_good / idx.len() as f64,
        "jain_throughput": jain(&thr),
        "jain_goodput": jain(&good),
        "drops": drops,
        "loss": loss,
        "timeouts": members().map(|c| c.timeouts as u64).sum::<u64>(),
        "ce_marks": members().map(|c| c.ce_marks as u64).sum::<u64>(),
        "ecn_reductions": members().map(|c| c.ecn_reductions as u64).sum::<u64>(),
        "fast_retransmits": members().map(|c| c.fast_retx as u64).sum::<u64>(),
        "rto_recovery_s": rto_ms as f64 / 1e3,
        "rto_recovery_max_s": rto_max_ms as f64 / 1e3,
        "rto_recovery_flows": rto_flows,
    });
    if let Value::Object(o) = &mut v {
        super::latency::group_keys(r, gi, o);
    }
    v
}

/// JSON has no NaN: undefined statistics become null.
fn clean_nan(v: Value) -> Value {
    match v {
        Value::Number(n) if n.as_f64().is_some_and(|x| !x.is_finite()) => Value::Null,
        Value::Array(a) => Value::Array(a.into_iter().map(clean_nan).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, clean_nan(v))).collect()),
        other => other,
    }
}
