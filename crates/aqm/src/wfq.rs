//! WFQ in aggregate-per-priority mode (aqm.md §15, ambiguity A33) — the [CHOKeW] §4.2 baseline.
//!
//! All flows of one priority level share one DropTail FIFO with its own buffer; weighted fair
//! queueing schedules between the level queues. By default it is packet-by-packet GPS (Parekh &
//! Gallager's PGPS, Demers–Keshav–Shenker's WFQ): a fluid GPS server is emulated to keep the
//! virtual time `V`, each arrival is stamped with the finish tag
//! `F = max(V, F_k) + 8 · size / φ_k`, and the transmitter takes the head packet with the smallest
//! tag (non-preemptive). `wfq_vtime = "scfq"` replaces the emulation by Golestani's self-clocked
//! approximation: `V` is the tag of the packet in service.
//!
//! References: A. K. Parekh, R. G. Gallager, "A Generalized Processor Sharing Approach to Flow
//! Control in Integrated Services Networks: The Single-Node Case", IEEE/ACM ToN 1(3), 1993;
//! A. Demers, S. Keshav, S. Shenker, "Analysis and Simulation of a Fair Queueing Algorithm",
//! SIGCOMM 1989; S. J. Golestani, "A Self-Clocked Fair Queueing Scheme for Broadband
//! Applications", INFOCOM 1994.
//!
//! Units: sizes in bits, the link rate `C` in bits per second, so `V` is in bits per unit weight.

use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Largest number of priority levels.
pub const MAX_LEVELS: usize = 16;

/// WFQ parameters as written in a scenario (`aqm = { type = "wfq", weights = [1, 2] }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WfqParams {
    /// Weight `φ_k` of priority level `k = 1..M` (one entry per level; [CHOKeW]: `[1, w(2)]` with
    /// `w(2)` in 1.5..4).
    pub weights: Vec<f64>,
    /// Buffer of each level's FIFO, in the link's queue unit ([CHOKeW]: `[125, 375]`). Omitted:
    /// the link's `limit` split in proportion to the weights (rounded down, the remainder to the
    /// highest level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<Vec<u64>>,
    /// Virtual time: `gps` (exact GPS emulation, default) or `scfq` (self-clocked) (A33).
    #[serde(default)]
    pub wfq_vtime: Vtime,
}

/// How the virtual time is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Vtime {
    #[default]
    Gps,
    Scfq,
}

impl WfqParams {
    pub fn new(weights: Vec<f64>, buffers: Option<Vec<u64>>) -> Self {
        WfqParams { weights, buffers, wfq_vtime: Vtime::Gps }
    }

    /// Per-level buffers for a link buffer of `total` (queue unit).
    pub fn level_buffers(&self, total: u64) -> Vec<u64> {
        if let Some(b) = &self.buffers {
            return b.clone();
        }
        let sum: f64 = self.weights.iter().sum();
        let mut b: Vec<u64> = self.weights.iter().map(|w| (total as f64 * w / sum).floor() as u64).collect();
        let used: u64 = b.iter().sum();
        if let Some(last) = b.last_mut() {
            *last += total.saturating_sub(used);
        }
        b
    }
}

impl Params for WfqParams {
    fn validate(&self) -> Result<(), ParamError> {
        let m = self.weights.len();
        if m == 0 || m > MAX_LEVELS {
            return Err(ParamError::new(
                "weights",
                format!("must list 1 to {MAX_LEVELS} weights (one per priority level), got {m}"),
            ));
        }
        if let Some(w) = self.weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
            return Err(ParamError::new("weights", format!("every weight must be a finite number > 0, got {w}")));
        }
        if let Some(b) = &self.buffers {
            if b.len() != m {
                return Err(ParamError::new(
                    "buffers",
                    format!("must list one buffer per level ({m}), got {}", b.len()),
                ));
            }
            if b.contains(&0) {
                return Err(ParamError::new("buffers", "every buffer must be at least 1"));
            }
        }
        Ok(())
    }
}

