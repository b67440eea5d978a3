//! The resolved scenario (`sim::resolved`, written by `aqmlab run` as `scenario.toml`) says
//! everything that was simulated: loading it gives back an equal scenario, for every example,
//! every experiment's scenario files, every discipline with non-default options, and overrides.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// load -> write -> load gives an equal scenario, and writing again gives the same text.
fn round_trip(text: &str, overrides: &[String], what: &str) -> String {
    let a = sim::load(text, overrides, "scenario").unwrap_or_else(|e| panic!("{what}: {e}"));
    let written = sim::resolved::to_toml(&a, &["resolved"]);
    let b = sim::load(&written, &[], "other-name")
        .unwrap_or_else(|e| panic!("{what}: the resolved scenario does not load: {e}\n{written}"));
    assert_eq!(a, b, "{what}: the resolved scenario differs from the original\n{written}");
    assert_eq!(written, sim::resolved::to_toml(&b, &["resolved"]), "{what}: writing is not stable");
    written
}

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

#[test]
fn examples_and_experiment_scenarios_round_trip() {
    let mut files = Vec::new();
    toml_files(&root().join("examples"), &mut files);
    let n_examples = files.len();
    toml_files(&root().join("python/aqmlab/experiments"), &mut files);
    let mut checked = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        // experiment definitions, published values, and the papers' inventories (papers/<tag>.toml)
        let inventory = f.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "papers");
        if name == "experiment.toml" || name == "reference.toml" || inventory {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        round_trip(&text, &[], &f.display().to_string());
        checked += 1;
    }
    assert!(n_examples >= 5 && checked >= 30, "found {n_examples} examples, {checked} scenario files");
}

/// Every discipline, with options away from their defaults where it has them.
#[test]
fn every_discipline_round_trips() {
    let base = std::fs::read_to_string(root().join("examples/dumbbell-red.toml")).unwrap();
    let aqms = [
        r#"{type="droptail"}"#,
        r#"{type="red", min_th=5, max_th=15, max_p=0.2, w_q=0.01, gentle=true, variant="ns2", idle_rule="queue_empty", ecn=true}"#,
        r#"{type="red", min_th=5, max_th=15, mode="byte", mean_pkt_size=500}"#,
        r#"{type="rio", min_th_out=20, max_th_out=60, min_th_in=40, max_th_in=80}"#,
        r#"{type="blue", d1=0.01, freeze_time="50ms"}"#,
        r#"{type="choke", min_th=40, max_th=80, n_cand=3}"#,
        r#"{type="choke", min_th=40, max_th=80, region="rear"}"#,
        r#"{type="choke", min_th=40, max_th=80, victim_removal="lazy"}"#,
        r#"{type="perfect_choke", min_th=40, max_th=80}"#,
        r#"{type="gchoke", min_th=40, max_th=80}"#,
        r#"{type="chokew", weights=[1, 2, 3], l_th=30, l_minus=50, l_plus=80, p0_max=5, w_avg=0.002, avg_for="activation", id_buffer=true}"#,
        r#"{type="chokew", red={min_th=40, max_th=80}}"#,
        r#"{type="choked"}"#,
        r#"{type="ward"}"#,
        r#"{type="raqm"}"#,
        r#"{type="pi"}"#,
        r#"{type="rem"}"#,
        r#"{type="fred", min_th=20, max_th=60}"#,
        r#"{type="wfq", weights=[1, 3]}"#,
        r#"{type="codel", target="2ms"}"#,
        r#"{type="pie"}"#,
        r#"{type="fq_codel", flows=64, hash="mix"}"#,
        r#"{type="dualpi2", step_thresh="2ms", drop_overload=false}"#,
        r#"{type="cake", flow_mode="dual_srchost", interval="50ms"}"#,
        r#"{type="fq_pie", ecn=true, max_burst="100ms"}"#,
        r#"{type="sfb"}"#,
        r#"{type="sfb", levels=3, bins=8, bin_size=6, bin_drop="all", rehash="10s", warmup="2s", ecn=true}"#,
        r#"{type="afd", q_target=30, replacement="fifo"}"#,
        r#"{type="csfq", labels="local", k="50ms"}"#,
        r#"{type="red_pd", min_th=20, target_rtt="20ms", rtt_with_queue=false}"#,
        r#"{type="sred", variant="simple", alpha=0.001}"#,
        r#"{type="xchoke", min_th=30, max_th=90, table_size=16}"#,
        r#"{type="hhf", admit_bytes=20000, reset_timeout="100ms"}"#,
        r#"{type="drr", quantum=1000, overflow_drop="longest_tail"}"#,
    ];
    let mut seen = std::collections::BTreeSet::new();
    for a in aqms {
        let ov = vec![format!("bottleneck.aqm={a}")];
        let cfg = sim::load(&base, &ov, "s").unwrap_or_else(|e| panic!("{a}: {e}"));
        seen.insert(cfg.bottleneck().expect("dumbbell").aqm.name());
        let written = round_trip(&base, &ov, a);
        assert!(written.contains(&format!("type = \"{}\"", cfg.bottleneck().expect("dumbbell").aqm.name())));
    }
    let all: std::collections::BTreeSet<_> = aqm::AQM_NAMES.iter().map(|(n, _)| *n).collect();
    assert_eq!(seen, all, "a discipline is missing from this test");
}

