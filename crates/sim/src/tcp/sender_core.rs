//! The sender's shared machinery, [`SenderCore`]: what every loss recovery and congestion control
//! works on — sequence numbers, the window, the send loop, RTT sampling and the retransmission
//! timer (`super::rto`), ECN's once-per-window response, and Vegas's send log.
//!
//! [`super::TcpSender`] drives it (ACK processing, timeouts); the loss-recovery algorithms
//! ([`super::recovery`]) act on it through its methods.

use super::cc::{CongestionControl, RateSample, Window};
use super::dispatch::Cc;
use super::meter::{Cx, TcpMeter};
use super::rto::Rto;
use super::{CcConfig, TcpConfig};
use crate::packet::{Packet, PktKind, F_CWR, F_ECT, F_ECT1, F_RETX};
use aqm::Time;
use std::sync::Arc;

/// The state of a sender that every loss recovery shares.
#[derive(Debug, Clone)]
pub struct SenderCore {
    /// The group's options, shared by all its senders (128 bytes that were copied into each).
    pub(super) cfg: Arc<TcpConfig>,
    pub(super) cc: Cc,
    /// Segments the application offers (u32::MAX = unlimited).
    pub(super) limit: u32,
    pub(super) snd_una: u32,
    pub(super) snd_nxt: u32,
    pub(super) snd_max: u32,
    pub(super) cwnd: f64,
    pub(super) ssthresh: f64,
    pub(super) dupacks: u32,
    /// Segments sent by Limited Transmit since the last new ACK (left out of the flight size that
    /// sets `ssthresh`, RFC 5681 §3.2 step 2).
    pub(super) lt_sent: u32,
    pub(super) in_recovery: bool,
    /// Highest sequence number sent when recovery (or the last timeout) began; -1 initially.
    pub(super) recover: i64,
    pub(super) rto: Rto,
    /// A segment is being timed for the RTO estimator: `timed_seq`, sent at `timed_at`.
    pub(super) timing: bool,
    timed_seq: u32,
    timed_at: Time,
    /// RTO deadline, 0 when the timer is off.
    pub(super) rto_deadline: Time,
    /// All offered data was acknowledged, at `completed_time` (the two fields of an
    /// `Option<Time>`, which would take 16 bytes where these take 8 and one of the spare bytes
    /// beside the other flags; read them with [`SenderCore::completed_at`]).
    completed: bool,
    completed_time: Time,
    /// ECN: no further reduction for echoes until `snd_una` passes this (once per window).
    pub(super) ecn_recover: i64,
    /// ECN: set CWR on the next new data segment.
    cwr_pending: bool,
    /// What only some connections need (pacing, Vegas, BBR), on the heap: `None` for the
    /// others, which then carry 8 bytes here instead of 40 (issue 28).
    extra: Option<Box<Extra>>,
}

/// A sender's state that only paced connections, Vegas and BBR have.
#[derive(Debug, Clone, Default)]
struct Extra {
    /// Pacing (`cfg.pacing`, or a congestion control that sets a rate): the rate in bytes per
    /// second (0: unpaced), the earliest time the next new segment may leave, and the pending
    /// wake-up to send it (0: none).
    pacing_rate: f64,
    next_send: Time,
    pace_deadline: Time,
    /// What a congestion control with a fine-grained timeout (Vegas) needs: every outstanding
    /// segment's send time and transmission count.
    log: Option<SendLog>,
    /// What a congestion control that takes delivery-rate samples (BBR) needs.
    rate: Option<RateLog>,
}

/// One segment's delivery record (Linux `tcp_rate.c`'s per-skb fields).
#[derive(Debug, Clone, Copy, Default)]
struct SegRec {
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    sent_time: Time,
    app_limited: bool,
}

/// Delivery-rate estimation (Cheng, Cardwell, "Delivery Rate Estimation", IETF draft, as Linux's
/// `tcp_rate.c`): per outstanding segment the connection's delivered count and times when it was
/// sent, in a ring over the window that doubles when the window outgrows it (never per packet).
#[derive(Debug, Clone)]
pub(super) struct RateLog {
    ring: Vec<SegRec>,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    /// Delivered count up to which samples are application-limited (0: not).
    app_limited_until: u64,
}

