//! CHOKeD — CHOKe with a dynamic drawing factor (aqm.md §9).
//!
//! Reference: S. Manzoor, "CHOKeD: A Fair Active Queue Management System", MS thesis, GIK
//! Institute, 2015 (Eq. 3.1–3.4, Fig. 3.5, Appendix A).
//!
//! RED's average `Q_a` detects congestion. Between the thresholds, an arrival is compared with
//! `D_r` packets drawn from the rear half of the queue and, if none matched, with `D_f` from the
//! front half, where `D_r = round(Q · sqrt(B) / ((T_max − T_min) · ln B))` grows with the queue and
//! `D_f = round(D_r / 2)`. Matches drop the arrival and every matching drawn packet; an unmatched
//! arrival still faces RED's test (A20). Regions are ranks, so the buffer keeps a rank index.

use crate::buffer::{Flows, LeakyBuffer};
use crate::family::{check_buffer_mode, drop_victims, family_params};
use crate::red_math::{DropTest, Estimator, Region, Variant};
use crate::{Cx, DropReason, Limit, LinkInfo, ParamError, Params, Pkt, Qdisc, Scheme, Time, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// Queue length used in Eq. 3.2 (A19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DSource {
    #[default]
    Current,
    Average,
}

/// Where the two phases draw from (A18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionDraws {
    #[default]
    Regions,
    WholeBuffer,
}

/// Draws within a phase (A21 a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// Distinct packets (default).
    #[default]
    Without,
    With,
}

family_params! {
    /// CHOKeD parameters ([CHOKeD] values as defaults; `B` is the link's buffer limit).
    pub struct ChokedParams {
        /// Lower threshold on `Q_a` (packets).
        #[serde(default = "crate::defaults::choked::t_min", alias = "min_th")]
        pub t_min: f64,
        /// Upper threshold on `Q_a`: above it every arrival is dropped (FORCED).
        #[serde(default = "crate::defaults::choked::t_max", alias = "max_th")]
        pub t_max: f64,
        /// EWMA weight (Eq. 3.1).
        #[serde(default = "crate::defaults::choked::w_q")]
        pub w_q: f64,
        /// Probability at `T_max` of the RED test after unmatched draws (not given; 0.1, A20).
        #[serde(default = "crate::defaults::choked::max_p")]
        pub max_p: f64,
        /// `current` (default) or `average` (A19).
        #[serde(default)]
        pub d_source: DSource,
        /// `regions` (default) or `whole_buffer` (A18).
        #[serde(default)]
        pub region_draws: RegionDraws,
        /// Apply the RED test after unmatched draws (A20).
        #[serde(default = "crate::defaults::choked::red_after_unmatched")]
        pub red_after_unmatched: bool,
        /// `without` (default) or `with` replacement (A21).
        #[serde(default)]
        pub draw_replacement: Replacement,
        /// Packet size for the idle-time correction and for byte-mode conversion.
        #[serde(default = "crate::defaults::choked::mean_pkt_size")]
        pub mean_pkt_size: u32,
        /// Mark ECN-capable packets instead of the RED test's early drops (RFC 3168).
        #[serde(default)]
        pub ecn: bool,
        /// The RED test and average after unmatched draws: `fj93` (default, aqm.md §3) or `ns2`
        /// (ns-2's `Queue/RED`: "wait" rule, first packet in the region untested, integer idle
        /// count; A5), for runs that model the thesis' ns-2.35 implementation.
        #[serde(default)]
        pub variant: crate::red::RedVariant,
    }
}

impl Params for ChokedParams {
    fn validate(&self) -> Result<(), ParamError> {
        if !(self.t_min >= 0.0 && self.t_min.is_finite()) {
            return Err(ParamError::new("t_min", "must be a number >= 0"));
        }
        if !(self.t_max > self.t_min && self.t_max.is_finite()) {
            return Err(ParamError::new(
                "t_max",
                format!("must be greater than t_min ({}), got {}", self.t_min, self.t_max),
            ));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(ParamError::new("w_q", format!("must be in (0, 1], got {}", self.w_q)));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(ParamError::new("max_p", format!("must be in (0, 1], got {}", self.max_p)));
        }
        crate::control::check_bytes("mean_pkt_size", self.mean_pkt_size)?;
        if self.draw_population == crate::buffer::DrawPopulation::Physical {
            return Err(ParamError::new(
                "draw_population",
                "CHOKeD's regions are ranks of live packets, so its draws are over live packets only (\"live\")",
            ));
        }
        check_buffer_mode(&self.buffer_mode())
    }
}

