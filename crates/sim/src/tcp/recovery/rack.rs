//! Loss detection and recovery as Linux runs them with SACK (`tcp.rack`, the `modern` preset):
//! RACK-TLP ([`crate::tcp::rack`], RFC 8985) decides what is lost, PRR ([`crate::tcp::prr`],
//! RFC 6937) how much is sent while the window comes down, and Linux's congestion-state machine
//! (`tcp_fastretrans_alert` and `tcp_enter_loss` in net/ipv4/tcp_input.c) ties them together.
//! Every outstanding segment has a record ([`crate::tcp::board`]).
//!
//! Per ACK (Linux `tcp_ack`): the SACK blocks and then the cumulative ACK mark segments delivered,
//! each advancing RACK and the delivery-rate sample (`tcp_rate.c`) and giving RTT samples (from
//! segments sent once; else from the echoed send time, as the timestamp option does); then, if the
//! ACK is "dubious" (it SACKs, echoes ECN, acknowledges nothing, or the sender is not in the open
//! state), the state machine:
//!
//! * **Open / Disorder** — RACK looks for lost segments (when a delivery advanced it); one found
//!   starts fast recovery (`ssthresh` from congestion control, `high_seq = snd_max`); an ECN echo
//!   starts a window reduction without retransmission (CWR).
//! * **Recovery / CWR** — the window follows PRR; RACK goes on marking losses, lost
//!   retransmissions included; it ends when the cumulative ACK passes `high_seq`
//!   (`cwnd = ssthresh`).
//! * **Loss** (after a timeout) — the segments not delivered and older than RACK's RTT are marked
//!   lost, SACKed ones are kept (no go-back-N: RFC 2018 §8's reneging is not assumed), the window
//!   is what is in flight plus one and grows by slow start; it ends at `high_seq` too.
//!
//! Then congestion control grows the window outside the reduction states; an algorithm that sets
//! the window itself (BBR, Linux's `cong_control`) does so in every state instead. Sending takes
//! the lost segments first, in order, while `in_flight < cwnd` (`tcp_xmit_retransmit_queue`),
//! then new data. There is one transmission timer, as Linux's: the RTO, RACK's reordering timer
//! or the tail loss probe, whichever was set last (`icsk_pending`). The RTO is Linux's
//! (`tcp.rto_estimator`), rearmed from the head's last transmission when a probe or reordering
//! timer gives way to it (`tcp_rearm_rto`).
//!
//! Not modelled: undo of spurious reductions (`tcp_try_undo_*`, which needs D-SACK or the
//! timestamp echo's comparison), F-RTO (RFC 5682), SACK reneging, TSO.

use crate::packet::F_ECE;
use crate::tcp::board::{Board, Seg, APP_LIMITED, EVER_RETRANS, LOST, RATED, RETRANS, SACKED};
use crate::tcp::cc::{AckInfo, CaState, CongestionControl, RateSample};
use crate::tcp::meter::{Cx, TcpMeter};
use crate::tcp::minmax::WindowedMin;
use crate::tcp::prr::Prr;
use crate::tcp::rack::{pto, sent_after, Rack, TIMEOUT_MIN};
use crate::tcp::rto::LinuxRtt;
use crate::tcp::sender::Ack;
use crate::tcp::sender_core::SenderCore;
use crate::tcp::RtoEstimator;
use aqm::Time;

/// What the transmission timer is set for (Linux `icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    Rto,
    /// RACK's reordering timer (RFC 8985 §6.3).
    Reo,
    /// The tail loss probe (RFC 8985 §7).
    Probe,
}

/// The delivery-rate state of the connection (Linux `tcp_rate.c`'s fields of `tcp_sock`).
#[derive(Debug, Clone, Default)]
struct Rate {
    /// Segments delivered (cumulatively or SACKed), and when the last of them was.
    delivered: u64,
    delivered_time: Time,
    /// The send time of the most recently delivered segment (`first_tx_mstamp`).
    first_sent: Time,
    /// Samples are application-limited until `delivered` passes this (0: not).
    app_limited_until: u64,
}

/// What the SACK blocks and the cumulative ACK of one ACK delivered.
#[derive(Debug, Clone, Copy, Default)]
struct Delivery {
    /// Segments newly delivered (Linux `acked_sacked`).
    count: u32,
    una_advanced: bool,
    sacked: bool,
    /// A segment delivered had been retransmitted (no RTT sample from the cumulative ACK).
    retrans_acked: bool,
    /// Send times of the first and last segment sent once that was cumulatively acknowledged,
    /// and of those SACKed (0: none).
    first_ackt: Time,
    last_ackt: Time,
    first_sackt: Time,
    last_sackt: Time,
    /// The lowest segment sent once that was delivered below the highest SACKed one (reordering).
    reord: u32,
    /// The rate sample's source: the delivered segment sent most recently.
    rs: Option<(u32, Seg)>,
}

