//! Run a scenario file from Rust and print its summary and wall time:
//! `cargo run --release -p sim --example run_scenario -- examples/dumbbell-red.toml [--json] [key=value ...]`
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: run_scenario SCENARIO.toml [key.path=value ...]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("error: {path}: {e}");
        std::process::exit(2)
    });
    let json = args.iter().any(|a| a == "--json");
    let overrides: Vec<String> = args[2..].iter().filter(|a| *a != "--json").cloned().collect();
    let sc = sim::load(&text, &overrides, "scenario").unwrap_or_else(|e| {
        eprintln!("error: {path}: {e}");
        std::process::exit(2)
    });
    let t = std::time::Instant::now();
    let mut sim = sim::Sim::new(sc, None).expect("build");
    let built = t.elapsed();
    let hwm_built = peak_rss_mib();
    let fail = |e: sim::SimError| -> ! {
        eprintln!("error: {path}: {e}");
        std::process::exit(1)
    };
    sim.run_events(&mut |_| true).unwrap_or_else(|e| fail(e));
    let hwm_loop = peak_rss_mib();
    let r = sim.finish().unwrap_or_else(|e| fail(e));
    let wall = t.elapsed();
    if let (Some(a), Some(b), Some(c)) = (hwm_built, hwm_loop, peak_rss_mib()) {
        eprintln!(
            "peak resident memory: {a:.0} MiB built, {b:.0} MiB after the event loop, {c:.0} MiB with the results"
        );
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
        return;
    }
    let e = &r.summary["engine"];
    let ev = e["events"].as_f64().unwrap();
    let data = e["data_packets_delivered"].as_f64().unwrap();
    println!(
        "build {:.3} s, total {:.3} s; {:.2} M events/s; {:.2} M data pkts/s; utilisation {:.3}",
        built.as_secs_f64(),
        wall.as_secs_f64(),
        ev / wall.as_secs_f64() / 1e6,
        data / wall.as_secs_f64() / 1e6,
        r.summary["bottleneck"]["utilisation"].as_f64().unwrap()
    );
}

/// The process's peak resident size so far (Linux's `VmHWM`), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
