//! xCHOKe — CHOKe with a table of the flows that hit.
//!
//! Reference: P. Chhabra, S. Chuig, A. Goel, A. John, A. Kumar, H. Saran, R. Shorey, "XCHOKe:
//! Malicious Source Control for Congestion Avoidance at Internet Gateways", Proc. IEEE ICNP 2002,
//! pp. 186–187 (a two-page poster, [xCHOKe]); the full version: "Controlling malicious sources at
//! Internet gateways", Proc. IEEE ICC 2003.
//!
//! CHOKe ([Pan00]) drops an arrival and a random queued packet when they belong to the same flow.
//! Such a *hit* is evidence: a flow hits in proportion to the square of its share of the queue.
//! xCHOKe remembers it. A small *lookup table* keeps the flows that hit and their hit counts; an
//! arrival of a flow in the table is dropped with a probability that grows with its count, so a
//! non-adaptive flow, which keeps hitting, is held back before it fills the queue, and CHOKe's
//! own matched drops do the rest. With nothing but CHOKe, a flow sending far more than the link
//! still gets a large share (it hits, but the matched drops remove only two packets at a time).
//!
//! The poster states the mechanism (CHOKe and RED plus a table of hits, integer arithmetic only);
//! the details are choices here, each an option: the table's size and its replacement (the
//! entry with the fewest hits makes room), the drop probability of a tabled flow,
//! `min(1, hits / hit_max)`, and the forgetting of old hits (every `decay_every` hits in the
//! table, every count is halved, integer-wise). The RED stage and the draw are CHOKe's
//! (one candidate, drawn over the live packets; [`crate::choke`]).

use crate::buffer::BufferMode;
use crate::control::early_drop;
use crate::family::{drop_victims, matches, RedLeaky};
use crate::red::{RedMode, RedParams, RedVariant};
use crate::red_math::Region;
use crate::red_pd::{check_optional_red, thresholds};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time};
use serde::{Deserialize, Serialize};

/// xCHOKe parameters as written in a scenario (`aqm = { type = "xchoke", ... }`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct XchokeParams {
    /// RED's lower threshold (queue unit). Absent = a quarter of the buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_th: Option<f64>,
    /// RED's upper threshold. Absent = three quarters of the buffer (`3 min_th`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_th: Option<f64>,
    #[serde(default = "crate::defaults::xchoke::max_p")]
    pub max_p: f64,
    #[serde(default = "crate::defaults::xchoke::w_q")]
    pub w_q: f64,
    #[serde(default = "crate::defaults::xchoke::gentle")]
    pub gentle: bool,
    /// Typical packet size (bytes) for RED's idle aging.
    #[serde(default = "crate::defaults::xchoke::mean_pkt_size")]
    pub mean_pkt_size: u32,
    /// Entries of the lookup table.
    #[serde(default = "crate::defaults::xchoke::table_size")]
    pub table_size: u32,
    /// Hits at which a tabled flow's every packet is dropped.
    #[serde(default = "crate::defaults::xchoke::hit_max")]
    pub hit_max: u32,
    /// Hits (in the whole table) between two halvings of every count.
    #[serde(default = "crate::defaults::xchoke::decay_every")]
    pub decay_every: u32,
    /// Mark ECN-capable packets instead of RED's early drops.
    #[serde(default)]
    pub ecn: bool,
}

impl Default for XchokeParams {
    fn default() -> Self {
        crate::defaults::of()
    }
}

impl Params for XchokeParams {
    fn validate(&self) -> Result<(), ParamError> {
        check_optional_red(self.min_th, self.max_th, self.max_p, self.w_q)?;
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        for (name, v) in [("table_size", self.table_size), ("hit_max", self.hit_max), ("decay_every", self.decay_every)]
        {
            if !(1..=1 << 20).contains(&v) {
                return Err(ParamError::new(name, format!("must be 1..1048576, got {v}")));
            }
        }
        Ok(())
    }
}

