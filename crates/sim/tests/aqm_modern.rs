//! Scenario tests of FRED, aggregate WFQ and the modern baselines CoDel, PIE and FQ-CoDel
//! (aqm.md §14, §15, §17) in the simulator.
//!
//! Each test states the property it checks and where the expected value comes from (the scheme's
//! own set point or its service discipline, never a previous run), and runs a second
//! configuration under which the assertion would fail if the mechanism were missing (DropTail or
//! RED on the same scenario, or another set point). Run with `--nocapture` to see the numbers.
//!
//! 1. CoDel keeps the standing queueing delay near `target` on a long-RTT path with a huge buffer,
//!    where DropTail's delay is two orders of magnitude larger; a larger target gives a larger
//!    delay;
//! 2. PIE does the same around its own target;
//! 3. FQ-CoDel gives a TCP flow competing with an unresponsive UDP flow about half the link
//!    (Jain's index near 1), DropTail does not;
//! 4. WFQ serves backlogged priority levels in proportion to their weights (2 and 3 levels, GPS
//!    and self-clocked virtual time), which DropTail does not;
//! 5. FRED limits an unresponsive flow far more than RED does with the same thresholds;
//! 6. the scenario keys are the parameter names of the specification, with its defaults.

use serde_json::Value;
use sim::Results;

// =============================================================================================
// helpers

/// Run a scenario (conservation and the queue identities are checked inside `run_text`).
fn run(text: &str, seed: u64) -> Results {
    sim::run_text(text, &[], Some(seed)).unwrap_or_else(|e| panic!("run failed: {e}\n{text}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn bneck(r: &Results, key: &str) -> f64 {
    f(&r.summary["bottleneck"][key])
}

/// A group's entry in the summary, by name.
fn group<'a>(r: &'a Results, name: &str) -> &'a Value {
    r.summary["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no group {name}"))
}

/// Long-lived TCP flows on a 10 Mb/s bottleneck with a 1000-packet buffer (0.8 s of queue at
/// 1000-byte packets): round-trip propagation 2 (20 + 2 · 1) = 44 ms, so the buffer is about 18
/// bandwidth-delay products and DropTail keeps hundreds of packets queued.
fn bloated(aqm: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "25s"
        warmup = "5s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "20ms"
        limit = 1000
        aqm = {aqm}
        [access]
        rate = "100Mb/s"
        delay = "1ms"
        [[flows]]
        transport = "tcp"
        count = 8
        start = {{ uniform = ["0s", "1s"] }}
        "#
    )
}

struct DelayRun {
    mean: f64,
    p50: f64,
    util: f64,
    early: f64,
}

fn delay_run(aqm: &str) -> DelayRun {
    let r = run(&bloated(aqm), 1);
    let d = DelayRun {
        mean: bneck(&r, "delay_mean_s"),
        p50: bneck(&r, "delay_p50_s"),
        util: bneck(&r, "utilisation"),
        early: f(&r.summary["bottleneck"]["drops"]["early"]),
    };
    println!(
        "{aqm}: delay mean {:.4} s, p50 {:.4} s, utilisation {:.3}, early drops {}",
        d.mean, d.p50, d.util, d.early
    );
    d
}

// =============================================================================================
// 1. CoDel

