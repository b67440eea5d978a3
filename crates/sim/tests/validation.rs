//! Validation of the simulator against published formulas and against its own invariants.
//!
//! These are the "done" criteria of the foundation issue:
//!
//! 1. determinism (same scenario + seed => identical results; another seed => different results);
//! 2. packet conservation and the bottleneck's accounting identities in every run;
//! 3. one NewReno flow fills a link whose buffer is at least a bandwidth-delay product, and with
//!    smaller buffers follows the classical Reno sawtooth utilisation formula;
//! 4. NewReno under random loss follows the Mathis et al. square-root law (and Padhye et al.'s
//!    formula, which adds timeouts);
//! 5. RED's drop probability against its average follows aqm.md §3 (base probability, EWMA with
//!    idle decay, uniformisation);
//! 6. bad scenarios are rejected with the right key path;
//! 7. random small scenarios always run (conservation and queue identities are checked inside
//!    `run_text`) and are deterministic.
//!
//! Every expected value below comes from a formula (quoted where it is used) or from an identity,
//! never from a previous run of the simulator. Run with `--nocapture` to see the measured numbers.

use aqm::red::{Red, RedParams};
use aqm::rng::Rng;
use aqm::{Cx, DropReason, Limit, LinkInfo, Qdisc};
use proptest::prelude::*;
use serde_json::Value;
use sim::{Column, Results, Table};

// =============================================================================================
// helpers

/// Run a scenario, panic with the error text if it fails, and check the accounting identities
/// that hold for every run (see [`check_accounting`]).
fn run(text: &str, overrides: &[&str], seed: Option<u64>) -> Results {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let r = sim::run_text(text, &ov, seed).unwrap_or_else(|e| panic!("run failed: {e}\noverrides {ov:?}\n{text}"));
    check_accounting(&r);
    r
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Data packets lost to the configured random link loss (`loss_rate`) in the window. Reported
/// in the bottleneck section (older builds had it at the top level of the summary).
fn link_loss(summary: &Value) -> u64 {
    let v = &summary["bottleneck"]["link_loss_drops"];
    u(if v.is_null() { &summary["link_loss_drops"] } else { v })
}

fn sum(xs: &[f64]) -> f64 {
    xs.iter().sum()
}

fn mean(xs: &[f64]) -> f64 {
    sum(xs) / xs.len() as f64
}

/// Identities every run must satisfy (experiments.md §3, aqm.md §1.3):
/// * packet conservation over the whole run: created = delivered + dropped + in flight;
/// * per-flow counters add up to the bottleneck queue's counters (both are windowed);
/// * over the window, arrivals − transmitted − drops is the change of the queue, so its size is
///   bounded by the buffer;
/// * utilisation cannot exceed 1 (plus the one packet that may straddle the end of the window);
/// * goodput (first deliveries) ≤ delivered ≤ sent.
fn check_accounting(r: &Results) {
    let s = &r.summary;
    let e = &s["engine"];
    assert_eq!(e["conservation"], "ok");
    let (created, delivered, dropped, in_flight) =
        (u(&e["packets_created"]), u(&e["packets_delivered"]), u(&e["packets_dropped"]), u(&e["packets_in_flight"]));
    assert_eq!(created, delivered + dropped + in_flight, "conservation: {e}");

    let b = &s["bottleneck"];
    let fl = &r.flows;
    let arrivals = u(&b["arrivals"]);
    let transmitted = u(&b["transmitted"]);
    let drops_total = u(&b["drops_total"]);
    assert_eq!(sum(fl.f64s("bneck_arrivals")) as u64, arrivals, "per-flow bottleneck arrivals");
    assert_eq!(sum(fl.f64s("bneck_tx_pkts")) as u64, transmitted, "per-flow bottleneck transmissions");
    let by_reason: u64 = b["drops"].as_object().unwrap().values().map(u).sum();
    assert_eq!(by_reason, drops_total, "drops by reason add up");
    let limit = u(&b["limit"]) as i64;
    let dq = arrivals as i64 - transmitted as i64 - drops_total as i64;
    assert!(dq.abs() <= limit, "queue change {dq} over the window exceeds the buffer {limit}");
    // per-flow data drops happen anywhere on the path, so they are at least the bottleneck's
    let flow_queue_drops = sum(fl.f64s("drops_early")) + sum(fl.f64s("drops_forced")) + sum(fl.f64s("drops_overflow"));
    assert!(flow_queue_drops as u64 >= drops_total);
    assert_eq!(sum(fl.f64s("drops_link_loss")) as u64, link_loss(s));

    let w = f(&s["scenario"]["window_s"]);
    let cap = f(&b["capacity_bps"]);
    let util = f(&b["utilisation"]);
    assert!((0.0..=1.0 + 8.0 * 65535.0 / (cap * w) + 1e-9).contains(&util), "utilisation {util}");

    for i in 0..fl.f64s("goodput_bytes").len() {
        let g = fl.f64s("goodput_bytes")[i];
        let d = fl.f64s("delivered_bytes")[i];
        let snt = fl.f64s("sent_bytes")[i];
        assert!(g <= d, "flow {i}: goodput bytes {g} > delivered {d}");
        // every delivered packet was sent; with a warm-up the window may deliver packets sent
        // before it, so the bound is checked only when the window is the whole run
        if f(&s["scenario"]["warmup_s"]) == 0.0 {
            assert!(d <= snt, "flow {i}: delivered {d} > sent {snt}");
        }
    }
}

/// A table as comparable text, with floats as their bit patterns (so NaN == NaN and -0 != 0).
fn table_bits(t: &Table) -> Vec<(String, String)> {
    t.columns
        .iter()
        .map(|(n, c)| {
            let v = match c {
                Column::F64(v) => format!("{:?}", v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()),
                Column::I64(v) => format!("{v:?}"),
                Column::Str(v) => format!("{v:?}"),
                c @ Column::Cat { .. } => format!("{:?}", c.strs()),
            };
            (n.clone(), v)
        })
        .collect()
}

// =============================================================================================
// 1. determinism

const EXAMPLE: &str = include_str!("../../../examples/dumbbell-red.toml");

#[test]
fn same_seed_gives_identical_results_and_another_seed_does_not() {
    let ov = ["simulation.duration=\"40s\""];
    let a = run(EXAMPLE, &ov, Some(11));
    let b = run(EXAMPLE, &ov, Some(11));
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
    assert_eq!(table_bits(&a.flows), table_bits(&b.flows));
    assert_eq!(table_bits(&a.timeseries), table_bits(&b.timeseries));

    // the seed given to run_text and the scenario's own seed are the same thing
    let c = run(EXAMPLE, &["simulation.duration=\"40s\"", "simulation.seed=11"], None);
    assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&c.summary).unwrap());
    assert_eq!(table_bits(&a.flows), table_bits(&c.flows));

    // another seed: the summary differs in more than the recorded seed
    let d = run(EXAMPLE, &ov, Some(12));
    let strip = |r: &Results| {
        let mut s = r.summary.clone();
        s["scenario"].as_object_mut().unwrap().remove("seed");
        serde_json::to_string(&s).unwrap()
    };
    assert_ne!(strip(&a), strip(&d));
    assert_ne!(a.flows.f64s("goodput_bps"), d.flows.f64s("goodput_bps"));
    assert_ne!(a.flows.f64s("start_s"), d.flows.f64s("start_s"));
}