/// xCHOKe over a leaky buffer.
pub struct Xchoke<P> {
    q: RedLeaky<P>,
    /// The lookup table: (flow, hits).
    table: Vec<(u32, u32)>,
    size: usize,
    hit_max: f64,
    decay_every: u32,
    since_decay: u32,
    last_p: f64,
}

impl<P: Pkt> Xchoke<P> {
    pub fn new(p: &XchokeParams, link: LinkInfo, limit: Limit) -> Self {
        let (min_th, max_th) = thresholds(p.min_th, p.max_th, &limit);
        let mut red = RedParams::with_thresholds(min_th, max_th, p.max_p);
        red.w_q = p.w_q;
        red.gentle = p.gentle;
        red.mean_pkt_size = p.mean_pkt_size;
        red.max_pkt_size = p.mean_pkt_size;
        red.mode = RedMode::Packet;
        red.variant = RedVariant::Fj93;
        red.ecn = p.ecn;
        Xchoke {
            q: RedLeaky::new(red.stage(link), BufferMode::default(), false, limit),
            table: Vec::with_capacity(p.table_size as usize),
            size: p.table_size as usize,
            hit_max: p.hit_max as f64,
            decay_every: p.decay_every,
            since_decay: 0,
            last_p: 0.0,
        }
    }

    /// Hits of `flow` in the table (0 if absent).
    pub fn hits(&self, flow: u32) -> u32 {
        self.table.iter().find(|e| e.0 == flow).map_or(0, |e| e.1)
    }

    /// Record a hit of `flow`.
    fn hit(&mut self, flow: u32) {
        if let Some(e) = self.table.iter_mut().find(|e| e.0 == flow) {
            e.1 += 1;
        } else if self.table.len() < self.size {
            self.table.push((flow, 1));
        } else {
            // the entry with the fewest hits (the oldest among equals) makes room
            let (i, _) = self.table.iter().enumerate().min_by_key(|(i, e)| (e.1, *i)).expect("table is not empty");
            self.table[i] = (flow, 1);
        }
        self.since_decay += 1;
        if self.since_decay >= self.decay_every {
            self.since_decay = 0;
            for e in &mut self.table {
                e.1 /= 2;
            }
            self.table.retain(|e| e.1 > 0);
        }
    }
}

impl<P: Pkt> Scheme<P> for Xchoke<P> {
    type Params = XchokeParams;
    fn new(params: &XchokeParams, link: LinkInfo, limit: Limit) -> Self {
        Xchoke::new(params, link, limit)
    }
}