/// `round_half_up(x) = floor(x + 0.5)`, 0 below 0 (and for NaN).
///
/// Written as the conversion alone: `as u64` truncates toward zero, which is `floor` for the
/// non-negative values, and saturates at 0 for the negative ones and NaN, which is what
/// `floor(x + 0.5).max(0.0) as u64` gives; no call to `floor`.
#[inline]
fn round_half_up(x: f64) -> u64 {
    (x + 0.5) as u64
}

/// `D_f = round_half_up(D_r / 2)` (Eq. 3.4): `(D_r + 1) / 2` in integers while `D_r / 2 + 0.5` is
/// exact in binary64 (below 2^52), the floating-point rule above that.
#[inline]
fn half_up(d_r: u64) -> u64 {
    if d_r < 1 << 52 {
        d_r.div_ceil(2)
    } else {
        round_half_up(d_r as f64 / 2.0)
    }
}

/// The drawing factor `D_i` of Eq. 3.2 for queue length `x` and buffer `b` (packets).
pub fn drawing_factor(x: f64, b: f64, t_min: f64, t_max: f64) -> u64 {
    DrawingFactor::new(b, t_min, t_max).at(x)
}

/// Eq. 3.2 with its constant parts computed once: `sqrt(B)` and `(T_max - T_min) ln B` are the
/// same values every arrival, so the per-arrival work is one multiply and one divide, in the same
/// order as the equation (the same result to the last bit as [`drawing_factor`]).
#[derive(Debug, Clone, Copy)]
struct DrawingFactor {
    sqrt_b: f64,
    den: f64,
    none: bool,
}

impl DrawingFactor {
    fn new(b: f64, t_min: f64, t_max: f64) -> Self {
        if b <= 1.0 {
            return DrawingFactor { sqrt_b: 0.0, den: 1.0, none: true };
        }
        DrawingFactor { sqrt_b: b.sqrt(), den: (t_max - t_min) * libm::log(b), none: false }
    }

    #[inline]
    fn at(&self, x: f64) -> u64 {
        if self.none {
            return 0;
        }
        round_half_up(x * self.sqrt_b / self.den)
    }
}

/// A phase's region: live ranks `[lo, lo + n)`, at physical positions `[lo_pos, lo_pos + span)`.
#[derive(Clone, Copy)]
struct DrawSpan {
    lo: usize,
    n: u64,
    lo_pos: u64,
    span: u64,
}

impl DrawSpan {
    /// A uniform live packet of the region: its position and flow. By rejection over the
    /// physical slots while they are at most 4 per live packet, else by one rank query.
    #[inline(always)]
    fn draw<P: Pkt>(&self, buf: &LeakyBuffer<P>, flows: Flows<'_, P>, rng: &mut crate::rng::Rng) -> (u64, u32) {
        if self.span <= 4 * self.n {
            loop {
                let pos = self.lo_pos + rng.below(self.span);
                if let Some(f) = flows.live_flow(pos) {
                    return (pos, f);
                }
            }
        }
        let pos = buf.nth_live(self.lo + rng.below(self.n) as usize);
        (pos, buf.get(pos).flow())
    }

    /// `seen.len()` (fewer than `n`) distinct draws, in `seen` in the order drawn; those of
    /// `flow` are appended to `hits` in that order.
    #[inline(always)]
    fn draw_distinct<P: Pkt>(
        &self,
        buf: &LeakyBuffer<P>,
        rng: &mut crate::rng::Rng,
        flow: u32,
        seen: &mut [u64],
        hits: &mut Vec<u64>,
    ) {
        let flows = buf.flows();
        let mut m = 0;
        while m < seen.len() {
            let (pos, f) = self.draw(buf, flows, rng);
            if fresh(&seen[..m], pos) {
                seen[m] = pos;
                m += 1;
                if f == flow {
                    hits.push(pos);
                }
            }
        }
    }
}

/// Whether `pos` is not among the phase's earlier draws: a plain scan of those few (cheaper than
/// `contains`, whose chunked search is set up for long slices).
#[inline(always)]
fn fresh(earlier: &[u64], pos: u64) -> bool {
    let mut i = 0;
    while i < earlier.len() && earlier[i] != pos {
        i += 1;
    }
    i == earlier.len()
}