// =============================================================================================
// 2. conservation

/// Drops of every kind at once: random loss on the data path and on the ACK path, RED early and
/// forced drops, bottleneck overflow (the buffer, 12 packets, is close to max_th, so the
/// instantaneous queue can fill it while the average is still in the probabilistic region),
/// overflow at tiny access buffers; a UDP source that stops and finite TCP transfers; a warm-up;
/// then the same in byte mode. Conservation must hold (checked by `run`), and packets must be
/// left in flight at the end, so the identity's in-flight term is exercised.
#[test]
fn conservation_holds_with_every_kind_of_drop() {
    let text = r#"
        [simulation]
        duration = "30s"
        warmup = "5s"
        [bottleneck]
        rate = "2Mb/s"
        delay = "15ms"
        limit = 12
        loss_rate = 0.01
        aqm = { type = "red", min_th = 3, max_th = 9, max_p = 0.1, w_q = 0.02 }
        [reverse]
        loss_rate = 0.02
        [access]
        rate = "10Mb/s"
        delay = "2ms"
        limit = 3
        [[flows]]
        name = "bulk"
        transport = "tcp"
        count = 8
        [[flows]]
        name = "short"
        transport = "tcp"
        count = 3
        size = "200KB"
        start = { uniform = ["0s", "20s"] }
        [[flows]]
        name = "slow-access"
        transport = "udp"
        rate = "200kb/s"
        sender_rate = "100kb/s"   # sends twice what its access link carries: its 3-packet buffer overflows
        [[flows]]
        name = "cbr"
        transport = "udp"
        rate = "1Mb/s"
        stop = "25s"
    "#;
    let r = run(text, &[], Some(3));
    let b = &r.summary["bottleneck"]["drops"];
    for k in ["early", "forced", "overflow"] {
        assert!(u(&b[k]) > 0, "no {k} drops: {b}");
    }
    assert!(link_loss(&r.summary) > 0);
    assert!(sum(r.flows.f64s("ack_drops")) > 0.0);
    assert!(u(&r.summary["engine"]["packets_in_flight"]) > 0);
    assert!(r.flows.f64s("completion_time_s").iter().any(|t| t.is_finite()), "no finite transfer completed");
    // access-link overflow: flows lost more packets than the bottleneck dropped
    let fl = &r.flows;
    let queue_drops = sum(fl.f64s("drops_early")) + sum(fl.f64s("drops_forced")) + sum(fl.f64s("drops_overflow"));
    assert!(
        queue_drops as u64 > u(&r.summary["bottleneck"]["drops_total"]),
        "expected drops at the 3-packet access buffers"
    );

    // byte mode
    let rb = run(
        text,
        &[
            "bottleneck.queue_unit=\"bytes\"",
            "bottleneck.limit=12000",
            "bottleneck.aqm.min_th=3000",
            "bottleneck.aqm.max_th=9000",
        ],
        Some(3),
    );
    assert!(u(&rb.summary["bottleneck"]["drops_total"]) > 0);
}

/// One UDP CBR source on a 1 Mb/s DropTail link (1000-byte packets: 8 ms each), where every
/// metric has a closed form: below capacity, goodput = sending rate and nothing waits; at twice
/// the capacity the link is saturated, half the packets overflow, the queue stays full so every
/// admitted packet waits for 99 to 100 transmissions, and Little's law L = λ·W links the
/// time-average queue (M7) to the mean wait (M8); with random loss p, goodput = rate × (1 − p).
#[test]
fn udp_cbr_metrics_match_closed_forms() {
    let scn = |rate: &str, loss: f64| {
        format!(
            r#"
            [simulation]
            duration = "60s"
            warmup = "10s"
            [bottleneck]
            rate = "1Mb/s"
            delay = "10ms"
            limit = 100
            loss_rate = {loss}
            [[flows]]
            transport = "udp"
            rate = "{rate}"
            "#
        )
    };
    let w = 50.0;
    let pkt_bits = 8000.0;
    // below capacity
    let r = run(&scn("500kb/s", 0.0), &[], Some(1));
    let b = &r.summary["bottleneck"];
    let g = r.flows.f64s("goodput_bps")[0];
    assert!((g - 0.5e6).abs() <= 2.0 * pkt_bits / w, "goodput {g}");
    assert!((f(&b["utilisation"]) - 0.5).abs() <= 2.0 * pkt_bits / (1e6 * w));
    assert_eq!(u(&b["drops_total"]), 0);
    assert_eq!(f(&b["delay_mean_s"]), 0.0, "CBR at half the capacity never waits");
    assert_eq!(f(&b["queue_mean_pkts"]), 0.0);

    // twice the capacity
    let r = run(&scn("2Mb/s", 0.0), &[], Some(1));
    let b = &r.summary["bottleneck"];
    let g = r.flows.f64s("goodput_bps")[0];
    assert!(f(&b["utilisation"]) >= 1.0 - 1e-3, "utilisation {}", b["utilisation"]);
    assert!((g - 1e6).abs() <= 2.0 * pkt_bits / w + 0.8 * 100.0 * pkt_bits / w, "goodput {g}");
    assert!((f(&b["drop_ratio"]) - 0.5).abs() < 0.01, "drop ratio {}", b["drop_ratio"]);
    let d = f(&b["delay_mean_s"]);
    assert!((0.99 * 0.8 - 1e-6..=0.8 + 1e-6).contains(&d), "mean wait {d} s, want 99..100 × 8 ms");
    let qm = f(&b["queue_mean_pkts"]);
    assert!((99.0..=100.0).contains(&qm), "mean queue {qm}");
    let lambda = u(&b["transmitted"]) as f64 / w;
    // Little: boundary terms are at most 2 × (100 packets × 0.8 s) over the 50 s window
    assert!((qm - lambda * d).abs() <= 2.0 * 100.0 * 0.8 / w, "Little: L {qm} vs λW {}", lambda * d);

    // random loss before the queue
    let p = 0.1;
    let r = run(&scn("500kb/s", p), &[], Some(1));
    let g = r.flows.f64s("goodput_bps")[0];
    let n = 0.5e6 * w / pkt_bits;
    let sd = (p * (1.0 - p) / n).sqrt();
    assert!((g / 0.5e6 - (1.0 - p)).abs() < 5.0 * sd + 2.0 / n, "goodput {g} with loss {p}");
}

