//! The fuzzer in the tree: random scenario text and random small scenarios with extreme values,
//! thrown at the scenario loader and the engine as a hostile user would (docs/testing.md).
//!
//! Three targets, each a proptest generator driven by a fixed seed (so a CI failure reproduces):
//!
//! * `loader_text` — arbitrary text, and a valid scenario with random keys and values spliced in
//!   (empty keys, control characters, wrong types, unknown tables), through [`sim::load`];
//! * `loader_overrides` — random `--set key.path=value` overrides on a valid scenario;
//! * `engine` — small random dumbbells (every AQM, every TCP variant and application, UDP CBR and
//!   ON/OFF) whose times, rates, sizes and counts are drawn from pools that include the extremes
//!   (1 ns, 1 b/s, 1.79e10 s, a start near the end of the clock, ...), each validated, checked
//!   against the memory budget and run with a short simulated duration and an event budget.
//!
//! Every outcome is put in a class. Allowed: `ok`, `scenario-error` (one line, a key path, no
//! serde/Rust type names), `budget` (refused by the memory estimate), `build-error`,
//! `event-budget` (the run was stopped by its event or wall-clock budget). Anything else — a
//! panic, a hang (no return within `HANG_SECS`), a malformed error, a conservation failure —
//! fails the test with the offending scenario printed; each such finding became a regression
//! test in `tests/limits.rs`.
//!
//! Size and length: `AQMLAB_FUZZ_CASES` (cases per target; CI default below), `AQMLAB_FUZZ_SECS`
//! (wall-clock cap per target), `AQMLAB_FUZZ_SEED` (another deterministic stream), and
//! `AQMLAB_FUZZ_REPORT=1` to count the classes without failing (how the before/after figures in
//! docs/testing.md were taken). For example, an hour-long local run:
//!
//! ```sh
//! AQMLAB_FUZZ_CASES=1000000 AQMLAB_FUZZ_SECS=1200 cargo test --release -p sim --test fuzz -- --nocapture
//! ```

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A single engine case that has not returned after this long has hung (its events are capped
/// at [`EVENT_BUDGET`] and its wall clock at [`WALL_BUDGET`], both far below this).
const HANG_SECS: u64 = 20;
/// Events one engine case may process before it is stopped.
const EVENT_BUDGET: u64 = 1 << 21;
/// Wall-clock time one engine case may take before it is stopped.
const WALL_BUDGET: Duration = Duration::from_secs(3);
/// Memory one engine case may plan to use (the estimate of `sim::budget`).
const MEMORY_BUDGET: u64 = 512 << 20;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn report_only() -> bool {
    std::env::var("AQMLAB_FUZZ_REPORT").is_ok_and(|v| v == "1")
}

/// Classes counted per target, and the first example of each bad class.
#[derive(Default)]
struct Tally {
    counts: BTreeMap<String, u64>,
    bad: BTreeMap<String, String>,
}

impl Tally {
    fn add(&mut self, class: &str, bad: Option<String>) {
        *self.counts.entry(class.to_string()).or_default() += 1;
        if let Some(example) = bad {
            self.bad.entry(class.to_string()).or_insert(example);
        }
    }

    fn finish(&self, target: &str, cases: u64, started: Instant) {
        let classes: Vec<String> = self.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("fuzz {target}: {cases} cases in {:.1} s: {}", started.elapsed().as_secs_f64(), classes.join(", "));
        for (class, example) in &self.bad {
            println!("  {class}: first example:\n{example}\n");
        }
        if !report_only() {
            assert!(self.bad.is_empty(), "fuzz {target}: bad outcomes {:?}", self.bad.keys().collect::<Vec<_>>());
        }
    }
}

/// The one-line, key-path, says-what-is-allowed rules for a scenario error.
fn error_form_problem(e: &sim::ScenarioError) -> Option<&'static str> {
    let text = e.to_string();
    if text.chars().any(|c| c.is_control()) {
        return Some("bad-error-format: control character");
    }
    if e.path.is_empty() {
        return Some("bad-error-format: no key path");
    }
    if ["Raw", "struct ", "enum ", "OneOrMany", "untagged"].iter().any(|w| text.contains(w)) {
        return Some("bad-error-format: internal type name");
    }
    None
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Load `text` with `overrides` and classify the result.
fn load_class(text: &str, overrides: &[String]) -> (String, Option<String>) {
    let r = std::panic::catch_unwind(|| sim::load(text, overrides, "fuzz"));
    match r {
        Ok(Ok(_)) => ("ok".into(), None),
        Ok(Err(e)) => match error_form_problem(&e) {
            None => ("scenario-error".into(), None),
            Some(c) => (c.into(), Some(format!("{e:?}\noverrides {overrides:?}\n{text}"))),
        },
        Err(p) => ("panic".into(), Some(format!("panic: {}\noverrides {overrides:?}\n{text}", panic_text(&p)))),
    }
}

/// Validate, estimate and run `text` with the budgets; the class of the outcome.
fn engine_class(text: &str) -> (String, Option<String>) {
    let sc = match sim::load(text, &[], "fuzz") {
        Ok(sc) => sc,
        Err(e) => {
            if std::env::var("AQMLAB_FUZZ_VERBOSE").is_ok() {
                println!("scenario-error: {e}");
            }
            return match error_form_problem(&e) {
                None => ("scenario-error".into(), None),
                Some(c) => (c.into(), Some(format!("{e:?}\n{text}"))),
            };
        }
    };
    if sim::budget::check(&sc, MEMORY_BUDGET).is_err() {
        return ("budget".into(), None);
    }
    let sim = match sim::Sim::new(sc, None) {
        Ok(s) => s,
        Err(_) => return ("build-error".into(), None),
    };
    let started = Instant::now();
    let mut calls = 0u64;
    let mut cb = |_t: f64| {
        calls += 1;
        calls * 65_536 < EVENT_BUDGET && started.elapsed() < WALL_BUDGET
    };
    match sim.run(&mut cb) {
        Ok(_) => ("ok".into(), None),
        Err(sim::SimError::Interrupted) => ("event-budget".into(), None),
        Err(sim::SimError::Build(_)) => ("build-error".into(), None),
        Err(e) => ("failure".into(), Some(format!("{e}\n{text}"))),
    }
}

/// Run `f(text)` on a thread; a panic or no answer within `HANG_SECS` is a class of its own.
fn guarded(text: String, f: fn(&str) -> (String, Option<String>)) -> (String, Option<String>) {
    let (tx, rx) = mpsc::channel();
    let t = text.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| f(&t));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(HANG_SECS)) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => ("panic".into(), Some(format!("panic: {}\n{text}", panic_text(&p)))),
        Err(_) => ("hang".into(), Some(text)),
    }
}

