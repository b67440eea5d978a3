//! CAKE's core — COBALT per flow queue, 8-way set-associative flow hashing and host isolation.
//! **Modern baseline, not from the papers.**
//!
//! References: T. Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A Comprehensive Queue
//! Management Solution for Home Gateways", IEEE LANMAN 2018 (§III-A the flow isolation with
//! set-associative hashing and "triple isolation", §III-B DRR++ with sparse flows, §III-C
//! COBALT); Linux `net/sched/sch_cake.c` (`cake_hash`, `cake_enqueue`, `cake_dequeue`,
//! `cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`, `cake_set_rate`), whose
//! arithmetic is followed (COBALT's fixed-point inverse square root included).
//! Documentation: docs/aqm/cake.md.
//!
//! One tin (`besteffort`): the shaper, the Diffserv tins, the ACK filter, NAT lookup and overhead
//! compensation are not modelled (the link itself is the shaper: with `shaped = true`, the
//! default, the quantum and COBALT's timing are those CAKE derives from a `bandwidth` equal to
//! the link's rate).
//!
//! * **Hashing**: a flow goes to bucket `hash mod 1024`; on a collision the other 7 buckets of
//!   its set of 8 are searched for one already tagged with the flow, then for an empty one, and
//!   only when all 8 are busy does it share (LANMAN 2018 §III-A1).
//! * **Host isolation** (`flow_mode`, default `triple_isolate`): a flow's DRR quantum is divided
//!   by the number of bulk flows of its source host, or of its destination host, whichever is
//!   larger, so that hosts get equal shares first and their flows share a host's share (§III-A2).
//!   The simulator tells the discipline each flow's hosts ([`Qdisc::flow_hosts`]).
//! * **DRR++**: a bucket that becomes active is *sparse* and served first for one quantum; one
//!   that still has packets when its deficit runs out becomes *bulk*; an empty bucket whose
//!   COBALT state has not decayed stays on a *decaying* list (§III-B).
//! * **COBALT** (§III-C): CoDel's law on the sojourn time at dequeue (marking ECN-capable packets
//!   instead of dropping), with the drop schedule kept in one `drop_next` variable; BLUE beside
//!   it, raised by `1/256` when the bucket overflows and lowered by `1/4096` when it is found
//!   empty (each at most once per `target`), dropping at dequeue with its probability regardless
//!   of ECN.
//! * **Overflow**: the buffer is the link's `limit`; over it, the head packet of the bucket with
//!   the largest byte backlog is dropped (`overflow`) and that bucket's BLUE probability rises.

use crate::codel_law::{codel_law_params, InvSqrt, LawParams};
use crate::fifo::Fifo;
use crate::rng::mix64;
use crate::rng::Rng;
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// Buckets (Linux `CAKE_QUEUES`) and the set size (`CAKE_SET_WAYS`).
pub const QUEUES: usize = 1024;
pub const WAYS: usize = 8;

/// What is isolated from what (Linux `CAKE_FLOW_*`; the paper's §III-A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    /// One queue for everything.
    Flowblind,
    /// Fairness between source hosts only.
    Srchost,
    /// Between destination hosts only.
    Dsthost,
    /// Between host pairs.
    Hosts,
    /// Between flows (FQ-CoDel's isolation).
    Flows,
    /// Between source hosts, then between each host's flows.
    DualSrchost,
    /// Between destination hosts, then flows.
    DualDsthost,
    /// Between source hosts and between destination hosts at once, then flows (the default).
    #[default]
    TripleIsolate,
}

impl FlowMode {
    fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => 1,
            FlowMode::Dsthost => 2,
            FlowMode::Hosts => 3,
            FlowMode::Flows => 4,
            FlowMode::DualSrchost => 5,
            FlowMode::DualDsthost => 6,
            FlowMode::TripleIsolate => 7,
        }
    }
}

const SRC_IP: u8 = 1;
const DST_IP: u8 = 2;
const FLOWS: u8 = 4;