/// One priority level: a DropTail FIFO of `(packet, enqueue time, finish tag)`.
struct Level<P> {
    q: VecDeque<(P, Time, f64)>,
    bytes: u64,
    phi: f64,
    buffer: u64,
    /// `F_k`: finish tag of the last packet enqueued.
    finish: f64,
    /// Backlogged in the emulated GPS system.
    gps_backlogged: bool,
}

/// WFQ over per-level FIFOs.
pub struct Wfq<P> {
    levels: Vec<Level<P>>,
    mode: Vtime,
    limit: Limit,
    /// Link rate, bits per second.
    c: f64,
    /// Virtual time `V`.
    v: f64,
    /// Real time up to which `V` is computed (ns, real-valued: GPS events fall between nanoseconds).
    t_last: f64,
    pkts: usize,
    bytes: u64,
}

impl<P: Pkt> Wfq<P> {
    pub fn new(params: &WfqParams, link: LinkInfo, limit: Limit) -> Self {
        let buffers = params.level_buffers(limit.value);
        let levels = params
            .weights
            .iter()
            .zip(buffers)
            .map(|(&phi, buffer)| Level {
                q: VecDeque::new(),
                bytes: 0,
                phi,
                buffer,
                finish: 0.0,
                gps_backlogged: false,
            })
            .collect();
        Wfq { levels, mode: params.wfq_vtime, limit, c: link.rate_bps, v: 0.0, t_last: 0.0, pkts: 0, bytes: 0 }
    }

    /// Level index (0-based) of a packet: its priority 1..M, clamped into that range.
    #[inline]
    fn level_of(&self, pkt: &P) -> usize {
        (pkt.prio().max(1) as usize).min(self.levels.len()) - 1
    }

    /// The virtual time (bits per unit weight).
    pub fn vtime(&self) -> f64 {
        self.v
    }

    /// Advance the emulated GPS system from `t_last` to `now` (aqm.md §15 "advance V").
    fn advance(&mut self, now: Time) {
        let now = now as f64;
        loop {
            let phi: f64 = self.levels.iter().filter(|l| l.gps_backlogged).map(|l| l.phi).sum();
            if phi == 0.0 {
                break;
            }
            let f_min = self.levels.iter().filter(|l| l.gps_backlogged).map(|l| l.finish).fold(f64::INFINITY, f64::min);
            // real time at which V reaches F_min: V grows at C / Φ per second
            let t_hit = self.t_last + (f_min - self.v) * phi / self.c * NS_PER_SEC as f64;
            if t_hit > now {
                self.v += (now - self.t_last) / NS_PER_SEC as f64 * self.c / phi;
                break;
            }
            self.v = f_min;
            self.t_last = t_hit.max(self.t_last);
            for l in self.levels.iter_mut().filter(|l| l.gps_backlogged && l.finish == f_min) {
                l.gps_backlogged = false;
            }
        }
        // the GPS system is empty (then so is the packet system, which does the same work):
        // restart the virtual clock
        if self.levels.iter().all(|l| !l.gps_backlogged && l.q.is_empty()) {
            self.reset();
        }
        self.t_last = now;
    }

    fn reset(&mut self) {
        self.v = 0.0;
        for l in &mut self.levels {
            l.finish = 0.0;
            l.gps_backlogged = false;
        }
    }
}

