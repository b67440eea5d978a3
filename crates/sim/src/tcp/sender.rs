//! The sending side of a TCP connection, [`TcpSender`]: what happens when it opens, when an ACK
//! arrives and when its retransmission timer expires (RFC 5681, RFC 6298, RFC 3168 for ECN).
//!
//! It is its shared state ([`SenderCore`]: sequence numbers, window, send loop, timer) plus its
//! loss recovery ([`AnyRecovery`], one algorithm per file in [`super::recovery`]); congestion
//! control is reached through the core's hooks ([`super::cc`]). What it sends goes to
//! [`Cx::out`], what it measures to [`Cx::meter`].

use super::cc::{AckInfo, CaState, CongestionControl};
use super::dispatch::Cc;
use super::meter::{Cx, TcpMeter};
use super::recovery::dispatch::AnyRecovery;
use super::recovery::rack::RackRecovery;
use super::recovery::{InRecovery, LossRecovery};
use super::sack::Block;
use super::sender_core::SenderCore;
use super::TcpConfig;
use crate::packet::F_ECE;
use aqm::Time;
use std::sync::Arc;

/// An ACK as the sender reads it.
#[derive(Debug, Clone, Copy)]
pub struct Ack<'a> {
    /// The cumulative acknowledgement: the next segment the receiver expects.
    pub seq: u32,
    /// The packet's flags (ECN-Echo).
    pub flags: u8,
    /// The echoed send time of the data segment that triggered it.
    pub echo: Time,
    /// Its SACK blocks (empty without SACK).
    pub blocks: &'a [Block],
}

impl Ack<'_> {
    /// A plain cumulative ACK: no flags, no echo, no blocks.
    pub fn cumulative(seq: u32) -> Ack<'static> {
        Ack { seq, flags: 0, echo: 0, blocks: &[] }
    }
}

/// Sending side of a TCP connection.
#[derive(Debug, Clone)]
pub struct TcpSender {
    c: SenderCore,
    rec: AnyRecovery,
}

impl TcpSender {
    /// A sender with options `cfg` (pass the group's shared `Arc` so that senders share them)
    /// offering `limit` segments. Its segments leave with flow number, priority and flags 0: its
    /// host sets them (`Sim::inject_sent`), and the sender keeps no copy (issue 28).
    pub fn new(cfg: impl Into<Arc<TcpConfig>>, limit: u32) -> Self {
        let cfg: Arc<TcpConfig> = cfg.into();
        TcpSender { rec: AnyRecovery::new(&cfg), c: SenderCore::new(cfg, limit) }
    }

    /// The options (shared by the group's senders).
    #[inline]
    pub fn cfg(&self) -> &TcpConfig {
        &self.c.cfg
    }
    pub fn cwnd(&self) -> f64 {
        self.c.cwnd
    }
    pub fn ssthresh(&self) -> f64 {
        self.c.ssthresh
    }
    pub fn srtt(&self) -> Option<f64> {
        self.c.rto.srtt()
    }
    pub fn in_recovery(&self) -> bool {
        self.c.in_recovery
    }
    /// Segments acknowledged cumulatively.
    pub fn snd_una(&self) -> u32 {
        self.c.snd_una
    }
    /// The congestion-control state (for tests and traces).
    pub fn cc(&self) -> &Cc {
        &self.c.cc
    }
    /// The loss-recovery state (for tests and traces).
    pub fn recovery(&self) -> &AnyRecovery {
        &self.rec
    }
    /// Current retransmission timeout including back-off.
    #[inline]
    pub fn rto(&self) -> Time {
        self.c.rto.get()
    }
    /// The retransmission timer's deadline, 0 when it is off.
    #[inline]
    pub fn rto_deadline(&self) -> Time {
        self.c.rto_deadline
    }
    /// The earliest of the sender's two timers, 0 when both are off: the retransmission timer
    /// and, when pacing, the time the next segment may leave.
    #[inline]
    pub fn timer_deadline(&self) -> Time {
        match (self.c.rto_deadline, self.c.pace_deadline()) {
            (0, p) => p,
            (r, 0) => r,
            (r, p) => r.min(p),
        }
    }