impl DrawSpan {
    /// Whether a phase of `d` draws takes the common way, [`DrawSpan::draw_few`]: fewer draws
    /// than packets in the region, at most [`SMALL_D`] of them, and rejection over the slots.
    #[inline(always)]
    fn few(&self, d: u64) -> bool {
        d <= SMALL_D as u64 && d < self.n && self.span <= 4 * self.n
    }

    /// The common phase: `seen.len()` distinct draws by rejection over the region's slots, as
    /// [`DrawSpan::draw_distinct`] makes them (the same random numbers, the same positions, in
    /// the same order), written to `seen`; true when one of them is of `flow`. The loop holds
    /// only what it needs (after the first match the draws go on in [`DrawSpan::finish_few`]),
    /// so the stream's state stays in registers.
    #[inline(always)]
    fn draw_few<P: Pkt>(&self, flows: Flows<'_, P>, rng: &mut crate::rng::Rng, flow: u32, seen: &mut [u64]) -> bool {
        let mut m = 0;
        while m < seen.len() {
            let pos = self.lo_pos + rng.below(self.span);
            let Some(f) = flows.live_flow(pos) else { continue };
            if fresh(&seen[..m], pos) {
                seen[m] = pos;
                m += 1;
                if f == flow {
                    self.finish_few(flows, rng, seen, m);
                    return true;
                }
            }
        }
        false
    }

    /// The rest of [`DrawSpan::draw_few`]'s draws after a match, from the `m`-th.
    #[cold]
    #[inline(never)]
    fn finish_few<P: Pkt>(&self, flows: Flows<'_, P>, rng: &mut crate::rng::Rng, seen: &mut [u64], mut m: usize) {
        while m < seen.len() {
            let pos = self.lo_pos + rng.below(self.span);
            if flows.live_flow(pos).is_none() || seen[..m].contains(&pos) {
                continue;
            }
            seen[m] = pos;
            m += 1;
        }
    }
}

/// Distinct draws up to this many per phase keep their positions in a fixed array.
const SMALL_D: usize = 8;

pub struct Choked<P> {
    p: ChokedParams,
    buf: LeakyBuffer<P>,
    est: Estimator,
    test: DropTest,
    limit: Limit,
    /// Eq. 3.2 for this buffer size `B` (in packets) and thresholds.
    df: DrawingFactor,
    /// `D_r` by the current queue length, `df.at(Q)` for `Q` up to `min(B, 4095)`, where
    /// Eq. 3.2 reads the current queue in packets (the same values, looked up instead of
    /// computed at every arrival); empty otherwise.
    d_r_by_q: Vec<u64>,
    /// Queue unit per packet (1, or the mean packet size in byte mode); thresholds in that unit.
    scale: f64,
    t_min: f64,
    t_max: f64,
    hits: Vec<u64>,
    /// Positions drawn in a phase without replacement: `seen` for up to [`SMALL_D`] draws,
    /// `chosen` for more.
    seen: [u64; SMALL_D],
    chosen: Vec<u64>,
    /// The buffer's search state for the region bounds (see [`LeakyBuffer::nth_live_near`]).
    rank_hint: usize,
    /// The default draws (`regions`, without replacement), which take [`Choked::region_phases`].
    regions_without: bool,
}

impl<P: Pkt> Scheme<P> for Choked<P> {
    type Params = ChokedParams;
    fn new(p: &ChokedParams, link: LinkInfo, limit: Limit) -> Self {
        let (scale, b_pkts) = match limit.unit {
            crate::QueueUnit::Packets => (1.0, limit.value as f64),
            crate::QueueUnit::Bytes => (p.mean_pkt_size as f64, limit.value as f64 / p.mean_pkt_size as f64),
        };
        let s_ns = 8.0 * p.mean_pkt_size as f64 / link.rate_bps * NS_PER_SEC as f64;
        let ns2 = p.variant == crate::red::RedVariant::Ns2;
        Choked {
            buf: LeakyBuffer::new(p.buffer_mode(), true),
            est: Estimator::new(p.w_q, s_ns, ns2),
            test: DropTest::new(if ns2 { Variant::Ns2 } else { Variant::Fj93 }, true, false, p.mean_pkt_size as f64),
            limit,
            df: DrawingFactor::new(b_pkts, p.t_min, p.t_max),
            d_r_by_q: if limit.unit == crate::QueueUnit::Packets && p.d_source == DSource::Current {
                let df = DrawingFactor::new(b_pkts, p.t_min, p.t_max);
                (0..=limit.value.min(4095)).map(|q| df.at(q as f64)).collect()
            } else {
                Vec::new()
            },
            scale,
            t_min: p.t_min * scale,
            t_max: p.t_max * scale,
            hits: Vec::new(),
            seen: [0; SMALL_D],
            chosen: Vec::new(),
            rank_hint: 0,
            regions_without: p.region_draws == RegionDraws::Regions && p.draw_replacement == Replacement::Without,
            p: p.clone(),
        }
    }
}