codel_law_params! {
    defaults = cake;
    /// CAKE parameters as written in a scenario (`aqm = { type = "cake", ... }`); Linux's defaults.
    /// `target` and `interval` are COBALT's CoDel parameters (CAKE's `target` and `rtt`, the
    /// expected round-trip time); with `shaped`, the target is raised to 1.5 MTU times at low rates
    /// and the interval by as much.
    pub struct CakeParams {
        /// What is isolated from what (below; Linux's default `triple_isolate`).
        #[serde(default)]
        pub flow_mode: FlowMode,
        /// Derive the quantum and COBALT's MTU time from the link's rate, as CAKE shaping at that
        /// rate does (true), or run unlimited (quantum 1514 B, no MTU-time floor).
        #[serde(default = "crate::defaults::cake::shaped")]
        pub shaped: bool,
        /// MTU with link header in bytes (Linux's `psched_mtu`, 1514).
        #[serde(default = "crate::defaults::cake::mtu")]
        pub mtu: u32,
        /// Flow-to-bucket hash: `mix` (default: collides like a real 5-tuple hash, which the set
        /// association then resolves) or `mod` (`(flow + salt) mod 1024`).
        #[serde(default = "crate::defaults::cake::hash")]
        pub hash: crate::flow_queue::FlowHash,
    }
}

impl Params for CakeParams {
    fn validate(&self) -> Result<(), ParamError> {
        LawParams::check(self.target, self.interval)?;
        crate::control::check_bytes("mtu", self.mtu)?;
        Ok(())
    }
}

/// COBALT's timing (Linux `cobalt_params`), nanoseconds, and BLUE's steps as 0.32 fractions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CobaltParams {
    pub interval: Time,
    pub target: Time,
    pub mtu_time: Time,
    pub p_inc: u32,
    pub p_dec: u32,
}

impl CobaltParams {
    /// `cake_set_rate` for a link of `rate` bytes per second (0: unlimited).
    pub fn for_rate(rate: u64, mtu: u32, target: Time, rtt: Time) -> (CobaltParams, u32) {
        let quantum = if rate > 0 { (rate >> 12).clamp(300, 1514) as u32 } else { 1514 };
        let mtu_time = if rate > 0 { (mtu as u128 * 1_000_000_000 / rate.max(64) as u128) as Time } else { 0 };
        let t = (mtu_time * 3 / 2).max(target);
        let interval = (rtt + t - target).max(2 * t);
        (CobaltParams { interval, target: t, mtu_time, p_inc: 1 << 24, p_dec: 1 << 20 }, quantum)
    }
}

/// COBALT's per-bucket state (Linux `cobalt_vars`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CobaltVars {
    pub count: u32,
    /// `1/sqrt(count)` in Q0.32 (`~0` for counts 0 and 1).
    pub rec_inv_sqrt: u32,
    pub drop_next: Time,
    pub blue_timer: Time,
    /// BLUE's probability as a 0.32 fraction.
    pub p_drop: u32,
    pub dropping: bool,
}

impl CobaltVars {
    fn new() -> Self {
        CobaltVars { rec_inv_sqrt: u32::MAX, ..Default::default() }
    }

    fn invsqrt(&mut self) {
        self.rec_inv_sqrt = InvSqrt::next(self.count, self.rec_inv_sqrt);
    }