fn runner(salt: u64) -> TestRunner {
    let seed = env_u64("AQMLAB_FUZZ_SEED", 0x5eed) ^ salt;
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases: u32::MAX, failure_persistence: None, ..Config::default() };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Draw `cases` values of `strategy` (or as many as fit in the time cap) and tally `class(v)`.
fn fuzz<S: Strategy>(
    target: &str,
    salt: u64,
    default_cases: u64,
    strategy: S,
    class: impl Fn(S::Value) -> (String, Option<String>),
) {
    let cases = env_u64("AQMLAB_FUZZ_CASES", default_cases);
    let cap = Duration::from_secs(env_u64("AQMLAB_FUZZ_SECS", 600));
    let mut runner = runner(salt);
    let mut tally = Tally::default();
    let started = Instant::now();
    let mut n = 0;
    while n < cases && started.elapsed() < cap {
        let v = strategy.new_tree(&mut runner).expect("strategy").current();
        let (c, bad) = class(v);
        tally.add(&c, bad);
        n += 1;
    }
    tally.finish(target, n, started);
}

// =============================================================================================
// value pools: mostly ordinary values, with the extremes a hostile user would try

/// Weight of an invalid value against the ordinary ones of a pool (~20 ordinary, ~5 extreme):
/// rare enough that most scenarios validate and reach the engine.
const INVALID: u32 = 1;

fn pick(xs: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(xs).prop_map(str::to_string)
}

fn dur() -> impl Strategy<Value = String> {
    prop_oneof![
        60 => pick(&["\"0s\"", "\"1ns\"", "\"1us\"", "\"100us\"", "\"1ms\"", "\"5ms\"", "\"20ms\"", "\"0.1s\"", "\"1h\"", "\"2s\""]),
        6 => pick(&["\"1e6s\"", "\"9e9s\"", "\"1.79e10s\"", "\"17999999999s\"", "\"1e10s\""]),
        // (a number without its unit is refused)
        INVALID => pick(&["\"1.8e10s\"", "\"-1s\"", "1e300", "\"5 parsecs\"", "true", "1", "\"5\""]),
    ]
}