impl<P: Pkt> Choked<P> {
    /// One phase: `d` draws over live ranks `[lo, hi)`; fills `hits` with distinct matches.
    ///
    /// The region's physical bounds come from two rank queries; draws are then uniform over the
    /// live packets between them by rejection over physical slots (O(1) expected while tombstones
    /// are sparse there), falling back to one rank query per draw where they are dense. Each
    /// drawn packet is compared with the arrival when it is drawn (the buffer does not change
    /// within a phase), so `hits` lists the matches in the order they were first drawn.
    ///
    /// `known` is a rank already resolved to its position in the unchanged buffer (the rear
    /// phase's lower bound is the front phase's upper one); returns this phase's lower bound.
    #[inline(always)]
    fn phase(
        &mut self,
        d: u64,
        lo: usize,
        hi: usize,
        flow: u32,
        cx: &mut Cx<'_, P>,
        known: Option<(usize, u64)>,
    ) -> Option<(usize, u64)> {
        self.hits.clear();
        let n = hi - lo;
        if n == 0 || d == 0 {
            return None;
        }
        let buf = &self.buf;
        let hits = &mut self.hits;
        let hint = &mut self.rank_hint;
        // (the hint follows the middle rank, which moves little between arrivals; rank 0 is
        // asked without it)
        let mut rank = |k: usize| match known {
            Some((r, pos)) if r == k => pos,
            _ if k == 0 => buf.nth_live(0),
            _ => buf.nth_live_near(k, hint),
        };
        let lo_pos = rank(lo);
        let hi_pos = if hi == buf.len() { buf.end() } else { rank(hi) };
        let with = self.p.draw_replacement == Replacement::With;
        if !with && d >= n as u64 {
            // the whole region, without a random number
            for pos in lo_pos..hi_pos {
                if buf.live_flow(pos) == Some(flow) {
                    hits.push(pos);
                }
            }
            return Some((lo, lo_pos));
        }
        let region = DrawSpan { lo, n: n as u64, lo_pos, span: hi_pos - lo_pos };
        // the stream's state in a local for the phase's draws (the same draws in the same order;
        // written back below), so that it can stay in registers across the loop
        let mut local = cx.rng.clone();
        let rng = &mut local;
        if with {
            let flows = buf.flows();
            for _ in 0..d {
                let (pos, f) = region.draw(buf, flows, rng);
                if f == flow && !hits.contains(&pos) {
                    hits.push(pos);
                }
            }
        } else if d as usize <= SMALL_D {
            // d < n distinct packets, remembered in a fixed array (only what is written is read)
            region.draw_distinct(buf, rng, flow, &mut self.seen[..d as usize], hits);
        } else {
            self.chosen.resize(d as usize, 0);
            region.draw_distinct(buf, rng, flow, &mut self.chosen, hits);
        }
        *cx.rng = local;
        Some((lo, lo_pos))
    }

