//! The CHOKe family in the simulator (issue: "scenario tests that would fail if the mechanism were
//! missing"): 32 TCP flows and one 2 Mb/s UDP flow on a 1 Mb/s bottleneck. RED, which keeps no
//! flow information, lets the unresponsive flow take most of the link; every matched-drop scheme
//! must give it a clearly smaller share, mostly through matched drops.

use serde_json::Value;

fn scenario(aqm: &str, limit: u32) -> String {
    format!(
        r#"
        [simulation]
        duration = "100s"
        warmup = "20s"
        seed = 3
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = {limit}
        aqm = {aqm}
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 32
        [[flows]]
        name = "udp"
        transport = "udp"
        rate = "2Mb/s"
        "#
    )
}

struct Udp {
    share: f64,
    drops: f64,
    matched: f64,
}

fn udp(text: &str) -> Udp {
    let r = sim::run_text(text, &[], None).expect("runs");
    let g: &Vec<Value> = r.summary["groups"].as_array().unwrap();
    let u = g.iter().find(|g| g["name"] == "udp").unwrap();
    let d = &u["drops"];
    let f = |k: &str| d[k].as_f64().unwrap();
    let drops: f64 = ["early", "forced", "matched_arrival", "matched_victim", "overflow"].iter().map(|k| f(k)).sum();
    Udp { share: u["share"].as_f64().unwrap(), drops, matched: f("matched_arrival") + f("matched_victim") }
}

const RED_100: &str = r#"{ type = "red", min_th = 40, max_th = 80, w_q = 0.02, max_p = 0.1 }"#;

fn check(name: &str, aqm: &str, red: &str, limit: u32) {
    let base = udp(&scenario(red, limit));
    let s = udp(&scenario(aqm, limit));
    eprintln!(
        "{name}: UDP share {:.3} (RED {:.3}); UDP drops {} of which matched {:.0}%",
        s.share,
        base.share,
        s.drops,
        100.0 * s.matched / s.drops
    );
    assert!(base.share > 0.6, "RED baseline should let UDP dominate, got {}", base.share);
    assert!(s.share < 0.5 * base.share, "{name}: UDP share {} not clearly below RED's {}", s.share, base.share);
    assert!(s.matched > 0.5 * s.drops, "{name}: only {} of {} UDP drops are matched", s.matched, s.drops);
}

#[test]
fn choke_protects_tcp() {
    check("choke", r#"{ type = "choke", min_th = 40, max_th = 80, w_q = 0.02, max_p = 0.1 }"#, RED_100, 100);
}

#[test]
fn gchoke_protects_tcp() {
    check("gchoke", r#"{ type = "gchoke", min_th = 40, max_th = 80, w_q = 0.02, max_p = 0.1 }"#, RED_100, 100);
}

#[test]
fn choked_protects_tcp() {
    check("choked", r#"{ type = "choked" }"#, RED_100, 100);
}

#[test]
fn ward_protects_tcp() {
    check("ward", r#"{ type = "ward" }"#, RED_100, 100);
}

#[test]
fn chokew_protects_tcp() {
    // CHOKeW's own family: thresholds 100/125/175, L_lim = 500; RED as in [CHOKeW]
    check(
        "chokew",
        r#"{ type = "chokew" }"#,
        r#"{ type = "red", min_th = 100, max_th = 200, w_q = 0.002, max_p = 0.02, gentle = true }"#,
        500,
    );
}

#[test]
fn chokew_gives_the_higher_priority_class_more_per_flow() {
    let text = r#"
        [simulation]
        duration = "100s"
        warmup = "20s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "1ms"
        limit = 500
        aqm = { type = "chokew", weights = [1, 2] }
        [[flows]]
        name = "low"
        transport = "tcp"
        count = 20
        priority = 1
        [[flows]]
        name = "high"
        transport = "tcp"
        count = 20
        priority = 2
    "#;
    let r = sim::run_text(text, &[], None).expect("runs");
    let g = r.summary["groups"].as_array().unwrap();
    let per = |n: &str| g.iter().find(|x| x["name"] == n).unwrap()["goodput_per_flow_bps"].as_f64().unwrap();
    let (lo, hi) = (per("low"), per("high"));
    eprintln!("CHOKeW w=1: {lo:.0} b/s per flow, w=2: {hi:.0} b/s per flow");
    // the CHOKeW model (docs/models/chokew.md) predicts 1.34 for this set-up; the simulation gives
    // 1.18 with ns-2's TCP (1.29 when the RTO is not restarted at fast retransmit)
    assert!(hi > 1.1 * lo, "higher class {hi} not clearly above lower {lo}");
    // and the p0 trace is exposed
    assert!(r.timeseries.f64s("aqm_p0").iter().any(|p| *p > 0.0));
}

#[test]
fn lazy_victim_removal_protects_tcp_too() {
    // lazy deletion with doomed packets occupying the buffer: conservation still holds
    let s = udp(&scenario(r#"{ type = "choke", min_th = 40, max_th = 80, w_q = 0.02, victim_removal = "lazy" }"#, 100));
    assert!(s.share < 0.5);
}
