//! Pieces shared by the CHOKe family: the parameter block (the scheme's own fields, RED's fields
//! for the embedded RED stage, and the victim-handling fields of aqm.md §1.2), the matched-drop
//! bookkeeping, and the RED-fronted leaky buffer. Used by CHOKe, Perfect CHOKe, gCHOKe, CHOKeW,
//! CHOKeD and WARD.

use crate::buffer::{BufferMode, DoomedDraw, DrawPopulation, LeakyBuffer, VictimRemoval};
use crate::red::RedStage;
use crate::red_math::{p_base, Region};
use crate::{Cx, DropReason, Limit, ParamError, Pkt, Time};

/// Defines a CHOKe-family parameter struct: the listed fields, plus (with `red`) RED's fields, plus
/// the victim-handling fields `victim_removal`, `doomed_occupy_buffer`, `draw_population`,
/// `doomed_draw`. Scenario keys are flat: `aqm = { type = "choke", min_th = 20, max_th = 520,
/// n_cand = 2, victim_removal = "lazy" }`.
macro_rules! family_params {
    (@victim $occupy:literal $(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* } $($red:tt)*) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $( $(#[$fm])* pub $f: $t, )*
            $($red)*
            /// `immediate` (default) or `lazy` (drop bit), aqm.md §1.2 / A4.
            #[serde(default)]
            pub victim_removal: crate::buffer::VictimRemoval,
            /// Lazy mode: doomed packets occupy buffer space until they reach the head (default
            /// true; false for WARD, whose drop bit frees the space at once, Decision D3).
            #[serde(default = $occupy)]
            pub doomed_occupy_buffer: bool,
            /// `live` (default) or `physical` (lazy mode only), A3.
            #[serde(default)]
            pub draw_population: crate::buffer::DrawPopulation,
            /// `no_match` (default) or `can_match`: what a drawn doomed packet means, A3.
            #[serde(default)]
            pub doomed_draw: crate::buffer::DoomedDraw,
        }
        impl $name {
            /// Victim handling.
            pub fn buffer_mode(&self) -> crate::buffer::BufferMode {
                crate::buffer::BufferMode {
                    removal: self.victim_removal,
                    doomed_occupy: self.doomed_occupy_buffer,
                    population: self.draw_population,
                    doomed_draw: self.doomed_draw,
                }
            }
        }
    };
    ($(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* } red) => {
        family_params! { @victim "crate::defaults::common::yes" $(#[$m])* pub struct $name { $( $(#[$fm])* pub $f : $t, )* }
            /// RED stage: lower threshold on the average (queue unit).
            pub min_th: f64,
            /// RED stage: upper threshold on the average.
            pub max_th: f64,
            #[serde(default = "crate::defaults::family::max_p")]
            pub max_p: f64,
            #[serde(default = "crate::defaults::family::w_q")]
            pub w_q: f64,
            #[serde(default)]
            pub gentle: bool,
            #[serde(default)]
            pub mode: crate::red::RedMode,
            #[serde(default = "crate::defaults::family::max_pkt_size")]
            pub max_pkt_size: u32,
            #[serde(default = "crate::defaults::family::mean_pkt_size")]
            pub mean_pkt_size: u32,
            #[serde(default)]
            pub variant: crate::red::RedVariant,
            #[serde(default = "crate::defaults::family::uniformise")]
            pub uniformise: bool,
            #[serde(default)]
            pub idle_rule: crate::red::IdleRule,
            /// RED stage: mark ECN-capable packets instead of its early drops (RFC 3168).
            #[serde(default)]
            pub ecn: bool,
        }
        impl $name {
            /// The embedded RED stage's parameters.
            pub fn red(&self) -> crate::red::RedParams {
                crate::red::RedParams {
                    min_th: self.min_th,
                    max_th: self.max_th,
                    max_p: self.max_p,
                    w_q: self.w_q,
                    gentle: self.gentle,
                    mode: self.mode,
                    max_pkt_size: self.max_pkt_size,
                    mean_pkt_size: self.mean_pkt_size,
                    variant: self.variant,
                    uniformise: self.uniformise,
                    idle_rule: self.idle_rule,
                    ecn: self.ecn,
                }
            }
        }
    };
    ($(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* }) => {
        family_params! { @victim "crate::defaults::common::yes" $(#[$m])* pub struct $name { $( $(#[$fm])* pub $f : $t, )* } }
    };
    // flagged victims free their buffer space at once by default (WARD's drop bit)
    ($(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* } doomed_free) => {
        family_params! { @victim "crate::defaults::common::no" $(#[$m])* pub struct $name { $( $(#[$fm])* pub $f : $t, )* } }
    };
}
pub(crate) use family_params;

/// Consistency of the victim-handling options.
pub fn check_buffer_mode(m: &BufferMode) -> Result<(), ParamError> {
    if m.population == DrawPopulation::Physical && m.removal != VictimRemoval::Lazy {
        return Err(ParamError::new(
            "draw_population",
            "\"physical\" needs victim_removal = \"lazy\" (only then are doomed packets present)",
        ));
    }
    if m.doomed_draw == DoomedDraw::CanMatch && m.population != DrawPopulation::Physical {
        return Err(ParamError::new("doomed_draw", "\"can_match\" needs draw_population = \"physical\""));
    }
    Ok(())
}

/// Does the drawn packet at `pos` match flow `flow`? (A doomed packet matches only with
/// `doomed_draw = can_match`.)
#[inline]
pub fn matches<P: Pkt>(buf: &LeakyBuffer<P>, pos: u64, live: bool, flow: u32) -> bool {
    buf.get(pos).flow() == flow && (live || buf.mode().doomed_draw == DoomedDraw::CanMatch)
}

/// Drop the queued packets at `positions` as victims (each at most once; doomed ones are not
/// dropped again) and report them.
#[inline]
pub fn drop_victims<P: Pkt>(buf: &mut LeakyBuffer<P>, positions: &[u64], cx: &mut Cx<'_, P>) {
    for &pos in positions {
        if let Some(v) = buf.remove(pos) {
            cx.drop(v, DropReason::MatchedVictim);
        }
    }
}

/// Whether an arrival of `size` bytes fits: `occupancy + size_unit <= B` (A4: physical occupancy in
/// lazy mode with doomed packets occupying space).
#[inline]
pub fn admits<P: Pkt>(buf: &LeakyBuffer<P>, limit: &crate::Limit, size: u32) -> bool {
    limit.admits(buf.occupancy(), buf.occupancy_bytes(), size)
}

/// The last steps of every matched-drop scheme: the buffer test (A4 occupancy), then enqueue.
#[inline]
pub fn enqueue_or_overflow<P: Pkt>(buf: &mut LeakyBuffer<P>, limit: &Limit, pkt: P, cx: &mut Cx<'_, P>) -> bool {
    if !admits(buf, limit, pkt.size()) {
        cx.drop(pkt, DropReason::Overflow);
        return false;
    }
    buf.push(pkt, cx.now);
    true
}

/// The `Qdisc` methods a scheme over a [`LeakyBuffer`] field only delegates: `dequeue` (head
/// packet, doomed ones discarded), `len`, `bytes`, `for_each_waiting`.
macro_rules! leaky_views {
    ($f:ident) => {
        fn dequeue(&mut self, _cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
            self.$f.pop()
        }
        fn len(&self) -> usize {
            self.$f.len()
        }
        fn bytes(&self) -> u64 {
            self.$f.bytes()
        }
        fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
            self.$f.for_each(f)
        }
    };
}
pub(crate) use leaky_views;

/// A leaky buffer behind RED's stage: what CHOKe and gCHOKe share. A scheme calls
/// [`RedLeaky::region`] (steps 1-2: RED's average and region), runs its own matched-drop test, and
/// then [`RedLeaky::admit`] (RED's decision and the buffer test).
pub struct RedLeaky<P> {
    pub buf: LeakyBuffer<P>,
    pub red: RedStage,
    pub limit: Limit,
}

impl<P: Pkt> RedLeaky<P> {
    pub fn new(red: RedStage, mode: BufferMode, ranks: bool, limit: Limit) -> Self {
        RedLeaky { buf: LeakyBuffer::new(mode, ranks), red, limit }
    }

    /// Steps 1-2: update RED's average with the queue the arrival sees; the region of the average.
    #[inline]
    pub fn region(&mut self, now: Time) -> Region {
        let q = self.limit.qlen(self.buf.len(), self.buf.bytes());
        let avg = self.red.est.update(now, q as f64);
        p_base(avg, &self.red.th)
    }

    /// RED's decision (count = -1 below `min_th`, FORCED above the hard threshold, the uniformised
    /// EARLY test in between), then the buffer test; enqueues the packet if both pass.
    #[inline]
    pub fn admit(&mut self, mut pkt: P, region: Region, cx: &mut Cx<'_, P>) -> bool {
        if let Some(r) = self.red.test.decide(region, pkt.size(), self.buf.len(), cx.rng) {
            let Some(marked) = cx.verdict(pkt, r, self.red.ecn) else {
                if self.buf.is_empty() {
                    self.red.on_queue_empty(cx.now); // see `Red::enqueue`
                }
                return false;
            };
            pkt = marked;
        }
        enqueue_or_overflow(&mut self.buf, &self.limit, pkt, cx)
    }

    /// Take the head packet; an emptied queue may start RED's idle period (`idle_rule`).
    #[inline]
    pub fn pop(&mut self, now: Time) -> Option<(P, Time)> {
        let e = self.buf.pop();
        if e.is_some() && self.buf.is_empty() {
            self.red.on_queue_empty(now);
        }
        e
    }
}

/// The `Qdisc` methods a scheme built on a [`RedLeaky`] field delegates to it.
macro_rules! red_leaky_delegate {
    ($f:ident) => {
        fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
            self.$f.pop(cx.now)
        }
        fn len(&self) -> usize {
            self.$f.buf.len()
        }
        fn bytes(&self) -> u64 {
            self.$f.buf.bytes()
        }
        fn on_link_idle(&mut self, now: Time) {
            self.$f.red.on_link_idle(now);
        }
        fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
            self.$f.buf.for_each(f)
        }
        fn state_names(&self) -> &'static [&'static str] {
            &["avg", "p"]
        }
        fn state(&self, out: &mut [f64]) {
            out[0] = self.$f.red.est.avg();
            out[1] = self.$f.red.test.last_p();
        }
    };
}
pub(crate) use red_leaky_delegate;