/// RACK-TLP recovery: the per-segment records and the state of Linux's machine.
#[derive(Debug, Clone)]
pub struct RackRecovery {
    b: Board,
    rack: Rack,
    state: CaState,
    /// `snd_max` when recovery (or the loss state, or CWR) began: it ends when the cumulative ACK
    /// passes it.
    high_seq: u32,
    prr: Prr,
    /// The tail loss probe in flight: `snd_max` when it was sent (0: none), and whether it was a
    /// retransmission.
    tlp_high_seq: u32,
    tlp_retrans: bool,
    timer: Timer,
    /// Consecutive timeouts without an ACK advancing `snd_una` (Linux `icsk_retransmits`).
    retransmits: u32,
    /// The minimum RTT over `min_rtt_window` (Linux `tcp_min_rtt`).
    min_rtt: WindowedMin,
    lrtt: LinuxRtt,
    rate: Rate,
    /// No segment below this is lost and not yet retransmitted (a scan's start).
    lost_hint: u32,
}

impl RackRecovery {
    pub fn new() -> Self {
        RackRecovery {
            b: Board::new(),
            rack: Rack::new(),
            state: CaState::Open,
            high_seq: 0,
            prr: Prr::default(),
            tlp_high_seq: 0,
            tlp_retrans: false,
            timer: Timer::Rto,
            retransmits: 0,
            min_rtt: WindowedMin::default(),
            lrtt: LinuxRtt::default(),
            rate: Rate::default(),
            lost_hint: 0,
        }
    }

    /// The recovery state (for tests and traces).
    pub fn state(&self) -> CaState {
        self.state
    }

    /// The connection is over: give back the records.
    pub fn release(&mut self) {
        self.b.release();
    }

    fn srtt(c: &SenderCore) -> Time {
        c.rto.srtt().map_or(0, |s| s as Time)
    }

    // ---------------------------------------------------------------------------------- sending

    /// Segment `seq` (new data, or again) leaves at `now`: its record, with the rate fields
    /// (`tcp_rate_skb_sent`).
    fn record(&mut self, now: Time, app_limited: bool) -> Seg {
        if self.b.packets_out() == 0 {
            self.rate.first_sent = now;
            self.rate.delivered_time = now;
        }
        Seg {
            xmit: now,
            delivered: self.rate.delivered,
            delivered_time: self.rate.delivered_time,
            first_sent: self.rate.first_sent,
            flags: if app_limited { APP_LIMITED } else { 0 },
        }
    }

    /// Retransmit `seq` (`tcp_retransmit_skb`); the head's retransmission rearms the RTO unless
    /// the reordering timer is pending (`tcp_xmit_retransmit_queue`).
    fn retransmit<M: TcpMeter>(&mut self, c: &mut SenderCore, seq: u32, cx: &mut Cx<'_, M>) {
        let rec = self.record(cx.now, self.rate.app_limited_until > 0);
        c.timing = false; // Karn, for the RFC 6298 estimator
        c.send_seg(seq, cx);
        self.b.retransmitted(seq, rec);
        if self.in_reduction() {
            self.prr.sent(1);
        }
        if seq == c.snd_una && self.timer != Timer::Reo {
            self.set_timer(c, Timer::Rto, cx.now.saturating_add(c.rto.get()));
        }
    }