impl RateLog {
    fn new() -> Self {
        RateLog {
            ring: vec![SegRec::default(); 64],
            delivered: 0,
            delivered_time: 0,
            first_sent_time: 0,
            app_limited_until: 0,
        }
    }
    #[inline]
    fn slot(&self, seq: u32) -> usize {
        seq as usize & (self.ring.len() - 1)
    }
    /// Room for segments `una..=seq` (a rare doubling when the window outgrows the ring).
    fn make_room(&mut self, una: u32, seq: u32) {
        if ((seq - una) as usize) < self.ring.len() {
            return;
        }
        let mut n = self.ring.len();
        while ((seq - una) as usize) >= n {
            n *= 2;
        }
        let mut ring = vec![SegRec::default(); n];
        for s in una..seq {
            ring[s as usize & (n - 1)] = self.ring[self.slot(s)];
        }
        self.ring = ring;
    }
    /// Segment `seq` leaves at `now` with `flight` segments outstanding before it.
    fn sent(&mut self, seq: u32, una: u32, flight: u32, now: Time) {
        if flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.make_room(una, seq);
        let i = self.slot(seq);
        self.ring[i] = SegRec {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            app_limited: self.app_limited_until > 0,
        };
    }
    /// Segments up to `ack` (exclusive), `newly` of them new, are acknowledged at `now`.
    fn acked(&mut self, ack: u32, newly: u32, now: Time) -> RateSample {
        self.delivered += newly as u64;
        if self.app_limited_until > 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let p = self.ring[self.slot(ack - 1)];
        let send_elapsed = p.sent_time.saturating_sub(p.first_sent_time);
        let ack_elapsed = now.saturating_sub(p.delivered_time);
        self.first_sent_time = p.sent_time;
        self.delivered_time = now;
        RateSample {
            delivered: self.delivered - p.delivered,
            interval: send_elapsed.max(ack_elapsed),
            prior_delivered: p.delivered,
            total_delivered: self.delivered,
            app_limited: p.app_limited,
        }
    }
}

/// Per-segment send times and transmission counts in a ring over the outstanding window, for a
/// fine-grained retransmission timeout (Vegas; Brakmo & Peterson 1995 §3.1, ns-2's
/// `vegas_expire`).
#[derive(Debug, Clone)]
pub(super) struct SendLog {
    at: Vec<Time>,
    transmits: Vec<u32>,
    /// New ACKs still to check against the fine-grained timeout after a retransmission (ns-2's
    /// `v_worried_`).
    pub(super) worried: u32,
}

impl SendLog {
    fn new(max_window: u32) -> Self {
        let n = (max_window as usize + 1).next_power_of_two();
        SendLog { at: vec![0; n], transmits: vec![0; n], worried: 0 }
    }
    fn record(&mut self, seq: u32, now: Time, retx: bool) {
        let i = seq as usize & (self.at.len() - 1);
        self.at[i] = now;
        self.transmits[i] = if retx { self.transmits[i] + 1 } else { 1 };
    }
    pub(super) fn get(&self, seq: u32) -> (Time, u32) {
        let i = seq as usize & (self.at.len() - 1);
        (self.at[i], self.transmits[i])
    }
}

impl Extra {
    /// The state a sender with options `cfg` needs beyond the common one, if any.
    fn for_config(cfg: &TcpConfig) -> Option<Box<Extra>> {
        let log = matches!(cfg.cc, CcConfig::Vegas { .. }).then(|| SendLog::new(cfg.max_window));
        // (RACK-TLP recovery keeps the rate fields in its own per-segment records)
        let rate = (cfg.cc.wants_rate_samples() && !cfg.rack_on()).then(RateLog::new);
        (cfg.pacing || log.is_some() || rate.is_some()).then(|| Box::new(Extra { log, rate, ..Extra::default() }))
    }
}