    /// Steps 5-6 with the default region draws (rear half, then front half, without
    /// replacement): true when the arrival matched (it and its victims are dropped).
    ///
    /// The common case takes the phases here, each as [`DrawSpan::draw_few`], with the random
    /// stream's state copied in once for both; a phase that does not fit it (many draws, a
    /// region drawn whole, dense tombstones) is handed to [`Choked::phase`], and matches to
    /// [`Choked::matched_few`], out of line. The draws are those of [`Choked::general_phases`]:
    /// the same answer, victims and random stream (the property test
    /// `the_in_line_draws_are_the_general_draws` checks it on queues with holes and doomed
    /// packets, arrival after arrival; the golden snapshot `choked-bench` runs this path, the
    /// `choked-*` ones on the RED example the general one).
    #[inline(always)]
    fn region_phases(&mut self, pkt: P, d_r: u64, d_f: u64, cx: &mut Cx<'_, P>) -> bool {
        let q = self.buf.len();
        if d_r == 0 || q == 0 {
            // no draws in either phase (D_f = 0 too)
            return false;
        }
        let front = q / 2; // floor(Q/2) nearest the head; the rear has ceil(Q/2)
        let flow = pkt.flow();
        let buf = &self.buf;
        let mid_pos = if front == 0 { buf.nth_live(0) } else { buf.nth_live_near(front, &mut self.rank_hint) };
        let rear = DrawSpan { lo: front, n: (q - front) as u64, lo_pos: mid_pos, span: buf.end() - mid_pos };
        if !rear.few(d_r) {
            return self.general_phases(pkt, d_r, d_f, cx);
        }
        let flows = buf.flows();
        let mut rng = cx.rng.clone();
        let seen = &mut self.seen;
        if rear.draw_few(flows, &mut rng, flow, &mut seen[..d_r as usize]) {
            *cx.rng = rng;
            return self.matched_few(pkt, d_r as usize, cx);
        }
        if front == 0 || d_f == 0 {
            *cx.rng = rng;
            return false;
        }
        let head_pos = buf.nth_live(0);
        let fr = DrawSpan { lo: 0, n: front as u64, lo_pos: head_pos, span: mid_pos - head_pos };
        if !fr.few(d_f) {
            *cx.rng = rng;
            return self.front_phase(pkt, d_f, front, mid_pos, cx);
        }
        let hit = fr.draw_few(flows, &mut rng, flow, &mut seen[..d_f as usize]);
        *cx.rng = rng;
        hit && self.matched_few(pkt, d_f as usize, cx)
    }

    /// Step 6 by [`Choked::phase`] over ranks `[0, front)` (`front` is at `front_pos`).
    #[cold]
    #[inline(never)]
    fn front_phase(&mut self, pkt: P, d_f: u64, front: usize, front_pos: u64, cx: &mut Cx<'_, P>) -> bool {
        self.phase(d_f, 0, front, pkt.flow(), cx, Some((front, front_pos)));
        self.matched(pkt, cx)
    }

    /// Steps 5-6 for every option: the phases by [`Choked::phase`].
    #[inline(never)]
    fn general_phases(&mut self, pkt: P, d_r: u64, d_f: u64, cx: &mut Cx<'_, P>) -> bool {
        let q = self.buf.len();
        let front = q / 2; // floor(Q/2) nearest the head; the rear has ceil(Q/2)
        let (rear, fr) = match self.p.region_draws {
            RegionDraws::Regions => ((front, q), (0, front)),
            RegionDraws::WholeBuffer => ((0, q), (0, q)),
        };
        let known = self.phase(d_r, rear.0, rear.1, pkt.flow(), cx, None);
        if self.matched(pkt, cx) {
            return true;
        }
        // (nothing matched, so the buffer is as the rear phase saw it)
        self.phase(d_f, fr.0, fr.1, pkt.flow(), cx, known);
        self.matched(pkt, cx)
    }

    /// The matches among the `d` packets of a [`DrawSpan::draw_few`] phase (`self.seen[..d]`,
    /// live and distinct, in the buffer as they were drawn), dropped in the order drawn, with
    /// the arrival.
    #[cold]
    #[inline(never)]
    fn matched_few(&mut self, pkt: P, d: usize, cx: &mut Cx<'_, P>) -> bool {
        self.hits.clear();
        for &pos in &self.seen[..d] {
            if self.buf.live_flow(pos) == Some(pkt.flow()) {
                self.hits.push(pos);
            }
        }
        self.matched(pkt, cx)
    }

    #[cold]
    #[inline(never)]
    fn overflow(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        cx.drop(pkt, DropReason::Overflow);
        false
    }

    #[inline]
    fn matched(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        if self.hits.is_empty() {
            return false;
        }
        drop_victims(&mut self.buf, &self.hits, cx);
        cx.drop(pkt, DropReason::MatchedArrival);
        true
    }
}

crate::hint::hint_from!(Choked, buf.upcoming);

