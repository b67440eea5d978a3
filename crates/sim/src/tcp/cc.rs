//! The congestion-control interface: how a variant grows and shrinks the window.
//!
//! The sender (`super::TcpSender`) owns sequence numbers, the retransmission timer, RTT
//! estimation and loss recovery (Reno, NewReno or SACK, `super::recovery`); it calls these
//! hooks at the points where congestion-control algorithms differ. Every hook has a default, which
//! is standard Reno congestion control (RFC 5681): slow start, additive increase of one segment per
//! window, halving on loss, one segment after a timeout. A variant overrides only what it changes,
//! the way a Linux `tcp_congestion_ops` fills only some of its slots. The algorithms (one file each:
//! `reno`, `vegas`, `cubic`, `bbr`, `dctcp`) import this interface and nothing else of the sender;
//! the enum over them, [`super::dispatch::Cc`], is in `dispatch`, which no algorithm imports.

use aqm::Time;

/// The window a hook may change, in segments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
    /// Pacing rate in bytes per second that the algorithm sets (BBR); 0 lets the sender derive
    /// one from the window when `tcp.pacing` is on.
    pub pacing_rate: f64,
}

/// A delivery-rate sample (as Linux's `tcp_rate.c` takes one per ACK): `delivered` segments were
/// delivered over `interval` ns, measured from the segment this ACK acknowledges last. Only
/// computed for algorithms that want it ([`CcConfig::wants_rate_samples`]); `interval` is 0
/// when there is no sample.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateSample {
    pub delivered: u64,
    pub interval: Time,
    /// The connection's delivered count when that segment was sent (round counting).
    pub prior_delivered: u64,
    /// The connection's delivered count after this ACK.
    pub total_delivered: u64,
    /// The segment was sent while the application had nothing more to send.
    pub app_limited: bool,
}

/// The sender's loss-recovery state, as Linux names it (`icsk_ca_state`). The RFC 6675 and
/// NewReno recoveries know only `Open` and `Recovery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CaState {
    /// Nothing unusual.
    #[default]
    Open,
    /// SACKs or duplicate ACKs seen, no loss deemed yet.
    Disorder,
    /// Reducing the window after an ECN echo.
    Cwr,
    /// Fast recovery.
    Recovery,
    /// Recovering after a retransmission timeout.
    Loss,
}

/// What the sender knows when an ACK arrives.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AckInfo {
    pub now: Time,
    /// Segments this ACK credits for window growth (0 for a duplicate): 1 per ACK with ns-2's
    /// per-ACK counting (`byte_counting = false`, the `ns2` preset), or the segments it newly
    /// acknowledges with RFC 3465 byte counting (`byte_counting = true`, the `modern` preset).
    pub acked: u32,
    /// Segments outstanding before this ACK (`snd_max - snd_una`).
    pub flight: f64,
    /// Round-trip time measured on this ACK from the echoed send time of the segment that triggered
    /// it (a timestamp echo), if the ACK acknowledges new data.
    pub rtt: Option<Time>,
    /// The RFC 6298 smoothed RTT (ns), once there is one.
    pub srtt: Option<f64>,
    /// The cumulative ACK (next sequence number the receiver expects) and the highest sent + 1.
    pub snd_una: u32,
    pub snd_max: u32,
    /// Segments this ACK newly acknowledges cumulatively (whatever the counting of `acked`).
    pub newly: u32,
    /// The ACK carries ECN-Echo.
    pub ece: bool,
    /// The sender is in loss recovery.
    pub in_recovery: bool,
    /// The delivery-rate sample of this ACK ([`RateSample`]).
    pub rs: RateSample,
    /// Segments this ACK reports newly delivered, cumulatively or by SACK (Linux `acked_sacked`;
    /// `newly` without RACK-TLP recovery).
    pub delivered: u32,
    /// Segments this ACK's processing newly deemed lost (Linux `rs->losses`; RACK-TLP only).
    pub lost: u32,
    /// Segments in flight before and after the ACK (Linux `rs->prior_in_flight`,
    /// `tcp_packets_in_flight`; RACK-TLP only).
    pub prior_in_flight: f64,
    pub in_flight: f64,
    /// The recovery state after the ACK's loss processing.
    pub state: CaState,
    /// The sender runs Linux's recovery (RACK-TLP, `tcp.rack`): slow start grows by every segment
    /// acknowledged up to `ssthresh` (Linux `tcp_slow_start`), and an algorithm that sets its own
    /// window ([`CongestionControl::controls_window`]) does so in every state.
    pub linux: bool,
}