    /// Send what the window allows (`tcp_xmit_retransmit_queue`, then `tcp_write_xmit`): the
    /// lost segments not yet retransmitted, in order, while fewer than `cwnd` are in flight; then
    /// new data.
    pub fn send<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        let cwnd = c.window();
        if self.b.lost_unsent() > 0 {
            let mut seq = self.lost_hint.max(self.b.una);
            while seq < self.b.nxt && self.b.in_flight() < cwnd {
                let f = self.b.get(seq).flags;
                if f & LOST != 0 && f & RETRANS == 0 {
                    self.retransmit(c, seq, cx);
                }
                seq += 1;
            }
            self.lost_hint = seq;
        }
        let quota = cwnd.saturating_sub(self.b.in_flight());
        let end = c.limit.min(c.snd_una.saturating_add(c.cfg.max_window)).min(c.snd_max.saturating_add(quota));
        self.send_new(c, end, cx);
    }

    /// New segments up to `end` (paced if the sender paces), recorded; a loss probe is scheduled
    /// after new data (`tcp_write_xmit`).
    fn send_new<M: TcpMeter>(&mut self, c: &mut SenderCore, end: u32, cx: &mut Cx<'_, M>) {
        let (before, prior_out) = (c.snd_max, self.b.packets_out());
        if end > before {
            c.send_upto(end, cx);
        }
        let sent = c.snd_max - before;
        for _ in 0..sent {
            let rec = self.record(cx.now, false);
            self.b.push(rec);
        }
        // the application has nothing more: what is in flight is application-limited
        if c.snd_max >= c.limit {
            self.rate.app_limited_until = (self.rate.delivered + self.b.in_flight() as u64).max(1);
        }
        if sent > 0 {
            if self.in_reduction() {
                self.prr.sent(sent);
            }
            // tcp_event_new_data_sent, then a probe for the new tail
            if prior_out == 0 {
                self.timer = Timer::Rto;
                self.rearm_rto(c, cx.now);
            } else if self.timer == Timer::Probe {
                self.rearm_rto(c, cx.now);
            }
            self.schedule_probe(c, cx.now, false);
        }
    }

    // ----------------------------------------------------------------------------------- timers

    fn set_timer(&mut self, c: &mut SenderCore, t: Timer, at: Time) {
        self.timer = t;
        c.rto_deadline = at;
    }

    /// `tcp_rearm_rto`: the RTO from now, or, when a probe or reordering timer gives way to it,
    /// from the head's last transmission; off when nothing is outstanding.
    fn rearm_rto(&mut self, c: &mut SenderCore, now: Time) {
        if self.b.packets_out() == 0 {
            return self.set_timer(c, Timer::Rto, 0);
        }
        let rto = c.rto.get();
        let at = if self.timer == Timer::Rto {
            now.saturating_add(rto)
        } else {
            self.b.get(self.b.una).xmit.saturating_add(rto).max(now + 1)
        };
        self.set_timer(c, Timer::Rto, at);
    }

    /// `tcp_schedule_loss_probe`: arm the probe instead of the RTO when a tail loss could go
    /// unnoticed (SACK on, something outstanding, nothing being recovered). `advancing`: the RTO
    /// would be restarted now (an ACK); else it stays where it is and bounds the probe.
    fn schedule_probe(&mut self, c: &mut SenderCore, now: Time, advancing: bool) -> bool {
        let open = (self.state == CaState::Open && self.b.sacked + self.b.lost + self.b.retrans == 0)
            || self.state == CaState::Cwr;
        if !c.cfg.tlp || self.b.packets_out() == 0 || !open {
            return false;
        }
        let rto = c.rto.get();
        let until_rto =
            if advancing { rto } else { self.b.get(self.b.una).xmit.saturating_add(rto).saturating_sub(now) };
        let t = pto(c.rto.srtt(), self.b.packets_out(), until_rto);
        self.set_timer(c, Timer::Probe, now.saturating_add(t.max(1)));
        true
    }

    /// The transmission timer fired at `cx.now`.
    pub fn on_timer<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        c.rto_deadline = 0;
        match self.timer {
            Timer::Rto => self.on_rto(c, cx),
            Timer::Reo => self.on_reo_timeout(c, cx),
            Timer::Probe => self.on_probe(c, cx),
        }
    }

    /// `tcp_send_loss_probe`: new data if the receiver's window and the application allow
    /// (whatever cwnd says), else the last segment again; one probe per episode.
    fn on_probe<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        if self.tlp_high_seq == 0 && self.b.packets_out() > 0 {
            self.tlp_retrans = false;
            let end = c.limit.min(c.snd_una.saturating_add(c.cfg.max_window));
            if c.snd_max < end {
                let rec = self.record(now, false);
                c.send_seg(c.snd_max, cx);
                c.snd_nxt = c.snd_max;
                self.b.push(rec);
            } else {
                let last = self.b.nxt - 1;
                let rec = self.record(now, self.rate.app_limited_until > 0);
                c.timing = false;
                c.send_seg(last, cx);
                self.b.probed(last, rec);
                self.tlp_retrans = true;
            }
            self.tlp_high_seq = c.snd_max;
            self.timer = Timer::Rto; // the RTO restarts from now
        }
        self.rearm_rto(c, now);
    }

    /// `tcp_rack_reo_timeout`: the segments RACK was waiting for are due; lost ones start (or
    /// continue) recovery and are retransmitted.
    fn on_reo_timeout<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        let before = self.b.in_flight();
        let reo = self.reo_wnd(c);
        let (lost, _) = self.rack.detect_loss(&mut self.b, now, reo);
        self.note_lost(lost);
        if self.b.in_flight() != before {
            if self.state != CaState::Recovery {
                self.enter_recovery(c, None, cx);
                if !c.cc.controls_window() && c.cfg.prr {
                    self.prr_window(c, 1, lost, false);
                }
            }
            self.send(c, cx);
        }
        if self.timer != Timer::Rto || c.rto_deadline == 0 {
            self.rearm_rto(c, now);
        }
    }

    /// The retransmission timer expired (`tcp_retransmit_timer`, `tcp_enter_loss`).
    fn on_rto<M: TcpMeter>(&mut self, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        if self.b.packets_out() == 0 {
            return;
        }
        cx.meter.timeout(now);
        self.tlp_high_seq = 0;
        // segments not delivered and older than RACK's RTT are lost (the head always)
        for seq in self.b.una..self.b.nxt {
            let s = *self.b.get(seq);
            if s.has(SACKED) || (seq != self.b.una && s.xmit.saturating_add(self.rack.rtt) > now) {
                continue;
            }
            self.b.mark_lost(seq);
        }
        self.lost_hint = self.b.una;
        // ssthresh falls only if not already reduced for this window
        let first = self.state <= CaState::Disorder
            || self.high_seq <= c.snd_una
            || (self.state == CaState::Loss && self.retransmits == 0);
        if first {
            let cwnd = c.cwnd; // Linux's ssthresh hooks start from cwnd
            c.ssthresh = c.hook(|cc, w| cc.on_rto(w, cwnd, now));
        }
        c.cwnd = (self.b.in_flight() + 1) as f64;
        self.state = CaState::Loss;
        self.high_seq = c.snd_max;
        c.ecn_reduced();
        c.hook(|cc, w| cc.on_enter_loss(w, now));
        let head = self.b.una;
        if !self.b.get(head).has(SACKED) {
            self.retransmit(c, head, cx);
        }
        self.retransmits += 1;
        c.rto.back_off(&c.cfg);
        self.set_timer(c, Timer::Rto, now.saturating_add(c.rto.get()));
    }

    // ------------------------------------------------------------------------------ the machine

    #[inline]
    fn in_reduction(&self) -> bool {
        matches!(self.state, CaState::Cwr | CaState::Recovery)
    }

    fn reo_wnd(&self, c: &SenderCore) -> Time {
        let in_recovery = self.state >= CaState::Recovery;
        let dupthresh = self.b.sacked >= c.cfg.dupack_threshold;
        self.rack.reo_wnd(in_recovery, dupthresh, self.min_rtt.get(), Self::srtt(c))
    }

    fn note_lost(&mut self, lost: u32) {
        if lost > 0 {
            self.lost_hint = self.b.una;
        }
    }

    /// `tcp_init_cwnd_reduction`: a reduction to `ssthresh` begins (recovery or CWR).
    fn init_reduction(&mut self, c: &mut SenderCore, ssthresh: f64) {
        self.high_seq = c.snd_max;
        self.tlp_high_seq = 0;
        self.prr = Prr::start(c.cwnd as u32);
        c.ssthresh = ssthresh;
        c.ecn_reduced();
        if !c.cfg.prr && !c.cc.controls_window() {
            c.cwnd = c.ssthresh.max(1.0); // RFC 6675 §5 step (4), without PRR
        }
    }

    /// `tcp_enter_recovery`: a loss starts fast recovery (within a CWR reduction, it goes on).
    fn enter_recovery<M: TcpMeter>(&mut self, c: &mut SenderCore, info: Option<&AckInfo>, cx: &mut Cx<'_, M>) {
        cx.meter.fast_retransmit();
        if !self.in_reduction() {
            let mut info = info.copied().unwrap_or(AckInfo {
                now: cx.now,
                snd_una: c.snd_una,
                snd_max: c.snd_max,
                srtt: c.rto.srtt(),
                linux: true,
                ..AckInfo::default()
            });
            // Linux's ssthresh hooks start from cwnd (the window when the loss was found)
            info.flight = c.cwnd;
            let ssthresh = c.hook(|cc, w| cc.on_loss(w, &info));
            self.init_reduction(c, ssthresh);
        }
        self.state = CaState::Recovery;
    }

    /// `tcp_end_cwnd_reduction`: back to `ssthresh` (unless the algorithm sets its own window).
    fn end_reduction(&mut self, c: &mut SenderCore, now: Time) {
        if !c.cc.controls_window() {
            c.cwnd = c.ssthresh.max(1.0);
            c.hook(|cc, w| cc.on_recovery_exit(w, now));
        }
    }

    /// `tcp_try_keep_open`: Disorder while anything is SACKed, lost or retransmitted.
    fn keep_open(&mut self, c: &SenderCore) {
        let s = if self.b.sacked + self.b.lost + self.b.retrans > 0 { CaState::Disorder } else { CaState::Open };
        if self.state != s {
            self.state = s;
            self.high_seq = c.snd_max;
        }
    }

    /// PRR (`tcp_cwnd_reduction`): the window for this ACK.
    fn prr_window(&mut self, c: &mut SenderCore, delivered: u32, lost: u32, una_advanced: bool) {
        let in_flight = self.b.in_flight();
        let ssthresh = c.ssthresh.max(1.0) as u32;
        if let Some(n) = self.prr.on_ack(delivered, in_flight, ssthresh, una_advanced && lost == 0) {
            c.cwnd = (in_flight + n) as f64;
        }
    }

    // --------------------------------------------------------------------------------- the ACKs

    /// Mark what the ACK's SACK blocks and cumulative ACK deliver.
    fn deliver(&mut self, c: &mut SenderCore, a: &Ack<'_>, now: Time) -> Delivery {
        let mut d = Delivery { reord: u32::MAX, ..Delivery::default() };
        let fack = self.b.high_sacked;
        let min_rtt = self.min_rtt.get();
        let ack = a.seq.max(self.b.una);
        for &(l, r) in a.blocks {
            for seq in l.max(ack)..r.min(self.b.nxt) {
                if self.b.get(seq).has(SACKED) {
                    continue;
                }
                let s = self.b.sack(seq);
                d.sacked = true;
                self.delivered_one(seq, &s, now, min_rtt, fack, &mut d);
                if !s.has(EVER_RETRANS) {
                    d.first_sackt = if d.first_sackt == 0 { s.xmit } else { d.first_sackt.min(s.xmit) };
                    d.last_sackt = d.last_sackt.max(s.xmit);
                }
                self.b.get_mut(seq).flags |= RATED;
            }
        }
        while self.b.una < ack {
            let seq = self.b.una;
            let s = self.b.ack_head();
            d.una_advanced = true;
            if s.has(EVER_RETRANS) {
                d.retrans_acked = true;
            } else if !s.has(SACKED) {
                if d.first_ackt == 0 {
                    d.first_ackt = s.xmit;
                }
                d.last_ackt = s.xmit;
            }
            if !s.has(SACKED) {
                self.delivered_one(seq, &s, now, min_rtt, fack, &mut d);
            }
        }
        c.snd_una = self.b.una;
        c.snd_nxt = c.snd_nxt.max(c.snd_una);
        d
    }

    /// One segment newly delivered: RACK, the delivered count, reordering and the rate sample's
    /// source (`tcp_rate_skb_delivered`: the segment sent most recently).
    fn delivered_one(&mut self, seq: u32, s: &Seg, now: Time, min_rtt: Time, fack: u32, d: &mut Delivery) {
        d.count += 1;
        self.rate.delivered += 1;
        self.rack.advance(seq, s, now, min_rtt);
        if !s.has(EVER_RETRANS) && seq < fack {
            d.reord = d.reord.min(seq);
        }
        if !s.has(RATED) {
            let newer = match d.rs {
                None => true,
                Some((q, r)) => sent_after(s.xmit, r.xmit, seq + 1, q + 1),
            };
            if newer {
                d.rs = Some((seq, *s));
            }
        }
    }

    /// `tcp_rate_gen`: the delivery-rate sample of this ACK.
    fn rate_sample(&mut self, d: &Delivery, now: Time) -> RateSample {
        let r = &mut self.rate;
        if r.app_limited_until > 0 && r.delivered > r.app_limited_until {
            r.app_limited_until = 0;
        }
        if d.count > 0 {
            r.delivered_time = now;
        }
        let Some((_, s)) = d.rs else { return RateSample { total_delivered: r.delivered, ..RateSample::default() } };
        let send = s.xmit.saturating_sub(s.first_sent);
        let ack = now.saturating_sub(s.delivered_time);
        r.first_sent = s.xmit;
        let interval = send.max(ack);
        // an interval shorter than the minimum RTT measured a burst: no sample (Linux)
        let min_rtt = self.min_rtt.get();
        RateSample {
            delivered: r.delivered - s.delivered,
            interval: if min_rtt != Time::MAX && interval < min_rtt { 0 } else { interval },
            prior_delivered: s.delivered,
            total_delivered: r.delivered,
            app_limited: s.has(APP_LIMITED),
        }
    }

    /// RTT samples (`tcp_ack_update_rtt`): from the oldest segment sent once that the cumulative
    /// ACK covers, else from a SACKed one, else from the echoed send time; the RACK-side
    /// estimator `min_rtt` takes the newest. Returns the congestion-control RTT (`ca_rtt`).
    fn rtt_samples<M: TcpMeter>(
        &mut self,
        c: &mut SenderCore,
        a: &Ack<'_>,
        d: &Delivery,
        cx: &mut Cx<'_, M>,
    ) -> Option<Time> {
        let now = cx.now;
        let (mut seq_rtt, mut ca_rtt) = (None, None);
        if d.first_ackt != 0 && !d.retrans_acked {
            seq_rtt = Some(now.saturating_sub(d.first_ackt));
            ca_rtt = Some(now.saturating_sub(d.last_ackt));
        }
        if d.first_sackt != 0 {
            seq_rtt = seq_rtt.or(Some(now.saturating_sub(d.first_sackt)));
            ca_rtt = Some(now.saturating_sub(d.last_sackt));
        }
        if seq_rtt.is_none() && d.una_advanced && a.echo > 0 && a.echo <= now {
            let r = now - a.echo; // the timestamp option's echo
            (seq_rtt, ca_rtt) = (Some(r), Some(r));
        }
        let m = seq_rtt?;
        self.min_rtt.update(now, ca_rtt.unwrap_or(m).max(1), c.cfg.min_rtt_window);
        if c.cfg.rto_estimator == RtoEstimator::Linux {
            let (srtt, var) = self.lrtt.sample(m as f64, c.snd_una, c.snd_max, c.cfg.min_rto as f64);
            c.rto.set_linux(srtt, var, &c.cfg);
            cx.meter.rtt_sample(m as f64);
        } else {
            c.time_ack(c.snd_una, now, cx.meter);
        }
        ca_rtt
    }

    /// `tcp_process_tlp_ack`: the ACK of a loss probe. If the probe was a retransmission and data
    /// beyond it is acknowledged, it repaired a loss: reduce the window as for one.
    fn tlp_ack(&mut self, c: &mut SenderCore, info: &AckInfo, d: &Delivery) {
        if c.snd_una < self.tlp_high_seq {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = 0;
        } else if c.snd_una > self.tlp_high_seq {
            let info = AckInfo { flight: c.cwnd, ..*info };
            let ssthresh = c.hook(|cc, w| cc.on_loss(w, &info));
            self.init_reduction(c, ssthresh);
            self.end_reduction(c, info.now);
            self.keep_open(c);
        } else if !d.una_advanced && !d.sacked {
            self.tlp_high_seq = 0; // a pure duplicate: the original and the probe both arrived
        }
    }

    /// An ACK arrived (Linux `tcp_ack`).
    pub fn on_ack<M: TcpMeter>(&mut self, c: &mut SenderCore, a: &Ack<'_>, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        if a.seq > c.snd_max {
            return;
        }
        let flight_before = c.flight();
        let prior_in_flight = self.b.in_flight();
        let prior_una = c.snd_una;
        let d = self.deliver(c, a, now);
        if d.una_advanced {
            self.retransmits = 0;
        }
        let rs = self.rate_sample(&d, now);
        let rtt = self.rtt_samples(c, a, &d, cx);
        if d.reord != u32::MAX {
            self.rack.reord_seen = true;
        }
        let ece = c.cfg.ecn && a.flags & F_ECE != 0;
        let window_cc = c.cc.controls_window();
        let mut info = AckInfo {
            now,
            acked: d.count,
            flight: flight_before,
            rtt,
            srtt: c.rto.srtt(),
            snd_una: c.snd_una,
            snd_max: c.snd_max,
            newly: c.snd_una - prior_una,
            ece,
            in_recovery: self.state >= CaState::Recovery,
            rs,
            delivered: d.count,
            lost: 0,
            prior_in_flight: prior_in_flight as f64,
            in_flight: 0.0,
            state: self.state,
            linux: true,
        };
        if d.count > 0 && !window_cc {
            // per-ACK estimators first (DCTCP's marked fraction, HyStart), as Linux's
            // in_ack_event and pkts_acked come before the state machine
            c.hook(|cc, w| cc.on_any_ack(w, &info));
        }
        if self.tlp_high_seq != 0 {
            self.tlp_ack(c, &info, &d);
        }
        // the timer is to be set (a probe or the RTO) when the cumulative ACK moved, or when a
        // SACKed segment left before the head's last transmission (`FLAG_SET_XMIT_TIMER`) ...
        let mut set_timer = d.una_advanced;
        if !set_timer && d.first_sackt != 0 && c.snd_una < c.snd_max {
            set_timer = d.first_sackt < self.b.get(c.snd_una).xmit;
        }
        let was = self.state;
        // ... unless RACK set its reordering timer
        let lost = self.alert(c, &info, &d, ece, &mut set_timer, cx);
        if was == CaState::Loss && self.state != CaState::Loss {
            cx.meter.rto_recovered(now);
        }
        if set_timer && !self.schedule_probe(c, now, true) {
            self.rearm_rto(c, now);
        }
        if self.b.packets_out() == 0 {
            self.set_timer(c, Timer::Rto, 0);
        }
        // congestion control (`tcp_cong_control`)
        info.lost = lost;
        info.in_flight = self.b.in_flight() as f64;
        info.state = self.state;
        info.in_recovery = self.state >= CaState::Recovery;
        if window_cc {
            c.hook(|cc, w| cc.on_any_ack(w, &info));
        } else if self.in_reduction() {
            if c.cfg.prr {
                self.prr_window(c, d.count, lost, d.una_advanced);
            }
        } else if d.una_advanced {
            c.hook(|cc, w| cc.on_ack(w, &info));
        }
        c.default_pacing_rate();
        if c.snd_una >= c.limit && c.completed_at().is_none() {
            c.complete(now);
            self.set_timer(c, Timer::Rto, 0);
        }
        self.send(c, cx);
    }

    /// `tcp_fastretrans_alert` for a "dubious" ACK: the state machine. Returns the segments
    /// newly deemed lost; clears `set_timer` when RACK set its reordering timer.
    fn alert<M: TcpMeter>(
        &mut self,
        c: &mut SenderCore,
        info: &AckInfo,
        d: &Delivery,
        ece: bool,
        set_timer: &mut bool,
        cx: &mut Cx<'_, M>,
    ) -> u32 {
        let now = cx.now;
        let dubious = !d.una_advanced || d.sacked || ece || self.state != CaState::Open;
        if !dubious {
            return 0;
        }
        // D. leave a state whose data is all acknowledged
        if self.state != CaState::Open && c.snd_una >= self.high_seq {
            match self.state {
                CaState::Cwr if c.snd_una != self.high_seq => {
                    self.end_reduction(c, now);
                    self.state = CaState::Open;
                }
                CaState::Recovery => {
                    self.rack.recovery_done();
                    self.state = CaState::Open;
                    self.end_reduction(c, now);
                }
                CaState::Loss => {
                    self.rack.recovery_done();
                    self.state = CaState::Open;
                }
                _ => {}
            }
        }
        // E. find losses
        let mut lost = 0;
        let mut lost_retrans = false;
        if self.rack.advanced {
            let retrans_before = self.b.retrans;
            let reo = self.reo_wnd(c);
            let (n, wait) = self.rack.detect_loss(&mut self.b, now, reo);
            lost = n;
            self.note_lost(n);
            lost_retrans = self.b.retrans < retrans_before;
            if wait > 0 {
                // RACK's reordering timer (tcp_rack_mark_lost), no later than an RTO from now
                let at = now.saturating_add((wait + TIMEOUT_MIN).min(c.rto.get()));
                self.set_timer(c, Timer::Reo, at);
                *set_timer = false;
            }
        }
        match self.state {
            CaState::Recovery => {}
            CaState::Loss if !lost_retrans => {}
            _ => {
                if self.b.lost == 0 {
                    // tcp_try_to_open
                    if ece && self.state < CaState::Cwr {
                        self.enter_cwr(c, info, cx);
                    }
                    if self.state != CaState::Cwr {
                        self.keep_open(c);
                    }
                    return lost;
                }
                // a loss (in the loss state: a lost retransmission) starts fast recovery
                self.enter_recovery(c, Some(info), cx);
            }
        }
        lost
    }

    /// `tcp_enter_cwr`: an ECN echo starts a reduction, without retransmission (RFC 3168 §6.1.2).
    fn enter_cwr<M: TcpMeter>(&mut self, c: &mut SenderCore, info: &AckInfo, cx: &mut Cx<'_, M>) {
        cx.meter.ecn_reduction();
        let ssthresh = c.hook(|cc, w| cc.on_ecn(w, info));
        self.init_reduction(c, ssthresh);
        if !c.cfg.prr && !c.cc.controls_window() {
            c.cwnd = c.cwnd.min(c.ssthresh);
        }
        self.state = CaState::Cwr;
    }
}