    /// The sender's timer fired at `cx.now` ([`TcpSender::timer_deadline`]): a retransmission
    /// timeout if that is due, else the paced send loop goes on.
    pub fn on_timer<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        let r = self.c.rto_deadline;
        if r != 0 && r <= cx.now {
            return self.on_timeout(cx);
        }
        let p = self.c.pace_deadline();
        if p != 0 && p <= cx.now {
            self.c.clear_pace_deadline();
            self.send_available(cx);
        }
    }

    /// The pacing rate in force (bytes per second; 0: unpaced).
    pub fn pacing_rate(&self) -> f64 {
        self.c.pacing_rate()
    }

    /// When all offered data was acknowledged.
    #[inline]
    pub fn completed_at(&self) -> Option<Time> {
        self.c.completed_at()
    }

    /// Stop offering new data at `now` (application stop): nothing beyond what was already sent.
    /// Returns true if that completes the connection (everything sent is acknowledged).
    pub fn stop_app(&mut self, now: Time) -> bool {
        let c = &mut self.c;
        c.limit = c.limit.min(c.snd_max);
        if c.snd_una >= c.limit && c.completed_at().is_none() && c.snd_max > 0 {
            c.rto_deadline = 0;
        }
        if c.rto_deadline == 0 && c.completed_at().is_none() && c.snd_una > 0 {
            c.complete(now);
            return true;
        }
        false
    }

    /// The connection is over: give back the SACK scoreboard's memory (a later duplicate ACK finds
    /// nothing outstanding).
    pub fn release_buffers(&mut self) {
        self.rec.release(self.c.snd_una);
    }

    /// The connection opens (the application has data from `cx.now`).
    pub fn start<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        self.send_available(cx);
    }

    /// Send what the window allows: new data, or, in loss recovery, what the algorithm chooses.
    #[inline(always)]
    fn send_available<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        if let AnyRecovery::Rack(r) = &mut self.rec {
            return rack_send(r, &mut self.c, cx);
        }
        if self.c.in_recovery {
            self.rec.send(&mut self.c, cx);
        } else {
            self.c.send_window(cx);
        }
    }

    /// An ACK arrived at `cx.now`.
    pub fn on_ack<M: TcpMeter>(&mut self, a: &Ack<'_>, cx: &mut Cx<'_, M>) {
        if let AnyRecovery::Rack(r) = &mut self.rec {
            return rack_ack(r, &mut self.c, a, cx);
        }
        let c = &mut self.c;
        if a.seq > c.snd_max {
            return; // cannot acknowledge what was never sent
        }
        let info = AckInfo {
            now: cx.now,
            acked: if c.cfg.byte_counting {
                a.seq.saturating_sub(c.snd_una)
            } else {
                a.seq.saturating_sub(c.snd_una).min(1)
            },
            flight: c.flight() - c.lt_sent as f64,
            rtt: (a.seq > c.snd_una && a.echo <= cx.now).then(|| cx.now - a.echo),
            srtt: c.rto.srtt(),
            snd_una: a.seq.max(c.snd_una),
            snd_max: c.snd_max,
            newly: a.seq.saturating_sub(c.snd_una),
            ece: a.flags & F_ECE != 0,
            in_recovery: c.in_recovery,
            rs: c.rate_sample(a.seq, cx.now),
            delivered: a.seq.saturating_sub(c.snd_una),
            lost: 0,
            prior_in_flight: 0.0,
            in_flight: 0.0,
            state: if c.in_recovery { CaState::Recovery } else { CaState::Open },
            linux: false,
        };
        if a.seq > c.snd_una {
            c.hook(|cc, w| cc.on_any_ack(w, &info));
        }
        let reduced = self.ecn_echo(a, &info, cx.meter);
        let new_sack = self.rec.on_blocks(a.seq.max(self.c.snd_una), a.blocks, self.c.snd_max);
        if a.seq > self.c.snd_una {
            self.on_new_ack(a.seq, &info, reduced, cx);
        } else if a.seq == self.c.snd_una && self.c.snd_max > self.c.snd_una {
            self.on_dup_ack(a, &info, new_sack, cx);
        }
    }

    /// RFC 3168 §6.1.2: an ECN-Echo halves the window once per window of data, with no
    /// retransmission; not during loss recovery, which already reduced it. The next reduction
    /// waits for an ACK that covers the first segment sent after this one (the CWR segment).
    /// Returns whether it reduced (the window then does not also grow on this ACK).
    #[inline]
    fn ecn_echo<M: TcpMeter>(&mut self, a: &Ack<'_>, info: &AckInfo, meter: &mut M) -> bool {
        let c = &mut self.c;
        if !(c.cfg.ecn && a.flags & F_ECE != 0 && !c.in_recovery && a.seq as i64 > c.ecn_recover) {
            return false;
        }
        meter.ecn_reduction();
        c.ssthresh = c.hook(|cc, w| cc.on_ecn(w, info));
        // reduce, never raise (after a timeout cwnd can be below flight / 2)
        c.cwnd = c.cwnd.min(c.ssthresh);
        c.ecn_reduced();
        true
    }

    /// An ACK of new data, up to `ack`.
    fn on_new_ack<M: TcpMeter>(&mut self, ack: u32, info: &AckInfo, reduced: bool, cx: &mut Cx<'_, M>) {
        let now = cx.now;
        let c = &mut self.c;
        c.time_ack(ack, now, cx.meter);
        let newly = ack - c.snd_una;
        c.snd_una = ack;
        c.lt_sent = 0;
        if c.rto.episode && ack as i64 > c.recover {
            // all that was outstanding at the last timeout is acknowledged
            c.rto.episode = false;
            cx.meter.rto_recovered(now);
        }
        if c.snd_nxt < ack {
            c.snd_nxt = ack;
        }
        let mut restart = true;
        if c.in_recovery {
            match self.rec.on_new_ack(c, newly, ack as i64 > c.recover, cx) {
                InRecovery::Exit => c.exit_recovery(now),
                InRecovery::Stay { restart_timer } => restart = restart_timer,
            }
        } else {
            c.dupacks = 0;
            if !reduced {
                c.hook(|cc, w| cc.on_ack(w, info));
            }
        }
        if c.snd_una >= c.snd_max {
            c.rto_deadline = 0;
        } else if restart {
            c.rto_deadline = now.saturating_add(c.rto.get());
        }
        if c.snd_una >= c.limit && c.completed_at().is_none() {
            c.complete(now);
            c.rto_deadline = 0;
        }
        if c.log().is_some_and(|l| l.worried > 0) {
            c.recheck_fine_timeout(cx);
        }
        c.default_pacing_rate();
        self.send_available(cx);
    }

    /// An ACK that acknowledges nothing new while data is outstanding.
    fn on_dup_ack<M: TcpMeter>(&mut self, a: &Ack<'_>, info: &AckInfo, new_sack: bool, cx: &mut Cx<'_, M>) {
        if !self.rec.is_duplicate(new_sack, a.blocks) {
            return;
        }
        let c = &mut self.c;
        c.dupacks += 1;
        if c.in_recovery {
            self.rec.on_dup_ack(c);
            self.send_available(cx);
            return;
        }
        c.hook(|cc, w| cc.on_dup_ack(w, info));
        let t = c.cfg.dupack_threshold;
        let fine = if c.dupacks <= t { c.fine_expired(cx.now) } else { None };
        // no second fast retransmit for the window already being recovered, nor for duplicate
        // ACKs caused by a timeout's go-back-N (RFC 6582 §3.2 step 2; ns-2's `bug_fix_`)
        let fast = (self.rec.detects_loss(c, a.seq) || fine.is_some()) && a.seq as i64 > c.recover;
        if !fast && c.cfg.limited_transmit && c.dupacks < t {
            c.limited_transmit(cx);
        }
        if fast {
            self.fast_retransmit(info, cx);
        }
    }

    /// Fast retransmit (RFC 5681 §3.2 steps 2-3, RFC 6582 §3.2 step 2, RFC 6675 §5): congestion
    /// control sets `ssthresh`, the recovery algorithm the window and what to retransmit.
    fn fast_retransmit<M: TcpMeter>(&mut self, info: &AckInfo, cx: &mut Cx<'_, M>) {
        let c = &mut self.c;
        let transmits = c.log().map(|l| l.get(c.snd_una).1);
        cx.meter.fast_retransmit();
        c.ssthresh = c.hook(|cc, w| cc.on_loss(w, info));
        c.recover = c.snd_max as i64 - 1;
        c.in_recovery = true;
        c.ecn_reduced();
        self.rec.enter(c, cx);
        if let Some(t) = transmits {
            // Vegas: watch the next two new ACKs, and back off the fine-grained timeout
            let worried = 2.min(c.snd_max - c.snd_una);
            c.log_mut().expect("a send log").worried = worried;
            c.cc.on_fine_retransmit(t);
        }
    }

    /// The retransmission timer expired at `cx.now` (RFC 6298 §5.4-5.6, RFC 5681 eq. 4). With
    /// RACK-TLP recovery the timer may also be its reordering timer or the tail loss probe.
    pub fn on_timeout<M: TcpMeter>(&mut self, cx: &mut Cx<'_, M>) {
        if let AnyRecovery::Rack(r) = &mut self.rec {
            return r.on_timer(&mut self.c, cx);
        }
        let now = cx.now;
        let c = &mut self.c;
        c.rto_deadline = 0;
        if c.snd_una >= c.snd_max {
            return;
        }
        cx.meter.timeout(now);
        c.rto.episode = true;
        let flight = c.flight();
        c.ssthresh = c.hook(|cc, w| cc.on_rto(w, flight, now));
        c.cwnd = 1.0;
        c.rto.back_off(&c.cfg);
        c.recover = c.snd_max as i64 - 1;
        c.in_recovery = false;
        c.dupacks = 0;
        c.lt_sent = 0;
        c.timing = false;
        c.snd_nxt = c.snd_una; // go back N
        if let Some(log) = c.log_mut() {
            log.worried = 0;
        }
        self.rec.on_timeout();
        c.ecn_reduced();
        c.rto_deadline = now.saturating_add(c.rto.get());
        self.send_available(cx);
    }
}