    /// The bucket overflowed (`cobalt_queue_full`): BLUE rises, and CoDel starts dropping now.
    pub fn queue_full(&mut self, p: &CobaltParams, now: Time) {
        if now.saturating_sub(self.blue_timer) > p.target {
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
    }

    /// The bucket was found empty (`cobalt_queue_empty`): BLUE falls, CoDel's count decays.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: Time) {
        if self.p_drop != 0 && now.saturating_sub(self.blue_timer) > p.target {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
        }
        self.dropping = false;
        if self.count > 0 && now >= self.drop_next {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = InvSqrt::control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
    }

    /// A packet enqueued at `enq` leaves at `now` (`cobalt_should_drop`): `(drop, marked)` —
    /// whether to drop it, and whether CoDel's signal went out as a CE mark instead (`ecn`: the
    /// packet can be marked). BLUE draws from `rng` only while its probability is above zero.
    pub fn should_drop(&mut self, p: &CobaltParams, now: Time, enq: Time, ecn: bool, rng: &mut Rng) -> (bool, bool) {
        let sojourn = now.saturating_sub(enq);
        // `schedule` is now − drop_next; its sign says whether the next signal is due
        let mut schedule = now as i128 - self.drop_next as i128;
        let over_target = sojourn > p.target && sojourn > p.mtu_time * 4;
        let next_due = self.count > 0 && schedule >= 0;
        let (mut drop, mut marked) = (false, false);
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = InvSqrt::control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            // mark if possible, otherwise drop
            marked = ecn;
            drop = !ecn;
            self.count = self.count.saturating_add(1);
            self.invsqrt();
            self.drop_next = InvSqrt::control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now as i128 - self.drop_next as i128;
        } else {
            let mut due = next_due;
            while due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = InvSqrt::control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now as i128 - self.drop_next as i128;
                due = self.count > 0 && schedule >= 0;
            }
        }
        // BLUE, without ECN (deliberately, as CAKE)
        if self.p_drop > 0 && rng.uniform() < self.p_drop as f64 / 4_294_967_296.0 {
            drop = true;
        }
        // drop_next doubles as an activity timeout
        if self.count == 0 {
            self.drop_next = now + p.interval;
        } else if schedule > 0 && !drop {
            self.drop_next = now;
        }
        (drop, marked)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Set {
    None,
    Sparse,
    /// Counted as sparse, in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

const NIL: u16 = u16::MAX;

/// The three rotations, as intrusive lists over the buckets (O(1) moves, as Linux's lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    New = 0,
    Old = 1,
    Decaying = 2,
}

struct Bucket<P> {
    fifo: Fifo<P>,
    deficit: i64,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
    tag: u32,
    tagged: bool,
    /// Intrusive list links and the list the bucket is on.
    prev: u16,
    next: u16,
    on: Option<Chain>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

/// CAKE (one tin).
pub struct Cake<P> {
    mode: u8,
    buckets: Vec<Bucket<P>>,
    hosts: Vec<Host>,
    chains: [(u16, u16); 3],
    sparse: u32,
    bulk: u32,
    decaying: u32,
    pkts: usize,
    bytes: u64,
    limit: Limit,
    cparams: CobaltParams,
    quantum: u32,
    hash: crate::flow_queue::FlowHash,
    salt: Option<u64>,
    /// Each flow's (source, destination) host, as the caller told (`flow_hosts`).
    flow_hosts: Vec<(u32, u32)>,
}

/// `65535 / n` (Linux `quantum_div`), n ≥ 1.
#[inline]
fn quantum_div(n: u32) -> u64 {
    65535 / n.max(1) as u64
}

impl<P: Pkt> Cake<P> {
    pub fn new(params: &CakeParams, link: LinkInfo, limit: Limit) -> Self {
        let rate = if params.shaped { (link.rate_bps / 8.0) as u64 } else { 0 };
        let ns = |s: f64| crate::control::period_ns(s);
        let (cparams, quantum) = CobaltParams::for_rate(rate, params.mtu, ns(params.target), ns(params.interval));
        Cake {
            mode: params.flow_mode.bits(),
            buckets: (0..QUEUES)
                .map(|_| Bucket {
                    fifo: Fifo::default(),
                    deficit: 0,
                    cvars: CobaltVars::new(),
                    srchost: 0,
                    dsthost: 0,
                    set: Set::None,
                    tag: 0,
                    tagged: false,
                    prev: NIL,
                    next: NIL,
                    on: None,
                })
                .collect(),
            hosts: vec![Host::default(); QUEUES],
            chains: [(NIL, NIL); 3],
            sparse: 0,
            bulk: 0,
            decaying: 0,
            pkts: 0,
            bytes: 0,
            limit,
            cparams,
            quantum,
            hash: params.hash,
            salt: None,
            flow_hosts: Vec::new(),
        }
    }

    /// COBALT's timing and the flow quantum in force.
    pub fn cobalt_params(&self) -> (CobaltParams, u32) {
        (self.cparams, self.quantum)
    }

    /// Bulk, sparse and decaying buckets.
    pub fn counts(&self) -> (u32, u32, u32) {
        (self.bulk, self.sparse, self.decaying)
    }