impl Default for RackRecovery {
    fn default() -> Self {
        RackRecovery::new()
    }
}

#[cfg(test)]
mod tests {
    use crate::measure::FlowCounters;
    use crate::packet::{Packet, F_RETX};
    use crate::tcp::cc::CaState;
    use crate::tcp::meter::Cx;
    use crate::tcp::recovery::dispatch::AnyRecovery;
    use crate::tcp::sender::{Ack, TcpSender};
    use crate::tcp::{TcpConfig, TcpReceiver};
    use aqm::Time;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    const MS: Time = 1_000_000;

    /// What reaches whom: a data segment the receiver, an ACK the sender, or the sender's timer.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    enum Ev {
        Data(usize),
        Ack(usize),
        Timer,
    }

    /// A sender and a receiver over a path with a bottleneck of one segment per `gap` and a fixed
    /// one-way delay; a drop rule `drop(seq, nth)` loses the `nth` transmission (1: the first) of
    /// segment `seq`.
    struct Path {
        tx: TcpSender,
        rx: TcpReceiver,
        cfg: TcpConfig,
        ctr: FlowCounters,
        now: Time,
        q: BinaryHeap<Reverse<(Time, u64, Ev)>>,
        n: u64,
        link_free: Time,
        delay: Time,
        gap: Time,
        pkts: Vec<Packet>,
        sent: Vec<u32>,
        /// Every data transmission: (time, seq, retransmission).
        log: Vec<(Time, u32, bool)>,
        timer_at: Time,
        /// The sender's recovery state after each event.
        states: Vec<CaState>,
        /// When each ACK reached the sender.
        ack_times: Vec<Time>,
    }

    impl Path {
        fn new(cfg: TcpConfig, limit: u32) -> Self {
            Path {
                tx: TcpSender::new(cfg, limit),
                rx: TcpReceiver::new(&cfg, 0),
                cfg,
                ctr: FlowCounters::default(),
                now: 0,
                q: BinaryHeap::new(),
                n: 0,
                link_free: 0,
                delay: 20 * MS,
                gap: MS,
                pkts: Vec::new(),
                sent: Vec::new(),
                log: Vec::new(),
                timer_at: 0,
                states: Vec::new(),
                ack_times: Vec::new(),
            }
        }

        fn push(&mut self, at: Time, e: Ev) {
            self.n += 1;
            self.q.push(Reverse((at, self.n, e)));
        }

        /// Put what the sender emitted on the path, and its timer in the queue.
        fn emit(&mut self, out: &mut Vec<Packet>, drop: &mut impl FnMut(u32, u32) -> bool) {
            for p in out.drain(..) {
                let seq = p.seq as usize;
                if self.sent.len() <= seq {
                    self.sent.resize(seq + 1, 0);
                }
                self.sent[seq] += 1;
                self.log.push((self.now, p.seq, p.flags & F_RETX != 0));
                self.link_free = self.link_free.max(self.now) + self.gap;
                if !drop(p.seq, self.sent[seq]) {
                    self.pkts.push(p);
                    let at = self.link_free + self.delay;
                    self.push(at, Ev::Data(self.pkts.len() - 1));
                }
            }
            let t = self.tx.timer_deadline();
            if t != 0 && t != self.timer_at {
                self.timer_at = t;
                self.push(t, Ev::Timer);
            }
            if let AnyRecovery::Rack(r) = self.tx.recovery() {
                self.states.push(r.state());
            }
        }

        /// Run until `until` or the transfer completes.
        fn run(&mut self, until: Time, mut drop: impl FnMut(u32, u32) -> bool) {
            let mut out = Vec::new();
            self.tx.start(&mut Cx::new(0, &mut out, &mut self.ctr));
            self.emit(&mut out, &mut drop);
            while let Some(Reverse((t, _, e))) = self.q.pop() {
                if t > until || self.tx.completed_at().is_some() {
                    break;
                }
                self.now = t;
                match e {
                    Ev::Data(i) => {
                        let p = self.pkts[i];
                        if self.rx.on_data(&p, t, &mut self.ctr, &self.cfg) {
                            let a = self.rx.ack(&self.cfg);
                            self.pkts.push(a);
                            self.push(t + self.delay, Ev::Ack(self.pkts.len() - 1));
                        }
                    }
                    Ev::Ack(i) => {
                        let a = self.pkts[i];
                        let blocks = self.rx.sack_blocks(a.aux);
                        let blocks = blocks.as_ref().map_or(&[][..], |b| b.as_slice());
                        let ack = Ack { seq: a.seq, flags: a.flags, echo: a.sent, blocks };
                        self.ack_times.push(t);
                        self.tx.on_ack(&ack, &mut Cx::new(t, &mut out, &mut self.ctr));
                    }
                    Ev::Timer => {
                        if self.tx.timer_deadline() != t {
                            continue; // superseded
                        }
                        self.timer_at = 0;
                        self.tx.on_timer(&mut Cx::new(t, &mut out, &mut self.ctr));
                    }
                }
                self.emit(&mut out, &mut drop);
            }
        }

        /// The times segment `seq` was sent, and whether each was a retransmission.
        fn sends_of(&self, seq: u32) -> Vec<(Time, bool)> {
            self.log.iter().filter(|l| l.1 == seq).map(|l| (l.0, l.2)).collect()
        }
    }

    /// The `modern` preset with an ACK per segment and Reno's congestion control, so that the
    /// segments' fates follow from the script alone.
    fn modern() -> TcpConfig {
        TcpConfig {
            delayed_ack: false,
            ..TcpConfig { variant: "sack", cc: crate::tcp::CcConfig::Reno, ..TcpConfig::modern() }
        }
    }

    #[test]
    fn rack_repairs_a_lost_retransmission_without_a_timeout() {
        // segment 30 is lost, and so is its first retransmission; 400 segments in all
        let mut p = Path::new(modern(), 400);
        p.run(60_000 * MS, |seq, nth| seq == 30 && nth <= 2);
        assert!(p.tx.completed_at().is_some(), "the transfer completes");
        assert_eq!(p.ctr.timeouts, 0, "no retransmission timeout");
        let sends = p.sends_of(30);
        assert_eq!(sends.len(), 3, "sent, retransmitted, and retransmitted again: {sends:?}");
        // the second retransmission came once a segment sent after the first one was SACKed:
        // about a round trip (2 x 20 ms + queueing) after it, far below the 200 ms minimum RTO
        let after = sends[2].0 - sends[1].0;
        assert!(after < 150 * MS, "lost retransmission found after {} ms", after / MS);
        // the same pattern with RFC 6675 recovery (rack off) needs the timer
        let cfg = TcpConfig {
            rack: false,
            tlp: false,
            prr: false,
            rto_estimator: crate::tcp::RtoEstimator::Rfc6298,
            ..modern()
        };
        let mut q = Path::new(cfg, 400);
        q.run(60_000 * MS, |seq, nth| seq == 30 && nth <= 2);
        assert!(q.ctr.timeouts >= 1, "RFC 6675 waits for the RTO");
    }

    #[test]
    fn tlp_probes_a_lost_tail_instead_of_waiting_for_the_rto() {
        // a 40-segment transfer whose last three segments are lost: no later segment can reveal
        // them, so only a timer can; the probe comes 2·SRTT after the last ACK (RFC 8985 §7.2),
        // not an RTO later
        let mut p = Path::new(modern(), 40);
        p.run(60_000 * MS, |seq, nth| seq >= 37 && nth == 1);
        assert!(p.tx.completed_at().is_some());
        assert_eq!(p.ctr.timeouts, 0, "the tail is repaired without a timeout");
        let probe = p.sends_of(39)[1];
        assert!(probe.1, "the probe retransmits the last segment (no new data left)");
        let last_ack = *p.ack_times.iter().rev().find(|&&t| t < probe.0).unwrap();
        let pto = probe.0 - last_ack;
        let srtt = p.tx.srtt().unwrap() as Time;
        assert!(pto < p.tx.rto(), "probe after {} ms, before the RTO", pto / MS);
        // 2·SRTT plus Linux's 2 ms (more than one segment outstanding), SRTT as it was then (the
        // probe's ACKs have moved it by a few eighths of a millisecond since)
        assert!(pto.abs_diff(2 * srtt + 2 * MS) <= 3 * MS, "PTO {} ms vs 2 SRTT {} ms", pto / MS, 2 * srtt / MS);
        // the probe's SACK shows 37 and 38 lost: fast recovery repairs them
        assert!(p.ctr.fast_retx >= 1);
        // without TLP the tail waits for the RTO
        let mut q = Path::new(TcpConfig { tlp: false, ..modern() }, 40);
        q.run(60_000 * MS, |seq, nth| seq >= 37 && nth == 1);
        assert_eq!(q.ctr.timeouts, 1);
    }

    #[test]
    fn a_timeout_keeps_the_sacked_segments_and_resends_only_the_lost_ones() {
        // everything from 50 on is lost once, after segment 60 arrives: the ACK clock stops
        // with SACKs for 60 only: RACK finds 50..60 lost; later segments wait for the timer or
        // the probe; nothing SACKed is sent twice
        let mut p = Path::new(TcpConfig { tlp: false, ..modern() }, 200);
        p.run(60_000 * MS, |seq, nth| nth == 1 && (50..70).contains(&seq) && seq != 60);
        assert!(p.tx.completed_at().is_some());
        assert_eq!(p.sends_of(60).len(), 1, "the SACKed segment is never resent");
        for s in 50..70 {
            if s != 60 {
                assert_eq!(p.sends_of(s).len(), 2, "segment {s}");
            }
        }
    }

    #[test]
    fn prr_spreads_the_reduction_over_the_round_trip() {
        // one loss in a large window: during recovery PRR sends about one segment per two
        // delivered (Reno's ssthresh = cwnd / 2), never a burst
        let mut p = Path::new(modern(), 3000);
        p.run(60_000 * MS, |seq, nth| seq == 600 && nth == 1);
        assert_eq!(p.ctr.timeouts, 0);
        let rtx = p.sends_of(600)[1].0;
        // sends in the round trip after the fast retransmission
        let rtt = 2 * p.delay + 5 * MS;
        let sends = p.log.iter().filter(|l| l.0 > rtx && l.0 < rtx + rtt).count();
        let acks_in = (rtt / p.gap) as usize;
        assert!(sends * 10 >= acks_in * 3 && sends * 10 <= acks_in * 7, "{sends} sends for ~{acks_in} ACKs");
        // no two sends in one instant after the retransmission (no burst)
        let mut times: Vec<Time> = p.log.iter().filter(|l| l.0 > rtx && l.0 < rtx + rtt).map(|l| l.0).collect();
        let before = times.len();
        times.dedup();
        assert!(before - times.len() <= 1, "{} sends shared an instant", before - times.len());
    }
}
