//! Every TCP variant (`sim::scenario::TCP_NAMES`): one flow on a clean link fills it, runs are
//! deterministic, and the engine's packet-conservation check passes (a run that violated it
//! would return an error). Variant-specific behaviour is tested in tcp_recovery.rs (Reno, NewReno,
//! SACK), validation.rs (response functions) and tcp_vegas_cubic.rs.

use sim::scenario::TCP_NAMES;

/// One flow, 10 Mb/s bottleneck with 20 ms delay (RTT ~45 ms, BDP ~56 packets), DropTail buffer
/// of 200 packets (above the BDP): any window-based TCP that grows until loss fills the link.
fn clean_link(variant: &str, preset: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "60s"
        warmup = "20s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "20ms"
        limit = 200
        [access]
        rate = "100Mb/s"
        delay = "1ms"
        [tcp]
        variant = "{variant}"
        preset = "{preset}"
        [[flows]]
        transport = "tcp"
        start = "0s"
        "#
    )
}

#[test]
fn every_variant_fills_a_clean_link_with_either_preset() {
    for (v, _) in TCP_NAMES {
        for preset in ["ns2", "modern"] {
            let r = sim::run_text(&clean_link(v, preset), &[], None).expect("runs (conservation holds)");
            let util = r.summary["bottleneck"]["utilisation"].as_f64().unwrap();
            let good = r.flows.f64s("goodput_bps")[0];
            println!("{v:8} {preset:6}: utilisation {util:.4}, goodput {good:.0} b/s");
            assert!(util > 0.95, "{v} ({preset}): utilisation {util}");
            assert!(good > 0.9 * 10e6, "{v} ({preset}): goodput {good}");
            assert_eq!(r.flows.strs("variant"), vec![*v]);
        }
    }
}

#[test]
fn every_variant_is_deterministic_under_contention() {
    // 8 flows of the variant against 2 NewReno flows and a UDP flow, on RED
    for (v, _) in TCP_NAMES {
        let text = format!(
            r#"
            [simulation]
            duration = "30s"
            [bottleneck]
            rate = "2Mb/s"
            delay = "10ms"
            limit = 60
            aqm = {{ type = "red", min_th = 10, max_th = 30 }}
            [[flows]]
            name = "v"
            transport = "tcp"
            count = 8
            tcp = {{ variant = "{v}" }}
            [[flows]]
            name = "nr"
            transport = "tcp"
            count = 2
            [[flows]]
            name = "udp"
            transport = "udp"
            rate = "300kb/s"
            "#
        );
        let a = sim::run_text(&text, &[], Some(5)).expect("runs");
        let b = sim::run_text(&text, &[], Some(5)).expect("runs");
        let c = sim::run_text(&text, &[], Some(6)).expect("runs");
        assert_eq!(a.summary, b.summary, "{v}: same seed, different summary");
        // compare as text: NaN (undefined RTT of the UDP flow) is not equal to itself
        let text = |r: &sim::Results| format!("{:?}", r.flows);
        assert_eq!(text(&a), text(&b), "{v}: same seed, different flows table");
        assert_ne!(text(&a), text(&c), "{v}: another seed gave identical results");
    }
}