impl SenderCore {
    pub(super) fn new(cfg: Arc<TcpConfig>, limit: u32) -> Self {
        SenderCore {
            cc: Cc::new(&cfg),
            limit,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd: cfg.initial_window,
            ssthresh: f64::MAX,
            dupacks: 0,
            lt_sent: 0,
            in_recovery: false,
            recover: -1,
            rto: Rto::new(&cfg),
            timing: false,
            timed_seq: 0,
            timed_at: 0,
            rto_deadline: 0,
            completed: false,
            completed_time: 0,
            ecn_recover: -1,
            cwr_pending: false,
            extra: Extra::for_config(&cfg),
            cfg,
        }
    }

    /// Vegas's send log.
    #[inline]
    pub(super) fn log(&self) -> Option<&SendLog> {
        self.extra.as_deref().and_then(|x| x.log.as_ref())
    }

    #[inline]
    pub(super) fn log_mut(&mut self) -> Option<&mut SendLog> {
        self.extra.as_deref_mut().and_then(|x| x.log.as_mut())
    }

    #[inline]
    fn rate_mut(&mut self) -> Option<&mut RateLog> {
        self.extra.as_deref_mut().and_then(|x| x.rate.as_mut())
    }

    /// The pacing rate in force (bytes per second; 0: unpaced).
    #[inline]
    pub(super) fn pacing_rate(&self) -> f64 {
        self.extra.as_deref().map_or(0.0, |x| x.pacing_rate)
    }

    /// The pending wake-up of the paced send loop (0: none).
    #[inline]
    pub(super) fn pace_deadline(&self) -> Time {
        self.extra.as_deref().map_or(0, |x| x.pace_deadline)
    }

    /// A paced sender's pacing state (a sender is paced only with its `Extra`:
    /// [`Extra::for_config`]).
    #[inline]
    fn paced(&mut self) -> &mut Extra {
        self.extra.as_deref_mut().expect("a paced sender has its Extra")
    }

    /// The paced send loop's wake-up came: clear it.
    pub(super) fn clear_pace_deadline(&mut self) {
        if let Some(x) = self.extra.as_deref_mut() {
            x.pace_deadline = 0;
        }
    }

    /// When all offered data was acknowledged.
    #[inline]
    pub(super) fn completed_at(&self) -> Option<Time> {
        self.completed.then_some(self.completed_time)
    }

    /// All offered data is acknowledged at `now`.
    pub(super) fn complete(&mut self, now: Time) {
        self.completed = true;
        self.completed_time = now;
    }

    /// Segments outstanding.
    #[inline]
    pub(super) fn flight(&self) -> f64 {
        (self.snd_max - self.snd_una) as f64
    }

    /// The usable window in whole segments: at least one, at most the receiver's.
    #[inline]
    pub(super) fn window(&self) -> u32 {
        // `as u32` truncates toward zero and saturates (negative and NaN to 0): the same as
        // `floor() as u32` for every f64, without the call to `floor` (no SSE4.1 in the baseline
        // target)
        (self.cwnd as u32).clamp(1, self.cfg.max_window)
    }

    /// Run a congestion-control hook on the current window and keep what it leaves there.
    #[inline]
    pub(super) fn hook<R>(&mut self, f: impl FnOnce(&mut Cc, &mut Window) -> R) -> R {
        let mut w = Window { cwnd: self.cwnd, ssthresh: self.ssthresh, pacing_rate: self.pacing_rate() };
        let r = f(&mut self.cc, &mut w);
        self.cwnd = w.cwnd.max(1.0);
        self.ssthresh = w.ssthresh;
        match self.extra.as_deref_mut() {
            Some(x) => x.pacing_rate = w.pacing_rate,
            // (only BBR sets a rate, and a BBR sender has its `Extra`)
            None => debug_assert!(w.pacing_rate == 0.0, "a pacing rate without pacing state"),
        }
        r
    }

    /// The delivery-rate sample of an ACK up to `ack` (a default, empty one without a rate log).
    #[inline]
    pub(super) fn rate_sample(&mut self, ack: u32, now: Time) -> RateSample {
        let una = self.snd_una;
        match self.rate_mut() {
            Some(r) if ack > una => r.acked(ack, ack - una, now),
            _ => RateSample::default(),
        }
    }