fn sim_duration() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => pick(&["\"10ms\"", "\"0.1s\"", "\"0.5s\"", "\"2s\""]),
        1 => pick(&["\"1e10s\"", "\"1.79e10s\"", "\"1ns\"", "\"100s\""]),
    ]
}

fn rate() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => pick(&["\"64kb/s\"", "\"1Mb/s\"", "\"10Mb/s\"", "\"100Mb/s\"", "\"1000000b/s\""]),
        4 => pick(&["\"1b/s\"", "\"8b/s\"", "\"10Gb/s\"", "\"1Tb/s\"", "\"1e15b/s\""]),
        INVALID => pick(&["0.5", "\"fast\"", "1000000"]),
    ]
}

fn bytes() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => pick(&["\"40B\"", "\"1500B\"", "\"10KB\"", "\"1000B\""]),
        3 => pick(&["\"1B\"", "\"1MB\"", "\"1GB\"", "\"1e18B\""]),
        INVALID => pick(&["0", "-5", "\"2Mb\"", "1000"]),
    ]
}

fn dist(value: fn() -> BoxedStrategy<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        value(),
        value().prop_map(|v| format!("{{ exponential = {v} }}")),
        (value(), pick(&["1.2", "1.5", "2.5", "1.0", "1e9"]), proptest::option::of(value())).prop_map(|(m, s, x)| {
            match x {
                Some(x) => format!("{{ pareto = {{ mean = {m}, shape = {s}, max = {x} }} }}"),
                None => format!("{{ pareto = {{ mean = {m}, shape = {s} }} }}"),
            }
        }),
        (value(), value()).prop_map(|(a, b)| format!("{{ uniform = [{a}, {b}] }}")),
    ]
}

fn dur_boxed() -> BoxedStrategy<String> {
    dur().boxed()
}

fn bytes_boxed() -> BoxedStrategy<String> {
    bytes().boxed()
}

fn packet_size() -> impl Strategy<Value = String> {
    prop_oneof![30 => pick(&["40", "500", "1000", "1500"]), 3 => pick(&["1", "65535"]), INVALID => pick(&["0", "70000", "\"1KB\""])]
}

fn count() -> impl Strategy<Value = String> {
    prop_oneof![40 => pick(&["1", "2", "3", "5"]), 2 => pick(&["40", "300"]), INVALID => pick(&["0", "-1", "10000001", "1.5"])]
}

/// Every discipline with its required parameters, and the names of its time-valued ones.
const AQMS: &[(&str, &[&str])] = &[
    ("type = \"droptail\"", &[]),
    ("type = \"red\", min_th = 5, max_th = 15", &[]),
    ("type = \"rio\", min_th_in = 10, max_th_in = 20, min_th_out = 5, max_th_out = 10", &[]),
    ("type = \"blue\"", &["freeze_time"]),
    ("type = \"choke\", min_th = 5, max_th = 15", &[]),
    ("type = \"perfect_choke\", min_th = 5, max_th = 15", &[]),
    ("type = \"gchoke\", min_th = 5, max_th = 15", &[]),
    ("type = \"chokew\", weights = [1, 2]", &[]),
    ("type = \"choked\", t_min = 5, t_max = 15", &[]),
    ("type = \"ward\"", &[]),
    ("type = \"raqm\", q0 = 10", &["T"]),
    ("type = \"pi\"", &[]),
    ("type = \"rem\"", &[]),
    ("type = \"fred\", min_th = 5, max_th = 15", &[]),
    ("type = \"wfq\", weights = [1, 2]", &[]),
    ("type = \"codel\"", &["target", "interval"]),
    ("type = \"pie\"", &["target", "t_update"]),
    ("type = \"fq_codel\"", &["target", "interval"]),
    ("type = \"fq_pie\"", &["target", "t_update", "max_burst"]),
    ("type = \"dualpi2\"", &["target", "t_update", "step_thresh"]),
    ("type = \"cake\"", &["target", "interval"]),
];

fn aqm() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(AQMS),
        any::<proptest::sample::Index>(),
        // time parameters take a unit (a bare number is refused: one of the INVALID values)
        prop_oneof![3 => Just(None), 1 => pick(&["\"1ns\"", "\"5ms\"", "\"1s\"", "\"1e9s\"", "\"1.7e10s\"", "\"0s\"", "0.005"]).prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(|((base, times), i, value, ecn)| {
            let mut s = format!("{{ {base}");
            if let (Some(v), false) = (value, times.is_empty()) {
                s += &format!(", {} = {v}", times[i.index(times.len())]);
            }
            if ecn && !["droptail", "wfq", "ward", "dualpi2", "cake"].iter().any(|n| base.contains(n)) {
                s += ", ecn = true";
            }
            s + " }"
        })
}