    fn dual_src(&self) -> bool {
        self.mode & (SRC_IP | FLOWS) == SRC_IP | FLOWS
    }
    fn dual_dst(&self) -> bool {
        self.mode & (DST_IP | FLOWS) == DST_IP | FLOWS
    }

    // ---------------------------------------------------------------- intrusive lists

    fn unlink(&mut self, i: usize) {
        let Some(c) = self.buckets[i].on else { return };
        let (prev, next) = (self.buckets[i].prev, self.buckets[i].next);
        if prev == NIL {
            self.chains[c as usize].0 = next;
        } else {
            self.buckets[prev as usize].next = next;
        }
        if next == NIL {
            self.chains[c as usize].1 = prev;
        } else {
            self.buckets[next as usize].prev = prev;
        }
        let b = &mut self.buckets[i];
        (b.prev, b.next, b.on) = (NIL, NIL, None);
    }

    /// Move bucket `i` to the tail of `c` (Linux `list_move_tail`).
    fn move_tail(&mut self, i: usize, c: Chain) {
        self.unlink(i);
        let tail = self.chains[c as usize].1;
        let b = &mut self.buckets[i];
        (b.prev, b.next, b.on) = (tail, NIL, Some(c));
        if tail == NIL {
            self.chains[c as usize].0 = i as u16;
        } else {
            self.buckets[tail as usize].next = i as u16;
        }
        self.chains[c as usize].1 = i as u16;
    }

    fn front(&self, c: Chain) -> Option<usize> {
        let h = self.chains[c as usize].0;
        (h != NIL).then_some(h as usize)
    }

    // ---------------------------------------------------------------- hashing

