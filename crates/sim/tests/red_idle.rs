//! Regression: a RED average pushed above max_th by a slow-start burst must decay once the link
//! is idle, even when every arrival in between is dropped (forced). With only the spec's §1.4 idle
//! rule (idle periods start when a transmission ends) no transmission ever ends again, and RED
//! dropped all traffic for the rest of the run; the engine now also starts an idle period when an
//! arrival to an idle, empty link is dropped, as ns-2 does.

#[test]
fn red_recovers_after_forced_drops_on_an_idle_link() {
    let text = r#"
        [simulation]
        duration = "60s"
        warmup = "10s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "10ms"
        limit = 400
        aqm = { type = "red", min_th = 20, max_th = 80, max_p = 0.1 }
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 4
    "#;
    let r = sim::run_text(text, &[], None).unwrap();
    let u = r.summary["bottleneck"]["utilisation"].as_f64().unwrap();
    // the average does come down after the initial burst
    let avg = r.timeseries.f64s("aqm_avg");
    assert!(avg.iter().cloned().fold(0.0, f64::max) > 80.0, "the burst should push avg above max_th");
    assert!(*avg.last().unwrap() < 80.0);
    assert!(u > 0.9, "utilisation {u}");
}