fn link(table: &'static str) -> impl Strategy<Value = String> {
    (
        rate(),
        dur(),
        prop_oneof![24 => pick(&["20", "100", "1000"]), 4 => pick(&["1", "100000000", "4294967296"]), INVALID => Just("0".to_string())],
        prop_oneof![5 => Just(None), 1 => Just(Some("bytes")), 1 => Just(Some("packets"))],
        prop_oneof![20 => Just(None), 4 => pick(&["0.01", "0.5", "0.999"]).prop_map(Some), INVALID => pick(&["1.0", "2", "-0.1"]).prop_map(Some)],
        proptest::option::of(aqm()),
    )
        .prop_map(move |(r, d, l, u, loss, a)| {
            let mut s = format!("[{table}]\nrate = {r}\ndelay = {d}\nlimit = {l}\n");
            if let Some(u) = u {
                s += &format!("queue_unit = \"{u}\"\n");
                if u == "bytes" {
                    s = s.replace(&format!("limit = {l}"), &format!("limit = {l}000"));
                }
            }
            if let Some(x) = loss {
                s += &format!("loss_rate = {x}\n");
            }
            if let Some(a) = a {
                s += &format!("aqm = {a}\n");
            }
            s
        })
}

fn tcp_options() -> impl Strategy<Value = String> {
    let opt = prop_oneof![
        pick(&["reno", "newreno", "sack", "vegas", "cubic"]).prop_map(|v| format!("variant = \"{v}\"")),
        pick(&["ns2", "modern"]).prop_map(|v| format!("preset = \"{v}\"")),
        pick(&["1", "40", "1000", "65535"]).prop_map(|v| format!("mss = {v}")),
        pick(&["1", "10", "1e6", "0.5"]).prop_map(|v| format!("initial_window = {v}")),
        pick(&["1", "20", "1000000"]).prop_map(|v| format!("max_window = {v}")),
        dur().prop_map(|v| format!("min_rto = {v}")),
        dur().prop_map(|v| format!("max_rto = {v}")),
        dur().prop_map(|v| format!("initial_rto = {v}")),
        dur().prop_map(|v| format!("clock_granularity = {v}")),
        dur().prop_map(|v| format!("delack_timeout = {v}")),
        any::<bool>().prop_map(|v| format!("delayed_ack = {v}")),
        any::<bool>().prop_map(|v| format!("ecn = {v}")),
        pick(&["1", "3", "1000"]).prop_map(|v| format!("dupack_threshold = {v}")),
    ];
    proptest::collection::vec(opt, 0..4).prop_map(|v| {
        // one value per key (a repeated key is a TOML syntax error, which loader_text covers)
        let mut seen = std::collections::BTreeMap::new();
        for o in v {
            seen.insert(o.split(" = ").next().unwrap_or("").to_string(), o);
        }
        seen.into_values().collect::<Vec<_>>().join(", ")
    })
}