impl<P: Pkt> Qdisc<P> for Choked<P> {
    fn enqueue(&mut self, mut pkt: P, cx: &mut Cx<'_, P>) -> bool {
        // 1: Q_c and Q_a (Eq. 3.1 with the idle decay of §1.4)
        let qc = self.limit.qlen(self.buf.len(), self.buf.bytes()) as f64;
        let qa = self.est.update(cx.now, qc);
        // 2: below T_min: no draws, count = -1
        if qa < self.t_min {
            self.test.decide(Region::None, pkt.size(), self.buf.len(), cx.rng);
        } else if qa > self.t_max {
            // 3: above T_max: forced drop (count = 0)
            let r = self.test.decide(Region::Hard, pkt.size(), self.buf.len(), cx.rng).unwrap_or(DropReason::Forced);
            cx.drop(pkt, r);
            return false;
        } else {
            // 4: drawing factors
            // Eq. 3.2 counts packets
            let d_r = match self.d_r_by_q.get(self.buf.len()) {
                Some(&d_r) => d_r,
                None => {
                    let x = match self.p.d_source {
                        DSource::Current => qc,
                        DSource::Average => qa,
                    } / self.scale;
                    self.df.at(x)
                }
            };
            let d_f = half_up(d_r);
            // 5: rear phase; 6: front phase only if the rear found nothing
            let matched = if self.regions_without {
                self.region_phases(pkt, d_r, d_f, cx)
            } else {
                self.general_phases(pkt, d_r, d_f, cx)
            };
            if matched {
                return false;
            }
            // 7: RED's test on the unmatched arrival
            if self.p.red_after_unmatched {
                let p_b = self.p.max_p * (qa - self.t_min) / (self.t_max - self.t_min);
                if let Some(r) = self.test.decide(Region::Prob(p_b), pkt.size(), self.buf.len(), cx.rng) {
                    let Some(marked) = cx.verdict(pkt, r, self.p.ecn) else { return false };
                    pkt = marked;
                }
            }
        }
        // 8-9 (the buffer test and the push in line: every admitted arrival takes them)
        if !crate::family::admits(&self.buf, &self.limit, pkt.size()) {
            return self.overflow(pkt, cx);
        }
        self.buf.push(pkt, cx.now);
        true
    }

