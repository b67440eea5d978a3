//! Cost of one arrival plus the departures that keep the queue at its length, per discipline, at
//! queue lengths 10, 1000 and 100 000 packets (`cargo bench -p aqm`).
//!
//! Each scheme is configured so that its mechanism is active at that length: RED-based schemes
//! have `min_th = L/2`, `max_th = 2L` (the average sits in the probabilistic region, so the
//! CHOKe family draws on every arrival); CHOKeW's thresholds are scaled the same way. Packets come
//! from 1000 flows in turn, so matches are rare and the queue stays near L.

use aqm::rng::Rng;
use aqm::{Limit, LinkInfo, Queue};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

mod common;
use common::{config, P};

fn bench(c: &mut Criterion) {
    let schemes = ["droptail", "red", "choke", "gchoke", "perfect_choke", "chokew", "choked", "ward"];
    for l in [10usize, 1000, 100_000] {
        let mut g = c.benchmark_group(format!("enqueue_dequeue_q{l}"));
        g.throughput(Throughput::Elements(1));
        for kind in schemes {
            let cfg = config(kind, l as f64);
            // WARD weighs positions against the buffer: give it headroom so it compares sometimes
            let limit = Limit::packets(if kind == "ward" { (l as u64 * 5) / 4 + 1 } else { 4 * l as u64 });
            let mut q = Queue::new(cfg.build::<P>(LinkInfo { rate_bps: 1e9 }, limit), Rng::stream(1, "bench", 0));
            let mut t = 0u64;
            let mut f = 0u32;
            // fill to L, with the average warmed up
            for _ in 0..(4 * l).max(2000) {
                t += 8000;
                q.enqueue(P { flow: f % 1000 }, t);
                f += 1;
                while q.len() > l {
                    q.dequeue(t);
                }
            }
            g.bench_function(BenchmarkId::from_parameter(kind), |b| {
                b.iter(|| {
                    t += 8000;
                    f += 1;
                    q.enqueue(black_box(P { flow: f % 1000 }), t);
                    while q.len() > l {
                        black_box(q.dequeue(t));
                    }
                })
            });
        }
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1)).sample_size(20);
    targets = bench
}
criterion_main!(benches);