// =============================================================================================
// 3. one NewReno flow on a clean link

/// A dumbbell with one TCP flow: 10 Mb/s, 20 ms bottleneck, 100 Mb/s access links (so the
/// bottleneck queue is where packets wait and are lost), DropTail with `limit` packets.
fn single_flow(limit: u64) -> String {
    format!(
        r#"
        [simulation]
        duration = "100s"
        warmup = "20s"
        [bottleneck]
        rate = "10Mb/s"
        delay = "20ms"
        limit = {limit}
        aqm = {{ type = "droptail" }}
        [access]
        rate = "100Mb/s"
        delay = "1ms"
        [[flows]]
        transport = "tcp"
        start = "0s"
        "#
    )
}

/// Utilisation of one Reno/NewReno flow in congestion avoidance behind a DropTail buffer of
/// `b` packets on a path whose bandwidth-delay product is `p` packets (the classical sawtooth
/// analysis behind the "buffer = RTT × C" rule, e.g. Villamizar & Song 1994, Appenzeller et al.
/// 2004): the window oscillates between (p+b)/2 and p+b, growing by one packet per round trip;
/// while it is below p the link is partly idle. Integrating over one cycle gives
/// `U = 3 (p+b)^2 / (4 (p^2 + p b + b^2))` for b < p and 1 for b >= p (3/4 for b = 0).
fn reno_sawtooth_utilisation(p: f64, b: f64) -> f64 {
    if b >= p {
        1.0
    } else {
        3.0 * (p + b).powi(2) / (4.0 * (p * p + p * b + b * b))
    }
}

#[test]
fn single_newreno_flow_fills_a_link_with_a_bdp_buffer() {
    let r = run(&single_flow(200), &[], Some(1));
    let b = &r.summary["bottleneck"];
    let util = f(&b["utilisation"]);
    // BDP = 10 Mb/s × ~45 ms / 8000 bit ≈ 56 packets < 200
    let bdp = 10e6 * r.flows.f64s("rtt_min_s")[0] / 8000.0;
    println!(
        "BDP {bdp:.1} packets, limit 200: utilisation {util:.5}, drops {}, timeouts {}",
        b["drops_total"],
        r.flows.f64s("timeouts")[0]
    );
    assert!(bdp < 200.0);
    assert!(util >= 0.95, "utilisation {util}");
    // the flow was congestion-limited, not window-limited: it filled the buffer and lost packets
    assert!(u(&b["drops_total"]) > 0);
    // ... and NewReno recovered from every loss of congestion avoidance by fast retransmit
    // (DropTail overflow in congestion avoidance loses one packet per window: no timeout needed)
    assert_eq!(r.flows.f64s("timeouts")[0], 0.0);
    assert!(r.flows.f64s("fast_retransmits")[0] > 0.0);
}

#[test]
fn single_newreno_flow_with_small_buffers_follows_the_sawtooth_formula() {
    for limit in [1u64, 10, 30] {
        let r = run(&single_flow(limit), &[], Some(1));
        let util = f(&r.summary["bottleneck"]["utilisation"]);
        // BDP from the minimum RTT (propagation + serialisation, no queueing), in packets; the
        // packet in transmission is one more place in the pipe than the `limit` waiting places.
        let p = 10e6 * r.flows.f64s("rtt_min_s")[0] / 8000.0;
        let want = reno_sawtooth_utilisation(p, limit as f64 + 1.0);
        println!("limit {limit}: BDP {p:.1} packets, utilisation {util:.4}, sawtooth formula {want:.4}");
        assert!((util - want).abs() <= 0.05, "limit {limit}: utilisation {util} vs formula {want}");
        assert!(util < 0.99, "a buffer well below the BDP must leave the link partly idle");
    }
}

// =============================================================================================
// 4. NewReno under random loss: Mathis and Padhye

/// `n` NewReno flows over a path with random loss `p` applied before the bottleneck queue. Every
/// link runs at 1 Gb/s with huge buffers, so the only losses are the random ones and the links
/// are never the limit; max_window = 10000 so the receiver window never is either.
/// Round-trip propagation delay 2 × (1 + 20 + 1) ms = 44 ms.
fn lossy_path(p: f64, n: u32, variant: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "100s"
        warmup = "10s"
        [bottleneck]
        rate = "1Gb/s"
        delay = "20ms"
        limit = 100000
        loss_rate = {p}
        [access]
        rate = "1Gb/s"
        delay = "1ms"
        limit = 100000
        [tcp]
        max_window = 10000
        variant = "{variant}"
        [[flows]]
        transport = "tcp"
        count = {n}
        "#
    )
}

const MSS_BITS: f64 = 8.0 * 1000.0;
const MIN_RTO: f64 = 0.2;
const CLOCK_G: f64 = 0.01;

/// Mathis, Semke, Mahdavi, Ott (1997): `BW = MSS/RTT × sqrt(3/(2p))` (periodic losses, no
/// timeouts, an ACK per segment), in bits/s.
fn mathis_bps(rtt: f64, p: f64) -> f64 {
    MSS_BITS / rtt * (3.0 / (2.0 * p)).sqrt()
}

/// Padhye, Firoiu, Towsley, Kurose (1998), approximate model with timeouts (b = 1 packet per ACK):
/// `B = 1 / (RTT sqrt(2bp/3) + T0 min(1, 3 sqrt(3bp/8)) p (1 + 32 p^2))` packets/s, in bits/s.
fn padhye_bps(rtt: f64, t0: f64, p: f64) -> f64 {
    let b = 1.0;
    let denom =
        rtt * (2.0 * b * p / 3.0).sqrt() + t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    MSS_BITS / denom
}

struct LossRun {
    goodput: f64,
    rtt: f64,
    mathis: f64,
    padhye: f64,
}

fn loss_run(p: f64) -> LossRun {
    loss_run_variant(p, "newreno")
}

