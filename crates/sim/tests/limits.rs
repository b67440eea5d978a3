//! Regression tests for what a hostile user can write (issue "nothing a user writes hangs,
//! panics or loses work"), one or more per class, including every finding of the fuzzer
//! (`tests/fuzz.rs`):
//!
//! 1. hangs: loops bounded by simulated time, and the engine keeps control (progress and
//!    interruption) however a source's periods compare with its packet gap;
//! 2. panics: sums of times past the u64 nanosecond clock saturate instead of overflowing;
//! 4. resources: the estimate refuses what would not fit, before any work;
//! 6. error text: one line, a key path, and what is allowed.

use sim::{budget, load, Sim, SimError};
use std::time::{Duration, Instant};

fn scenario(body: &str) -> String {
    format!("[simulation]\nduration = \"100s\"\n[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"10ms\"\nlimit = 50\n{body}")
}

/// Run `text`, stopping after `max_events` (rounded up to the engine's 65,536-event progress
/// period); returns the outcome and the wall time it took.
fn run_capped(text: &str, max_events: u64) -> (Result<sim::Results, SimError>, Duration) {
    let sc = load(text, &[], "t").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let started = Instant::now();
    let mut calls = 0u64;
    let r = Sim::new(sc, None).expect("build").run(&mut |_| {
        calls += 1;
        calls * 65_536 < max_events
    });
    (r, started.elapsed())
}