impl<P: Pkt> Scheme<P> for Wfq<P> {
    type Params = WfqParams;
    fn new(params: &WfqParams, link: LinkInfo, limit: Limit) -> Self {
        Wfq::new(params, link, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Wfq<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1. advance V
        if self.mode == Vtime::Gps {
            self.advance(cx.now);
        }
        // 2. the level's DropTail buffer (and the link's)
        let k = self.level_of(&pkt);
        let l = &self.levels[k];
        let unit = self.limit.size_unit(pkt.size());
        if self.limit.qlen(l.q.len(), l.bytes) + unit > l.buffer
            || !self.limit.admits(self.pkts, self.bytes, pkt.size())
        {
            cx.drop(pkt, DropReason::Overflow);
            return false;
        }
        // 3. finish tag
        let l = &mut self.levels[k];
        let start = self.v.max(l.finish);
        l.finish = start + 8.0 * pkt.size() as f64 / l.phi;
        l.gps_backlogged = true;
        // 4. enqueue
        l.q.push_back((pkt, cx.now, l.finish));
        l.bytes += pkt.size() as u64;
        self.pkts += 1;
        self.bytes += pkt.size() as u64;
        true
    }

    fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        // the head with the smallest tag; ties: earlier enqueue, then lower level
        let mut best: Option<(f64, Time, usize)> = None;
        for (k, l) in self.levels.iter().enumerate() {
            if let Some(&(_, enq, tag)) = l.q.front() {
                if best.is_none_or(|(bt, be, _)| tag < bt || (tag == bt && enq < be)) {
                    best = Some((tag, enq, k));
                }
            }
        }
        let (_, _, k) = best?;
        let l = &mut self.levels[k];
        let (pkt, enq, tag) = l.q.pop_front().expect("head");
        l.bytes -= pkt.size() as u64;
        self.pkts -= 1;
        self.bytes -= pkt.size() as u64;
        if self.mode == Vtime::Scfq {
            // self-clocked: V is the tag of the packet in service
            self.v = tag;
        }
        Some((pkt, enq))
    }

