//! One emulated link, exactly as the simulator models it (docs/scenarios.md, Topology): an output
//! queue (any discipline of `crates/aqm`, behind its accounting wrapper), a transmitter that
//! serialises one packet at a time at the link rate, and a delay line (propagation delay).
//!
//! Everything here runs in *virtual* time, integer nanoseconds since the start of the run: a
//! packet of `size` bytes occupies the transmitter for `ceil(8 · size · 10^9 / rate)` ns from the
//! instant its transmission starts, and reaches the far end `delay` ns after the transmission
//! ends. The forwarder feeds arrivals with the wall-clock instant it read them and processes the
//! link's events (end of a transmission, a packet leaving the delay line, the discipline's timer)
//! in time order when the wall clock reaches them, so the schedule itself never drifts: a late
//! wake-up delays the physical write of a packet, not the departures after it.

use aqm::rng::Rng;
use aqm::{AqmConfig, Dropped, Limit, LinkInfo, Queue, Time};
use std::collections::VecDeque;

use crate::packet::EPkt;

/// The parameters of one link.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub rate_bps: f64,
    pub delay: Time,
    pub limit: Limit,
    pub aqm: AqmConfig,
    /// Probability that an arriving packet is lost before the queue (`loss_rate`).
    pub loss_rate: f64,
}

/// A link: queue, transmitter, delay line.
pub struct Link {
    pub q: Queue<EPkt>,
    /// Rate in whole bits per second (at least 1), as the simulator rounds it.
    pub rate: u64,
    pub delay: Time,
    /// A transmission is in progress and ends at `busy_until`.
    pub busy: bool,
    pub busy_until: Time,
    /// Packets on the wire: when each reaches the far end, in order.
    pub pipe: VecDeque<(Time, EPkt)>,
    loss: Option<(f64, Rng)>,
    /// The discipline's periodic timer: period and next firing time.
    pub timer: Option<(Time, Time)>,
    /// The index of the link's monitor if it is measured (`Core`'s monitors).
    pub monitor: Option<u32>,
}

/// What starting a transmission did (for the bottleneck's measurements).
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub pkt: EPkt,
    /// When the packet was enqueued.
    pub enqueued: Time,
}

impl Link {
    /// Build a link; `rng_seed` and `name` select the discipline's random stream as the
    /// simulator does (`("aqm", hash(name))`, and `("loss", hash(name))` for link loss).
    pub fn new(cfg: &LinkConfig, seed: u64, name: &str) -> Self {
        let disc = cfg.aqm.build::<EPkt>(LinkInfo { rate_bps: cfg.rate_bps }, cfg.limit);
        let q = Queue::new(disc, Rng::stream(seed, "aqm", aqm::rng::name_hash(name)));
        // the timer first fires one period after t = 0 (aqm.md §1.5)
        let timer = aqm::Qdisc::timer_period(&q.disc).map(|p| (p, p));
        let loss = (cfg.loss_rate > 0.0).then(|| (cfg.loss_rate, Rng::stream(seed, "loss", aqm::rng::name_hash(name))));
        Link {
            q,
            rate: (cfg.rate_bps.round() as u64).max(1),
            delay: cfg.delay,
            busy: false,
            busy_until: 0,
            pipe: VecDeque::new(),
            loss,
            timer,
            monitor: None,
        }
    }

    /// Transmission time of `size` bytes: `ceil(8 · size · 10^9 / rate)` ns.
    #[inline]
    pub fn tx_time(&self, size: u32) -> Time {
        let bits = size as u128 * 8 * aqm::NS_PER_SEC as u128;
        bits.div_ceil(self.rate as u128) as Time
    }

    /// The earliest pending event of this link (end of a transmission while packets wait, head
    /// of the delay line, timer), or `Time::MAX`. The end of a transmission with nothing waiting
    /// is not an event: the link is freed lazily, at its next arrival or event.
    #[inline]
    pub fn next_event(&self) -> Time {
        let tx = if self.busy && !self.q.is_empty() { self.busy_until } else { Time::MAX };
        let pipe = self.pipe.front().map_or(Time::MAX, |(t, _)| *t);
        let timer = self.timer.map_or(Time::MAX, |(_, t)| t);
        tx.min(pipe).min(timer)
    }

    /// Whether the arriving packet is lost to `loss_rate` (before the queue).
    #[inline]
    pub fn lost(&mut self) -> bool {
        match &mut self.loss {
            Some((p, rng)) => rng.bernoulli(*p),
            None => false,
        }
    }

    /// Offer a packet at `t`; the packets this dropped (the arrival and/or victims) are appended
    /// to `drops`. The caller starts a transmission afterwards if the transmitter is idle.
    #[inline]
    pub fn enqueue(&mut self, p: EPkt, t: Time, drops: &mut Vec<Dropped<EPkt>>) -> bool {
        let ok = self.q.enqueue(p, t);
        drops.extend_from_slice(self.q.drops());
        ok
    }

    /// Start transmitting the next packet at `t` if the transmitter is idle and a packet waits;
    /// packets the discipline drops at dequeue go to `drops`.
    #[inline]
    pub fn start_next(&mut self, t: Time, drops: &mut Vec<Dropped<EPkt>>) -> Option<Started> {
        if self.busy {
            return None;
        }
        let out = self.q.dequeue(t);
        drops.extend_from_slice(self.q.drops());
        let (pkt, enqueued) = out?;
        self.busy = true;
        self.busy_until = t + self.tx_time(pkt.size);
        self.pipe.push_back((self.busy_until + self.delay, pkt));
        Some(Started { pkt, enqueued })
    }