    /// With `cfg.pacing` and an algorithm that sets no rate itself: Linux's default pacing rate
    /// (`tcp_update_pacing_rate`), twice `cwnd/srtt` while `cwnd < ssthresh/2`, 1.2 times after.
    pub(super) fn default_pacing_rate(&mut self) {
        if let (true, Some(srtt)) = (self.cfg.pacing && !matches!(self.cfg.cc, CcConfig::Bbr), self.rto.srtt()) {
            let factor = if self.cwnd < self.ssthresh / 2.0 { 2.0 } else { 1.2 };
            let rate = factor * self.cwnd * self.cfg.mss as f64 * 1e9 / srtt.max(1.0);
            self.paced().pacing_rate = rate;
        }
    }

    /// Any window reduction (ECN-Echo, fast retransmit, timeout) is the response to congestion in
    /// this window: no further ECN reduction until data sent after it is acknowledged, and the next
    /// new segment carries CWR (RFC 3168 §6.1.2).
    pub(super) fn ecn_reduced(&mut self) {
        if self.cfg.ecn {
            self.ecn_recover = self.snd_max as i64;
            self.cwr_pending = true;
        }
    }

    /// Send segment `seq` (new data, or again).
    #[inline]
    pub(super) fn send_seg<M: TcpMeter>(&mut self, seq: u32, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        let retx = seq < self.snd_max;
        let mut flags = if retx { F_RETX } else { 0 };
        // RFC 3168 §6.1.5: retransmissions are not ECN-capable; CWR rides on new data
        if self.cfg.ecn && !retx {
            flags |= if self.cfg.l4s { F_ECT | F_ECT1 } else { F_ECT };
            if self.cwr_pending {
                flags |= F_CWR;
                self.cwr_pending = false;
            }
        }
        cx.out.push(Packet {
            sent: now,
            flow: 0, // the flow's number, priority and flags: its host's (`Sim::inject_sent`)
            seq,
            size: self.cfg.mss,
            kind: PktKind::Data,
            hop: 0,
            prio: 0,
            flags,
            aux: 0,
        });
        cx.meter.segment_sent(retx);
        if let Some(x) = self.extra.as_deref_mut() {
            if let Some(log) = x.log.as_mut() {
                log.record(seq, now, retx);
            }
            if let Some(r) = x.rate.as_mut() {
                r.sent(seq, self.snd_una, self.snd_max - self.snd_una, now);
            }
        }
        if !retx {
            self.snd_max = seq + 1;
            if !self.timing {
                self.timing = true;
                self.timed_seq = seq;
                self.timed_at = now;
            }
        }
        if self.rto_deadline == 0 {
            self.rto_deadline = now.saturating_add(self.rto.get());
        }
    }

    /// A retransmission that leaves the timer as it is (Karn: the timing stops). NewReno's partial
    /// ACKs after the first retransmit this way (recovery/newreno.rs).
    pub(super) fn retransmit_on_timer<M: TcpMeter>(&mut self, seq: u32, cx: &mut Cx<'_, M>) {
        self.timing = false;
        self.send_seg(seq, cx);
    }

    /// A retransmission by fast retransmit, on a partial ACK or by SACK recovery. Re-sending the
    /// first unacknowledged segment re-arms the timer (with `rto_restart_on_retransmit`, as ns-2
    /// and Linux do); re-sending a later hole does not, so a lost retransmission of the first
    /// segment is still repaired by the timer while SACK recovery goes on.
    pub(super) fn retransmit<M: TcpMeter>(&mut self, seq: u32, cx: &mut Cx<'_, M>) {
        self.retransmit_on_timer(seq, cx);
        if self.cfg.rto_restart_on_retransmit && seq == self.snd_una {
            self.rto_deadline = cx.now.saturating_add(self.rto.get());
        }
    }

