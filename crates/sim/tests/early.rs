//! Early delivery (`Sim::deliver_early`: a packet entering its path's last link is handed to its
//! host at its arrival time without an event of its own; `Sim::pass_through`: one entering the
//! shared link before it moves on into it at once) changes nothing but the number of
//! events: every example and benchmark scenario, with the settings that constrain it (a warm-up, per-flow
//! samples, delayed ACKs and their timers, stopping flows, tiny access buffers, every TCP variant,
//! short and web traffic, probes and their echoes, latency histograms), and random dumbbells (with a reverse link that queues or drops ACKs,
//! and two-way traffic) give the same summary and tables with it and without it.

use proptest::prelude::*;
use serde_json::Value;
use sim::{Results, Sim};
use std::path::PathBuf;

mod common;

fn run(text: &str, overrides: &[String], early: bool) -> Results {
    let sc = sim::load(text, overrides, "scenario").unwrap_or_else(|e| panic!("{e}"));
    let mut s = Sim::new(sc, None).expect("build");
    if !early {
        s = s.without_early_delivery();
    }
    s.run(&mut |_| true).expect("run")
}

fn without_events(mut v: Value) -> (Value, u64) {
    let events = v["engine"]["events"].as_u64().expect("events");
    v["engine"].as_object_mut().expect("engine").remove("events");
    (v, events)
}

fn same_tables(a: &sim::Table, b: &sim::Table) -> bool {
    format!("{:?}", a.columns) == format!("{:?}", b.columns)
}

/// Both ways; the same results; returns the events (with, without).
fn check(name: &str, text: &str, overrides: &[String]) -> (u64, u64) {
    let (a, b) = (run(text, overrides, true), run(text, overrides, false));
    let ((sa, ea), (sb, eb)) = (without_events(a.summary), without_events(b.summary));
    assert!(sa == sb, "{name} {overrides:?}: summaries differ\n{sa}\n{sb}");
    assert!(same_tables(&a.flows, &b.flows), "{name} {overrides:?}: flows differ");
    assert!(same_tables(&a.timeseries, &b.timeseries), "{name} {overrides:?}: time series differ");
    for (x, y) in [(&a.snapshots, &b.snapshots), (&a.flow_series, &b.flow_series), (&a.latency, &b.latency)] {
        match (x, y) {
            (Some(x), Some(y)) => assert!(same_tables(x, y), "{name} {overrides:?}: tables differ"),
            (None, None) => {}
            _ => panic!("{name}: a table on one side only"),
        }
    }
    assert!(ea <= eb, "{name} {overrides:?}: more events with early delivery ({ea} > {eb})");
    (ea, eb)
}

fn read(p: PathBuf) -> String {
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn examples_give_the_same_results_with_fewer_events() {
    let variations: [&[&str]; 5] = [
        &[],
        &["simulation.duration=\"6s\"", "simulation.warmup=\"2s\"", "simulation.flow_series_interval=\"0.3s\""],
        &["simulation.duration=\"6s\"", "tcp.delayed_ack=true", "tcp.delack_timeout=\"40ms\""],
        &["simulation.duration=\"6s\"", "access.limit=3", "tcp.variant=\"vegas\""],
        &["simulation.duration=\"6s\"", "tcp.variant=\"reno\"", "flows[0].stop=\"3s\""],
    ];
    let (mut fewer, mut total) = (0, 0);
    for f in common::examples() {
        let text = read(f.clone());
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        for v in variations {
            // each override the example takes (a written-out network has no [access], ...)
            let mut over: Vec<String> = common::test_overrides(&f);
            for o in v {
                let mut more = over.clone();
                more.push(o.to_string());
                if sim::load(&text, &more, "scenario").is_ok() {
                    over = more;
                }
            }
            let (ea, eb) = check(&name, &text, &over);
            total += 1;
            fewer += (ea < eb) as u32;
        }
    }
    assert!(total >= 30, "only {total} runs");
    assert!(fewer * 2 > total, "early delivery took effect in only {fewer} of {total} runs");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_dumbbells_give_the_same_results(
        seed in 1u64..1000,
        tcp in 1u32..12,
        udp in 0u32..3,
        variant in 0usize..5,
        delack in any::<bool>(),
        warmup_ms in prop_oneof![Just(0u64), 1u64..1500],
        series_ms in prop_oneof![Just(0u64), 50u64..700],
        access_limit in prop_oneof![Just(1000u64), 2u64..12],
        stop_ms in prop_oneof![Just(0u64), 600u64..2500],
        aqm in 0usize..6,
        reverse in 0usize..3,
        back in 0u32..3,
    ) {
        let variant = ["reno", "newreno", "sack", "vegas", "cubic"][variant];
        let aqm = ["{ type = \"droptail\" }", "{ type = \"red\", min_th = 5, max_th = 15 }", "{ type = \"choke\", min_th = 5, max_th = 15 }",
            "{ type = \"codel\" }", "{ type = \"pie\" }", "{ type = \"fq_codel\" }"][aqm];
        let mut text = format!(
            "[simulation]\nduration = \"3s\"\nseed = {seed}\n{}{}\n[bottleneck]\nrate = \"5Mb/s\"\ndelay = \"10ms\"\nlimit = 40\naqm = {aqm}\n\
             [access]\nrate = \"20Mb/s\"\ndelay = \"3ms\"\nlimit = {access_limit}\n[tcp]\nvariant = \"{variant}\"\ndelayed_ack = {delack}\n\
             [[flows]]\nname = \"tcp\"\ntransport = \"tcp\"\ncount = {tcp}\nstart = {{ uniform = [\"0s\", \"0.5s\"] }}\n{}",
            if warmup_ms > 0 { format!("warmup = \"{warmup_ms}ms\"\n") } else { String::new() },
            if series_ms > 0 { format!("flow_series_interval = \"{series_ms}ms\"\n") } else { String::new() },
            if stop_ms > 0 { format!("stop = \"{stop_ms}ms\"\n") } else { String::new() },
        );
        // the shared reverse link: roomy, slow enough to queue ACKs, or small enough to drop them
        text += ["", "[reverse]\nrate = \"0.3Mb/s\"\n", "[reverse]\nrate = \"1Mb/s\"\nlimit = 3\n"][reverse];
        // two-way traffic: data over the reverse link, ACKs over the bottleneck
        if back > 0 {
            text += &format!("[[flows]]\nname = \"back\"\ntransport = \"tcp\"\nfrom = \"r2\"\nto = \"r1\"\ncount = {back}\n");
        }
        if udp > 0 {
            text += &format!("[[flows]]\nname = \"udp\"\ntransport = \"udp\"\ncount = {udp}\nrate = \"1Mb/s\"\n");
        }
        check("random dumbbell", &text, &[]);
    }
}