fn loss_run_variant(p: f64, variant: &str) -> LossRun {
    let n = 10;
    let r = run(&lossy_path(p, n, variant), &[], Some(1));
    let fl = &r.flows;
    let b = &r.summary["bottleneck"];
    // only random losses, and the links were never the limit
    assert_eq!(u(&b["drops_total"]), 0, "p={p}: queue drops");
    assert!(f(&b["utilisation"]) < 0.5, "p={p}: the bottleneck must not be the limit");
    // the loss knob does what it says: the lost fraction of data packets offered to the
    // bottleneck link is p (binomial, 5 sigma)
    let lost = link_loss(&r.summary) as f64;
    let offered = lost + u(&b["arrivals"]) as f64;
    let sd = (p * (1.0 - p) / offered).sqrt();
    assert!((lost / offered - p).abs() < 5.0 * sd, "p={p}: measured loss fraction {}", lost / offered);

    // RTT for the formulas: the flows' measured mean RTT (`rtt_mean_s`), because Mathis's and
    // Padhye's RTT is the round-trip time the flow actually experiences (propagation +
    // serialisation + queueing). On this path queueing is negligible, so it must agree with the
    // propagation RTT to within 2 %; either choice then gives the same verdict.
    let rtt = mean(fl.f64s("rtt_mean_s"));
    let rtt_prop = fl.f64s("rtt_prop_s")[0];
    assert!((rtt / rtt_prop - 1.0).abs() < 0.02, "p={p}: mean RTT {rtt} vs propagation {rtt_prop}");
    // T0 for Padhye: the RFC 6298 timeout, max(min_rto, SRTT + max(G, 4 RTTVAR)); the RTT is
    // constant on this path, so RTTVAR decays to ~0 and T0 = max(0.2 s, RTT + 10 ms) = 0.2 s.
    let t0 = MIN_RTO.max(rtt + CLOCK_G);
    let goodput = mean(fl.f64s("goodput_bps"));
    let lr = LossRun { goodput, rtt, mathis: mathis_bps(rtt, p), padhye: padhye_bps(rtt, t0, p) };
    println!(
        "{variant} p={p:<6} goodput/flow {:>9.0} b/s  Mathis {:>9.0} (ratio {:.3})  Padhye {:>9.0} (ratio {:.3})  RTT {:.4} s  timeouts {}  fast retransmits {}",
        lr.goodput,
        lr.mathis,
        lr.goodput / lr.mathis,
        lr.padhye,
        lr.goodput / lr.padhye,
        lr.rtt,
        sum(fl.f64s("timeouts")),
        sum(fl.f64s("fast_retransmits"))
    );
    lr
}

/// The issue's criterion: goodput within ±25 % of Mathis. Padhye's formula must hold too (it
/// reduces to Mathis when timeouts are rare).
fn assert_mathis_and_padhye(p: f64) {
    let lr = loss_run(p);
    let rm = lr.goodput / lr.mathis;
    let rp = lr.goodput / lr.padhye;
    assert!((0.75..=1.25).contains(&rm), "p={p}: goodput {} is {rm:.3} × Mathis {}", lr.goodput, lr.mathis);
    assert!((0.75..=1.25).contains(&rp), "p={p}: goodput {} is {rp:.3} × Padhye {}", lr.goodput, lr.padhye);
}

#[test]
fn newreno_random_loss_0_1_percent_follows_mathis() {
    assert_mathis_and_padhye(0.001);
}

#[test]
fn newreno_random_loss_0_5_percent_follows_mathis() {
    assert_mathis_and_padhye(0.005);
}

#[test]
fn newreno_random_loss_1_percent_follows_mathis() {
    assert_mathis_and_padhye(0.01);
}

#[test]
fn newreno_random_loss_2_percent_follows_mathis() {
    assert_mathis_and_padhye(0.02);
}

/// At 5 % loss the window averages ~5.5 segments, so a loss is often followed by fewer than three
/// duplicate ACKs or hits a retransmission, and the flow waits for the retransmission timer.
/// Mathis's formula ignores timeouts; Padhye's includes them. With a 44 ms RTT and the 200 ms
/// minimum RTO of experiments.md §1.2, T0 ≈ 4.5 RTT, and Padhye predicts 0.64 × Mathis — outside
/// the issue's ±25 % band for reasons of the formula, not of the simulator. So here the
/// simulator is held to Padhye's formula (±25 %), and to the direction of Mathis's error (it
/// overestimates), while the literal criterion is kept, ignored, in
/// `newreno_random_loss_5_percent_within_25_percent_of_mathis_literal`.
#[test]
fn newreno_random_loss_5_percent_follows_padhye() {
    let p = 0.05;
    let lr = loss_run(p);
    let rp = lr.goodput / lr.padhye;
    assert!((0.75..=1.25).contains(&rp), "p={p}: goodput {} is {rp:.3} × Padhye {}", lr.goodput, lr.padhye);
    assert!(lr.goodput < lr.mathis, "timeouts must make TCP slower than Mathis at p = {p}");
}

#[test]
#[ignore = "known limitation of the Mathis formula at 5 % loss with min RTO 200 ms >> RTT 44 ms (timeouts); see newreno_random_loss_5_percent_follows_padhye"]
fn newreno_random_loss_5_percent_within_25_percent_of_mathis_literal() {
    assert_mathis_and_padhye(0.05);
}

/// Reno and SACK share NewReno's congestion control, so Padhye's response function (which models
/// Reno's fast recovery and timeouts) must hold for them too, across loss rates (±25 %). Reno's
/// recovery from several losses in one window needs a timeout, so it may fall below NewReno at
/// high p; SACK repairs them without, so it must do at least as well as NewReno.
#[test]
fn reno_and_sack_follow_padhye_across_loss_rates() {
    for p in [0.001, 0.01, 0.02, 0.05] {
        let newreno = loss_run_variant(p, "newreno");
        for v in ["reno", "sack"] {
            let lr = loss_run_variant(p, v);
            let rp = lr.goodput / lr.padhye;
            assert!((0.75..=1.25).contains(&rp), "{v} p={p}: goodput {} is {rp:.3} × Padhye {}", lr.goodput, lr.padhye);
            if v == "sack" {
                assert!(lr.goodput > 0.97 * newreno.goodput, "SACK below NewReno at p={p}");
            }
        }
    }
}

// =============================================================================================
// 5. RED: drop probability against the average (aqm.md §1.4 and §3)

/// aqm.md §3 `P_BASE`, written out again here (independently of `aqm::red_math`):
/// `(None, false)` below min_th (no test), `(Some(p_b), false)` in the probabilistic region,
/// `(None, true)` above the hard threshold (FORCED drop).
fn spec_p_base(avg: f64, min_th: f64, max_th: f64, max_p: f64, gentle: bool) -> (Option<f64>, bool) {
    if avg < min_th {
        (None, false)
    } else if avg < max_th {
        (Some(max_p * (avg - min_th) / (max_th - min_th)), false)
    } else if gentle && avg < 2.0 * max_th {
        (Some(max_p + (1.0 - max_p) * (avg - max_th) / max_th), false)
    } else {
        (None, true)
    }
}

#[derive(Clone, Copy)]
struct Pk(u32);
impl aqm::Pkt for Pk {
    fn flow(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        self.0
    }
}