    /// The transmission in progress ended at `busy_until` (≤ `t`): free the transmitter. Returns
    /// the instant it ended.
    #[inline]
    pub fn end_tx(&mut self) -> Time {
        self.busy = false;
        self.busy_until
    }

    /// The discipline's timer fired at its due time; drops go to `drops`. Returns the firing time.
    pub fn fire_timer(&mut self, drops: &mut Vec<Dropped<EPkt>>) -> Time {
        let (period, at) = self.timer.expect("timer");
        self.q.on_timer(at);
        drops.extend_from_slice(self.q.drops());
        self.timer = Some((period, at + period));
        at
    }

    /// Packets held by this link: waiting, in transmission or on the wire.
    pub fn in_flight(&self) -> usize {
        self.q.len() + self.pipe.len()
    }
}

/// Fixed-size packet buffers, recycled through a free list: no allocation per packet once the
/// pool has grown to the largest number of packets held at once.
pub struct Pool {
    slot: usize,
    bytes: Vec<u8>,
    lens: Vec<u32>,
    free: Vec<u32>,
}

impl Pool {
    /// A pool of buffers of `slot` bytes each (the largest packet a port can deliver).
    pub fn new(slot: usize) -> Self {
        Pool { slot, bytes: Vec::new(), lens: Vec::new(), free: Vec::new() }
    }
    /// Bytes per buffer.
    pub fn slot_size(&self) -> usize {
        self.slot
    }
    /// A free buffer.
    #[inline]
    pub fn alloc(&mut self) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        let s = self.lens.len() as u32;
        self.bytes.resize(self.bytes.len() + self.slot, 0);
        self.lens.push(0);
        s
    }
    #[inline]
    pub fn free(&mut self, s: u32) {
        self.free.push(s);
    }
    /// The whole buffer, to read a packet into.
    #[inline]
    pub fn buf_mut(&mut self, s: u32) -> &mut [u8] {
        let o = s as usize * self.slot;
        &mut self.bytes[o..o + self.slot]
    }
    /// The packet held in a buffer.
    #[inline]
    pub fn packet(&self, s: u32) -> &[u8] {
        let o = s as usize * self.slot;
        &self.bytes[o..o + self.lens[s as usize] as usize]
    }
    #[inline]
    pub fn packet_mut(&mut self, s: u32) -> &mut [u8] {
        let o = s as usize * self.slot;
        let n = self.lens[s as usize] as usize;
        &mut self.bytes[o..o + n]
    }
    #[inline]
    pub fn set_len(&mut self, s: u32, n: usize) {
        self.lens[s as usize] = n as u32;
    }
    /// Buffers currently handed out.
    pub fn in_use(&self) -> usize {
        self.lens.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Dir;

    fn pkt(flow: u32, size: u32) -> EPkt {
        EPkt {
            slot: 0,
            flow,
            size,
            route: [0; 3],
            hop: 0,
            out: 0,
            dir: Dir::Fwd,
            prio: 1,
            in_profile: false,
            ect: false,
            ce: false,
            l4s: false,
            data: true,
            retx: false,
            payload: size,
            seq_end: 0,
        }
    }

    fn droptail(rate: f64, delay: Time, limit: u64) -> Link {
        let cfg = LinkConfig {
            rate_bps: rate,
            delay,
            limit: Limit::packets(limit),
            aqm: AqmConfig::DropTail(Default::default()),
            loss_rate: 0.0,
        };
        Link::new(&cfg, 1, "test")
    }

    #[test]
    fn serialisation_time_is_rounded_up() {
        let l = droptail(1e6, 0, 10);
        assert_eq!(l.tx_time(1000), 8_000_000); // 8000 bits at 1 Mb/s
        let l = droptail(3e6, 0, 10);
        assert_eq!(l.tx_time(1), 2667); // 8000 ns / 3, rounded up
    }

    /// A burst leaves back to back at the link rate and arrives one delay later; the packet in
    /// transmission is not counted against the buffer, so a burst of limit + 2 loses one.
    #[test]
    fn burst_is_serialised_then_delayed() {
        let mut l = droptail(8e6, 5_000_000, 3);
        let mut drops = Vec::new();
        let mut accepted = 0;
        for i in 0..5 {
            accepted += l.enqueue(pkt(i, 1000), 0, &mut drops) as u32;
            l.start_next(0, &mut drops);
        }
        assert_eq!(accepted, 4);
        assert_eq!(drops.len(), 1);
        assert_eq!(drops[0].reason, aqm::DropReason::Overflow);
        let mut out = Vec::new();
        while l.next_event() < Time::MAX {
            let t = l.next_event();
            if l.busy && l.busy_until == t {
                l.end_tx();
                l.start_next(t, &mut drops);
            }
            while l.pipe.front().is_some_and(|(d, _)| *d <= t) {
                out.push((t, l.pipe.pop_front().unwrap().1.flow));
            }
        }
        // 1000 B at 8 Mb/s = 1 ms each; delay 5 ms
        assert_eq!(out, vec![(6_000_000, 0), (7_000_000, 1), (8_000_000, 2), (9_000_000, 3)]);
        assert!(l.q.stats.check(0).is_ok());
    }

    #[test]
    fn pool_recycles_buffers() {
        let mut p = Pool::new(64);
        let a = p.alloc();
        let b = p.alloc();
        p.buf_mut(a)[0] = 7;
        p.set_len(a, 1);
        assert_eq!(p.packet(a), &[7]);
        p.free(a);
        assert_eq!(p.alloc(), a);
        assert_ne!(a, b);
        assert_eq!(p.in_use(), 2);
    }
}