fn udp_sent(r: &sim::Results) -> f64 {
    r.summary["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "udp"))
        .map(|g| g["sent_pkts"].as_f64().unwrap_or(f64::NAN))
        .unwrap_or(f64::NAN)
}

// ---------------------------------------------------------------------------------------------
// class 1: hangs

#[test]
fn onoff_source_with_on_periods_shorter_than_its_packet_gap_finishes() {
    // 64 kb/s, 1000-byte packets: a 125 ms gap; a mean ON period of 1 ms almost never holds a
    // packet (the example: it used to loop forever inside one event)
    let text = scenario(
        "[[flows]]\nname = \"udp\"\ntransport = \"udp\"\napp = \"onoff\"\nrate = \"64kb/s\"\non_time = \"1ms\"\noff_time = \"1ms\"\n",
    );
    let (r, wall) = run_capped(&text, u64::MAX);
    let r = r.expect("the run finishes");
    assert!(wall < Duration::from_secs(20), "took {wall:?}");
    // ON periods of at least 62.5 ms (half a gap) are rare (e^-62.5): nothing or next to nothing
    let sent = udp_sent(&r);
    assert!(sent.is_nan() || sent < 5.0, "sent {sent}");
}

#[test]
fn onoff_source_at_one_bit_per_second_finishes() {
    // an 8000 s packet gap against ON periods of mean 1 s: the second example
    let text = scenario(
        "[[flows]]\nname = \"udp\"\ntransport = \"udp\"\napp = \"onoff\"\nrate = \"1b/s\"\non_time = \"1s\"\noff_time = \"1s\"\ndistribution = \"pareto\"\n",
    )
    .replace("duration = \"100s\"", "duration = \"1e5s\"\nsample_interval = \"100s\"");
    let (r, wall) = run_capped(&text, u64::MAX);
    r.expect("the run finishes");
    assert!(wall < Duration::from_secs(20), "took {wall:?}");
}

#[test]
fn a_run_of_empty_on_periods_can_be_interrupted() {
    // 10^8 s of 1 µs ON/OFF periods that never hold a packet: ~10^14 empty periods. The search
    // hands control back to the event loop every 64 periods, so the progress callback (Ctrl-C
    // in Python) runs and stops it at once.
    let text = scenario(
        "[[flows]]\nname = \"udp\"\ntransport = \"udp\"\napp = \"onoff\"\nrate = \"64kb/s\"\non_time = \"1us\"\noff_time = \"1us\"\n",
    )
    .replace("duration = \"100s\"", "duration = \"1e8s\"\nsample_interval = \"1e4s\"");
    let (r, wall) = run_capped(&text, 1);
    assert_eq!(r.err(), Some(SimError::Interrupted));
    assert!(wall < Duration::from_secs(10), "took {wall:?}");
}

// ---------------------------------------------------------------------------------------------
// class 2: sums past the clock

#[test]
fn a_start_near_9e9_s_on_a_1e10_s_link_does_not_overflow() {
    // each time within the limit, their sum (1.9e19 ns) past the u64 clock (1.8e19 ns): the
    // packets would arrive after the run ends, so they never do
    let text = "[simulation]\nduration = \"1.79e10s\"\nsample_interval = \"1e6s\"\n\
                [bottleneck]\nrate = \"1b/s\"\ndelay = \"1e10s\"\nlimit = 50\n\
                [[flows]]\nname = \"udp\"\ntransport = \"udp\"\nrate = \"1b/s\"\npacket_size = 65535\nstart = \"9e9s\"\n";
    let (r, _) = run_capped(text, 1 << 22);
    let r = r.expect("runs to the end");
    assert_eq!(r.summary["engine"]["conservation"], "ok");
}

#[test]
fn rto_and_delay_sums_past_the_clock_do_not_overflow() {
    // TCP flows starting near the end of the clock behind 1e10 s links: every RTO deadline and
    // arrival is a sum past the clock
    let text = "[simulation]\nduration = \"1.79e10s\"\nsample_interval = \"1e6s\"\n\
                [bottleneck]\nrate = \"1Mb/s\"\ndelay = \"1e10s\"\nlimit = 50\n\
                [[flows]]\ntransport = \"tcp\"\ncount = 3\nstart = \"1.789e10s\"\nsender_delay = \"1.7e10s\"\n\
                tcp = { initial_rto = \"1e9s\", max_rto = \"1.7e10s\", min_rto = \"1e9s\" }\n";
    let (r, _) = run_capped(text, 1 << 22);
    r.expect("runs to the end");
}

#[test]
fn a_zero_length_short_connection_runs() {
    // found by the fuzzer: a connection drawn with a zero duration scheduled its stop before the
    // arrival being processed ("event scheduled in the past")
    let text = scenario(
        "[[flows]]\ntransport = \"tcp\"\napp = \"short\"\narrival_rate = 50\nflow_duration = \"0s\"\ncount = 2\n",
    );
    let (r, _) = run_capped(&text, u64::MAX);
    r.expect("runs");
}

// ---------------------------------------------------------------------------------------------
// class 4: resources

#[test]
fn ten_million_flows_are_refused_before_any_work() {
    let text = scenario("[[flows]]\ntransport = \"tcp\"\ncount = 10000000\n");
    let started = Instant::now();
    let sc = load(&text, &[], "t").expect("valid");
    // (about 0.7 kB of engine state a flow: ten million fit in 8 GB, not in 4)
    let e = budget::check(&sc, 4_000_000_000).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let line = e.to_string();
    assert!(line.starts_with("flows: the run would need about "), "{line}");
    assert!(line.contains("more than the limit of 4.0 GB"), "{line}");
}

#[test]
fn queue_snapshots_every_microsecond_are_refused() {
    let text = scenario("[[flows]]\ntransport = \"udp\"\nrate = \"2Mb/s\"\n")
        .replace("duration = \"100s\"", "duration = \"10s\"\nsample_interval = \"1us\"\nqueue_snapshots = true");
    let sc = load(&text, &[], "t").expect("valid");
    let e = budget::check(&sc, 8_000_000_000).unwrap_err();
    assert_eq!(e.path, "simulation.queue_snapshots", "{e}");
}

// ---------------------------------------------------------------------------------------------
// class 6: error text

fn error(text: &str) -> sim::ScenarioError {
    load(text, &[], "t").expect_err("should be refused")
}

fn one_line(e: &sim::ScenarioError) -> String {
    let s = e.to_string();
    assert!(!s.chars().any(char::is_control), "control character in {s:?}");
    assert!(!e.path.is_empty(), "no key path in {s:?}");
    s
}

#[test]
fn a_newline_in_a_key_or_value_stays_on_one_line() {
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\n\"bad\\nkey\" = 1\n"));
    assert_eq!(one_line(&e), format!("flows[0].\"bad\\nkey\": {}", e.msg.replace('\n', "\\n")));
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\napp = \"x\\ny\"\n"));
    assert!(one_line(&e).contains("x\\ny"), "{e}");
}

#[test]
fn an_empty_key_has_a_key_path() {
    let e = error(&format!("\"\" = 1\n{}", scenario("[[flows]]\ntransport = \"tcp\"\n")));
    assert_eq!(e.path, "\"\"");
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\n\"\" = 2\n"));
    assert_eq!(e.path, "flows[0].\"\"");
    one_line(&e);
}

#[test]
fn a_syntax_error_has_its_line_as_key_path() {
    let e = error("[simulation\n");
    assert!(one_line(&e).starts_with("line 1, column"), "{e}");
}

#[test]
fn an_out_of_range_duration_says_the_limit() {
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\n").replace("delay = \"10ms\"", "delay = \"1.8e10s\""));
    assert_eq!(e.path, "bottleneck.delay");
    assert!(one_line(&e).contains("from 0 to 1.8e10 s"), "{e}");
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\n").replace("delay = \"10ms\"", "delay = \"-1s\""));
    assert!(one_line(&e).contains("from 0 to 1.8e10 s"), "{e}");
}