/// Drive a RED queue (packet mode, `uniformise = false`, gentle) with a time-varying Poisson
/// load on a 1 ms-per-packet link, so that the average sweeps the whole range. The test keeps its
/// own EWMA (aqm.md §1.4, with the idle decay `(1 − w_q)^m`, `m = idle time / s`), checks it
/// against RED's, and then checks, in bins of the average, that the number of EARLY drops agrees
/// with Σ p_b(avg) of the arrivals in the bin: without uniformisation each arrival is dropped
/// independently with probability `p_b(avg)` given the past, so the difference is a martingale
/// with variance Σ p_b (1 − p_b), and a z-score above 4.5 in any bin would be a real deviation.
#[test]
fn red_early_drop_rate_follows_p_base_in_bins_of_the_average() {
    let (min_th, max_th, max_p, w_q) = (20.0, 60.0, 0.2, 0.005);
    let mut params = RedParams::with_thresholds(min_th, max_th, max_p);
    params.w_q = w_q;
    params.gentle = true;
    params.uniformise = false;
    let rate_bps = 8e6; // 1000-byte packets take 1 ms
    let s_ns = 1_000_000u64;
    let mut q: Red<Pk> = Red::new(params, LinkInfo { rate_bps }, Limit::packets(1000));
    let mut rng = Rng::stream(42, "red-test-aqm", 0);
    let mut arr_rng = Rng::stream(42, "red-test-arrivals", 0);
    let mut drops = Vec::new();

    // the spec's EWMA (aqm.md §1.4), kept by the test
    let mut avg = 0.0f64;
    let mut idle = true;
    let mut idle_since = 0u64;

    const NBINS: usize = 30; // avg in [0, 150), 5 packets wide
    let mut n = [0u64; NBINS];
    let mut exp = [0.0f64; NBINS];
    let mut var = [0.0f64; NBINS];
    let mut got = [0u64; NBINS];
    let (mut none_early, mut forced_wrong, mut forced_ok) = (0u64, 0u64, 0u64);

    let mut t: u64 = 0;
    let mut busy_until: Option<u64> = None; // transmission in progress until then
    let end = 400 * 1_000_000_000u64; // 400 s of simulated time, ~4e5 arrivals
    while t < end {
        // load oscillates between 0.7 and 1.5 times the capacity, period 40 s
        let phase = (t as f64 / 1e9) * std::f64::consts::TAU / 40.0;
        let lambda = 1000.0 * (1.1 + 0.4 * phase.sin()); // packets per second
        let gap = (-(1.0 - arr_rng.uniform()).ln() / lambda * 1e9) as u64;
        let ta = t + gap.max(1);
        // transmissions that end before the arrival
        while let Some(tf) = busy_until {
            if tf > ta {
                break;
            }
            let mut cx = Cx { now: tf, rng: &mut rng, drops: &mut drops };
            if q.dequeue(&mut cx).is_some() {
                busy_until = Some(tf + s_ns);
            } else {
                busy_until = None;
                q.on_link_idle(tf);
                idle = true;
                idle_since = tf;
            }
        }
        // the arrival
        let qlen = q.len() as f64;
        if idle {
            let m = (ta - idle_since) as f64 / s_ns as f64;
            avg *= (1.0 - w_q).powf(m);
            idle = false;
        }
        avg = (1.0 - w_q) * avg + w_q * qlen;
        drops.clear();
        let mut cx = Cx { now: ta, rng: &mut rng, drops: &mut drops };
        let admitted = q.enqueue(Pk(1000), &mut cx);
        assert!((q.avg() - avg).abs() <= 1e-9 * avg.max(1.0), "EWMA: RED {} vs spec {avg}", q.avg());
        let reason = drops.first().map(|d| d.reason);
        assert_eq!(admitted, reason.is_none());
        let (pb, hard) = spec_p_base(avg, min_th, max_th, max_p, true);
        match (pb, hard) {
            (Some(pb), _) => {
                let k = ((avg / 5.0) as usize).min(NBINS - 1);
                n[k] += 1;
                exp[k] += pb;
                var[k] += pb * (1.0 - pb);
                if reason == Some(DropReason::Early) {
                    got[k] += 1;
                }
                assert_ne!(reason, Some(DropReason::Forced));
            }
            (None, true) => {
                if reason == Some(DropReason::Forced) {
                    forced_ok += 1
                } else {
                    forced_wrong += 1
                }
            }
            (None, false) => {
                if reason == Some(DropReason::Early) || reason == Some(DropReason::Forced) {
                    none_early += 1
                }
            }
        }
        if admitted && busy_until.is_none() {
            let mut cx = Cx { now: ta, rng: &mut rng, drops: &mut drops };
            assert!(q.dequeue(&mut cx).is_some());
            busy_until = Some(ta + s_ns);
        }
        t = ta;
    }
    assert_eq!(none_early, 0, "AQM drops below min_th");
    assert_eq!(forced_wrong, 0, "arrivals above 2 max_th not FORCED");
    let mut tested = 0;
    let mut bins_used = 0;
    for k in 0..NBINS {
        if n[k] == 0 {
            continue;
        }
        tested += n[k];
        let z = (got[k] as f64 - exp[k]) / var[k].sqrt().max(1e-9);
        println!(
            "avg [{:>3}, {:>3}): {:>6} arrivals, early-drop rate {:.4}, mean p_b {:.4}, z {:+.2}",
            5 * k,
            5 * k + 5,
            n[k],
            got[k] as f64 / n[k] as f64,
            exp[k] / n[k] as f64,
            z
        );
        if var[k] > 0.0 {
            assert!(z.abs() < 4.5, "bin {k}: {} early drops, expected {:.1} (z = {z:.2})", got[k], exp[k]);
        } else {
            assert_eq!(got[k], 0);
        }
        if n[k] >= 1000 {
            bins_used += 1;
        }
    }
    println!("forced drops above 2 max_th: {forced_ok}");
    // the load really swept the probabilistic region, both the linear and the gentle part
    assert!(tested > 100_000, "only {tested} arrivals in the probabilistic region");
    assert!(bins_used >= 12, "only {bins_used} well-populated bins");
    assert!(n[(max_th / 5.0) as usize + 1] >= 1000, "gentle region not reached");
}