impl<P: Pkt> Qdisc<P> for Xchoke<P> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        let flow = pkt.flow();
        // RED's average and region
        let region = self.q.region(cx.now);
        self.last_p = 0.0;
        if region != Region::None {
            // a tabled flow: dropped with min(1, hits / hit_max)
            let h = self.hits(flow);
            if h > 0 {
                let p = (h as f64 / self.hit_max).min(1.0);
                self.last_p = p;
                if early_drop(cx.rng, p) {
                    cx.drop(pkt, DropReason::Forced);
                    return false;
                }
            }
            // CHOKe's draw: a hit drops both and is recorded
            if let Some(d) = self.q.buf.draw(cx.rng) {
                if matches(&self.q.buf, d.pos, d.live, flow) {
                    drop_victims(&mut self.q.buf, &[d.pos], cx);
                    self.hit(flow);
                    cx.drop(pkt, DropReason::MatchedArrival);
                    return false;
                }
            }
        }
        // RED's decision and the buffer
        self.q.admit(pkt, region, cx)
    }

    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        self.q.pop(cx.now)
    }
    fn len(&self) -> usize {
        self.q.buf.len()
    }
    fn bytes(&self) -> u64 {
        self.q.buf.bytes()
    }
    fn on_link_idle(&mut self, now: Time) {
        self.q.red.on_link_idle(now);
    }
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
        self.q.buf.for_each(f)
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p", "table_p", "tabled"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.q.red.est.avg();
        out[1] = self.q.red.test.last_p();
        out[2] = self.last_p;
        out[3] = self.table.len() as f64;
    }
    /// The lookup table (8 bytes per entry) and RED's state.
    fn state_bytes(&self) -> u64 {
        (std::mem::size_of::<Self>() + 8 * self.size) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use crate::NS_PER_SEC;

    #[test]
    fn defaults_and_validation() {
        let p = XchokeParams::default();
        assert!(p.validate().is_ok());
        assert_eq!(XchokeParams { table_size: 0, ..p.clone() }.validate().unwrap_err().field, "table_size");
        assert_eq!(
            XchokeParams { min_th: Some(10.0), max_th: Some(5.0), ..p.clone() }.validate().unwrap_err().field,
            "max_th"
        );
    }

    /// The table: hits add up, the entry with the fewest hits makes room, and every
    /// `decay_every` hits all counts are halved (entries at 0 leave).
    #[test]
    fn hit_table_counts_replaces_and_decays() {
        let p = XchokeParams { table_size: 3, decay_every: 10, ..Default::default() };
        let mut q: Xchoke<P> = Xchoke::new(&p, LinkInfo { rate_bps: 1e7 }, Limit::packets(100));
        for _ in 0..5 {
            q.hit(1);
        }
        q.hit(2);
        q.hit(2);
        q.hit(3);
        assert_eq!(q.table, vec![(1, 5), (2, 2), (3, 1)]);
        q.hit(4); // replaces flow 3 (fewest hits)
        assert_eq!(q.table, vec![(1, 5), (2, 2), (4, 1)]);
        q.hit(1); // the tenth hit: halve everything
        assert_eq!(q.table, vec![(1, 3), (2, 1)]);
        assert_eq!(q.hits(4), 0);
    }

    /// [xCHOKe]'s claim against CHOKe: a non-adaptive flow offering twice the link to a
    /// congested queue is held far below the share CHOKe alone leaves it. Here 20 constant flows
    /// of 60 packets/s each (1.2 links together) meet a flow of 2000 packets/s on a 1000-packet/s
    /// link: the max-min fair share is 1000/21 packets/s each.
    #[test]
    fn the_table_holds_a_non_adaptive_flow_below_chokes_share() {
        let run = |table: bool| {
            let mut p = XchokeParams { min_th: Some(20.0), max_th: Some(60.0), ..Default::default() };
            if !table {
                p.hit_max = 1 << 20; // the table never drops: CHOKe alone
            }
            let mut q: Xchoke<P> = Xchoke::new(&p, LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
            let mut rng = Rng::stream(11, "xchoke", 0);
            let mut drops = Vec::new();
            let (mut served, mut out) = (0u64, [0u64; 2]);
            for step in 0..(3200 * 30) as u64 {
                let t = step * NS_PER_SEC / 3200;
                let mut cx = Cx { now: t, rng: &mut rng, drops: &mut drops };
                while served < t * 1000 / NS_PER_SEC {
                    if let Some((pk, _)) = q.dequeue(&mut cx) {
                        if t > 10 * NS_PER_SEC {
                            out[(pk.flow != 0) as usize] += 1;
                        }
                    }
                    served += 1;
                }
                let flow = if step % 8 < 5 { 0 } else { 1 + ((step / 8 * 3 + step % 8 - 5) % 20) as u32 };
                q.enqueue(P::new(flow, 1000), &mut cx);
            }
            out[0] as f64 / (out[0] + out[1]) as f64
        };
        let (choke, xchoke) = (run(false), run(true));
        eprintln!("share of the fast flow: CHOKe {choke:.3}, xCHOKe {xchoke:.3}");
        assert!(xchoke < 0.6 * choke, "CHOKe {choke}, xCHOKe {xchoke}");
        assert!(xchoke < 0.5);
    }
}