    fn hash32(&self, x: u64, lane: u64) -> u32 {
        let salt = self.salt.unwrap_or(0);
        match self.hash {
            crate::flow_queue::FlowHash::Mod if lane == 0 => (x.wrapping_add(salt % QUEUES as u64)) as u32,
            _ => mix64(x ^ salt ^ lane.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as u32,
        }
    }

    /// The bucket of `flow` (Linux `cake_hash`): set-associative, with host bookkeeping.
    fn classify(&mut self, flow: u32) -> usize {
        let mode = self.mode;
        if mode == 0 {
            return 0;
        }
        let (src, dst) = self.flow_hosts.get(flow as usize).copied().unwrap_or((flow, flow));
        let src_hash = self.hash32(src as u64, 1);
        let dst_hash = self.hash32(dst as u64, 2);
        let mut flow_hash = if mode & FLOWS != 0 { self.hash32(flow as u64, 0) } else { 0 };
        if mode & FLOWS == 0 {
            if mode & SRC_IP != 0 {
                flow_hash ^= src_hash;
            }
            if mode & DST_IP != 0 {
                flow_hash ^= dst_hash;
            }
        }
        let reduced = flow_hash as usize % QUEUES;
        if self.buckets[reduced].tagged
            && self.buckets[reduced].tag == flow_hash
            && self.buckets[reduced].set != Set::None
        {
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let mut k = inner;
        let mut alloc = false;
        let mut found = None;
        for _ in 0..WAYS {
            let b = &self.buckets[outer + k];
            if b.tagged && b.tag == flow_hash {
                alloc = b.set == Set::None;
                found = Some(k);
                break;
            }
            k = (k + 1) % WAYS;
        }
        if found.is_none() {
            for _ in 0..WAYS {
                if self.buckets[outer + k].set == Set::None {
                    alloc = true;
                    found = Some(k);
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if found.is_none() {
            // every way busy: share the original bucket, and re-tag its hosts
            if self.buckets[outer + k].set == Set::Bulk {
                let (s, d) = (self.buckets[reduced].srchost as usize, self.buckets[reduced].dsthost as usize);
                self.hosts[s].src_bulk = self.hosts[s].src_bulk.saturating_sub(1);
                self.hosts[d].dst_bulk = self.hosts[d].dst_bulk.saturating_sub(1);
            }
            alloc = true;
        }
        let idx = outer + k;
        self.buckets[idx].tag = flow_hash;
        self.buckets[idx].tagged = true;
        if alloc && self.dual_src() {
            let h = self.host_slot(src_hash, true);
            if self.buckets[idx].set == Set::Bulk {
                self.hosts[h].src_bulk += 1;
            }
            self.buckets[idx].srchost = h as u16;
        }
        if alloc && self.dual_dst() {
            let h = self.host_slot(dst_hash, false);
            if self.buckets[idx].set == Set::Bulk {
                self.hosts[h].dst_bulk += 1;
            }
            self.buckets[idx].dsthost = h as u16;
        }
        idx
    }

    /// The host-table slot of a source (`src`) or destination host hash, set-associative.
    fn host_slot(&mut self, hash: u32, src: bool) -> usize {
        let idx = hash as usize % QUEUES;
        let inner = idx % WAYS;
        let outer = idx - inner;
        let mut k = inner;
        for _ in 0..WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.src_tag } else { h.dst_tag }) == hash {
                return outer + k;
            }
            k = (k + 1) % WAYS;
        }
        for _ in 0..WAYS {
            let h = &self.hosts[outer + k];
            if (if src { h.src_bulk } else { h.dst_bulk }) == 0 {
                break;
            }
            k = (k + 1) % WAYS;
        }
        let h = &mut self.hosts[outer + k];
        if src {
            h.src_tag = hash;
        } else {
            h.dst_tag = hash;
        }
        outer + k
    }

    fn host_load(&self, i: usize) -> u32 {
        let b = &self.buckets[i];
        let mut load = 1u32;
        if self.dual_src() {
            load = load.max(self.hosts[b.srchost as usize].src_bulk as u32);
        }
        if self.dual_dst() {
            load = load.max(self.hosts[b.dsthost as usize].dst_bulk as u32);
        }
        load
    }

    fn bulk_hosts(&mut self, i: usize, up: bool) {
        let (s, d) = (self.buckets[i].srchost as usize, self.buckets[i].dsthost as usize);
        if self.dual_src() {
            let c = &mut self.hosts[s].src_bulk;
            *c = if up { *c + 1 } else { c.saturating_sub(1) };
        }
        if self.dual_dst() {
            let c = &mut self.hosts[d].dst_bulk;
            *c = if up { *c + 1 } else { c.saturating_sub(1) };
        }
    }

    /// The active bucket with the largest byte backlog (lowest index on ties).
    fn fattest(&self) -> usize {
        let mut best = (0u64, usize::MAX);
        for (i, b) in self.buckets.iter().enumerate() {
            let bytes = b.fifo.bytes();
            if bytes > best.0 {
                best = (bytes, i);
            }
        }
        best.1
    }
}

impl<P: Pkt> Scheme<P> for Cake<P> {
    type Params = CakeParams;
    fn new(params: &CakeParams, link: LinkInfo, limit: Limit) -> Self {
        Cake::new(params, link, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Cake<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if self.salt.is_none() {
            self.salt = Some(cx.rng.next_u64());
        }
        let now = cx.now;
        let i = self.classify(pkt.flow());
        self.buckets[i].fifo.push(pkt, now);
        self.pkts += 1;
        self.bytes += pkt.size() as u64;
        match self.buckets[i].set {
            Set::None | Set::Decaying => {
                if self.buckets[i].set == Set::Decaying {
                    self.decaying -= 1;
                }
                self.move_tail(i, Chain::New);
                self.buckets[i].set = Set::Sparse;
                self.sparse += 1;
                let load = self.host_load(i);
                let dither = cx.rng.next_u64() >> 48;
                self.buckets[i].deficit = ((self.quantum as u64 * quantum_div(load) + dither) >> 16) as i64;
            }
            Set::SparseWait => {
                self.buckets[i].set = Set::Bulk;
                self.sparse -= 1;
                self.bulk += 1;
                self.bulk_hosts(i, true);
            }
            Set::Sparse | Set::Bulk => {}
        }
        let mut admitted = true;
        while self.limit.qlen(self.pkts, self.bytes) > self.limit.value {
            let j = self.fattest();
            let cp = self.cparams;
            let b = &mut self.buckets[j];
            b.cvars.queue_full(&cp, now);
            let (p, _) = b.fifo.pop().expect("the fattest bucket holds packets");
            self.pkts -= 1;
            self.bytes -= p.size() as u64;
            if j == i && b.fifo.is_empty() {
                admitted = false;
            }
            cx.drop(p, DropReason::Overflow);
        }
        admitted
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        let now = cx.now;
        let mut first = true;
        loop {
            if self.pkts == 0 {
                return None;
            }
            // decaying buckets get one look first, then new, old, decaying
            let pick = if first { self.front(Chain::Decaying) } else { None }
                .or_else(|| self.front(Chain::New))
                .or_else(|| self.front(Chain::Old))
                .or_else(|| self.front(Chain::Decaying));
            let i = pick?;
            first = false;
            if self.buckets[i].deficit <= 0 {
                if self.buckets[i].set == Set::Sparse {
                    if !self.buckets[i].fifo.is_empty() {
                        self.sparse -= 1;
                        self.bulk += 1;
                        self.bulk_hosts(i, true);
                        self.buckets[i].set = Set::Bulk;
                    } else {
                        self.buckets[i].set = Set::SparseWait;
                    }
                }
                let load = self.host_load(i);
                // the dither of Linux (a random 16-bit fraction) avoids accumulating round-off
                let dither = cx.rng.next_u64() >> 48;
                self.buckets[i].deficit += ((self.quantum as u64 * quantum_div(load) + dither) >> 16) as i64;
                self.move_tail(i, Chain::Old);
                continue;
            }
            loop {
                let cp = self.cparams;
                let Some((mut pkt, enq)) = self.buckets[i].fifo.pop() else {
                    // this bucket was empty
                    let b = &mut self.buckets[i];
                    b.cvars.queue_empty(&cp, now);
                    let c = &b.cvars;
                    if c.p_drop != 0 || c.count != 0 || now < c.drop_next {
                        let set = b.set;
                        self.move_tail(i, Chain::Decaying);
                        match set {
                            Set::Bulk => {
                                self.bulk -= 1;
                                self.bulk_hosts(i, false);
                                self.decaying += 1;
                            }
                            Set::Sparse | Set::SparseWait => {
                                self.sparse -= 1;
                                self.decaying += 1;
                            }
                            _ => {}
                        }
                        self.buckets[i].set = Set::Decaying;
                    } else {
                        let set = b.set;
                        self.unlink(i);
                        match set {
                            Set::Sparse | Set::SparseWait => self.sparse -= 1,
                            Set::Bulk => {
                                self.bulk -= 1;
                                self.bulk_hosts(i, false);
                            }
                            _ => self.decaying -= 1,
                        }
                        self.buckets[i].set = Set::None;
                    }
                    break;
                };
                self.pkts -= 1;
                self.bytes -= pkt.size() as u64;
                let ecn = pkt.ecn_capable();
                let b = &mut self.buckets[i];
                let (drop, marked) = b.cvars.should_drop(&cp, now, enq, ecn, cx.rng);
                // the last packet of a bucket is never dropped (it may be marked)
                if drop && !b.fifo.is_empty() {
                    cx.drop(pkt, DropReason::Early);
                    continue;
                }
                if marked {
                    pkt.mark_ce();
                }
                b.deficit -= pkt.size() as i64;
                return Some((pkt, enq));
            }
        }
    }

    fn len(&self) -> usize {
        self.pkts
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Order: the new, old and decaying rotations, each bucket from head to tail.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        for c in [Chain::New, Chain::Old, Chain::Decaying] {
            let mut i = self.chains[c as usize].0;
            while i != NIL {
                self.buckets[i as usize].fifo.for_each(f);
                i = self.buckets[i as usize].next;
            }
        }
    }
    fn wants_hosts(&self) -> bool {
        self.mode & (SRC_IP | DST_IP) != 0
    }
    fn flow_hosts(&mut self, flow: u32, src: u32, dst: u32) {
        let f = flow as usize;
        if self.flow_hosts.len() <= f {
            let n = self.flow_hosts.len();
            self.flow_hosts.extend((n as u32..=flow).map(|x| (x, x)));
        }
        self.flow_hosts[f] = (src, dst);
    }
    /// The 1024 buckets (COBALT state, DRR and list links, tag), the host table, and each flow's
    /// (source, destination) hosts when the caller told them.
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>()
            + self.buckets.len() * std::mem::size_of::<Bucket<P>>()
            + self.hosts.len() * std::mem::size_of::<Host>()
            + self.flow_hosts.len() * 8) as u64
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["bulk_flows", "sparse_flows", "decaying_flows", "max_blue_p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.bulk as f64;
        out[1] = self.sparse as f64;
        out[2] = self.decaying as f64;
        out[3] = self.buckets.iter().map(|b| b.cvars.p_drop).max().unwrap_or(0) as f64 / 4_294_967_296.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn cake(params: &CakeParams, limit: u64) -> Cake<P> {
        let mut q = Cake::new(params, LinkInfo { rate_bps: 10e6 }, Limit::packets(limit));
        q.salt = Some(0);
        q
    }

    #[test]
    fn validation_and_rate_derived_parameters() {
        assert!(CakeParams::default().validate().is_ok());
        let p = CakeParams { mtu: 0, ..Default::default() };
        assert_eq!(p.validate().unwrap_err().field, "mtu");
        // 10 Mb/s = 1.25 MB/s: quantum 1.25e6 >> 12 = 305, MTU time 1.21 ms, target stays 5 ms
        let (c, q) = CobaltParams::for_rate(1_250_000, 1514, 5 * MS, 100 * MS);
        assert_eq!(q, 305);
        assert_eq!(c.mtu_time, 1_211_200);
        assert_eq!((c.target, c.interval), (5 * MS, 100 * MS));
        // 1 Mb/s: target raised to 1.5 MTU times (18.2 ms), interval by as much
        let (c, q) = CobaltParams::for_rate(125_000, 1514, 5 * MS, 100 * MS);
        assert_eq!(q, 300);
        assert_eq!(c.target, 18_168_000);
        assert_eq!(c.interval, 100 * MS + 18_168_000 - 5 * MS);
        // unlimited
        let (c, q) = CobaltParams::for_rate(0, 1514, 5 * MS, 100 * MS);
        assert_eq!((q, c.mtu_time), (1514, 0));
    }

    #[test]
    fn inverse_square_root_cache_matches_the_exact_value() {
        let c = InvSqrt::cache();
        assert_eq!(c[0], u32::MAX);
        for n in 2..16u32 {
            let exact = 1.0 / (n as f64).sqrt();
            let got = c[n as usize] as f64 / 4_294_967_296.0;
            assert!((got - exact).abs() < 1e-3, "count {n}: {got} vs {exact}");
        }
    }

    #[test]
    fn set_association_gives_colliding_flows_their_own_buckets() {
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, ..Default::default() }, 10_000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        // 8 flows whose hashes share one set get 8 different buckets of that set
        let target_set = q.hash32(0, 0) as usize % QUEUES / WAYS;
        let mut same_set = vec![];
        let mut f = 0u32;
        while same_set.len() < 9 {
            if q.hash32(f as u64, 0) as usize % QUEUES / WAYS == target_set {
                same_set.push(f);
            }
            f += 1;
        }
        let mut buckets = std::collections::HashSet::new();
        for &f in &same_set[..8] {
            q.enqueue(P::new(f, 1000), &mut cx);
            buckets.insert(q.classify(f));
        }
        assert_eq!(buckets.len(), 8);
        assert!(buckets.iter().all(|&b| b / WAYS == target_set));
        // a ninth flow of the set has to share
        q.enqueue(P::new(same_set[8], 1000), &mut cx);
        assert!(buckets.contains(&q.classify(same_set[8])));
    }

    /// Source host 1 runs four bulk flows, source host 2 one, every flow to its own destination:
    /// isolating hosts (triple isolation, or dual-srchost) gives each source half the link;
    /// isolating flows alone gives host 1 four fifths.
    #[test]
    fn host_isolation_shares_between_hosts_first() {
        for (mode, want) in [(FlowMode::TripleIsolate, 0.5), (FlowMode::DualSrchost, 0.5), (FlowMode::Flows, 0.8)] {
            let mut q = cake(&CakeParams { flow_mode: mode, ..Default::default() }, 100_000);
            for f in 0..4 {
                q.flow_hosts(f, 1, 100 + f);
            }
            q.flow_hosts(4, 2, 200);
            let mut rng = Rng::stream(1, "t", 0);
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            let (mut host1, mut total) = (0u64, 0u64);
            for round in 0..40_000 {
                for f in 0..5 {
                    while {
                        let b = q.classify(f);
                        q.buckets[b].fifo.len() < 3
                    } {
                        q.enqueue(P::new(f, 1000), &mut cx);
                    }
                }
                let (p, _) = q.dequeue(&mut cx).unwrap();
                if round > 4000 {
                    total += 1;
                    host1 += (p.flow < 4) as u64;
                }
            }
            let share = host1 as f64 / total as f64;
            assert!((share - want).abs() < 0.03, "{mode:?}: host 1 share {share}");
        }
    }

    #[test]
    fn cobalt_drops_after_an_interval_above_target_and_marks_ecn() {
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, ..Default::default() }, 100_000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..2000 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        // a first departure without delay arms the activity timeout (drop_next = now + interval)
        q.dequeue(&mut cx).unwrap();
        // then every packet has waited 20 ms or more (> 5 ms): the first signal comes one
        // interval after the sojourn first exceeded the target
        let mut t = 20 * MS;
        let mut first = None;
        while first.is_none() && t < 400 * MS {
            cx.now = t;
            q.dequeue(&mut cx).unwrap();
            if !cx.drops.is_empty() {
                first = Some(t);
            }
            t += MS;
        }
        assert_eq!(first, Some(120 * MS));
        // an ECN-capable flow is marked, not dropped
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, ..Default::default() }, 100_000);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..2000 {
            q.enqueue(P { ect: true, ..P::new(1, 1000) }, &mut cx);
        }
        let mut marks = 0;
        for k in 0..300 {
            cx.now = (20 + k) * MS;
            marks += q.dequeue(&mut cx).unwrap().0.ce as u32;
        }
        assert!(marks > 2 && cx.drops.is_empty(), "{marks} marks");
    }