/// Uniformisation (aqm.md §3, step 5, "Effective early-drop rate"): at a constant `p_b` the
/// tested arrivals between drops form a renewal process with `P(gap > n) = Π_{k=1..n} (1 − p_a(k))`,
/// `p_a(k) = p_b / (1 − k p_b)` (1 once `k p_b >= 1`), so the long-run early-drop fraction is
/// `1 / E[gap]` — which is `2 p_b` exactly when `1/p_b` is an integer — and no gap exceeds
/// `ceil(1/p_b)`. The queue is held at a fixed length with `w_q = 1`, so `avg` is that length.
#[test]
fn red_uniformised_drop_rate_matches_the_renewal_formula() {
    fn expected_gap(pb: f64) -> f64 {
        let mut surv = 1.0; // P(gap > n)
        let mut e = 0.0;
        let mut k = 0;
        while surv > 0.0 {
            e += surv;
            k += 1;
            let pa = if (k as f64) * pb < 1.0 { pb / (1.0 - k as f64 * pb) } else { 1.0 };
            surv *= 1.0 - pa.min(1.0);
            if k > 1_000_000 {
                break;
            }
        }
        e
    }
    // the spec's closed form for integer 1/p_b
    for m in [10.0, 20.0, 50.0, 100.0] {
        assert!((1.0 / expected_gap(1.0 / m) - 2.0 / m).abs() < 1e-9, "m = {m}");
    }

    let (min_th, max_th, max_p) = (10.0, 110.0, 0.2);
    for level in [15usize, 20, 35, 45, 60, 90] {
        let pb = max_p * (level as f64 - min_th) / (max_th - min_th);
        let mut params = RedParams::with_thresholds(min_th, max_th, max_p);
        params.w_q = 1.0;
        let mut q: Red<Pk> = Red::new(params, LinkInfo { rate_bps: 8e6 }, Limit::packets(1000));
        let mut rng = Rng::stream(7, "red-uniform", level as u64);
        let mut drops = Vec::new();
        // fill the queue to `level` (with w_q = 1 the average is the queue the arrival sees;
        // arrivals on the way may be dropped, so push until the level is reached)
        let mut now = 0;
        while q.len() < level {
            let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
            q.enqueue(Pk(1000), &mut cx);
            now += 1;
        }
        let n = 200_000u64;
        let (mut ndrops, mut gap, mut max_gap, mut gaps) = (0u64, 0u64, 0u64, 0u64);
        for _ in 0..n {
            let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
            gap += 1;
            if q.enqueue(Pk(1000), &mut cx) {
                let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
                q.dequeue(&mut cx).unwrap();
            } else {
                ndrops += 1;
                if ndrops > 1 {
                    max_gap = max_gap.max(gap);
                    gaps += 1;
                }
                gap = 0;
            }
            assert_eq!(q.len(), level);
            assert_eq!(q.avg(), level as f64);
            now += 1;
        }
        let eg = expected_gap(pb);
        let frac = ndrops as f64 / n as f64;
        // the gap is uniform-like on 1..1/p_b, sd ≈ E[gap]/sqrt(3); 5 sigma on the mean gap
        let rel_tol = 5.0 * (1.0 / 3.0f64).sqrt() / (gaps as f64).sqrt();
        println!(
            "p_b {pb:.3}: drop fraction {frac:.5}, 1/E[gap] {:.5}, 2 p_b {:.5}, max gap {max_gap}",
            1.0 / eg,
            2.0 * pb
        );
        assert!((frac * eg - 1.0).abs() < rel_tol, "p_b {pb}: fraction {frac} vs {}", 1.0 / eg);
        assert!(max_gap as f64 <= (1.0 / pb).ceil() + 1e-9, "p_b {pb}: gap {max_gap} > 1/p_b");
    }
}

/// End to end: in a simulation with RED (`uniformise = false`, so the probability RED applies
/// is `p_b` itself), every sample of the time series satisfies `aqm_p = P_BASE(aqm_avg)` exactly,
/// for the linear and the gentle region, and the average visits the probabilistic region.
#[test]
fn red_in_a_simulation_applies_p_base_of_its_average() {
    for gentle in [false, true] {
        let ov = [
            "simulation.duration=\"60s\"",
            "simulation.sample_interval=\"50ms\"",
            "bottleneck.limit=200",
            "bottleneck.aqm.min_th=40",
            "bottleneck.aqm.max_th=80",
            "bottleneck.aqm.max_p=0.1",
            "bottleneck.aqm.uniformise=false",
            "bottleneck.aqm.w_q=0.01",
        ];
        let mut ov: Vec<&str> = ov.to_vec();
        ov.push(if gentle { "bottleneck.aqm.gentle=true" } else { "bottleneck.aqm.gentle=false" });
        let r = run(EXAMPLE, &ov, Some(5));
        let avg = r.timeseries.f64s("aqm_avg");
        let p = r.timeseries.f64s("aqm_p");
        let (mut in_prob, mut in_gentle, mut in_hard) = (0, 0, 0);
        for (a, p) in avg.iter().zip(p) {
            let want = match spec_p_base(*a, 40.0, 80.0, 0.1, gentle) {
                (Some(pb), _) => {
                    in_prob += 1;
                    if *a >= 80.0 {
                        in_gentle += 1;
                    }
                    pb
                }
                (None, true) => {
                    in_hard += 1;
                    1.0
                }
                (None, false) => 0.0,
            };
            assert!((p - want).abs() < 1e-12, "gentle={gentle}: avg {a} gives p {p}, P_BASE {want}");
        }
        println!(
            "gentle={gentle}: {} samples, {in_prob} in the probabilistic region ({in_gentle} in the gentle part), {in_hard} above the hard threshold",
            avg.len()
        );
        assert!(in_prob > avg.len() / 4, "gentle={gentle}: the average rarely reached the probabilistic region");
        if gentle {
            assert!(in_gentle > 0, "the gentle region was never visited");
        } else {
            assert!(in_hard > 0, "the hard region was never visited");
        }
    }
}

// =============================================================================================
// 6. bad scenarios

const GOOD: &str = r#"
[simulation]
duration = "10s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 100
aqm = { type = "red", min_th = 40, max_th = 80 }
[[flows]]
transport = "tcp"
count = 3
[[flows]]
transport = "udp"
rate = "2Mb/s"
"#;

fn load_err(text: &str, overrides: &[&str]) -> sim::ScenarioError {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match sim::load(text, &ov, "t") {
        Ok(_) => panic!("accepted a bad scenario (overrides {ov:?}):\n{text}"),
        Err(e) => {
            // run_text reports the same error, key path first
            let msg = sim::run_text(text, &ov, None).unwrap_err();
            assert!(msg.starts_with(&e.path), "run_text error {msg:?} does not start with {:?}", e.path);
            e
        }
    }
}

#[track_caller]
fn expect_err(text: &str, overrides: &[&str], path: &str, msg_contains: &str) {
    let e = load_err(text, overrides);
    assert_eq!(e.path, path, "message: {}", e.msg);
    assert!(
        e.msg.to_lowercase().contains(&msg_contains.to_lowercase()),
        "path {path}: message {:?} lacks {msg_contains:?}",
        e.msg
    );
}

