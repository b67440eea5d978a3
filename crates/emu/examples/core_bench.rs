use aqm::{AqmConfig, Limit};
use emu::{Config, LinkConfig, PairConfig};
fn main() {
    let link = |rate: f64, limit: u64| LinkConfig {
        rate_bps: rate,
        delay: 10_000_000,
        limit: Limit::packets(limit),
        aqm: AqmConfig::DropTail(Default::default()),
        loss_rate: 0.0,
    };
    let cfg = Config {
        bottleneck: link(1e9, 1000),
        reverse: link(1e9, 10000),
        access_limit: 10000,
        pairs: (0..32)
            .map(|_| PairConfig {
                port: 0,
                sender_rate_bps: 1e10,
                sender_delay: 1_000_000,
                receiver_rate_bps: 1e10,
                receiver_delay: 1_000_000,
            })
            .collect(),
        sender_base: 0x0a010000,
        receiver_base: 0x0a020000,
        receiver_port: 1,
        duration: 10_000_000_000,
        warmup: 0,
        sample_interval: 100_000_000,
        queue_snapshots: false,
        seed: 1,
        max_packet: 1500,
    };
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(2_000_000);
    let r = emu::bench::run(cfg, n);
    println!(
        "{} packets in {:.3} s: {:.0} ns/packet",
        r.packets,
        r.cpu_ns as f64 / 1e9,
        r.cpu_ns as f64 / r.packets as f64
    );
}