fn group(i: usize) -> impl Strategy<Value = String> {
    let tcp_app = prop_oneof![
        3 => proptest::option::of(bytes()).prop_map(|s| match s {
            Some(s) => format!("app = \"bulk\"\nsize = {s}\n"),
            None => String::new(),
        }),
        1 => (
            pick(&["0.001", "1", "50", "1e6", "0"]),
            proptest::option::of(dist(bytes_boxed)),
            proptest::option::of(dist(dur_boxed)),
        )
            .prop_map(|(r, s, d)| {
                let mut t = format!("app = \"short\"\narrival_rate = {r}\n");
                if let Some(s) = s {
                    t += &format!("size = {s}\n");
                }
                if let Some(d) = d {
                    t += &format!("flow_duration = {d}\n");
                }
                t
            }),
        1 => (dist(bytes_boxed), dist(dur_boxed))
            .prop_map(|(s, d)| format!("app = \"web\"\nresponse_size = {s}\nthink_time = {d}\n")),
    ];
    let tcp = (tcp_app, tcp_options()).prop_map(|(a, o)| {
        format!("transport = \"tcp\"\n{a}{}", if o.is_empty() { String::new() } else { format!("tcp = {{ {o} }}\n") })
    });
    let udp = prop_oneof![
        (rate(), packet_size()).prop_map(|(r, s)| format!("transport = \"udp\"\nrate = {r}\npacket_size = {s}\n")),
        (rate(), dur(), dur(), pick(&["exponential", "pareto"])).prop_map(|(r, on, off, d)| format!(
            "transport = \"udp\"\napp = \"onoff\"\nrate = {r}\non_time = {on}\noff_time = {off}\ndistribution = \"{d}\"\n"
        )),
    ];
    (
        prop_oneof![tcp, udp],
        count(),
        proptest::option::of(prop_oneof![
            dur(),
            pick(&["[\"0s\", \"1s\"]", "[\"1ms\", \"2ms\"]", "[0, 0]", "[\"9e9s\", \"9.1e9s\"]", "[1, 0.5]"])
                .prop_map(|v| format!("{{ uniform = {v} }}"))
        ]),
        prop_oneof![4 => Just(None), 1 => dur().prop_map(Some)],
        proptest::option::of(dur()),
        proptest::option::of(rate()),
        prop_oneof![24 => Just(None), 4 => pick(&["1", "2", "255"]).prop_map(Some), INVALID => Just(Some("0".to_string()))],
    )
        .prop_map(move |(t, n, start, stop, sdelay, srate, prio)| {
            let mut s = format!("[[flows]]\nname = \"g{i}\"\ncount = {n}\n{t}");
            if let Some(v) = start {
                s += &format!("start = {v}\n");
            }
            if let Some(v) = stop {
                s += &format!("stop = {v}\n");
            }
            if let Some(v) = sdelay {
                s += &format!("sender_delay = {v}\n");
            }
            if let Some(v) = srate {
                s += &format!("receiver_rate = {v}\n");
            }
            if let Some(v) = prio {
                s += &format!("priority = {v}\n");
            }
            s
        })
}

/// A small random scenario with extreme values drawn now and then.
fn scenario() -> impl Strategy<Value = String> {
    (
        sim_duration(),
        prop_oneof![6 => Just(None), 1 => pick(&["0", "\"1ms\"", "\"0.1s\""]).prop_map(Some)],
        prop_oneof![8 => Just(None), 1 => dur().prop_map(Some)],
        any::<bool>(),
        prop_oneof![6 => Just(None), 1 => dur().prop_map(Some)],
        link("bottleneck"),
        prop_oneof![5 => Just(None), 1 => link("reverse").prop_map(Some)],
        prop_oneof![5 => Just(None), 1 => (rate(), dur()).prop_map(Some)],
        proptest::collection::vec(0..3usize, 1..4)
            .prop_flat_map(|v| v.iter().enumerate().map(|(i, _)| group(i).boxed()).collect::<Vec<_>>()),
        any::<u32>(),
    )
        .prop_map(|(d, warm, si, snaps, fsi, b, r, acc, groups, seed)| {
            let mut s = format!("[simulation]\nduration = {d}\nseed = {seed}\n");
            if let Some(w) = warm {
                s += &format!("warmup = {w}\n");
            }
            if let Some(v) = si {
                s += &format!("sample_interval = {v}\n");
            }
            if snaps {
                s += "queue_snapshots = true\n";
            }
            if let Some(v) = fsi {
                s += &format!("flow_series_interval = {v}\n");
            }
            s += &b;
            if let Some(r) = r {
                s += &r;
            }
            if let Some((rate, delay)) = acc {
                s += &format!("[access]\nrate = {rate}\ndelay = {delay}\n");
            }
            for g in groups {
                s += &g;
            }
            s
        })
}

const BASE: &str = r#"
name = "base"
[simulation]
duration = "1s"
[bottleneck]
rate = "1Mb/s"
delay = "10ms"
limit = 50
aqm = { type = "red", min_th = 5, max_th = 15 }
[[flows]]
count = 2
transport = "tcp"
[[flows]]
transport = "udp"
rate = "1Mb/s"
"#;

fn odd_key() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(&[
            "\"\"",
            "\"a\\nb\"",
            "\"tab\\there\"",
            "\"\\u0000\"",
            "'x.y'",
            "\"é\"",
            "zzz",
            "duration",
            "flows",
            "bottleneck",
            "simulation"
        ]),
        "[a-z_]{1,12}",
        "\"[\\PC\\n\\t\\r\\x1b]{0,6}\"".prop_map(|s| s
            .replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t")
            .replace('\x1b', "\\u001b")),
    ]
}