#[test]
fn a_flow_group_that_is_not_a_table_says_what_a_flow_group_is() {
    let e = error(&scenario("").replace("[simulation]", "flows = [1]\n[simulation]"));
    assert_eq!(e.path, "flows[0]");
    let s = one_line(&e);
    assert!(s.contains("expected a flow group: a table such as { transport = \"tcp\""), "{s}");
    assert!(!s.contains("RawGroup") && !s.contains("struct"), "{s}");
    let e = load(&scenario("[[flows]]\ntransport = \"tcp\"\n"), &["flows[0]=1".into()], "t").unwrap_err();
    assert!(one_line(&e).contains("expected a flow group"), "{e}");
}

#[test]
fn a_bad_per_flow_list_says_what_is_allowed() {
    let e = error(&scenario("[[flows]]\ntransport = \"tcp\"\nsender_delay = true\n"));
    assert_eq!(e.path, "flows[0].sender_delay");
    let s = one_line(&e);
    assert!(s.contains("expected one value, or a list of values"), "{s}");
    assert!(!s.contains("OneOrMany") && !s.contains("untagged"), "{s}");
}

#[test]
fn the_estimate_of_a_scenario_with_times_at_the_limit_does_not_overflow() {
    // found by the fuzzer in the estimator itself: a 1.8e10 s bottleneck delay, copied to the
    // reverse link, summed in u64 nanoseconds
    let text = scenario("[[flows]]\ntransport = \"udp\"\nrate = \"64kb/s\"\n")
        .replace("delay = \"10ms\"", "delay = \"17999999999s\"");
    let sc = load(&text, &[], "t").expect("valid");
    assert!(budget::Estimate::of(&sc).total > 0);
}

// ---------------------------------------------------------------------------------------------
// estimates that hold (issue 27): the events within a small factor of the run's, whatever is
// measured; the per-flow series' rows at or above the run's when connections open faster than
// they finish (their number then grows with the square of the run's length)

/// Estimate and run `text`: (estimated events, events, estimated series rows, series rows).
fn estimate_and_run(text: &str) -> (f64, f64, f64, f64) {
    let sc = load(text, &[], "t").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let est = budget::Estimate::of(&sc);
    let r = Sim::new(sc, None).expect("build").run(&mut |_| true).expect("run");
    let events = r.summary["engine"]["events"].as_f64().unwrap();
    let rows = r.flow_series.as_ref().map_or(0, |t| t.columns[0].1.len()) as f64;
    (est.events, events, est.flow_series_rows as f64, rows)
}

const SHORT: &str = "[[flows]]\nname = \"short\"\ntransport = \"tcp\"\napp = \"short\"\ncount = 10\n";

#[test]
fn the_event_estimate_holds_without_a_measured_link_and_for_short_connections() {
    // nothing measured: the estimate used to be the samples alone (11 for 1 s)
    let unmonitored = format!(
        "[simulation]\nduration = \"5s\"\n[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"10ms\"\nlimit = 50\nmonitor = false\n\
         {SHORT}arrival_rate = 200\nsize = \"100KB\"\n"
    );
    // connections that send for a microsecond: the estimate was ~50 events for thousands
    let instant = format!(
        "[simulation]\nduration = \"5s\"\n[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"10ms\"\nlimit = 50\n\
         {SHORT}arrival_rate = 200\nflow_duration = {{ uniform = [\"1us\", \"2us\"] }}\n"
    );
    for text in [unmonitored, instant] {
        let (est, events, _, _) = estimate_and_run(&text);
        assert!(est >= events / 2.0 && est <= 10.0 * events, "estimate {est} against {events} events\n{text}");
    }
}

#[test]
fn per_flow_series_rows_are_bounded_when_connections_pile_up() {
    // sized transfers offering five times the link: connections accumulate
    let sized = format!(
        "[simulation]\nduration = \"6s\"\nflow_series_interval = \"50ms\"\n\
         [bottleneck]\nrate = \"10Mb/s\"\ndelay = \"10ms\"\nlimit = 50\n{SHORT}arrival_rate = 300\nsize = \"20KB\"\n"
    );
    // connections of 5-15 s, a thousand at once on a link that holds ~140 packets: they live on
    // in timeouts long after their duration
    let timed = format!(
        "[simulation]\nduration = \"12s\"\nflow_series_interval = \"100ms\"\n\
         [bottleneck]\nrate = \"10Mb/s\"\ndelay = \"10ms\"\nlimit = 100\n{SHORT}arrival_rate = 100\n\
         flow_duration = {{ uniform = [\"5s\", \"15s\"] }}\n"
    );
    for text in [sized, timed] {
        let (_, _, est, rows) = estimate_and_run(&text);
        assert!(rows > 1000.0 && est >= rows && est <= 3.0 * rows, "estimate {est} against {rows} rows\n{text}");
    }
}