    /// Send the new segments the window allows (outside SACK recovery, which chooses its own).
    #[inline]
    pub(super) fn send_window<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        // send_seg changes neither the limit nor snd_una
        let end = self.limit.min(self.snd_una.saturating_add(self.window()));
        self.send_upto(end, cx);
    }

    /// Send new segments up to `end` (exclusive), paced if the sender paces.
    #[inline]
    pub(super) fn send_upto<M: TcpMeter>(&mut self, end: u32, cx: &mut Cx<'_, M>) {
        if self.cfg.pacing && self.pacing_rate() > 0.0 {
            return self.send_paced(end, cx);
        }
        while self.snd_nxt < end {
            let s = self.snd_nxt;
            self.send_seg(s, cx);
            self.snd_nxt += 1;
        }
        self.note_app_limited();
    }

    /// The paced send loop: a segment every `mss / pacing_rate`, the next one woken by the
    /// sender's timer ([`SenderCore::pace_deadline`]).
    fn send_paced<M: TcpMeter>(&mut self, end: u32, cx: &mut Cx<'_, M>) {
        let gap = (self.cfg.mss as f64 * 1e9 / self.pacing_rate()) as Time;
        self.paced().pace_deadline = 0;
        while self.snd_nxt < end {
            let x = self.paced();
            if cx.now < x.next_send {
                x.pace_deadline = x.next_send;
                return;
            }
            let s = self.snd_nxt;
            self.send_seg(s, cx);
            self.snd_nxt += 1;
            let x = self.paced();
            x.next_send = x.next_send.max(cx.now).saturating_add(gap.max(1));
        }
        self.note_app_limited();
    }

    /// The application has nothing more to send: rate samples until what is in flight now is
    /// delivered are application-limited (Linux `tcp_rate_check_app_limited`).
    #[inline]
    fn note_app_limited(&mut self) {
        let (done, flight) = (self.snd_nxt >= self.limit, (self.snd_max - self.snd_una) as u64);
        if let Some(r) = self.rate_mut() {
            if done {
                r.app_limited_until = (r.delivered + flight).max(1);
            }
        }
    }

    /// RFC 3042 §2 (ns-2's `send_one`): one new segment on a first or second duplicate ACK, if
    /// the receiver window allows it and no more than `cwnd + dupacks` segments would be out.
    pub(super) fn limited_transmit<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        let s = self.snd_nxt;
        let allowed = self.snd_una.saturating_add(self.window().saturating_add(self.dupacks));
        if s < self.limit && s < self.snd_una.saturating_add(self.cfg.max_window) && s < allowed {
            self.send_seg(s, cx);
            self.snd_nxt += 1;
            self.lt_sent += 1;
        }
    }

    /// New data up to `ack` is acknowledged at `now`: take the RTT sample if the timed segment is
    /// covered (Karn: the timing stops at any retransmission).
    #[inline]
    pub(super) fn time_ack<M: TcpMeter>(&mut self, ack: u32, now: Time, meter: &mut M) {
        if self.timing && ack > self.timed_seq {
            self.timing = false;
            let r = now.saturating_sub(self.timed_at) as f64;
            self.rto.sample(r, &self.cfg);
            meter.rtt_sample(r);
        }
    }

    /// Leave loss recovery: `cwnd = ssthresh`, and congestion control is told.
    pub(super) fn exit_recovery(&mut self, now: Time) {
        self.in_recovery = false;
        self.dupacks = 0;
        self.cwnd = self.ssthresh.max(1.0);
        self.hook(|cc, w| cc.on_recovery_exit(w, now));
    }

    /// One of the first two new ACKs after a fine-grained retransmission (`SendLog::worried`):
    /// retransmit the next segment too if it is overdue by the fine-grained timeout (window
    /// unchanged).
    #[cold]
    pub(super) fn recheck_fine_timeout<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        let expired = self.fine_expired(cx.now).is_some();
        let log = self.log_mut().expect("a send log");
        log.worried -= 1;
        if expired {
            let s = self.snd_una;
            self.retransmit(s, cx);
        } else {
            log.worried = 0;
        }
    }

    /// The first unacknowledged segment has been out longer than the congestion control's
    /// fine-grained timeout; returns how often it was sent.
    pub(super) fn fine_expired(&self, now: Time) -> Option<u32> {
        let log = self.log()?;
        let to = self.cc.fine_timeout()?;
        let (at, transmits) = log.get(self.snd_una);
        (self.snd_una < self.snd_max && now.saturating_sub(at) > to).then_some(transmits)
    }
}