fn odd_value() -> impl Strategy<Value = String> {
    prop_oneof![
        pick(&[
            "1",
            "-1",
            "0",
            "1.5",
            "nan",
            "inf",
            "true",
            "\"\"",
            "\"x\\ny\"",
            "[]",
            "[1, \"a\"]",
            "{}",
            "{ a = 1 }",
            "1979-05-27",
            "9223372036854775807",
            "\"1.8e10s\""
        ]),
        dur(),
        rate(),
        aqm(),
    ]
}

/// Where to splice: a top-level key, a key in one of the tables, or a new table/array entry.
fn spliced() -> impl Strategy<Value = String> {
    (0..6usize, odd_key(), odd_value()).prop_map(|(at, k, v)| match at {
        0 => format!("{k} = {v}\n{BASE}"),
        1 => BASE.replace("[simulation]\n", &format!("[simulation]\n{k} = {v}\n")),
        2 => BASE.replace("[bottleneck]\n", &format!("[bottleneck]\n{k} = {v}\n")),
        3 => BASE.replace("count = 2\n", &format!("count = 2\n{k} = {v}\n")),
        4 => format!("flows = [{v}]\n[simulation]\nduration = 1\n[bottleneck]\nrate = 1\ndelay = 0\nlimit = 5\n"),
        _ => format!("{BASE}\n[{k}]\nx = {v}\n"),
    })
}

fn override_spec() -> impl Strategy<Value = String> {
    let path = prop_oneof![
        pick(&[
            "flows[0]",
            "flows[0].count",
            "flows[1].rate",
            "flows[5].x",
            "flows.0.tcp.mss",
            "bottleneck.delay",
            "bottleneck.aqm",
            "bottleneck.aqm.min_th",
            "simulation",
            "simulation.duration",
            "name",
            "",
            ".",
            "a..b",
            "flows[",
            "flows[0]]",
            "flows[-1]",
            "flows[99999999999999999999]",
            "x\ny",
            "reverse.rate",
        ]),
        "[a-z\\[\\]0-9._]{0,20}",
    ];
    (path, odd_value()).prop_map(|(p, v)| format!("{p}={v}"))
}

// =============================================================================================
// the targets

#[test]
fn loader_text() {
    let strategy = prop_oneof![1 => "\\PC*", 1 => any::<String>(), 1 => ".{0,40}\n?\\[.{0,10}\\]?.{0,40}", 6 => spliced(), 2 => scenario()];
    fuzz("loader_text", 1, 4000, strategy, |text| load_class(&text, &[]));
}

#[test]
fn loader_overrides() {
    let strategy = proptest::collection::vec(override_spec(), 1..4);
    fuzz("loader_overrides", 2, 3000, strategy, |ov| load_class(BASE, &ov));
}

/// `[[pcap]]` tables (issue 27): links known and not, points (some twice), windows inside, across
/// and after the run (whose duration is 1 s), odd keys.
fn pcap_tables() -> impl Strategy<Value = String> {
    let point = || pick(&["\"arrival\"", "\"departure\"", "\"drop\"", "\"everywhere\"", "1", "\"\""]);
    let at = prop_oneof![point(), proptest::collection::vec(point(), 0..5).prop_map(|v| format!("[{}]", v.join(", ")))];
    let when = || prop_oneof![dur(), pick(&["\"0.5s\"", "\"1s\"", "\"1.5s\"", "\"999s\""])];
    let table = (
        pick(&["\"bottleneck\"", "\"reverse\"", "\"access\"", "\"nope\"", "1"]),
        proptest::option::of(at),
        proptest::option::of(when()),
        proptest::option::of(when()),
        proptest::option::of((odd_key(), odd_value())),
    )
        .prop_map(|(link, at, start, stop, extra)| {
            let mut t = format!("[[pcap]]\nlink = {link}\n");
            for (k, v) in [("at", at), ("start", start), ("stop", stop)] {
                if let Some(v) = v {
                    t += &format!("{k} = {v}\n");
                }
            }
            if let Some((k, v)) = extra {
                t += &format!("{k} = {v}\n");
            }
            t
        });
    proptest::collection::vec(table, 1..3).prop_map(|ts| format!("{BASE}\n{}", ts.concat()))
}

#[test]
fn loader_pcap() {
    fuzz("loader_pcap", 4, 1500, pcap_tables(), |text| load_class(&text, &[]));
}

#[test]
fn engine() {
    fuzz("engine", 3, 400, scenario(), |text| guarded(text, engine_class));
}
