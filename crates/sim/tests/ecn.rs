//! ECN end to end (RFC 3168): ECN-capable NewReno over an ECN-marking RED bottleneck gets its
//! congestion signals as CE marks instead of early drops, and still fills the link.

fn scenario(tcp_ecn: bool, aqm: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "60s"
        warmup = "10s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "10ms"
        limit = 400
        aqm = {aqm}
        [tcp]
        ecn = {tcp_ecn}
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 4
        "#
    )
}

fn group(r: &sim::Results, key: &str) -> f64 {
    r.summary["groups"][0][key].as_f64().unwrap()
}

#[test]
fn marks_replace_early_drops_for_ecn_capable_tcp() {
    for aqm in [
        r#"{ type = "red", min_th = 20, max_th = 80, max_p = 0.1, ecn = true }"#,
        r#"{ type = "pie", target = "15ms", ecn = true }"#,
        r#"{ type = "codel", target = "5ms", interval = "100ms", ecn = true }"#,
    ] {
        let with = sim::run_text(&scenario(true, aqm), &[], None).unwrap();
        let without = sim::run_text(&scenario(false, aqm), &[], None).unwrap();
        let b = &with.summary["bottleneck"];
        let early = |r: &sim::Results| r.summary["bottleneck"]["drops"]["early"].as_u64().unwrap();
        eprintln!(
            "{aqm}: ECN: {} marks, {} reductions, {} early drops, utilisation {:.3}; no ECN: {} early drops",
            b["ce_marks"],
            group(&with, "ecn_reductions"),
            early(&with),
            b["utilisation"].as_f64().unwrap(),
            early(&without)
        );
        assert!(early(&without) > 50, "{aqm}: the scenario should make the AQM signal");
        assert!(b["ce_marks"].as_u64().unwrap() > 50, "{aqm}: no marks");
        assert!(group(&with, "ecn_reductions") > 10.0);
        // early drops remain only for packets that are not ECN-capable (retransmissions, RFC 3168
        // §6.1.5) and, for PIE, above mark_ecn_th
        assert!(early(&with) * 10 < early(&without), "{aqm}: too many early drops with ECN");
        // at most one reduction per CE mark (one per window of data)
        assert!(group(&with, "ecn_reductions") <= b["ce_marks"].as_f64().unwrap());
        assert!(b["utilisation"].as_f64().unwrap() > 0.9);
        // marks are not drops: fewer retransmissions than without ECN
        let retx = |r: &sim::Results| r.flows.f64s("retx_pkts").iter().sum::<f64>();
        assert!(retx(&with) < retx(&without), "{aqm}");
    }
}
