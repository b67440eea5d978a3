//! A fixed number of arrivals, departures and timer firings per discipline, for instruction counts
//! (`valgrind --tool=callgrind`), which unlike wall-clock time do not move with the machine's load:
//!
//! `cargo build --release -p aqm --example ops && valgrind --tool=callgrind target/release/examples/ops [SCHEME ...]`
//!
//! Every discipline of the registry (or those named) runs at queue lengths 10, 1000 and 5000 packets (8 µs, 8 ms and 40 ms of queueing),
//! configured as in `benches/qdisc.rs` where it has thresholds; one arrival every 8 µs and the
//! departures that keep the queue at its length, with the discipline's timer fired on its period.
//! It prints a checksum of what left and what was dropped, so that two builds can be compared for
//! identical behaviour as well as cost.

use aqm::rng::Rng;
use aqm::{Limit, LinkInfo, Qdisc, Queue, AQM_NAMES};

#[path = "../benches/common/mod.rs"]
mod common;
use common::{config, P};

fn main() {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = 200_000;
    for (kind, _) in AQM_NAMES {
        if !names.is_empty() && !names.iter().any(|x| x == kind) {
            continue;
        }
        for l in [10usize, 1000, 5000] {
            let cfg = config(kind, l as f64);
            let limit = Limit::packets(if *kind == "ward" { (l as u64 * 5) / 4 + 1 } else { 4 * l as u64 });
            let mut q = Queue::new(cfg.build::<P>(LinkInfo { rate_bps: 1e9 }, limit), Rng::stream(1, "ops", 0));
            let period = q.disc.timer_period();
            let mut next_timer = period.unwrap_or(u64::MAX);
            let (mut t, mut sum, mut sent) = (0u64, 0u64, 0u64);
            for i in 0..n {
                t += 8000;
                while t >= next_timer {
                    q.on_timer(next_timer);
                    next_timer += period.unwrap_or(u64::MAX);
                }
                q.enqueue(P { flow: (i % 1000) as u32 }, t);
                while q.len() > l {
                    match q.dequeue(t) {
                        Some((p, enq)) => {
                            sent += 1;
                            sum = sum.wrapping_mul(31).wrapping_add(p.flow as u64 ^ enq);
                        }
                        None => break,
                    }
                }
                if q.is_empty() {
                    q.on_link_idle(t);
                }
            }
            println!("{kind:>14} q{l:<5} sent {sent:>7} dropped {:>7} checksum {sum:016x}", n - sent - q.len() as u64);
        }
    }
}
