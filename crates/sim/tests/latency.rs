//! Latency distributions and probe flows end to end (docs/metrics.md, "Latency distributions").

use sim::Results;

const BASE: &str = r#"
    [simulation]
    duration = "40s"
    warmup = "10s"
    [bottleneck]
    rate = "10Mb/s"
    delay = "10ms"
    limit = 500
    aqm = AQM
    [[flows]]
    name = "tcp"
    transport = "tcp"
    count = 4
    [[flows]]
    name = "udp"
    transport = "udp"
    rate = "2Mb/s"
    [[flows]]
    name = "voip"
    transport = "udp"
    app = "probe"
    interval = "20ms"
    packet_size = 200
"#;

fn run(aqm: &str, extra: &[&str]) -> Results {
    let text = BASE.replace("AQM", aqm);
    let ov: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    sim::run_text(&text, &ov, Some(1)).expect("runs")
}

fn group(r: &Results, name: &str) -> serde_json::Value {
    r.summary["groups"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap().clone()
}

#[test]
fn probe_delays_are_recorded_and_codel_keeps_them_low() {
    let dt = run(r#"{ type = "droptail" }"#, &[]);
    let fq = run(r#"{ type = "fq_codel" }"#, &[]);
    let (gd, gf) = (group(&dt, "voip"), group(&fq, "voip"));
    // 50 probes a second over the 30 s window, each echoed
    let n = gd["owd_samples"].as_f64().unwrap();
    assert!((1400.0..=1501.0).contains(&n), "{n}");
    assert!(gd["rtt_samples"].as_f64().unwrap() > 1300.0);
    // a 500-packet buffer at 10 Mb/s is 400 ms: DropTail's standing queue; FQ-CoDel's is ~5 ms
    let (pd, pf) = (gd["owd_p99_s"].as_f64().unwrap(), gf["owd_p99_s"].as_f64().unwrap());
    assert!(pd > 0.2, "droptail p99 {pd}");
    assert!(pf < 0.05, "fq_codel p99 {pf}");
    // one-way delay at least the propagation and transmission (1 + 10 + 1 ms)
    assert!(gf["owd_p50_s"].as_f64().unwrap() > 0.012);
    // the probe is no bulk traffic: the fairness index over all flows leaves it out
    let thr = dt.flows.f64s("throughput_bps");
    let xs: Vec<f64> = thr[..5].to_vec();
    let jain = sim::measure::jain(&xs).unwrap();
    assert_eq!(dt.summary["fairness"]["jain_throughput_all"].as_f64().unwrap(), jain);
    // the flows table: percentiles of the probe; none for the others (latency not asked for)
    let p99 = dt.flows.f64s("owd_p99_s");
    assert!(p99[5].is_finite() && p99[..5].iter().all(|x| x.is_nan()));
    // the CDF table: counts add up to the samples, fractions end at 1
    let l = dt.latency.as_ref().expect("a latency table");
    let cdf = l.f64s("cdf");
    assert_eq!(*cdf.last().unwrap(), 1.0);
    let counts: f64 = l.f64s("count").iter().sum();
    assert_eq!(counts, n + gd["rtt_samples"].as_f64().unwrap());
}

#[test]
fn latency_for_every_flow_when_asked() {
    let r = run(r#"{ type = "codel" }"#, &["simulation.latency=true"]);
    let owd = r.flows.f64s("owd_p50_s");
    let rtt = r.flows.f64s("rtt_p99_s");
    assert!(owd.iter().all(|x| x.is_finite()), "{owd:?}");
    // TCP flows and the probe have RTTs; the CBR source has none
    assert!(rtt[..4].iter().all(|x| x.is_finite()) && rtt[4].is_nan() && rtt[5].is_finite(), "{rtt:?}");
    // a TCP flow's RTT is at least the propagation round trip (2 x (1 + 10 + 1) ms)
    assert!(r.flows.f64s("rtt_p50_s")[0] > 0.024);
    assert!(group(&r, "tcp")["rtt_p99_s"].as_f64().unwrap() > 0.024);
}

#[test]
fn off_by_default_and_deterministic() {
    let text = BASE.replace("AQM", r#"{ type = "red", min_th = 50, max_th = 150 }"#);
    // without probes and latency: no columns, no table
    let plain: String = text.split("[[flows]]\n    name = \"voip\"").next().unwrap().to_string();
    let r = sim::run_text(&plain, &[], Some(3)).unwrap();
    assert!(r.latency.is_none() && r.flows.get("owd_p50_s").is_none());
    // same scenario and seed: the same distributions, bit for bit
    let a = sim::run_text(&text, &["simulation.latency=true".into()], Some(3)).unwrap();
    let b = sim::run_text(&text, &["simulation.latency=true".into()], Some(3)).unwrap();
    assert_eq!(a.latency, b.latency);
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows)); // (NaN != NaN)
}

#[test]
fn one_way_probes_have_no_round_trips_and_bad_keys_are_refused() {
    let r = run(r#"{ type = "droptail" }"#, &["flows[2].echo=false"]);
    assert_eq!(group(&r, "voip")["rtt_samples"].as_f64(), Some(0.0));
    assert!(group(&r, "voip")["owd_samples"].as_f64().unwrap() > 1000.0);
    let text = BASE.replace("AQM", r#"{ type = "droptail" }"#);
    for (o, path) in [
        ("flows[2].rate=\"1Mb/s\"", "flows[2].rate"),
        ("flows[2].interval=\"0s\"", "flows[2].interval"),
        ("flows[1].interval=\"20ms\"", "flows[1].interval"),
        ("flows[0].echo=true", "flows[0].echo"),
    ] {
        let e = sim::load(&text, &[o.to_string()], "t").unwrap_err();
        assert_eq!(e.path, path, "{o}: {e}");
    }
}