// The RACK-TLP sender's entry points, out of line: the other senders' per-ACK path pays one test.
#[cold]
#[inline(never)]
fn rack_send<M: TcpMeter>(r: &mut RackRecovery, c: &mut SenderCore, cx: &mut Cx<'_, M>) {
    r.send(c, cx)
}

#[cold]
#[inline(never)]
fn rack_ack<M: TcpMeter>(r: &mut RackRecovery, c: &mut SenderCore, a: &Ack<'_>, cx: &mut Cx<'_, M>) {
    r.on_ack(c, a, cx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::FlowCounters;
    use crate::packet::{Packet, F_CWR, F_ECT, F_RETX};
    use aqm::NS_PER_SEC;

    /// A plain cumulative ACK `seq` with `flags` at `now`.
    fn ack(s: &mut TcpSender, seq: u32, flags: u8, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        s.on_ack(&Ack { flags, ..Ack::cumulative(seq) }, &mut Cx::new(now, out, c));
    }

    #[test]
    fn slow_start_then_fast_retransmit_then_partial_and_full_ack() {
        let cfg = TcpConfig { limited_transmit: false, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        assert_eq!(out.len(), 2); // IW = 2
        out.clear();
        // ACK 1 and 2: slow start, cwnd 2 -> 4, each ACK releases 2 segments
        ack(&mut s, 1, 0, 10, &mut out, &mut c);
        ack(&mut s, 2, 0, 11, &mut out, &mut c);
        assert_eq!(s.cwnd(), 4.0);
        assert_eq!(out.len(), 4);
        assert_eq!(out.last().unwrap().seq, 5);
        out.clear();
        // segment 2 and 4 lost: dup ACKs for 2 (from 3, 5)... use 3 dupacks
        for _ in 0..3 {
            ack(&mut s, 2, 0, 20, &mut out, &mut c);
        }
        assert_eq!(c.fast_retx, 1);
        assert_eq!(out[0].seq, 2);
        assert!(out[0].flags & F_RETX != 0);
        // flight was 4 (2..=5) -> ssthresh 2, cwnd 2 + 3
        assert_eq!(s.ssthresh(), 2.0);
        assert_eq!(s.cwnd(), 5.0);
        out.clear();
        // partial ACK up to 4 (segment 4 also lost): retransmit 4, deflate by 2, add 1
        ack(&mut s, 4, 0, 30, &mut out, &mut c);
        assert_eq!(out[0].seq, 4);
        assert_eq!(s.cwnd(), 4.0);
        out.clear();
        // full ACK beyond recover (5): cwnd = ssthresh
        ack(&mut s, 6, 0, 40, &mut out, &mut c);
        assert_eq!(s.cwnd(), 2.0);
        assert_eq!(c.timeouts, 0);
    }

    #[test]
    fn limited_transmit_sends_one_new_segment_per_early_dupack() {
        let mut s = TcpSender::new(TcpConfig::default(), u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        ack(&mut s, 1, 0, 10, &mut out, &mut c);
        ack(&mut s, 2, 0, 11, &mut out, &mut c);
        assert_eq!(s.cwnd(), 4.0); // segments 2..=5 out
        out.clear();
        // first and second duplicate ACK: segments 6 and 7 (RFC 3042), cwnd unchanged
        ack(&mut s, 2, 0, 20, &mut out, &mut c);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![6]);
        ack(&mut s, 2, 0, 21, &mut out, &mut c);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![6, 7]);
        assert_eq!(s.cwnd(), 4.0);
        out.clear();
        // third: fast retransmit; ssthresh from the flight before Limited Transmit (4 / 2)
        ack(&mut s, 2, 0, 22, &mut out, &mut c);
        assert_eq!(c.fast_retx, 1);
        assert_eq!(out[0].seq, 2);
        assert_eq!(s.ssthresh(), 2.0);
        // without it, nothing is sent before the third duplicate ACK
        let mut s = TcpSender::new(TcpConfig { limited_transmit: false, ..TcpConfig::default() }, u32::MAX);
        s.start(&mut Cx::new(0, &mut out, &mut c));
        ack(&mut s, 1, 0, 10, &mut out, &mut c);
        out.clear();
        ack(&mut s, 1, 0, 20, &mut out, &mut c);
        ack(&mut s, 1, 0, 21, &mut out, &mut c);
        assert!(out.is_empty());
    }

    #[test]
    fn ns2_2_1b9_backoff_stops_at_64() {
        let cfg = super::super::presets::preset("ns2-2.1b9").unwrap();
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        assert_eq!(s.rto(), 6 * NS_PER_SEC); // rtxcur_init_
        let mut now = 0;
        for _ in 0..10 {
            now += s.rto();
            s.on_timeout(&mut Cx::new(now, &mut out, &mut c));
        }
        assert_eq!(s.rto(), 64 * 6 * NS_PER_SEC);
        let mut s = TcpSender::new(super::super::presets::preset("ns2-2.35").unwrap(), u32::MAX);
        s.start(&mut Cx::new(0, &mut out, &mut c));
        for _ in 0..10 {
            now += s.rto();
            s.on_timeout(&mut Cx::new(now, &mut out, &mut c));
        }
        assert_eq!(s.rto(), 60 * NS_PER_SEC); // maxrto_ only
    }

    #[test]
    fn timeout_backs_off_and_goes_back_n() {
        let cfg = TcpConfig::default();
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        assert_eq!(s.rto(), 3 * NS_PER_SEC);
        out.clear();
        s.on_timeout(&mut Cx::new(3 * NS_PER_SEC, &mut out, &mut c));
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 0);
        assert_eq!(s.rto(), 6 * NS_PER_SEC);
        assert_eq!(s.rto_deadline(), 9 * NS_PER_SEC);
        // Karn: the retransmitted segment is not timed; a later new segment gives the sample that
        // clears the back-off.
        out.clear();
        ack(&mut s, 1, 0, 3 * NS_PER_SEC + 50_000_000, &mut out, &mut c);
        assert_eq!(c.rtt_samples, 0);
        assert_eq!(s.rto(), 6 * NS_PER_SEC);
        let seq = out.iter().map(|p| p.seq).max().unwrap();
        ack(&mut s, seq + 1, 0, 3 * NS_PER_SEC + 100_000_000, &mut out, &mut c);
        assert_eq!(c.rtt_samples, 1);
        // one sample R = 50 ms: RTO = R + max(G, 2R) = 150 ms, floored at min_rto 200 ms
        assert_eq!(s.rto(), NS_PER_SEC / 5);
    }

    #[test]
    fn ecn_echo_halves_once_per_window_and_sets_cwr() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        assert!(out.iter().all(|p| p.flags & F_ECT != 0), "new data is ECN-capable");
        for a in 1..=6 {
            ack(&mut s, a, 0, a as Time, &mut out, &mut c);
        }
        let before = s.cwnd();
        let flight = (s.c.snd_max - s.c.snd_una) as f64;
        out.clear();
        // an ECN-Echo: halve (ssthresh = flight / 2), no retransmission
        ack(&mut s, 7, F_ECE, 10, &mut out, &mut c);
        assert_eq!(c.ecn_reductions, 1);
        assert_eq!(s.cwnd(), (flight / 2.0).max(2.0));
        assert!(s.cwnd() < before);
        assert!(out.iter().all(|p| p.flags & F_RETX == 0));
        // further echoes before the CWR segment is acknowledged do not reduce again, and the
        // first new segment after the reduction carries CWR (only it)
        let mut a = 7;
        while out.is_empty() {
            a += 1;
            ack(&mut s, a, F_ECE, 11, &mut out, &mut c);
        }
        assert_eq!(c.ecn_reductions, 1);
        assert!(out[0].flags & F_CWR != 0);
        assert!(out[1..].iter().all(|p| p.flags & F_CWR == 0));
        // retransmissions are never ECN-capable
        out.clear();
        s.on_timeout(&mut Cx::new(5 * NS_PER_SEC, &mut out, &mut c));
        assert!(out.iter().all(|p| p.flags & F_RETX == 0 || p.flags & F_ECT == 0));
    }

    #[test]
    fn a_paced_sender_spaces_its_segments_and_its_timer_wakes_it() {
        let cfg = TcpConfig { variant: "bbr", cc: crate::tcp::CcConfig::Bbr, pacing: true, ..TcpConfig::modern() };
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        // no rate yet (no ACK): the initial window leaves at once
        assert_eq!(out.len(), 10);
        assert_eq!(s.timer_deadline(), s.rto_deadline());
        out.clear();
        // the first ACK after 10 ms gives BBR its initial rate, 2.885 · cwnd / srtt
        ack(&mut s, 1, 0, 10_000_000, &mut out, &mut c);
        assert!(s.pacing_rate() > 0.0);
        let gap = (1000.0 * 1e9 / s.pacing_rate()) as Time;
        assert_eq!(out.len(), 1, "one segment now, the next one a gap later");
        let wake = s.timer_deadline();
        assert!(wake > 10_000_000 && wake <= 10_000_000 + gap + 1, "{wake}");
        s.on_timer(&mut Cx::new(wake, &mut out, &mut c));
        assert_eq!(out.len(), 2);
        assert_eq!(c.timeouts, 0);
    }

    #[test]
    fn dctcp_receiver_and_sender_scale_the_cut_by_the_marked_fraction() {
        let cfg = TcpConfig {
            variant: "dctcp",
            cc: crate::tcp::CcConfig::dctcp(),
            ecn: true,
            l4s: true,
            ..TcpConfig::default()
        };
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        assert!(out.iter().all(|p| p.flags & crate::packet::F_ECT1 != 0), "ECT(1) with l4s");
        for a in 1..=20 {
            ack(&mut s, a, 0, a as Time, &mut out, &mut c);
        }
        // alpha has decayed from 1 over the unmarked windows; one echo cuts by alpha/2 only
        let crate::tcp::Cc::Dctcp(d) = s.cc() else { panic!() };
        let alpha = d.alpha;
        assert!(alpha < 0.9);
        let before = s.cwnd();
        ack(&mut s, 21, F_ECE, 30, &mut out, &mut c);
        assert_eq!(c.ecn_reductions, 1);
        assert!((s.cwnd() - (before * (1.0 - alpha / 2.0)).max(2.0)).abs() < 1e-9);
    }

    #[test]
    fn a_loss_reduction_is_the_ecn_response_for_its_window() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(&mut Cx::new(0, &mut out, &mut c));
        for a in 1..=6 {
            ack(&mut s, a, 0, a as Time, &mut out, &mut c);
        }
        // three duplicate ACKs: fast retransmit halves the window
        for _ in 0..3 {
            ack(&mut s, 6, 0, 10, &mut out, &mut c);
        }
        assert_eq!(c.fast_retx, 1);
        // the full ACK ends recovery; an echo for data of the same window must not halve again
        let full = s.c.snd_max;
        ack(&mut s, full, F_ECE, 20, &mut out, &mut c);
        assert_eq!(c.ecn_reductions, 0);
        // after a timeout, an echo never raises cwnd above its post-timeout value
        out.clear();
        s.on_timeout(&mut Cx::new(10 * NS_PER_SEC, &mut out, &mut c));
        assert_eq!(s.cwnd(), 1.0);
    }
}
