//! TCP Vegas and CUBIC end to end (docs/tcp/vegas.md, docs/tcp/cubic.md).
//!
//! * Vegas alone fills a clean link while keeping between alpha and beta of its packets queued;
//!   against Reno on a DropTail link it gets the smaller share (Reno fills the buffer, Vegas reads
//!   the queueing delay as congestion).
//! * CUBIC alone fills a link; under random loss its throughput follows RFC 9438's average window.
//! * Both are deterministic (the engine checks packet conservation inside every run).
//!
//! Run with `--nocapture` to see the measured numbers.

use serde_json::Value;
use sim::Results;

fn run(text: &str, seed: u64) -> Results {
    sim::run_text(text, &[], Some(seed)).unwrap_or_else(|e| panic!("run failed: {e}\n{text}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// One TCP group of `count` flows with `tcp` options on a `rate`, `delay` DropTail bottleneck
/// (access links 100 Mb/s, 1 ms, so the bottleneck is the only queue).
fn one_group(rate: &str, delay: &str, limit: u32, tcp: &str, count: u32, duration: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "{duration}"
        warmup = "10s"
        [bottleneck]
        rate = "{rate}"
        delay = "{delay}"
        limit = {limit}
        [access]
        rate = "100Mb/s"
        delay = "1ms"
        [tcp]
        {tcp}
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = {count}
        "#
    )
}

// =============================================================================================
// Vegas

#[test]
fn vegas_alone_fills_the_link_with_alpha_to_beta_packets_queued() {
    // 5 Mb/s, round-trip propagation 2 × (1 + 20 + 1) = 44 ms: BDP ≈ 27 packets; the buffer (100)
    // is never reached, so there is no loss: Vegas's window settles by delay alone
    let r = run(&one_group("5Mb/s", "20ms", 100, r#"variant = "vegas""#, 1, "60s"), 1);
    let b = &r.summary["bottleneck"];
    let util = f(&b["utilisation"]);
    let q = f(&b["queue_mean_pkts"]);
    let drops = f(&b["drops_total"]);
    eprintln!("vegas alone: utilisation {util:.4}, mean queue {q:.3} packets, drops {drops}");
    assert_eq!(drops, 0.0);
    assert!(util > 0.95, "utilisation {util}");
    assert!((1.0..=3.0).contains(&q), "mean queue {q} packets, expected between alpha = 1 and beta = 3");
}

#[test]
fn vegas_settles_with_other_alpha_beta() {
    // larger thresholds keep proportionally more packets queued
    let tcp = r#"variant = "vegas"
        vegas_alpha = 4
        vegas_beta = 6"#;
    let r = run(&one_group("5Mb/s", "20ms", 100, tcp, 1, "60s"), 1);
    let q = f(&r.summary["bottleneck"]["queue_mean_pkts"]);
    eprintln!("vegas alpha 4 beta 6: mean queue {q:.3} packets");
    assert!((4.0..=6.0).contains(&q), "mean queue {q}");
}

#[test]
fn vegas_gets_the_smaller_share_against_reno_on_droptail() {
    let text = r#"
        [simulation]
        duration = "100s"
        warmup = "20s"
        [bottleneck]
        rate = "2Mb/s"
        delay = "10ms"
        limit = 50
        [[flows]]
        name = "vegas"
        transport = "tcp"
        tcp = { variant = "vegas" }
        [[flows]]
        name = "reno"
        transport = "tcp"
        tcp = { variant = "reno" }
    "#;
    let r = run(text, 1);
    let share = |i: usize| f(&r.summary["groups"][i]["share"]);
    let (v, n) = (share(0), share(1));
    eprintln!(
        "vegas vs reno on DropTail: vegas {v:.3}, reno {n:.3}, utilisation {:.3}",
        f(&r.summary["bottleneck"]["utilisation"])
    );
    assert!(v < n, "vegas {v} vs reno {n}");
    assert!(v < 0.4, "vegas {v}");
    assert!(v + n > 0.95);
}

// =============================================================================================
// CUBIC

#[test]
fn cubic_alone_fills_the_link() {
    // 10 Mb/s, 44 ms round-trip propagation: BDP = 55 packets. CUBIC's reduction to 0.7 of the
    // window keeps the link busy when the buffer is at least (1 − β)/β ≈ 0.43 BDP; Reno, halving,
    // needs a full BDP. A 25-packet buffer (0.45 BDP) separates the two.
    let util = |tcp: &str| {
        let r = run(&one_group("10Mb/s", "20ms", 25, tcp, 1, "60s"), 1);
        let b = &r.summary["bottleneck"];
        let g = &r.summary["groups"][0];
        let u = f(&b["utilisation"]);
        eprintln!(
            "{tcp}: utilisation {u:.4}, mean queue {:.1}, drops {}, fast retransmits {}, timeouts {}",
            f(&b["queue_mean_pkts"]),
            b["drops_total"],
            g["fast_retransmits"],
            g["timeouts"]
        );
        assert!(f(&b["drops_total"]) > 0.0, "{tcp}: probes until the buffer overflows");
        u
    };
    let cubic = util(r#"variant = "cubic""#);
    let reno = util(r#"variant = "sack""#);
    assert!(cubic > 0.95, "CUBIC utilisation {cubic}");
    assert!(reno < cubic, "Reno congestion control {reno} vs CUBIC {cubic}");
}

/// RFC 9438 §5.1: the average window of CUBIC under a loss rate `p` (periodic losses) is
/// `(C(3 + β)/(4(1 − β)))^(1/4) · RTT^(3/4) / p^(3/4)` in the cubic region; the Reno-friendly region
/// gives Reno's `sqrt(3/(2p))` (AIMD(α_cubic, β) with α_cubic = 3(1 − β)/(1 + β)); CUBIC achieves
/// the larger of the two. In segments, RTT in seconds. Returns (cubic, Reno-friendly).
fn cubic_avg_window(rtt: f64, p: f64) -> (f64, f64) {
    let (c, beta): (f64, f64) = (0.4, 0.7);
    let cubic = (c * (3.0 + beta) / (4.0 * (1.0 - beta))).powf(0.25) * rtt.powf(0.75) / p.powf(0.75);
    let reno = (3.0 / (2.0 * p)).sqrt();
    (cubic, reno)
}

/// One CUBIC flow with random loss `p` before the bottleneck queue; every link 1 Gb/s with huge
/// buffers, so the random losses are the only congestion signal; the bottleneck's one-way delay
/// sets the round trip (2 × (1 + delay + 1) ms).
fn lossy_cubic(p: f64, delay_ms: u32, duration: &str, extra: &str) -> String {
    format!(
        r#"
        [simulation]
        duration = "{duration}"
        warmup = "20s"
        [bottleneck]
        rate = "1Gb/s"
        delay = "{delay_ms}ms"
        limit = 100000
        loss_rate = {p}
        [access]
        rate = "1Gb/s"
        delay = "1ms"
        limit = 100000
        [tcp]
        variant = "cubic"
        max_window = 100000
        {extra}
        [[flows]]
        transport = "tcp"
        "#
    )
}

/// Measured average window (goodput × RTT / MSS) over the RFC 9438 model `max(cubic, Reno)`.
fn response_ratio(p: f64, delay_ms: u32, duration: &str, extra: &str) -> (f64, f64) {
    let r = run(&lossy_cubic(p, delay_ms, duration, extra), 1);
    let fl = &r.flows;
    let b = &r.summary["bottleneck"];
    assert_eq!(f(&b["drops_total"]), 0.0, "only random losses");
    assert!(f(&b["utilisation"]) < 0.2, "the link is not the limit");
    let rtt = mean(fl.f64s("rtt_mean_s"));
    let w = mean(fl.f64s("goodput_bps")) / 8000.0 * rtt;
    let (wc, wr) = cubic_avg_window(rtt, p);
    let model = wc.max(wr);
    eprintln!(
        "p={p:<7} RTT {rtt:.3} s {extra:<26} window {w:>6.1}  model {model:>6.1} (cubic {wc:.1}, Reno-friendly {wr:.1})  ratio {:.3}  loss events {} timeouts {}",
        w / model,
        r.summary["groups"][0]["fast_retransmits"],
        r.summary["groups"][0]["timeouts"],
    );
    (w, w / model)
}

// The RFC's formula assumes periodic losses (one every 1/p packets); `loss_rate` drops packets
// independently. A fluid model of the same rules (docs/tcp/cubic_fluid.py: cwnd = max(W_cubic(t),
// W_est(t)); the reduction a round trip after the lost packet, then one round trip of recovery;
// losses within that window merged; fast convergence) gives 0.95–1.00 × the formula with periodic
// losses and 1.15–1.20 × it with Bernoulli losses (the window is a convex function of the time
// since the last loss, so random gaps raise its mean). For 400 loss events per run its standard
// deviations are 0.06 for one run in the cubic region, 0.025 for the mean of three runs, 0.04 for
// the fitted exponent, and 0.03 in the Reno-friendly region (600 events). Each band below is the
// fluid model's mean ± 3 standard deviations, widened by 0.05 for what the fluid model leaves out
// (ACK clocking, the exact merging of losses in SACK recovery, the warm-up).

#[test]
fn cubic_response_function_in_the_cubic_region() {
    // RTT 400 ms: the cubic window is 2.0–3.3 times the Reno-friendly one at these p; the runs are
    // long enough for about 400 loss events each
    let runs: Vec<(f64, (f64, f64))> = [(2e-3, "1600s"), (1e-3, "2100s"), (3e-4, "2800s")]
        .into_iter()
        .map(|(p, d)| (p, response_ratio(p, 198, d, "")))
        .collect();
    // fluid model: 1.18–1.20 ± 0.06 per run
    for (p, (_, ratio)) in &runs {
        assert!((0.95..=1.43).contains(ratio), "p={p}: {ratio:.3} × RFC 9438's average window");
    }
    // fluid model: 1.183 ± 0.025
    let mean_ratio = mean(&runs.iter().map(|r| r.1 .1).collect::<Vec<_>>());
    // the response function's exponent: window ∝ p^(−3/4) (Reno: p^(−1/2)); least-squares slope
    // of log W against log p; fluid model −0.743 ± 0.041
    let (xs, ys): (Vec<f64>, Vec<f64>) = runs.iter().map(|(p, (w, _))| (p.ln(), w.ln())).unzip();
    let (mx, my) = (mean(&xs), mean(&ys));
    let slope = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>()
        / xs.iter().map(|x| (x - mx).powi(2)).sum::<f64>();
    eprintln!("mean ratio {mean_ratio:.3}; window ∝ p^{slope:.3} (CUBIC −0.75, Reno −0.5)");
    assert!((1.06..=1.31).contains(&mean_ratio), "mean ratio {mean_ratio:.3}");
    assert!((-0.92..=-0.57).contains(&slope), "window ∝ p^{slope:.3}");
}

#[test]
fn cubic_response_function_in_the_reno_friendly_region() {
    // RTT 40 ms: the cubic curve alone gives 0.43 (p = 1e-3) and 0.58 (p = 3e-4) of Reno's window;
    // fluid model 1.153 and 1.170, ± 0.03
    for (p, d) in [(1e-3, "700s"), (3e-4, "1300s")] {
        let (_, ratio) = response_ratio(p, 18, d, "");
        assert!((1.01..=1.31).contains(&ratio), "p={p}: {ratio:.3} × RFC 9438's average window");
    }
    // without the Reno-friendly region CUBIC falls to its cubic window (fluid model 0.495 ± 0.02)
    let (_, ratio) = response_ratio(1e-3, 18, "1800s", "cubic_tcp_friendly = false");
    assert!((0.38..=0.61).contains(&ratio), "without the Reno-friendly region: {ratio:.3} × the model");
}

// =============================================================================================
// determinism

#[test]
fn same_seed_same_summary() {
    let text = r#"
        [simulation]
        duration = "20s"
        [bottleneck]
        rate = "2Mb/s"
        delay = "10ms"
        limit = 30
        loss_rate = 0.001
        [[flows]]
        name = "vegas"
        transport = "tcp"
        count = 2
        tcp = { variant = "vegas" }
        [[flows]]
        name = "cubic"
        transport = "tcp"
        count = 2
        tcp = { variant = "cubic" }
        [[flows]]
        name = "modern"
        transport = "tcp"
        tcp = { preset = "modern" }
    "#;
    let a = run(text, 7);
    let b = run(text, 7);
    assert_eq!(a.summary, b.summary);
    // (NaN columns: compare the printed tables)
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert!(format!("{:?}", a.flows.strs("variant")).contains(r#""vegas", "vegas", "cubic", "cubic", "cubic""#));
    let c = run(text, 8);
    assert_ne!(a.summary, c.summary, "another seed changes the start times and the losses");
}

// =============================================================================================
// scenario keys

fn load_err(tcp_global: &str, tcp_group: &str) -> Option<String> {
    let text = format!(
        r#"
        [simulation]
        duration = "1s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = 20
        [tcp]
        {tcp_global}
        [[flows]]
        transport = "tcp"
        tcp = {{ {tcp_group} }}
        "#
    );
    sim::run_text(&text, &[], Some(1)).err()
}

#[test]
fn variant_keys_are_validated_and_belong_to_their_variant() {
    let ok = |g: &str, l: &str| assert_eq!(load_err(g, l), None, "[tcp] {g} / group {{ {l} }}");
    let err = |g: &str, l: &str, want: &[&str]| {
        let e = load_err(g, l).unwrap_or_else(|| panic!("[tcp] {g} / group {{ {l} }} should fail"));
        for w in want {
            assert!(e.contains(w), "error {e:?} should contain {w:?}");
        }
    };
    ok("variant = \"vegas\"\nvegas_alpha = 2\nvegas_beta = 4\nvegas_gamma = 0", "");
    ok("", "variant = \"vegas\", vegas_alpha = 0, vegas_beta = 0");
    ok("", "variant = \"cubic\", cubic_c = 0.1, cubic_beta = 0.5, cubic_fast_convergence = false, cubic_tcp_friendly = false");
    // the modern preset's variant is cubic
    ok("preset = \"modern\"\ncubic_beta = 0.8", "");
    // a key of another variant names the key
    err("vegas_alpha = 2", "", &["tcp.vegas_alpha", "\"vegas\"", "\"newreno\""]);
    err("", "variant = \"reno\", cubic_c = 0.3", &["flows[0].tcp.cubic_c", "\"cubic\"", "\"reno\""]);
    err("", "variant = \"cubic\", vegas_gamma = 1", &["flows[0].tcp.vegas_gamma"]);
    err("", "variant = \"vegas\", cubic_tcp_friendly = false", &["flows[0].tcp.cubic_tcp_friendly"]);
    err("variant = \"vegas\"\nvegas_beta = 5", "variant = \"sack\"", &["tcp.vegas_beta", "inherited by flows[0].tcp"]);
    // ranges
    err("", "variant = \"vegas\", vegas_alpha = -1", &["flows[0].tcp.vegas_alpha", ">= 0"]);
    err("", "variant = \"vegas\", vegas_alpha = 2, vegas_beta = 1", &["flows[0].tcp.vegas_beta", ">= vegas_alpha"]);
    err("", "variant = \"vegas\", vegas_alpha = 4", &["flows[0].tcp.vegas_alpha", "<= vegas_beta"]);
    err("", "variant = \"vegas\", vegas_gamma = -0.5", &["flows[0].tcp.vegas_gamma"]);
    err("", "variant = \"cubic\", cubic_c = 0", &["flows[0].tcp.cubic_c", "> 0"]);
    err("", "variant = \"cubic\", cubic_beta = 1", &["flows[0].tcp.cubic_beta", "(0, 1)"]);
    err("", "variant = \"cubic\", cubic_beta = 0", &["flows[0].tcp.cubic_beta"]);
}

/// Vegas's fine-grained retransmission (Brakmo & Peterson §3.1, ns-2's `vegas_expire`): with
/// windows of a few segments a loss rarely produces three duplicate ACKs, but the first duplicate
/// ACK finds the lost segment overdue by Vegas's own RTT-based timeout and retransmits it. Ten
/// Vegas flows behind an 8-packet buffer on a 10 Mb/s, 44 ms path: almost every loss is repaired
/// without the coarse RTO (without the mechanism, 330 of 333 losses ended in a timeout).
#[test]
fn vegas_repairs_small_window_losses_without_timeouts() {
    let r = run(&one_group("10Mb/s", "20ms", 8, r#"variant = "vegas""#, 10, "100s"), 1);
    let timeouts: f64 = r.flows.f64s("timeouts").iter().sum();
    let drops: f64 = r.flows.f64s("drops_total").iter().sum();
    let retx: f64 = r.flows.f64s("retx_pkts").iter().sum();
    println!("Vegas, 10 flows, buffer 8: {drops} drops, {retx} retransmissions, {timeouts} timeouts");
    assert!(drops > 100.0, "the buffer must overflow for this test to mean anything");
    assert!(timeouts < 0.05 * drops, "{timeouts} timeouts for {drops} losses");
    // and it retransmits what was lost, not much more
    assert!(retx < 1.2 * drops, "{retx} retransmissions for {drops} losses");
}