#[test]
fn bad_scenarios_name_the_key_path() {
    assert!(sim::load(GOOD, &[], "t").is_ok());
    // unknown keys, at the top level and nested
    expect_err(&format!("bogus = 1\n{GOOD}"), &[], "bogus", "unknown field");
    expect_err(&GOOD.replace("[simulation]", "[simulation]\nlength = 3"), &[], "simulation.length", "unknown field");
    expect_err(&GOOD.replace("count = 3", "count = 3\nwindow = 9"), &[], "flows[0].window", "unknown field");
    expect_err(GOOD, &["nosuch.key=1"], "nosuch", "unknown field");
    // wrong types
    expect_err(&GOOD.replace("limit = 100", "limit = \"big\""), &[], "bottleneck.limit", "invalid type");
    expect_err(&GOOD.replace("count = 3", "count = 2.5"), &[], "flows[0].count", "invalid type");
    expect_err(GOOD, &["bottleneck.aqm.gentle=3"], "bottleneck.aqm.gentle", "invalid type");
    expect_err(GOOD, &["simulation.duration=true"], "simulation.duration", "");
    // negative / zero rates
    expect_err(&GOOD.replace("rate = \"1Mb/s\"", "rate = \"-1Mb/s\""), &[], "bottleneck.rate", "positive");
    expect_err(&GOOD.replace("rate = \"1Mb/s\"", "rate = \"0b/s\""), &[], "bottleneck.rate", "positive");
    expect_err(&GOOD.replace("rate = \"2Mb/s\"", "rate = \"-2Mb/s\""), &[], "flows[1].rate", "positive");
    expect_err(GOOD, &["access.rate=-10b/s"], "access.rate", "positive");
    // a time, rate or size without its unit, as a number or as a string
    expect_err(&GOOD.replace("rate = \"1Mb/s\"", "rate = 1000000"), &[], "bottleneck.rate", "give a unit, e.g. 10Mb/s");
    expect_err(GOOD, &["bottleneck.delay=5"], "bottleneck.delay", "give a unit, e.g. 5ms or 5s");
    expect_err(GOOD, &["bottleneck.delay=\"5\""], "bottleneck.delay", "give a unit");
    expect_err(GOOD, &["simulation.duration=100"], "simulation.duration", "give a unit");
    expect_err(
        GOOD,
        &["bottleneck.aqm={type=\"codel\", target=5, interval=100}"],
        "bottleneck.aqm.interval",
        "give a unit",
    );
    // settings that make a scheme a DropTail in disguise
    expect_err(GOOD, &["bottleneck.aqm.min_th=100", "bottleneck.aqm.max_th=200"], "bottleneck.aqm.min_th", "DropTail");
    expect_err(
        GOOD,
        &["bottleneck.aqm={type=\"codel\", target=\"5s\", interval=\"100s\"}"],
        "bottleneck.aqm.target",
        "DropTail",
    );
    // buffer 0 (waiting places)
    expect_err(GOOD, &["bottleneck.limit=0"], "bottleneck.limit", "at least 1");
    expect_err(GOOD, &["bottleneck.limit=-5"], "bottleneck.limit", "");
    expect_err(GOOD, &["access.limit=0"], "access.limit", "at least 1");
    // RED thresholds: min_th >= max_th (equal and reversed) is reported on max_th
    expect_err(&GOOD.replace("min_th = 40", "min_th = 80"), &[], "bottleneck.aqm.max_th", "min_th");
    expect_err(&GOOD.replace("min_th = 40", "min_th = 90"), &[], "bottleneck.aqm.max_th", "min_th");
    expect_err(GOOD, &["bottleneck.aqm.max_p=0"], "bottleneck.aqm.max_p", "");
    expect_err(GOOD, &["bottleneck.aqm.min_th=-1"], "bottleneck.aqm.min_th", "");
    expect_err(GOOD, &["bottleneck.aqm.colour=1"], "bottleneck.aqm.colour", "unknown field");
    // unknown AQM type, and a missing one
    expect_err(&GOOD.replace("type = \"red\"", "type = \"nosuchqdisc\""), &[], "bottleneck.aqm.type", "unknown aqm");
    expect_err(GOOD, &["bottleneck.aqm={ min_th = 1, max_th = 2 }"], "bottleneck.aqm.type", "missing");
    // warm-up not shorter than the run
    expect_err(
        &GOOD.replace("duration = \"10s\"", "duration = \"10s\"\nwarmup = \"10s\""),
        &[],
        "simulation.warmup",
        "shorter",
    );
    expect_err(
        &GOOD.replace("duration = \"10s\"", "duration = \"10s\"\nwarmup = \"20s\""),
        &[],
        "simulation.warmup",
        "shorter",
    );
    // a UDP flow without a rate, and TCP-only / UDP-only keys on the wrong transport
    expect_err(&GOOD.replace("rate = \"2Mb/s\"", ""), &[], "flows[1].rate", "missing");
    expect_err(GOOD, &["flows[0].rate=\"1Mb/s\""], "flows[0].rate", "udp");
    expect_err(GOOD, &["flows[1].size=1000B"], "flows[1].size", "tcp");
    // other ranges
    expect_err(GOOD, &["bottleneck.loss_rate=1.5"], "bottleneck.loss_rate", "[0, 1)");
    expect_err(GOOD, &["bottleneck.loss_rate=-0.1"], "bottleneck.loss_rate", "[0, 1)");
    expect_err(GOOD, &["simulation.duration=0s"], "simulation.duration", "> 0");
    expect_err(GOOD, &["flows[0].count=0"], "flows[0].count", "");
    expect_err(GOOD, &["flows[0].tcp.mss=0"], "flows[0].tcp.mss", "");
    expect_err(GOOD, &["flows[0].transport=\"sctp\""], "flows[0].transport", "unknown variant");
    // no bottleneck / no flows
    expect_err("[simulation]\nduration = \"5s\"\n[[flows]]\ntransport = \"tcp\"\n", &[], "bottleneck", "missing");
    expect_err(&GOOD[..GOOD.find("[[flows]]").unwrap()], &[], "flows", "no flows");
    // a malformed override names itself
    let e = load_err(GOOD, &["bottleneck.limit"]);
    assert!(e.path.starts_with("--set"), "{e:?}");
}

// =============================================================================================
// 7. random small scenarios

#[derive(Debug, Clone)]
struct Rand {
    n_tcp: u32,
    n_udp: u32,
    rate_mbps: f64,
    delay_ms: f64,
    limit: u64,
    bytes: bool,
    red: Option<(f64, f64, f64, f64, bool, bool, bool)>, // min_th, span, max_p, w_q, gentle, ns2, uniformise
    loss: f64,
    rev_loss: f64,
    udp_mbps: f64,
    udp_size: u32,
    mss: u32,
    max_window: u32,
    delayed_ack: bool,
    access_mbps: f64,
    access_limit: u64,
    duration: f64,
    warmup_frac: f64,
    tcp_size: Option<u64>,
    seed: u64,
    /// TCP variant (index into sim::scenario::TCP_NAMES), `modern` preset, and the optional extra
    /// traffic: a UDP ON/OFF source (Pareto if true), web sessions, short connections
    variant: usize,
    modern: bool,
    onoff: Option<bool>,
    web: Option<u32>,
    short: Option<f64>,
}