#[test]
fn overrides_tcp_variants_and_traffic_round_trip() {
    let base = std::fs::read_to_string(root().join("examples/dumbbell-red.toml")).unwrap();
    let sets: &[&[&str]] = &[
        &["tcp.variant=\"cubic\"", "tcp.cubic_beta=0.8", "tcp.ecn=true", "tcp.delayed_ack=true"],
        &["tcp.variant=\"vegas\"", "tcp.vegas_alpha=2", "tcp.vegas_beta=4"],
        &["tcp.preset=\"modern\""],
        &["tcp.variant=\"bbr\"", "tcp.pacing=false"],
        &["tcp.variant=\"dctcp\"", "tcp.l4s=true", "tcp.dctcp_g=0.125"],
        &["tcp.variant=\"prague\""],
        &["tcp.variant=\"cubic\"", "tcp.pacing=true"],
        &["tcp.preset=\"ns2-2.1b9\"", "tcp.variant=\"sack\""],
        &["tcp.max_backoff=16", "tcp.limited_transmit=false"],
        &[
            "flows[0].start={uniform=[\"0s\", \"2.5s\"]}",
            "flows[0].stop=\"90s\"",
            "flows[0].sender_delay=[\"1ms\", \"3ms\"]",
        ],
        &["bottleneck.rate=1234567b/s", "bottleneck.delay=\"1234567ns\"", "bottleneck.loss_rate=0.01"],
        &["simulation.flow_series_interval=\"0.5s\"", "simulation.queue_snapshots=true", "simulation.seed=7"],
        &["simulation.snapshot_times=\"periodic\"", "simulation.queue_snapshots=true"],
        &["pcap=[{link=\"bottleneck\", at=[\"drop\", \"arrival\"]}, {link=\"reverse\", start=\"1s\"}]"],
    ];
    for ov in sets {
        let ov: Vec<String> = ov.iter().map(|s| s.to_string()).collect();
        round_trip(&base, &ov, &format!("{ov:?}"));
    }
}

/// Networks: a star with host sets, a written-out network with hosts and two routes (by hops and
/// by delay), a parking lot whose hops differ, and data both ways over a dumbbell.
#[test]
fn networks_round_trip() {
    let diamond = r#"
        [simulation]
        duration = "2s"
        [topology]
        routing = "ROUTING"
        routers = ["r1", "r2", "r3", "r4"]
        hosts = ["a", "b"]
        [[topology.links]]
        from = "a"
        to = "r1"
        rate = "10Mb/s"
        delay = "1ms"
        limit = 100
        reverse = { delay = "2ms", monitor = false }
        [[topology.links]]
        from = "r1"
        to = "r2"
        rate = "10Mb/s"
        delay = "50ms"
        limit = 100
        aqm = { type = "choke", min_th = 10, max_th = 30 }
        [[topology.links]]
        from = "r1"
        to = "r3"
        rate = "10Mb/s"
        delay = "1ms"
        limit = 100
        [[topology.links]]
        from = "r3"
        to = "r4"
        rate = "10Mb/s"
        delay = "1ms"
        limit = 100
        [[topology.links]]
        from = "r4"
        to = "r2"
        rate = "10Mb/s"
        delay = "1ms"
        limit = 100
        [[topology.links]]
        name = "last"
        from = "r2"
        to = "b"
        rate = "10Mb/s"
        delay = "1ms"
        limit = 100
        [[flows]]
        name = "f"
        transport = "tcp"
        from = "a"
        to = "b"
        [[flows]]
        name = "g"
        transport = "udp"
        rate = "1Mb/s"
        from = "r1"
        to = "r2"
    "#;
    for routing in ["hops", "delay"] {
        round_trip(&diamond.replace("ROUTING", routing), &[], routing);
    }
    let star = r#"
        [simulation]
        duration = "20s"
        [topology]
        type = "star"
        leaves = 4
        link = { rate = "2Mb/s", delay = "5ms", limit = 50, aqm = { type = "red", min_th = 10, max_th = 30 } }
        reverse = { limit = 70 }
        [[flows]]
        name = "incast"
        transport = "tcp"
        count = 6
        from = ["l1", "l2", "l3"]
        to = "l4"
        [[flows]]
        name = "back"
        transport = "tcp"
        count = 2
        from = "l4"
        to = ["l1", "l2"]
    "#;
    round_trip(star, &[], "star");
    let parking = r#"
        [topology]
        type = "parking_lot"
        hops = 3
        link = { rate = "2Mb/s", delay = "5ms", limit = 50 }
        hop = [{ aqm = { type = "red", min_th = 10, max_th = 30 } }, { rate = "1Mb/s" }, { delay = "9ms" }]
        reverse = { limit = 77, monitor = true }
        [[flows]]
        name = "long"
        transport = "tcp"
        count = 3
        [[flows]]
        name = "cross"
        transport = "tcp"
        per_hop = true
        count = 2
    "#;
    let written = round_trip(parking, &[], "parking lot");
    assert!(written.contains("name = \"cross_2\""), "{written}");
    let mut fixed =
        parking.replace("reverse = { limit = 77, monitor = true }", "reverse = { limit = 77, rate = \"3Mb/s\" }");
    round_trip(&fixed, &[], "parking lot with a reverse rate");
    fixed = fixed.replace("per_hop = true", "from = \"r2\"\n        to = \"r0\"");
    round_trip(&fixed, &[], "parking lot, flows backwards");
    let base = std::fs::read_to_string(root().join("examples/dumbbell-red.toml")).unwrap();
    round_trip(
        &base,
        &["flows[1].from=\"r2\"".into(), "flows[1].to=\"r1\"".into(), "reverse.monitor=true".into()],
        "two-way dumbbell",
    );
}