/// CoDel (RFC 8289) drops at dequeue once the sojourn time has stayed above `target` for an
/// interval, so the standing queue — the delay most packets see — settles near `target`
/// whatever the buffer. Expected: median queueing delay within [0.2, 3] × target (5 ms) and the
/// link still busy (> 90 %); DropTail on the same path builds a queue of hundreds of packets
/// (median delay above 0.1 s, i.e. more than 20 × target, and a mean over 10 times CoDel's; the
/// ns-2 TCP preset measures 0.19 s and 18×). With
/// `target = 20 ms` the median delay is larger than with 5 ms (the set point moves the queue).
#[test]
fn codel_keeps_the_standing_delay_near_target() {
    let codel = delay_run(r#"{ type = "codel" }"#);
    let codel20 = delay_run(r#"{ type = "codel", target = "20ms" }"#);
    let droptail = delay_run(r#"{ type = "droptail" }"#);
    let target = 0.005;
    assert!(codel.p50 > 0.2 * target && codel.p50 < 3.0 * target, "CoDel median delay {} s", codel.p50);
    assert!(codel.util > 0.9, "CoDel utilisation {}", codel.util);
    assert!(codel.early > 0.0, "CoDel's control law dropped nothing");
    assert!(droptail.p50 > 20.0 * target, "DropTail median delay {} s", droptail.p50);
    assert!(codel.mean < droptail.mean / 10.0);
    assert!(codel20.p50 > codel.p50 * 1.5 && codel20.p50 < 3.0 * 0.020, "target 20 ms: median {} s", codel20.p50);
}

// =============================================================================================
// 2. PIE

/// PIE (RFC 8033) steers its drop probability so that the queueing delay estimate converges to
/// `target` (15 ms by default). Expected: mean queueing delay within [0.5, 2] × target with the
/// link busy (> 90 %); with `target = 40 ms` the mean delay is larger and again within a factor
/// 2 of its target; DropTail's mean delay on the same path is more than 10 times PIE's.
#[test]
fn pie_keeps_the_delay_near_target() {
    let pie = delay_run(r#"{ type = "pie" }"#);
    let pie40 = delay_run(r#"{ type = "pie", target = "40ms" }"#);
    let droptail = delay_run(r#"{ type = "droptail" }"#);
    for (d, target) in [(&pie, 0.015), (&pie40, 0.040)] {
        assert!(d.mean > 0.5 * target && d.mean < 2.0 * target, "PIE target {target}: mean delay {} s", d.mean);
        assert!(d.util > 0.9, "PIE target {target}: utilisation {}", d.util);
        assert!(d.early > 0.0);
    }
    assert!(pie40.mean > pie.mean * 1.5);
    assert!(pie.mean < droptail.mean / 10.0, "DropTail mean delay {} s", droptail.mean);
}

// =============================================================================================
// 3. FQ-CoDel

/// One TCP flow and one UDP CBR flow sending at 1.5 × the 2 Mb/s bottleneck. FQ-CoDel hashes
/// them into different buckets and serves the buckets by DRR, so the TCP flow can take half the
/// link (its fair share) and the UDP flow's excess is dropped from its own bucket: Jain's index
/// over the two throughputs above 0.95 and the TCP flow above 40 % of the link. With DropTail the
/// UDP flow takes most of the link (TCP below 25 %, Jain's index below 0.8).
#[test]
fn fq_codel_gives_tcp_its_fair_share_against_udp() {
    let text = |aqm: &str| {
        format!(
            r#"
            [simulation]
            duration = "30s"
            warmup = "5s"
            [bottleneck]
            rate = "2Mb/s"
            delay = "10ms"
            limit = 200
            aqm = {aqm}
            [[flows]]
            name = "tcp"
            transport = "tcp"
            [[flows]]
            name = "udp"
            transport = "udp"
            rate = "3Mb/s"
            "#
        )
    };
    let share = |r: &Results, g: &str| f(&group(r, g)["share"]);
    let fq = run(&text(r#"{ type = "fq_codel" }"#), 1);
    let dt = run(&text(r#"{ type = "droptail" }"#), 1);
    let (jf, jd) =
        (f(&fq.summary["fairness"]["jain_throughput_all"]), f(&dt.summary["fairness"]["jain_throughput_all"]));
    println!("fq_codel: tcp {:.3} udp {:.3} jain {jf:.3}", share(&fq, "tcp"), share(&fq, "udp"));
    println!("droptail: tcp {:.3} udp {:.3} jain {jd:.3}", share(&dt, "tcp"), share(&dt, "udp"));
    assert!(jf > 0.95, "FQ-CoDel Jain index {jf}");
    assert!(share(&fq, "tcp") > 0.4, "FQ-CoDel TCP share {}", share(&fq, "tcp"));
    assert!(share(&fq, "tcp") + share(&fq, "udp") > 0.95, "link stays busy");
    assert!(jd < 0.8, "DropTail Jain index {jd}");
    assert!(share(&dt, "tcp") < 0.25, "DropTail TCP share {}", share(&dt, "tcp"));
    // the UDP excess is dropped: by the per-bucket CoDel (early) or the fattest-bucket rule
    let udp = &group(&fq, "udp")["drops"];
    assert!(f(&udp["early"]) + f(&udp["overflow"]) > 0.0);
}

// =============================================================================================
// 4. WFQ

/// Priority levels kept backlogged by UDP CBR sources (each level offers the whole link), on a
/// 2 Mb/s bottleneck. WFQ gives each level throughput in proportion to its weight — the GPS
/// shares `φ_k / Σ φ` — within 2 % (weights 1:3 with GPS and self-clocked virtual time, and
/// 1:2:4). DropTail, serving in arrival order, ignores the levels: with equal offered loads it
/// does not give level 2 three times level 1's share (CBR phase effects decide its split).
#[test]
fn wfq_serves_backlogged_levels_in_proportion_to_weights() {
    let text = |aqm: &str, levels: usize| {
        let mut s = format!(
            r#"
            [simulation]
            duration = "20s"
            warmup = "2s"
            [bottleneck]
            rate = "2Mb/s"
            delay = "10ms"
            limit = 300
            aqm = {aqm}
            "#
        );
        for k in 1..=levels {
            // two sources per level, each offering the link rate, with different packet sizes
            s += &format!(
                r#"
                [[flows]]
                name = "level{k}"
                transport = "udp"
                count = 2
                rate = "1Mb/s"
                packet_size = {}
                priority = {k}
                "#,
                500 + 250 * k
            );
        }
        s
    };
    let shares = |r: &Results, levels: usize| -> Vec<f64> {
        (1..=levels).map(|k| f(&group(r, &format!("level{k}"))["share"])).collect()
    };
    for (aqm, weights) in [
        (r#"{ type = "wfq", weights = [1, 3] }"#, vec![1.0, 3.0]),
        (r#"{ type = "wfq", weights = [1, 3], wfq_vtime = "scfq" }"#, vec![1.0, 3.0]),
        (r#"{ type = "wfq", weights = [1, 2, 4], buffers = [50, 100, 150] }"#, vec![1.0, 2.0, 4.0]),
    ] {
        let r = run(&text(aqm, weights.len()), 1);
        let s = shares(&r, weights.len());
        let total: f64 = weights.iter().sum();
        println!("{aqm}: shares {s:?}");
        for (k, w) in weights.iter().enumerate() {
            let want = w / total;
            assert!((s[k] / want - 1.0).abs() < 0.02, "{aqm}: level {} share {} want {want}", k + 1, s[k]);
        }
    }
    let r = run(&text(r#"{ type = "droptail" }"#, 2), 1);
    let s = shares(&r, 2);
    println!("droptail: shares {s:?}");
    assert!(s[1] / s[0] < 2.0, "DropTail shares: {s:?}");
}

// =============================================================================================
// 5. FRED

/// The [WARD] §3.4 setting for FRED (min_th 60, max_th 120, buffer 120): 10 TCP flows and one
/// UDP CBR flow at 2 × the 1 Mb/s link. RED with the same thresholds keeps no per-flow state and
/// lets the UDP flow take most of the link; FRED caps the UDP flow's backlog at its per-flow
/// limits and strikes it, so its share is far smaller (below 60 % of RED's and below 0.5) and
/// most of its drops are `forced`, while the TCP flows get more than under RED.
#[test]
fn fred_limits_an_unresponsive_flow_more_than_red() {
    let text = |aqm: &str| {
        format!(
            r#"
            [simulation]
            duration = "40s"
            warmup = "10s"
            [bottleneck]
            rate = "1Mb/s"
            delay = "10ms"
            limit = 120
            aqm = {aqm}
            [[flows]]
            name = "tcp"
            transport = "tcp"
            count = 10
            start = {{ uniform = ["0s", "1s"] }}
            [[flows]]
            name = "udp"
            transport = "udp"
            rate = "2Mb/s"
            "#
        )
    };
    let fred = run(&text(r#"{ type = "fred", min_th = 60, max_th = 120 }"#), 1);
    let red = run(&text(r#"{ type = "red", min_th = 60, max_th = 120, max_p = 0.02 }"#), 1);
    let share = |r: &Results, g: &str| f(&group(r, g)["share"]);
    println!("fred: udp {:.3} tcp {:.3}", share(&fred, "udp"), share(&fred, "tcp"));
    println!("red:  udp {:.3} tcp {:.3}", share(&red, "udp"), share(&red, "tcp"));
    assert!(share(&red, "udp") > 0.6, "RED lets the UDP flow dominate: {}", share(&red, "udp"));
    assert!(
        share(&fred, "udp") < 0.6 * share(&red, "udp") && share(&fred, "udp") < 0.5,
        "FRED UDP share {}",
        share(&fred, "udp")
    );
    assert!(share(&fred, "tcp") > share(&red, "tcp") * 1.5);
    let d = &group(&fred, "udp")["drops"];
    assert!(f(&d["forced"]) > f(&d["early"]) + f(&d["overflow"]), "FRED's UDP drops: {d}");
}

// =============================================================================================
// 6. scenario keys

/// The keys of each scheme's `aqm` table are the specification's names (`fred_avg_on_arrival`
/// of A37, `wfq_vtime` of §15/A33, the RFC names for the modern baselines), omitted keys take the
/// specification's defaults, and errors name the offending key.
#[test]
fn scenario_keys_are_the_spec_parameter_names() {
    use aqm::fq_codel::FlowHash;
    use aqm::fred::AvgOnArrival;
    use aqm::pie::QdelayEstimator;
    use aqm::wfq::Vtime;
    use aqm::AqmConfig;
    let scn = |aqm: &str| {
        format!("[bottleneck]\nrate = \"10Mb/s\"\ndelay = \"5ms\"\nlimit = 500\naqm = {aqm}\n[[flows]]\ntransport = \"tcp\"\n")
    };
    let load = |aqm: &str| {
        sim::load(&scn(aqm), &[], "t")
            .unwrap_or_else(|e| panic!("{aqm}: {e}"))
            .bottleneck()
            .expect("a dumbbell")
            .aqm
            .clone()
    };
    let err = |aqm: &str| sim::load(&scn(aqm), &[], "t").expect_err(aqm);

    let AqmConfig::Fred(p) = load(r#"{ type = "fred", min_th = 60, max_th = 120 }"#) else { panic!() };
    assert_eq!(
        (p.max_p, p.w_q, p.min_q, p.mean_pkt_size, p.fred_avg_on_arrival),
        (0.02, 0.002, 4.0, 1000, AvgOnArrival::IdleOnly)
    );
    let AqmConfig::Fred(p) = load(r#"{ type = "fred", min_th = 60, max_th = 120, fred_avg_on_arrival = "always" }"#)
    else {
        panic!()
    };
    assert_eq!(p.fred_avg_on_arrival, AvgOnArrival::Always);
    let AqmConfig::Wfq(p) = load(r#"{ type = "wfq", weights = [1, 3], buffers = [125, 375] }"#) else { panic!() };
    assert_eq!((p.weights.clone(), p.buffers.clone(), p.wfq_vtime), (vec![1.0, 3.0], Some(vec![125, 375]), Vtime::Gps));
    let AqmConfig::Wfq(p) = load(r#"{ type = "wfq", weights = [1, 2.5], wfq_vtime = "scfq" }"#) else { panic!() };
    assert_eq!((p.level_buffers(500), p.wfq_vtime), (vec![142, 358], Vtime::Scfq));
    let AqmConfig::Codel(p) = load(r#"{ type = "codel" }"#) else { panic!() };
    assert_eq!((p.target, p.interval, p.maxpacket), (0.005, 0.1, 1000));
    let AqmConfig::Pie(p) = load(r#"{ type = "pie" }"#) else { panic!() };
    assert_eq!((p.target, p.t_update, p.alpha, p.beta, p.max_burst), (0.015, 0.015, 0.125, 1.25, 0.150));
    assert_eq!(
        (p.qdelay_estimator, p.derandomize, p.boost_above_250ms, p.dq_threshold),
        (QdelayEstimator::Head, false, false, 16384)
    );
    let AqmConfig::FqCodel(p) = load(r#"{ type = "fq_codel", quantum = 1014 }"#) else { panic!() };
    assert_eq!((p.flows, p.quantum, p.target, p.interval, p.hash), (1024, 1014, 0.005, 0.1, FlowHash::Mod));

    // a missing required key is reported on the table, naming the key
    for (aqm, key) in [(r#"{ type = "fred", min_th = 60 }"#, "max_th"), (r#"{ type = "wfq" }"#, "weights")] {
        let e = err(aqm);
        assert_eq!(e.path, "bottleneck.aqm", "{aqm}");
        assert!(e.msg.contains(key), "{aqm}: {}", e.msg);
    }
    for (aqm, path) in [
        (r#"{ type = "fred", min_th = 60, max_th = 50 }"#, "bottleneck.aqm.max_th"),
        (r#"{ type = "fred", min_th = 60, max_th = 120, min_q = -1 }"#, "bottleneck.aqm.min_q"),
        (
            r#"{ type = "fred", min_th = 60, max_th = 120, fred_avg_on_arrival = "never" }"#,
            "bottleneck.aqm.fred_avg_on_arrival",
        ),
        (r#"{ type = "wfq", weights = [1, 0] }"#, "bottleneck.aqm.weights"),
        (r#"{ type = "wfq", weights = [1, 2], buffers = [10] }"#, "bottleneck.aqm.buffers"),
        (r#"{ type = "codel", target = "0s" }"#, "bottleneck.aqm.target"),
        (r#"{ type = "codel", interval = "-1ms" }"#, "bottleneck.aqm.interval"),
        (r#"{ type = "pie", t_update = -1 }"#, "bottleneck.aqm.t_update"),
        (r#"{ type = "fq_codel", flows = 0 }"#, "bottleneck.aqm.flows"),
    ] {
        assert_eq!(err(aqm).path, path, "{aqm}");
    }
}