    crate::family::leaky_views!(buf);
    fn on_link_idle(&mut self, now: Time) {
        self.est.set_idle(now);
    }
    fn state_names(&self) -> &'static [&'static str] {
        &["avg", "p"]
    }
    fn state(&self, out: &mut [f64]) {
        out[0] = self.est.avg();
        out[1] = self.test.last_p();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::test_util::P;
    use proptest::prelude::*;

    fn params(extra: &str) -> ChokedParams {
        serde_json::from_str(&format!("{{{extra}}}")).unwrap()
    }

    #[test]
    fn drawing_factor_worked_values() {
        // aqm.md §9.2: B = 100, T_max - T_min = 40
        let d = |q: u32| drawing_factor(q as f64, 100.0, 40.0, 80.0);
        for q in 0..=9 {
            assert_eq!(d(q), 0, "Q = {q}");
        }
        for (lo, hi, want) in [(10, 27, 1), (28, 46, 2), (47, 64, 3), (65, 82, 4), (83, 100, 5)] {
            for q in lo..=hi {
                assert_eq!(d(q), want, "Q = {q}");
            }
        }
        assert_eq!(round_half_up(2.5), 3);
        assert_eq!(round_half_up(5.0 / 2.0), 3);
    }

    #[test]
    fn rounding_without_floor_is_the_floor_rule() {
        let reference = |x: f64| (x + 0.5).floor().max(0.0) as u64;
        let mut rng = Rng::stream(5, "round", 0);
        let specials = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            0.49999999999999994,
            -0.7,
            2.5,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            4503599627370495.5,
            9007199254740993.0,
            1.8446744073709552e19,
        ];
        for x in specials
            .into_iter()
            .chain((0..100_000).map(|_| (rng.uniform() - 0.1) * 10f64.powi(rng.below(40) as i32 - 20)))
        {
            assert_eq!(round_half_up(x), reference(x), "x = {x:e}");
        }
        for d in (0..10_000u64).chain([(1 << 52) - 1, 1 << 52, (1 << 53) + 1, u64::MAX - 1, u64::MAX]) {
            assert_eq!(half_up(d), reference(d as f64 / 2.0), "D_r = {d}");
        }
    }

    fn with_queue(p: &ChokedParams, flows: &[u32]) -> Choked<P> {
        let mut c: Choked<P> = Choked::new(p, LinkInfo { rate_bps: 8e6 }, Limit::packets(100));
        for &f in flows {
            c.buf.push(P::new(f, 1000), 0);
        }
        c
    }

    #[test]
    fn thresholds_on_the_average() {
        // w_q = 1: Q_a = Q_c
        let p = params(r#""w_q": 1.0"#);
        let mut rng = Rng::stream(1, "d", 0);
        let mut drops = Vec::new();
        // Q = 39 < T_min: admitted without draws even if every packet is the same flow
        let mut c = with_queue(&p, &[3; 39]);
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(c.enqueue(P::new(3, 1000), &mut cx));
        // Q = 81 > T_max: forced
        let mut c = with_queue(&p, &[4; 81]);
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!c.enqueue(P::new(3, 1000), &mut cx));
        assert_eq!(drops.last().unwrap().reason, DropReason::Forced);
    }

    #[test]
    fn rear_phase_first_front_phase_only_if_unmatched() {
        // Q = 60 (D_r = 3, D_f = 2): front 30 packets of flow 1, rear 30 of flow 2
        let p = params(r#""w_q": 1.0, "red_after_unmatched": false"#);
        let q: Vec<u32> = (0..60).map(|i| if i < 30 { 1 } else { 2 }).collect();
        let mut rng = Rng::stream(2, "d", 0);
        // flow 2: the rear phase draws 3 distinct packets, all flow 2 -> 3 victims from the rear
        let mut c = with_queue(&p, &q);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!c.enqueue(P::new(2, 1000), &mut cx));
        assert_eq!(drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count(), 3);
        // flow 1: the rear (flow 2) cannot match; the front phase draws 2 -> 2 victims
        let mut c = with_queue(&p, &q);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(!c.enqueue(P::new(1, 1000), &mut cx));
        assert_eq!(drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count(), 2);
        assert!(drops.iter().all(|d| d.pkt.flow == 1));
        // a third flow matches nothing and (RED test off) is admitted
        let mut c = with_queue(&p, &q);
        let mut drops = Vec::new();
        let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
        assert!(c.enqueue(P::new(9, 1000), &mut cx));
        assert!(drops.is_empty());
    }

    /// One step of the property test below, applied alike to both queues.
    #[derive(Debug, Clone)]
    enum Op {
        /// A packet of this flow joins the tail.
        Push(u32),
        /// The head leaves (a transmission).
        Pop,
        /// The live packet of this rank (modulo the queue) is removed, or doomed in lazy mode: a
        /// hole, as a victim leaves.
        Remove(usize),
        /// An arrival of this flow draws with this `D_r` (and `D_f = round(D_r / 2)`).
        Arrive(u32, u64),
    }

    /// Queues that grow to a few hundred packets, with holes or doomed packets past the rank
    /// index's list of 64 (`pops` and `removes`: the weights of those steps against 8 pushes).
    fn op(pops: u32, removes: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (0u32..6).prop_map(Op::Push),
            pops => Just(Op::Pop),
            removes => any::<usize>().prop_map(Op::Remove),
            2 => ((0u32..7), prop_oneof![4 => 0u64..10, 1 => 0u64..40]).prop_map(|(f, d)| Op::Arrive(f, d)),
        ]
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        (1u32..4, 1u32..6).prop_flat_map(|(pops, removes)| proptest::collection::vec(op(pops, removes), 1..1500))
    }

    /// The buffer as the draws see it: the live packets in order, and the physical layout.
    fn buffer_state(c: &Choked<P>) -> (Vec<(u32, u32)>, usize, usize, u64) {
        let mut live = Vec::new();
        c.buf.for_each(&mut |p, _| live.push((p.flow, p.seq)));
        (live, c.buf.len(), c.buf.doomed(), c.buf.end())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// CHOKeD's two ways of making its default draws (rear region, then front, without
        /// replacement) are one: `region_phases`, the in-line path every arrival with the default
        /// options takes, and `general_phases`, the path of every other option, give the same
        /// answer, drop the same victims in the same order and leave the random stream in the
        /// same state, arrival after arrival, on queues with holes (immediate removal, below and
        /// past the rank index's list of 64, compacted or not) and with doomed packets (lazy
        /// removal, occupying the buffer or not), with every `D_r` from none to more draws than
        /// the region holds.
        #[test]
        fn the_in_line_draws_are_the_general_draws(
            lazy in any::<bool>(),
            occupy in any::<bool>(),
            seed in any::<u64>(),
            ops in ops(),
        ) {
            let removal = if lazy { "lazy" } else { "immediate" };
            let p = params(&format!(
                r#""victim_removal": "{removal}", "doomed_occupy_buffer": {occupy}, "red_after_unmatched": false"#
            ));
            prop_assert!(p.region_draws == RegionDraws::Regions && p.draw_replacement == Replacement::Without);
            let info = LinkInfo { rate_bps: 8e6 };
            let mut fast: Choked<P> = Choked::new(&p, info, Limit::packets(100_000));
            let mut general: Choked<P> = Choked::new(&p, info, Limit::packets(100_000));
            let (mut rng_f, mut rng_g) = (Rng::stream(seed, "choked", 0), Rng::stream(seed, "choked", 0));
            let mut seq = 0;
            for op in ops {
                match op {
                    Op::Push(f) => {
                        seq += 1;
                        for c in [&mut fast, &mut general] {
                            c.buf.push(P { seq, ..P::new(f, 1000) }, 0);
                        }
                    }
                    Op::Pop => {
                        prop_assert_eq!(fast.buf.pop(), general.buf.pop());
                    }
                    Op::Remove(k) if !fast.buf.is_empty() => {
                        let k = k % fast.buf.len();
                        for c in [&mut fast, &mut general] {
                            let pos = c.buf.nth_live(k);
                            c.buf.remove(pos);
                        }
                    }
                    Op::Remove(_) => {}
                    Op::Arrive(f, d_r) => {
                        let pkt = P::new(f, 1000);
                        let d_f = half_up(d_r);
                        let (mut drops_f, mut drops_g) = (Vec::new(), Vec::new());
                        let mut cx = Cx { now: 0, rng: &mut rng_f, drops: &mut drops_f };
                        let a = fast.region_phases(pkt, d_r, d_f, &mut cx);
                        let mut cx = Cx { now: 0, rng: &mut rng_g, drops: &mut drops_g };
                        let b = general.general_phases(pkt, d_r, d_f, &mut cx);
                        prop_assert_eq!(a, b, "matched or not, D_r = {}", d_r);
                        let victims = |d: &[crate::Dropped<P>]| d.iter().map(|x| (x.pkt, x.reason)).collect::<Vec<_>>();
                        prop_assert_eq!(victims(&drops_f), victims(&drops_g));
                    }
                }
                prop_assert_eq!(buffer_state(&fast), buffer_state(&general));
                prop_assert_eq!(rng_f.clone().next_u64(), rng_g.clone().next_u64(), "the random streams part");
            }
        }
    }

    #[test]
    fn odd_queue_puts_the_extra_packet_in_the_rear() {
        // Q = 47 (D_r = 3, D_f = 2): ranks 0..22 are flow 2, the middle rank 23 is flow 2, ranks
        // 24..46 are flow 3. With the rear holding ceil(47/2) = 24 packets (ranks 23..46), a flow-2
        // arrival matches in the rear phase only through the middle packet (3 of 24 draws: 1/8),
        // with one victim; otherwise the front phase takes 2 victims. Were the middle packet in
        // the front, one-victim outcomes could not happen.
        let p = params(r#""w_q": 1.0, "red_after_unmatched": false"#);
        let q: Vec<u32> = (0..47).map(|i| if i <= 23 { 2 } else { 3 }).collect();
        let mut rng = Rng::stream(3, "d", 0);
        let trials = 800;
        let mut one_victim = 0;
        for _ in 0..trials {
            let mut c = with_queue(&p, &q);
            let mut drops = Vec::new();
            let mut cx = Cx { now: 0, rng: &mut rng, drops: &mut drops };
            assert!(!c.enqueue(P::new(2, 1000), &mut cx));
            match drops.iter().filter(|d| d.reason == DropReason::MatchedVictim).count() {
                1 => one_victim += 1,
                2 => {}
                n => panic!("{n} victims"),
            }
        }
        let f = one_victim as f64 / trials as f64;
        assert!((f - 0.125).abs() < 0.035, "{f}");
    }
}