fn rand_scenario() -> impl Strategy<Value = Rand> {
    (
        (0u32..=5, 0u32..=2, 0.5f64..10.0, 0.0f64..50.0, 1u64..300, any::<bool>()),
        prop::option::of((
            0.0f64..50.0,
            1.0f64..100.0,
            0.01f64..=1.0,
            0.001f64..=1.0,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )),
        (prop_oneof![Just(0.0), 0.0f64..0.1], prop_oneof![Just(0.0), 0.0f64..0.05], 0.1f64..5.0, 40u32..1500),
        (200u32..1500, 1u32..200, any::<bool>(), 1.0f64..100.0, 1u64..1000),
        (1.0f64..6.0, 0.0f64..0.5, prop::option::of(1u64..300_000), any::<u64>()),
        (
            0usize..sim::scenario::TCP_NAMES.len(),
            any::<bool>(),
            prop::option::of(any::<bool>()),
            prop::option::of(1u32..6),
            prop::option::of(0.5f64..20.0),
        ),
    )
        .prop_map(|(a, red, b, c, d, e)| Rand {
            n_tcp: a.0,
            n_udp: a.1,
            rate_mbps: a.2,
            delay_ms: a.3,
            limit: a.4,
            bytes: a.5,
            red,
            loss: b.0,
            rev_loss: b.1,
            udp_mbps: b.2,
            udp_size: b.3,
            mss: c.0,
            max_window: c.1,
            delayed_ack: c.2,
            access_mbps: c.3,
            access_limit: c.4,
            duration: d.0,
            warmup_frac: d.1,
            tcp_size: d.2,
            seed: d.3,
            variant: e.0,
            modern: e.1,
            onoff: e.2,
            web: e.3,
            short: e.4,
        })
}

fn rand_text(r: &Rand) -> String {
    // byte mode: thresholds and buffer in bytes (× 1000)
    let unit = if r.bytes { 1000.0 } else { 1.0 };
    let limit = (r.limit as f64 * unit) as u64;
    let aqm = match r.red {
        None => "{ type = \"droptail\" }".to_string(),
        // (a min_th at or above the buffer is refused as a DropTail in disguise: kept below it)
        Some((min_th, span, max_p, w_q, gentle, ns2, uni)) => format!(
            "{{ type = \"red\", min_th = {}, max_th = {}, max_p = {max_p}, w_q = {w_q}, gentle = {gentle}, variant = \"{}\", uniformise = {uni} }}",
            (min_th * unit).min(limit as f64 * 0.9),
            (min_th + span) * unit,
            if ns2 { "ns2" } else { "fj93" }
        ),
    };
    let mut t = format!(
        r#"
[simulation]
duration = "{duration}s"
warmup = "{warmup}s"
sample_interval = "50ms"
[bottleneck]
rate = "{rate}Mb/s"
delay = "{delay}ms"
limit = {limit}
queue_unit = "{unit_name}"
loss_rate = {loss}
aqm = {aqm}
[reverse]
loss_rate = {rev_loss}
[access]
rate = "{access}Mb/s"
limit = {access_limit}
[tcp]
preset = "{preset}"
variant = "{variant}"
mss = {mss}
max_window = {max_window}
delayed_ack = {delayed_ack}
"#,
        preset = if r.modern { "modern" } else { "ns2" },
        variant = sim::scenario::TCP_NAMES[r.variant].0,
        duration = r.duration,
        warmup = r.duration * r.warmup_frac,
        rate = r.rate_mbps,
        delay = r.delay_ms,
        unit_name = if r.bytes { "bytes" } else { "packets" },
        loss = r.loss,
        rev_loss = r.rev_loss,
        access = r.access_mbps,
        access_limit = r.access_limit,
        mss = r.mss,
        max_window = r.max_window,
        delayed_ack = r.delayed_ack,
    );
    let n_tcp = if r.n_tcp + r.n_udp == 0 { 1 } else { r.n_tcp };
    if n_tcp > 0 {
        t += &format!("[[flows]]\nname = \"tcp\"\ntransport = \"tcp\"\ncount = {n_tcp}\n");
        if let Some(sz) = r.tcp_size {
            t += &format!("size = \"{sz}B\"\n");
        }
    }
    if r.n_udp > 0 {
        t += &format!(
            "[[flows]]\nname = \"udp\"\ntransport = \"udp\"\ncount = {}\nrate = \"{}Mb/s\"\npacket_size = {}\nstart = {{ uniform = [\"0s\", \"1s\"] }}\n",
            r.n_udp, r.udp_mbps, r.udp_size
        );
    }
    if let Some(pareto) = r.onoff {
        t += &format!(
            "[[flows]]\nname = \"onoff\"\ntransport = \"udp\"\napp = \"onoff\"\nrate = \"{}Mb/s\"\non_time = \"0.3s\"\noff_time = \"0.6s\"\ndistribution = \"{}\"\n",
            r.udp_mbps,
            if pareto { "pareto" } else { "exponential" }
        );
    }
    if let Some(n) = r.web {
        t += &format!("[[flows]]\nname = \"web\"\ntransport = \"tcp\"\napp = \"web\"\ncount = {n}\nthink_time = {{ exponential = \"0.2s\" }}\n");
    }
    if let Some(rate) = r.short {
        t += &format!(
            "[[flows]]\nname = \"short\"\ntransport = \"tcp\"\napp = \"short\"\ncount = 2\narrival_rate = {rate}\nsize = {{ pareto = {{ mean = \"20KB\", shape = 1.5, max = \"1MB\" }} }}\nflow_duration = {{ uniform = [\"0.5s\", \"1.5s\"] }}\n"
        );
    }
    t
}

proptest! {
    // 16 cases keep CI fast; PROPTEST_CASES=500 runs a deeper search on demand
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(16),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any small scenario runs: conservation and the queue identities (checked inside `run_text`)
    /// hold, the cross-table identities of `check_accounting` hold, and the run is deterministic.
    #[test]
    fn random_small_scenarios_run_and_conserve_packets(r in rand_scenario()) {
        let text = rand_text(&r);
        let a = run(&text, &[], Some(r.seed));
        let b = sim::run_text(&text, &[], Some(r.seed)).unwrap();
        prop_assert_eq!(serde_json::to_string(&a.summary).unwrap(), serde_json::to_string(&b.summary).unwrap());
        prop_assert_eq!(table_bits(&a.flows), table_bits(&b.flows));
    }
}