    /// A bucket never used before has no activity timeout yet (`drop_next` 0): when its first
    /// departure is already above target, the schedule is overdue and the second departure is
    /// signalled (Linux's arithmetic: `drop_next` is pulled to `now` while `count` > 0).
    #[test]
    fn a_cold_bucket_over_target_signals_at_its_second_departure() {
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, ..Default::default() }, 100_000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..10 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        cx.now = 20 * MS;
        q.dequeue(&mut cx).unwrap();
        assert!(cx.drops.is_empty());
        cx.now = 21 * MS;
        q.dequeue(&mut cx).unwrap();
        assert_eq!(cx.drops.len(), 1);
    }

    #[test]
    fn overflow_drops_from_the_fattest_bucket_and_raises_blue() {
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, ..Default::default() }, 10);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 10 * MS, rng: &mut rng, drops: &mut drops };
        for _ in 0..8 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        q.enqueue(P::new(2, 1000), &mut cx);
        q.enqueue(P::new(2, 1000), &mut cx);
        assert!(q.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(cx.drops.len(), 1);
        assert_eq!(cx.drops[0].pkt.flow, 1);
        let b = q.classify(1);
        assert_eq!(q.buckets[b].cvars.p_drop, 1 << 24);
    }

    #[test]
    fn sparse_flows_are_served_before_bulk_ones() {
        let mut q = cake(&CakeParams { flow_mode: FlowMode::Flows, shaped: false, ..Default::default() }, 1000);
        let mut rng = Rng::stream(1, "t", 0);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        for _ in 0..20 {
            q.enqueue(P::new(1, 1000), &mut cx);
        }
        for _ in 0..3 {
            q.dequeue(&mut cx);
        }
        // flow 1 is bulk now; a new flow's packet goes first
        q.enqueue(P::new(2, 100), &mut cx);
        assert_eq!(q.dequeue(&mut cx).unwrap().0.flow, 2);
        assert_eq!(q.counts().0, 1);
    }
}
