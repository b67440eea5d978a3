//! pcap traces from the engine: the files hold one record per packet seen at the traced point, in
//! time order, and tracing changes nothing in the results.

use std::path::Path;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (timestamp ns, captured length, original length) of every record.
fn records(path: &Path) -> Vec<(u64, u32, u32)> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), sim::pcap::MAGIC_NS);
    let mut out = Vec::new();
    let mut i = 24;
    while i < b.len() {
        let w = |k: usize| u32::from_le_bytes(b[i + k..i + k + 4].try_into().unwrap());
        let (s, ns, incl, orig) = (w(0), w(4), w(8), w(12));
        out.push((s as u64 * 1_000_000_000 + ns as u64, incl, orig));
        i += 16 + incl as usize;
    }
    assert_eq!(i, b.len(), "a truncated record");
    out
}

#[test]
fn traces_count_what_the_link_measured_and_change_nothing() {
    let text = std::fs::read_to_string(root().join("examples/dumbbell-red.toml")).unwrap();
    let ov = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let base = ov(&["simulation.duration=\"20s\"", "simulation.warmup=\"5s\""]);
    let mut traced = base.clone();
    traced.push("pcap=[{link=\"bottleneck\", at=[\"arrival\", \"departure\", \"drop\"], start=\"5s\"}]".into());
    let plain = sim::Sim::new(sim::load(&text, &base, "s").unwrap(), None).unwrap().run(&mut |_| true).unwrap();
    let dir = std::env::temp_dir().join(format!("aqmlab-pcap-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut s = sim::Sim::new(sim::load(&text, &traced, "s").unwrap(), None).unwrap();
    let files = s.capture_to(&dir).unwrap();
    assert_eq!(files.len(), 3);
    let res = s.run(&mut |_| true).unwrap();
    assert_eq!(
        serde_json::to_string(&plain.summary).unwrap(),
        serde_json::to_string(&res.summary).unwrap(),
        "tracing changed the results"
    );
    let b = &res.summary["bottleneck"];
    let n = |k: &str| b[k].as_u64().unwrap() as usize;
    for (f, want) in files.iter().zip([n("arrivals"), n("transmitted"), n("drops_total")]) {
        let r = records(f);
        assert_eq!(r.len(), want, "{}", f.display());
        assert!(r.windows(2).all(|w| w[0].0 <= w[1].0), "records out of time order");
        assert!(r.iter().all(|&(t, incl, orig)| (5_000_000_000..20_000_000_000).contains(&t) && incl <= orig));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