/// A congestion-control algorithm. Hooks run outside loss recovery unless stated.
pub trait CongestionControl {
    /// New data was acknowledged (not during loss recovery): grow the window.
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        reno_grow(w, a);
    }

    /// A duplicate ACK arrived before loss recovery started.
    fn on_dup_ack(&mut self, _w: &mut Window, _a: &AckInfo) {}

    /// Loss detected by duplicate ACKs (or an ECN echo): return the new `ssthresh`. The recovery
    /// algorithm then sets `cwnd` from it (e.g. `ssthresh + 3` for Reno's fast recovery).
    fn on_loss(&mut self, _w: &mut Window, a: &AckInfo) -> f64 {
        (a.flight / 2.0).max(2.0)
    }

    /// The retransmission timer expired with `flight` segments outstanding: return the new
    /// `ssthresh` (the core then sets `cwnd` to one segment).
    fn on_rto(&mut self, _w: &mut Window, flight: f64, _now: Time) -> f64 {
        (flight / 2.0).max(2.0)
    }

    /// An ECN-Echo asks for a reduction (at most once per window of data, not in loss
    /// recovery): return the new `ssthresh`; `cwnd` becomes at most that. Reno's answer is its
    /// loss response (RFC 3168 §6.1.2).
    fn on_ecn(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        self.on_loss(w, a)
    }

    /// Every ACK that acknowledges new data, in loss recovery too, before the other hooks (the
    /// place for per-ACK estimators: DCTCP's marked fraction, BBR's model and pacing rate).
    fn on_any_ack(&mut self, _w: &mut Window, _a: &AckInfo) {}

    /// Loss recovery ended (the core has set `cwnd = ssthresh`).
    fn on_recovery_exit(&mut self, _w: &mut Window, _now: Time) {}

    /// A retransmission timeout put the sender in the loss state (Linux `set_state(TCP_CA_Loss)`),
    /// every time, whether or not `on_rto` reduced `ssthresh` (RACK-TLP recovery only).
    fn on_enter_loss(&mut self, _w: &mut Window, _now: Time) {}

    /// The algorithm sets the window itself on every ACK, in recovery too (Linux's `cong_control`
    /// hook: BBR): RACK-TLP recovery then runs no PRR and no `on_ack` growth, and calls
    /// [`CongestionControl::on_any_ack`] after its loss processing, with the state it left.
    fn controls_window(&self) -> bool {
        false
    }

    /// The algorithm's own fine-grained retransmission timeout (Vegas), if it has one: the core
    /// then also starts fast retransmit on a duplicate ACK when the first unacknowledged segment
    /// has been out longer than this, and checks the same on the first two new ACKs afterwards
    /// (Brakmo & Peterson 1995 §3.1; ns-2's `vegas_expire`).
    fn fine_timeout(&self) -> Option<Time> {
        None
    }

    /// The core retransmitted by the fine-grained rule (fast retransmit started by it or by
    /// duplicate ACKs); `transmits` = how often that segment had been sent before.
    fn on_fine_retransmit(&mut self, _transmits: u32) {}
}

/// RFC 5681 growth for `acked` credited segments (see [`AckInfo::acked`]): below `ssthresh`, slow
/// start adds `min(acked, 2)` segments (RFC 3465's limit L = 2; with per-ACK counting that is one
/// segment per ACK, as ns-2 does); at or above it, congestion avoidance adds `acked / cwnd`
/// (about one segment per window of data). The ACK that crosses `ssthresh` counts as slow start
/// (RFC 5681 §3.1 allows either).
#[inline]
pub fn reno_increase(w: &mut Window, acked: u32) {
    if acked == 0 {
        return;
    }
    if w.cwnd < w.ssthresh {
        w.cwnd += acked.min(2) as f64;
    } else {
        w.cwnd += acked as f64 / w.cwnd;
    }
}

/// Linux's slow start (`tcp_slow_start`): every acknowledged segment adds one, up to
/// `ssthresh`; returns the segments left over for congestion avoidance. `divisor` slows it down
/// (HyStart++'s Conservative Slow Start, 4; else 1).
#[inline]
pub fn linux_slow_start(w: &mut Window, acked: u32, divisor: f64) -> u32 {
    let room = (w.ssthresh - w.cwnd).max(0.0);
    let grow = (acked as f64 / divisor).min(room);
    w.cwnd += grow;
    acked - ((grow * divisor).ceil() as u32).min(acked)
}

/// Slow start then congestion avoidance for an ACK: RFC 5681 ([`reno_increase`]), or Linux's
/// with Reno's additive increase for what slow start leaves (`tcp_reno_cong_avoid`).
#[inline(always)]
pub fn reno_grow(w: &mut Window, a: &AckInfo) {
    if a.linux {
        return linux_reno_grow(w, a);
    }
    reno_increase(w, a.acked);
}

/// [`reno_grow`] with RACK-TLP recovery (kept out of line: the ns-2 senders' per-ACK growth is
/// the few instructions of `reno_increase`).
#[inline(never)]
fn linux_reno_grow(w: &mut Window, a: &AckInfo) {
    let mut acked = a.acked;
    if w.cwnd < w.ssthresh {
        acked = linux_slow_start(w, acked, 1.0);
    }
    if acked > 0 && w.cwnd >= w.ssthresh {
        w.cwnd += acked as f64 / w.cwnd;
    }
}
