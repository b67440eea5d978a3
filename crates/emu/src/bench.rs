//! The forwarder core's own speed, without I/O: how many packets per second of CPU it forwards
//! through a given configuration (`python -m aqmlab.emulate.limits`, docs/emulation.md).
//!
//! Synthetic traffic: every host pair sends 1000-byte UDP datagrams (one flow per pair), together
//! 1.25 times the bottleneck rate, so the bottleneck queue stays congested and its discipline works
//! on every arrival; for every two datagrams the receivers send one 40-byte packet back (an ACK's
//! load on the reverse path). Virtual time advances with the offered load; the wall clock measures
//! only the core's work, in CPU time of its thread (parsing, flow lookup, links, the discipline, measurement).

use aqm::Time;

use crate::core::{Config, Core, Report};
use crate::io::thread_cpu_ns;
use crate::packet::{build, PROTO_UDP};

/// What a benchmark run measured.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// Packets handed to the core (both directions).
    pub packets: u64,
    /// CPU time of the core's work (this thread), ns: unaffected by other processes on the machine.
    pub cpu_ns: u64,
    pub report: Report,
}

impl BenchResult {
    pub fn packets_per_sec(&self) -> f64 {
        self.packets as f64 * 1e9 / self.cpu_ns.max(1) as f64
    }
}

/// Forward `packets` synthetic packets through `cfg` (its `duration` is stretched to fit).
pub fn run(mut cfg: Config, packets: u64) -> BenchResult {
    let pairs = cfg.pairs.len().max(1) as u32;
    let size = 1000usize;
    // data every `gap` ns, together 1.25 x the bottleneck rate; one reverse packet per two
    let gap = (size as f64 * 8.0 * 1e9 / (1.25 * cfg.bottleneck.rate_bps)).max(1.0);
    cfg.duration = (packets as f64 * gap) as Time + 10_000_000_000;
    cfg.warmup = 0;
    let fwd: Vec<Vec<u8>> = (0..pairs)
        .map(|i| build(PROTO_UDP, cfg.sender_base + i + 1, cfg.receiver_base + i + 1, 4000, 9, size, 0, 0, 0))
        .collect();
    let rev: Vec<Vec<u8>> = (0..pairs)
        .map(|i| build(PROTO_UDP, cfg.receiver_base + i + 1, cfg.sender_base + i + 1, 9, 4000, 40, 0, 0, 0))
        .collect();
    let ports: Vec<u16> = cfg.pairs.iter().map(|p| p.port).collect();
    let rport = cfg.receiver_port;
    let mut core = Core::new(cfg);
    let mut sink = |_: u16, _: &[u8], _: Time| {};
    let t0 = thread_cpu_ns();
    let mut n = 0u64;
    let mut k = 0u64;
    while n < packets {
        let t = (k as f64 * gap) as Time;
        let i = (k % pairs as u64) as usize;
        let mut send = |port: u16, bytes: &[u8]| {
            core.run_due(t, &mut sink);
            let (slot, buf) = core.buffer();
            buf[..bytes.len()].copy_from_slice(bytes);
            core.ingress(port, slot, bytes.len(), t);
        };
        send(ports.get(i).copied().unwrap_or(0), &fwd[i]);
        n += 1;
        if k % 2 == 1 {
            send(rport, &rev[i]);
            n += 1;
        }
        k += 1;
    }
    let report = core.finish(&mut sink).expect("conservation in the benchmark");
    BenchResult { packets: n, cpu_ns: thread_cpu_ns() - t0, report }
}
