//! Scenario tests of the fair schemes with a little state (SFB, AFD, CSFQ, RED-PD, SRED, xCHOKe,
//! HHF) and per-flow DRR, on the README's dumbbell: 33 NewReno flows and one 2 Mb/s UDP CBR flow
//! into 1 Mb/s with 100 packets of buffer (`examples/dumbbell-red.toml`), where RED leaves the UDP
//! flow about 98 % of the link.
//!
//! Each scheme runs with its defaults (no key besides `type`). Expectations are relations to RED
//! on the same scenario and to the max-min fair share 1/34, not numbers of an earlier run; run
//! with `--nocapture` to see the measured values.
//!
//! 1. every scheme but SRED keeps the UDP flow's share well below RED's (below a third of it, and
//!    below a third of the link); SRED, whose flow-count estimate sees one dominant flow, drops
//!    almost nothing early and leaves the UDP flow about what it takes under DropTail;
//! 2. CSFQ's labels are set where each flow enters the network: with them the core limits the UDP
//!    flow as well as with its own per-flow estimates (`labels = "local"`), and without a CSFQ link
//!    no packet is labelled (the same run with RED is the golden snapshot's);
//! 3. every discipline reports its state bytes in the summary: constant for RED, growing with the
//!    flows for DRR.

use serde_json::Value;
use sim::Results;

mod common;
use common::root;

fn dumbbell(aqm: &str) -> Results {
    let base = std::fs::read_to_string(root().join("examples/dumbbell-red.toml")).unwrap();
    let over = vec![format!("bottleneck.aqm={aqm}")];
    sim::run_text(&base, &over, None).unwrap_or_else(|e| panic!("{aqm}: {e}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn udp_share(r: &Results) -> f64 {
    let g = r.summary["groups"].as_array().unwrap().iter().find(|g| g["name"] == "udp").unwrap();
    f(&g["share"])
}

#[test]
fn each_scheme_keeps_the_udp_share_well_below_reds() {
    let red =
        udp_share(&dumbbell(r#"{ type = "red", min_th = 40, max_th = 80, w_q = 0.002, max_p = 0.1, gentle = true }"#));
    let droptail = udp_share(&dumbbell(r#"{ type = "droptail" }"#));
    println!("RED {red:.3}, DropTail {droptail:.3}, fair share {:.3}", 1.0 / 34.0);
    assert!(red > 0.9, "RED: {red}");
    for s in ["sfb", "afd", "csfq", "red_pd", "xchoke", "hhf", "drr"] {
        let r = dumbbell(&format!("{{ type = \"{s}\" }}"));
        let share = udp_share(&r);
        println!("{s:<8} UDP share {share:.3}  state {} bytes", r.summary["bottleneck"]["state_bytes"]);
        assert!(share < red / 3.0 && share < 1.0 / 3.0, "{s}: UDP share {share} against RED's {red}");
    }
    // SRED: 1/P(t) ~ 1 flow, so p_zap ~ p_sred / 256^2: the overflow drops do the work
    let r = dumbbell(r#"{ type = "sred" }"#);
    let sred = udp_share(&r);
    println!("sred     UDP share {sred:.3} (early drops {})", r.summary["bottleneck"]["drops"]["early"]);
    assert!(sred > 0.9 * droptail.min(red), "SRED: {sred}");
}

#[test]
fn csfq_labels_come_from_the_edges() {
    let edge = udp_share(&dumbbell(r#"{ type = "csfq" }"#));
    let local = udp_share(&dumbbell(r#"{ type = "csfq", labels = "local" }"#));
    println!("CSFQ: UDP share {edge:.3} with edge labels, {local:.3} with local labels");
    assert!(edge < 0.2 && local < 0.2, "edge {edge}, local {local}");
    assert!((edge - local).abs() < 0.05, "edge {edge}, local {local}");
}

#[test]
fn state_bytes_are_reported() {
    let b = |r: &Results| f(&r.summary["bottleneck"]["state_bytes"]);
    let red = dumbbell(r#"{ type = "red", min_th = 40, max_th = 80 }"#);
    let drr = dumbbell(r#"{ type = "drr" }"#);
    let sfb = dumbbell(r#"{ type = "sfb" }"#);
    // RED: a handful of scalars; SFB: its 46 bins of 24 bytes; DRR: per active flow
    assert!(b(&red) > 0.0 && b(&red) < 512.0, "RED {}", b(&red));
    assert!(b(&sfb) >= 46.0 * 24.0 && b(&sfb) < 2048.0, "SFB {}", b(&sfb));
    assert!(b(&drr) > 20.0 * 60.0, "DRR {}", b(&drr));
}