    fn len(&self) -> usize {
        self.pkts
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn on_link_idle(&mut self, _now: Time) {
        if self.mode == Vtime::Scfq {
            // nothing in service and nothing waiting: V = 0 (and the tags restart)
            self.reset();
        }
    }
    /// Order: by finish tag (ties by enqueue time, then level), which is the order of
    /// transmission if nothing else arrives.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        let mut all: Vec<(f64, Time, usize, &P)> = self
            .levels
            .iter()
            .enumerate()
            .flat_map(|(k, l)| l.q.iter().map(move |(p, t, tag)| (*tag, *t, k, p)))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        for (_, t, _, p) in all {
            f(p, t);
        }
    }
    fn state_names(&self) -> &'static [&'static str] {
        const NAMES: [&str; 1 + MAX_LEVELS] = [
            "vtime",
            "backlog_1",
            "backlog_2",
            "backlog_3",
            "backlog_4",
            "backlog_5",
            "backlog_6",
            "backlog_7",
            "backlog_8",
            "backlog_9",
            "backlog_10",
            "backlog_11",
            "backlog_12",
            "backlog_13",
            "backlog_14",
            "backlog_15",
            "backlog_16",
        ];
        &NAMES[..1 + self.levels.len()]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.v;
        for (k, l) in self.levels.iter().enumerate() {
            out[1 + k] = self.limit.qlen(l.q.len(), l.bytes) as f64;
        }
    }
    /// One level's state per priority level (its queue's header, weight, buffer and finish tag).
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + self.levels.len() * std::mem::size_of::<Level<P>>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn pkt(prio: u8, size: u32) -> P {
        P { prio, ..P::new(prio as u32, size) }
    }

    fn link() -> LinkInfo {
        LinkInfo { rate_bps: 8e6 } // 1000 bytes = 1 ms
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(WfqParams::new(vec![1.0, 2.0], None).validate().is_ok());
        assert_eq!(WfqParams::new(vec![], None).validate().unwrap_err().field, "weights");
        assert_eq!(WfqParams::new(vec![1.0, 0.0], None).validate().unwrap_err().field, "weights");
        assert_eq!(WfqParams::new(vec![1.0; 17], None).validate().unwrap_err().field, "weights");
        assert_eq!(WfqParams::new(vec![1.0, 2.0], Some(vec![10])).validate().unwrap_err().field, "buffers");
        assert_eq!(WfqParams::new(vec![1.0, 2.0], Some(vec![10, 0])).validate().unwrap_err().field, "buffers");
        // default split of the link buffer in proportion to the weights
        assert_eq!(WfqParams::new(vec![1.0, 3.0], None).level_buffers(500), vec![125, 375]);
        assert_eq!(WfqParams::new(vec![1.0, 1.0, 1.0], None).level_buffers(100), vec![33, 33, 34]);
        assert_eq!(WfqParams::new(vec![1.0, 2.0], Some(vec![125, 375])).level_buffers(10), vec![125, 375]);
    }

    /// Run a link of `link()` rate for `n` transmissions with every level kept backlogged
    /// (refilled to 5 packets of `sizes[k]` bytes before each transmission); returns the bytes
    /// served per level and checks the link never idles while packets wait.
    fn backlogged_shares(params: &WfqParams, sizes: &[u32], n: usize) -> Vec<f64> {
        let mut q: Wfq<P> = Wfq::new(params, link(), Limit::packets(10_000));
        let mut rng = Rng::stream(1, "wfq", 0);
        let mut drops = Vec::new();
        let mut now: Time = 0;
        let mut served = vec![0u64; sizes.len()];
        for _ in 0..n {
            let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
            for (k, &s) in sizes.iter().enumerate() {
                while q.levels[k].q.len() < 5 {
                    assert!(q.enqueue(pkt(k as u8 + 1, s), &mut cx));
                }
            }
            let (p, _) = q.dequeue(&mut cx).expect("work conserving: packets wait");
            served[p.prio as usize - 1] += p.size as u64;
            now += (p.size as u64 * 8 * NS_PER_SEC) / 8_000_000;
        }
        served.iter().map(|&b| b as f64).collect()
    }

    #[test]
    fn backlogged_levels_get_service_in_proportion_to_weights() {
        for mode in [Vtime::Gps, Vtime::Scfq] {
            for (weights, sizes) in [
                (vec![1.0, 3.0], vec![1000, 1000]),
                (vec![1.0, 1.5], vec![1000, 400]),
                (vec![1.0, 2.0, 4.0], vec![500, 1000, 1500]),
            ] {
                let params = WfqParams { wfq_vtime: mode, ..WfqParams::new(weights.clone(), None) };
                let served = backlogged_shares(&params, &sizes, 20_000);
                for k in 1..weights.len() {
                    let ratio = served[k] / served[0];
                    let want = weights[k] / weights[0];
                    assert!(
                        (ratio / want - 1.0).abs() < 0.01,
                        "{mode:?} weights {weights:?} sizes {sizes:?}: served {served:?}"
                    );
                }
            }
        }
    }

    /// Work conservation and redistribution: a level alone gets the whole link; when a second
    /// level becomes backlogged the two share it 1:3 from then on.
    #[test]
    fn work_conserving_and_idle_share_is_redistributed() {
        for mode in [Vtime::Gps, Vtime::Scfq] {
            let params = WfqParams { wfq_vtime: mode, ..WfqParams::new(vec![1.0, 3.0], None) };
            let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(1000));
            let mut rng = Rng::stream(1, "wfq", 0);
            let mut drops = Vec::new();
            let mut now = 0;
            let mut served = [0u32; 2];
            for i in 0..4000 {
                let mut cx = Cx { now, rng: &mut rng, drops: &mut drops };
                while q.levels[0].q.len() < 5 {
                    q.enqueue(pkt(1, 1000), &mut cx);
                }
                if i >= 1000 {
                    while q.levels[1].q.len() < 5 {
                        q.enqueue(pkt(2, 1000), &mut cx);
                    }
                }
                let (p, _) = q.dequeue(&mut cx).expect("work conserving");
                if i == 999 {
                    assert_eq!(served, [999, 0], "{mode:?}: level 1 alone takes every slot");
                }
                served[p.prio as usize - 1] += 1;
                now += MS;
            }
            let after = (served[0] - 1000) as f64;
            assert!((served[1] as f64 / after - 3.0).abs() < 0.05, "{mode:?}: {served:?}");
        }
    }

    /// The GPS emulation step by step: weights 1:1, 1000-byte packets (8000 bits) on an 8 Mb/s
    /// link. Two packets at t = 0 get tags 8000; V grows at C/2 while both are backlogged in
    /// GPS, at C once one is done, and restarts at 0 when the GPS system empties.
    #[test]
    fn gps_virtual_time_step_by_step() {
        let params = WfqParams::new(vec![1.0, 1.0], None);
        let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(100));
        let mut rng = Rng::stream(1, "wfq", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(pkt(1, 1000), &mut cx);
        q.enqueue(pkt(2, 1000), &mut cx);
        assert_eq!((q.levels[0].finish, q.levels[1].finish), (8000.0, 8000.0));
        q.advance(MS / 2);
        assert!((q.v - 2000.0).abs() < 1e-6, "V = {}", q.v);
        // a second level-1 packet at 0.5 ms: S = max(V, F_1) = 8000 -> F_1 = 16000
        cx.now = MS / 2;
        q.enqueue(pkt(1, 1000), &mut cx);
        assert_eq!(q.levels[0].finish, 16000.0);
        // GPS finishes level 2 at 2 ms (V = 8000); then level 1 alone: V grows at C
        q.advance(5 * MS / 2);
        assert!(!q.levels[1].gps_backlogged);
        assert!((q.v - 12000.0).abs() < 1e-6, "V = {}", q.v);
        // the packet system has served two packets by 2 ms: drain it
        while q.dequeue(&mut cx).is_some() {}
        // at 3 ms GPS is empty too: V and the tags restart from 0
        q.advance(3 * MS);
        assert_eq!(q.v, 0.0);
        assert_eq!(q.levels[0].finish, 0.0);
        // a larger weight gives a smaller tag increment
        let params = WfqParams::new(vec![1.0, 4.0], None);
        let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(100));
        cx.now = 0;
        q.enqueue(pkt(2, 1000), &mut cx);
        assert_eq!(q.levels[1].finish, 2000.0);
    }

    #[test]
    fn scfq_virtual_time_is_the_tag_in_service() {
        let params = WfqParams { wfq_vtime: Vtime::Scfq, ..WfqParams::new(vec![1.0, 1.0], None) };
        let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(100));
        let mut rng = Rng::stream(1, "wfq", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        q.enqueue(pkt(1, 1000), &mut cx);
        q.enqueue(pkt(1, 1000), &mut cx);
        q.dequeue(&mut cx);
        assert_eq!(q.v, 8000.0);
        // a level-2 arrival while the first packet is in service starts at V = 8000
        q.enqueue(pkt(2, 500), &mut cx);
        assert_eq!(q.levels[1].finish, 12000.0);
        // and goes before level 1's second packet (tag 16000)
        assert_eq!(q.dequeue(&mut cx).unwrap().0.prio, 2);
        assert_eq!(q.v, 12000.0);
        q.dequeue(&mut cx);
        q.on_link_idle(5 * MS);
        assert_eq!(q.v, 0.0);
    }

    #[test]
    fn per_level_droptail_buffers_and_priority_clamping() {
        let params = WfqParams::new(vec![1.0, 3.0], Some(vec![2, 3]));
        let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(100));
        let mut rng = Rng::stream(1, "wfq", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        let ok: Vec<bool> = (0..4).map(|_| q.enqueue(pkt(1, 1000), &mut cx)).collect();
        assert_eq!(ok, [true, true, false, false]);
        // priority 0 counts as level 1, 9 as the highest level (2)
        assert!(!q.enqueue(pkt(0, 1000), &mut cx));
        let ok: Vec<bool> = (0..4).map(|_| q.enqueue(pkt(9, 1000), &mut cx)).collect();
        assert_eq!(ok, [true, true, true, false]);
        assert!(cx.drops.iter().all(|d| d.reason == DropReason::Overflow));
        assert_eq!(q.len(), 5);
        // the link's limit also holds when the level buffers add up to more
        let params = WfqParams::new(vec![1.0, 1.0], Some(vec![10, 10]));
        let mut q: Wfq<P> = Wfq::new(&params, link(), Limit::packets(3));
        let ok: Vec<bool> = (0..4).map(|i| q.enqueue(pkt(1 + i % 2, 1000), &mut cx)).collect();
        assert_eq!(ok, [true, true, true, false]);
        // state: V and the backlog of each level
        assert_eq!(q.state_names(), &["vtime", "backlog_1", "backlog_2"]);
        let mut out = [0.0; 3];
        q.state(&mut out);
        assert_eq!(&out[1..], &[2.0, 1.0]);
    }
}
