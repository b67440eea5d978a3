//! TCP: one sender core, pluggable congestion control and loss recovery, and a receiver.
//!
//! Read first: RFC 5681 (congestion control: slow start, congestion avoidance, fast retransmit and
//! fast recovery), RFC 6582 (NewReno's partial-ACK handling, the `recover` variable and its guard
//! against a second fast retransmit after a timeout), RFC 6298 (RTO computation, Karn's rule,
//! exponential back-off), RFC 2018 and RFC 6675 (SACK and its loss recovery).
//!
//! A *variant* (`tcp.variant` in a scenario) is a congestion-control algorithm
//! ([`cc::CongestionControl`], one file each: [`reno`], [`vegas`], [`cubic`]) plus a loss-recovery
//! algorithm ([`Recovery`]: Reno, NewReno — [`newreno`] — or SACK — [`sack`]). The sender core
//! here owns everything they share: sequence numbers, the send loop, RTT estimation, the
//! retransmission timer and ECN.
//!
//! Modelling choices (documented in docs/tcp.md):
//! * Sequence numbers count segments; every data segment has the flow's `mss` bytes on the wire
//!   and carries `mss` bytes of payload (the spec ignores TCP/IP header bytes, experiments.md §1.2).
//! * One segment at a time is timed for the RTO estimator (no timestamps option), and no segment
//!   that was retransmitted is timed (Karn). The back-off is cleared by the next valid sample.
//!   Congestion control additionally sees a per-ACK RTT from the echoed send time of the segment
//!   that triggered the ACK (what Vegas and ns-2's timestamp echo use).
//! * The receiver ACKs every segment (ns-2 default sink) unless delayed ACKs are on: then every
//!   `delack_count`-th in-order segment, or when `delack_timeout` expires, and at once on
//!   out-of-order or duplicate segments and on segments that fill a hole (RFC 5681 §4.2).

pub mod cc;
pub mod cubic;
pub mod newreno;
pub mod presets;
pub mod reno;
pub mod sack;
pub mod vegas;

use self::cc::{AckInfo, CongestionControl, Window};
use self::sack::{Block, Scoreboard};
use crate::measure::FlowCounters;
use crate::packet::{Packet, PktKind, F_CE, F_CWR, F_ECE, F_ECT, F_RETX};
use aqm::{Time, NS_PER_SEC};

/// Loss recovery after three duplicate ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 5681 fast recovery: leave it on the first ACK of new data ([`reno`]).
    Reno,
    /// RFC 6582: retransmit on partial ACKs and stay in recovery ([`newreno`]).
    NewReno,
    /// RFC 6675 pipe-based recovery driven by SACK blocks ([`sack`]).
    Sack,
}

impl Recovery {
    pub fn name(self) -> &'static str {
        match self {
            Recovery::Reno => "reno",
            Recovery::NewReno => "newreno",
            Recovery::Sack => "sack",
        }
    }
}

/// Congestion-control algorithm and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CcConfig {
    /// RFC 5681 AIMD (Reno, NewReno and SACK).
    Reno,
    /// TCP Vegas as ns-2 implements it ([`vegas`]); thresholds in packets.
    Vegas { alpha: f64, beta: f64, gamma: f64 },
    /// RFC 9438 CUBIC ([`cubic`]).
    Cubic { c: f64, beta: f64, fast_convergence: bool, tcp_friendly: bool },
}

impl CcConfig {
    /// Vegas with ns-2's defaults (α = 1, β = 3, γ = 1).
    pub fn vegas() -> Self {
        CcConfig::Vegas { alpha: vegas::DEFAULT_ALPHA, beta: vegas::DEFAULT_BETA, gamma: vegas::DEFAULT_GAMMA }
    }
    /// CUBIC with RFC 9438's defaults (C = 0.4, β = 0.7, fast convergence, Reno-friendly region).
    pub fn cubic() -> Self {
        CcConfig::Cubic { c: cubic::DEFAULT_C, beta: cubic::DEFAULT_BETA, fast_convergence: true, tcp_friendly: true }
    }
}

/// The congestion-control state of one connection (enum dispatch; one arm per algorithm). Vegas's
/// state (its RTT measurement and fine-grained timeout, about 140 bytes) is on the heap, like its
/// send log, so that it does not make every other connection that size.
#[derive(Debug, Clone)]
pub enum Cc {
    Reno(reno::Reno),
    Vegas(Box<vegas::Vegas>),
    Cubic(cubic::Cubic),
}

impl Cc {
    pub fn new(cfg: &CcConfig) -> Cc {
        match cfg {
            CcConfig::Reno => Cc::Reno(reno::Reno),
            CcConfig::Vegas { alpha, beta, gamma } => Cc::Vegas(Box::new(vegas::Vegas::new(*alpha, *beta, *gamma))),
            CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
                Cc::Cubic(cubic::Cubic::new(*c, *beta, *fast_convergence, *tcp_friendly))
            }
        }
    }
}

/// Each hook of a connection's algorithm, by a `match` on the variant: a direct call the compiler
/// can inline (Reno's per-ACK growth is a few instructions), where a `dyn` call could not be.
macro_rules! dispatch {
    ($cc:expr, $c:ident => $call:expr) => {
        match $cc {
            Cc::Reno($c) => $call,
            Cc::Vegas($c) => $call,
            Cc::Cubic($c) => $call,
        }
    };
}

impl CongestionControl for Cc {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        dispatch!(self, c => c.on_ack(w, a))
    }
    #[inline]
    fn on_dup_ack(&mut self, w: &mut Window, a: &AckInfo) {
        dispatch!(self, c => c.on_dup_ack(w, a))
    }
    fn on_loss(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        dispatch!(self, c => c.on_loss(w, a))
    }
    fn on_rto(&mut self, w: &mut Window, flight: f64, now: Time) -> f64 {
        dispatch!(self, c => c.on_rto(w, flight, now))
    }
    fn on_recovery_exit(&mut self, w: &mut Window, now: Time) {
        dispatch!(self, c => c.on_recovery_exit(w, now))
    }
    #[inline]
    fn fine_timeout(&self) -> Option<Time> {
        dispatch!(self, c => c.fine_timeout())
    }
    fn on_fine_retransmit(&mut self, transmits: u32) {
        dispatch!(self, c => c.on_fine_retransmit(transmits))
    }
}

/// Per-flow TCP options (validated by the scenario loader).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Name of the variant (`tcp.variant`), for reports.
    pub variant: &'static str,
    pub cc: CcConfig,
    pub recovery: Recovery,
    /// Data segment size on the wire (bytes); also the payload counted as goodput.
    pub mss: u16,
    /// ACK size on the wire (bytes).
    pub ack_size: u16,
    /// Initial congestion window (segments).
    pub initial_window: f64,
    /// Receiver (maximum) window (segments).
    pub max_window: u32,
    pub min_rto: Time,
    pub initial_rto: Time,
    pub max_rto: Time,
    /// The RTO back-off stops doubling at `2^max_backoff_exp` (ns-2 before 2.35: 64 = 2^6).
    pub max_backoff_exp: u32,
    /// Clock granularity G of RFC 6298 (RTO = SRTT + max(G, 4 RTTVAR)).
    pub granularity: Time,
    pub dupack_threshold: u32,
    /// RFC 3042 Limited Transmit: on the first and second duplicate ACK, send one new segment if
    /// the receiver window allows and at most `cwnd + 2` would be outstanding (ns-2's `singledup_`).
    pub limited_transmit: bool,
    /// Restart the retransmission timer when a segment is retransmitted by fast retransmit or on
    /// a partial ACK (ns-2 and Linux do; RFC 6298 restarts it only on new ACKs).
    pub rto_restart_on_retransmit: bool,
    pub delayed_ack: bool,
    pub delack_count: u32,
    pub delack_timeout: Time,
    /// Credit window growth by segments acknowledged (RFC 3465, as Linux) instead of by ACKs (ns-2).
    pub byte_counting: bool,
    /// ECN (RFC 3168): new data is sent ECN-capable, the receiver echoes CE marks, and the sender
    /// halves its window at most once per window of data on an echo.
    pub ecn: bool,
}

impl TcpConfig {
    /// The simulator-wide defaults of experiments.md §1.2: ns-2.35's agents (the `ns2` preset, the
    /// same as `ns2-2.35`; older releases in [`presets`]).
    pub fn ns2() -> Self {
        TcpConfig {
            variant: "newreno",
            cc: CcConfig::Reno,
            recovery: Recovery::NewReno,
            mss: 1000,
            ack_size: 40,
            initial_window: 2.0,
            max_window: 1000,
            min_rto: NS_PER_SEC / 5,
            initial_rto: 3 * NS_PER_SEC,
            max_rto: 60 * NS_PER_SEC,
            max_backoff_exp: presets::MAX_BACKOFF_EXP,
            granularity: NS_PER_SEC / 100,
            dupack_threshold: 3,
            limited_transmit: true,
            rto_restart_on_retransmit: true,
            delayed_ack: false,
            delack_count: 2,
            delack_timeout: NS_PER_SEC / 10,
            byte_counting: false,
            ecn: false,
        }
    }

    /// Linux-like defaults (docs/tcp.md): CUBIC with SACK recovery, initial window 10 (RFC 6928),
    /// minimum RTO 200 ms with a 1 ms clock, delayed ACKs (every second segment, 40 ms), a large
    /// receive window.
    pub fn modern() -> Self {
        TcpConfig {
            variant: "cubic",
            cc: CcConfig::cubic(),
            recovery: Recovery::Sack,
            initial_window: 10.0,
            max_window: 65_535,
            granularity: NS_PER_SEC / 1000,
            initial_rto: NS_PER_SEC,
            max_rto: 120 * NS_PER_SEC,
            delayed_ack: true,
            delack_count: 2,
            delack_timeout: NS_PER_SEC / 25,
            byte_counting: true,
            ..TcpConfig::ns2()
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::ns2()
    }
}

/// Sending side of a TCP connection.
#[derive(Debug, Clone)]
pub struct TcpSender {
    /// The group's options, shared by all its senders (128 bytes that were copied into each).
    pub cfg: std::sync::Arc<TcpConfig>,
    cc: Cc,
    flow: u32,
    prio: u8,
    flags: u8,
    /// Segments the application offers (u32::MAX = unlimited).
    limit: u32,
    snd_una: u32,
    snd_nxt: u32,
    snd_max: u32,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    /// Segments sent by Limited Transmit since the last new ACK (left out of the flight size that
    /// sets `ssthresh`, RFC 5681 §3.2 step 2).
    lt_sent: u32,
    in_recovery: bool,
    /// Highest sequence number sent when recovery (or the last timeout) began; -1 initially.
    recover: i64,
    partial_seen: bool,
    srtt: f64,
    rttvar: f64,
    has_rtt: bool,
    backoff: u32,
    /// The current RTO with its back-off ([`TcpSender::rto`]), recomputed only when an RTT sample
    /// or a timeout changes it: it is read on every new ACK, and the f64 arithmetic is the same
    /// each time in between.
    rto: Time,
    timing: bool,
    timed_seq: u32,
    timed_at: Time,
    /// RTO deadline, 0 when the timer is off.
    pub rto_deadline: Time,
    /// When all offered data was acknowledged.
    pub completed_at: Option<Time>,
    /// ECN: no further reduction for echoes until `snd_una` passes this (once per window).
    ecn_recover: i64,
    /// ECN: set CWR on the next new data segment.
    cwr_pending: bool,
    /// SACK scoreboard (SACK recovery only).
    sb: Option<Box<Scoreboard>>,
    /// Send time and transmission count of every outstanding segment (only for congestion
    /// control with a fine-grained timeout, i.e. Vegas).
    log: Option<Box<SendLog>>,
    /// New ACKs still to check against the fine-grained timeout after a retransmission (ns-2's
    /// `v_worried_`).
    worried: u32,
}

/// Per-segment send times and transmission counts in a ring over the outstanding window.
#[derive(Debug, Clone)]
struct SendLog {
    at: Vec<Time>,
    transmits: Vec<u32>,
}

impl SendLog {
    fn new(max_window: u32) -> Self {
        let n = (max_window as usize + 1).next_power_of_two();
        SendLog { at: vec![0; n], transmits: vec![0; n] }
    }
    fn record(&mut self, seq: u32, now: Time, retx: bool) {
        let i = seq as usize & (self.at.len() - 1);
        self.at[i] = now;
        self.transmits[i] = if retx { self.transmits[i] + 1 } else { 1 };
    }
    fn get(&self, seq: u32) -> (Time, u32) {
        let i = seq as usize & (self.at.len() - 1);
        (self.at[i], self.transmits[i])
    }
}

impl TcpSender {
    /// A sender with options `cfg` (pass the group's shared `Arc` so that senders share them).
    pub fn new(cfg: impl Into<std::sync::Arc<TcpConfig>>, flow: u32, prio: u8, flags: u8, limit: u32) -> Self {
        let cfg: std::sync::Arc<TcpConfig> = cfg.into();
        let mut s = TcpSender {
            cc: Cc::new(&cfg.cc),
            flow,
            prio,
            flags,
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
            partial_seen: false,
            srtt: 0.0,
            rttvar: 0.0,
            has_rtt: false,
            backoff: 0,
            rto: 0,
            timing: false,
            timed_seq: 0,
            timed_at: 0,
            rto_deadline: 0,
            completed_at: None,
            ecn_recover: -1,
            cwr_pending: false,
            sb: (cfg.recovery == Recovery::Sack).then(|| Box::new(Scoreboard::new(cfg.max_window))),
            log: matches!(cfg.cc, CcConfig::Vegas { .. }).then(|| Box::new(SendLog::new(cfg.max_window))),
            worried: 0,
            cfg,
        };
        s.update_rto();
        s
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    pub fn srtt(&self) -> Option<f64> {
        self.has_rtt.then_some(self.srtt)
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// Segments acknowledged cumulatively.
    pub fn snd_una(&self) -> u32 {
        self.snd_una
    }
    /// The congestion-control state (for tests and traces).
    pub fn cc(&self) -> &Cc {
        &self.cc
    }
    /// Stop offering new data (application stop): nothing beyond what was already sent.
    pub fn stop_app(&mut self) {
        self.limit = self.limit.min(self.snd_max);
        if self.snd_una >= self.limit && self.completed_at.is_none() && self.snd_max > 0 {
            self.rto_deadline = 0;
        }
    }

    /// The connection is over: give back the SACK scoreboard's memory (a later duplicate ACK finds
    /// nothing outstanding).
    pub fn release_buffers(&mut self) {
        if self.sb.is_some() {
            self.sb = Some(Box::new(Scoreboard::new(1)));
            if let Some(sb) = self.sb.as_mut() {
                sb.advance(self.snd_una);
            }
        }
    }

    /// Any window reduction (ECN-Echo, fast retransmit, timeout) is the response to congestion in
    /// this window: no further ECN reduction until data sent after it is acknowledged, and the next
    /// new segment carries CWR (RFC 3168 §6.1.2).
    fn ecn_reduced(&mut self) {
        if self.cfg.ecn {
            self.ecn_recover = self.snd_max as i64;
            self.cwr_pending = true;
        }
    }

    /// Current retransmission timeout including back-off.
    #[inline]
    pub fn rto(&self) -> Time {
        self.rto
    }

    /// Recompute [`TcpSender::rto`] after a change of `srtt`, `rttvar` or `backoff`.
    fn update_rto(&mut self) {
        let base = if self.has_rtt {
            self.srtt + (self.cfg.granularity as f64).max(4.0 * self.rttvar)
        } else {
            self.cfg.initial_rto as f64
        };
        let base = base.max(self.cfg.min_rto as f64);
        let backed = base * (1u64 << self.backoff.min(self.cfg.max_backoff_exp)) as f64;
        self.rto = backed.min(self.cfg.max_rto as f64) as Time;
    }

    fn flight(&self) -> f64 {
        (self.snd_max - self.snd_una) as f64
    }

    fn window(&self) -> u32 {
        // `as u32` truncates toward zero and saturates (negative and NaN to 0): the same as
        // `floor() as u32` for every f64, without the call to `floor` (no SSE4.1 in the baseline
        // target)
        (self.cwnd as u32).clamp(1, self.cfg.max_window)
    }

    /// Run a congestion-control hook on the current window and keep what it leaves there.
    #[inline]
    fn hook<R>(&mut self, f: impl FnOnce(&mut Cc, &mut Window) -> R) -> R {
        let mut w = Window { cwnd: self.cwnd, ssthresh: self.ssthresh };
        let r = f(&mut self.cc, &mut w);
        self.cwnd = w.cwnd.max(1.0);
        self.ssthresh = w.ssthresh;
        r
    }

    #[inline]
    fn send_seg(&mut self, seq: u32, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        let retx = seq < self.snd_max;
        let mut flags = self.flags | if retx { F_RETX } else { 0 };
        // RFC 3168 §6.1.5: retransmissions are not ECN-capable; CWR rides on new data
        if self.cfg.ecn && !retx {
            flags |= F_ECT;
            if self.cwr_pending {
                flags |= F_CWR;
                self.cwr_pending = false;
            }
        }
        out.push(Packet {
            sent: now,
            flow: self.flow,
            seq,
            size: self.cfg.mss,
            kind: PktKind::Data,
            hop: 0,
            prio: self.prio,
            flags,
            aux: 0,
        });
        c.sent_pkts += 1;
        c.sent_bytes += self.cfg.mss as u64;
        if let Some(log) = self.log.as_mut() {
            log.record(seq, now, retx);
        }
        if retx {
            c.retx_pkts += 1;
            c.retx_bytes += self.cfg.mss as u64;
        } else {
            self.snd_max = seq + 1;
            if !self.timing {
                self.timing = true;
                self.timed_seq = seq;
                self.timed_at = now;
            }
        }
        if self.rto_deadline == 0 {
            self.rto_deadline = now.saturating_add(self.rto());
        }
    }

    /// A retransmission by fast retransmit, on a partial ACK or by SACK recovery. Re-sending the
    /// first unacknowledged segment re-arms the timer (with `rto_restart_on_retransmit`, as ns-2
    /// and Linux do); re-sending a later hole does not, so a lost retransmission of the first
    /// segment is still repaired by the timer while SACK recovery goes on.
    fn retransmit(&mut self, seq: u32, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        self.timing = false;
        self.send_seg(seq, now, out, c);
        if self.cfg.rto_restart_on_retransmit && seq == self.snd_una {
            self.rto_deadline = now.saturating_add(self.rto());
        }
    }

    #[inline]
    fn send_available(&mut self, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        if self.in_recovery && self.cfg.recovery == Recovery::Sack {
            self.sack_send(now, out, c);
            return;
        }
        // send_seg changes neither the limit nor snd_una
        let end = self.limit.min(self.snd_una.saturating_add(self.window()));
        while self.snd_nxt < end {
            let s = self.snd_nxt;
            self.send_seg(s, now, out, c);
            self.snd_nxt += 1;
        }
    }

    /// RFC 6675 §5 step (C): send while `cwnd - pipe >= 1`, each segment chosen by NextSeg.
    fn sack_send(&mut self, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        let dupthresh = self.cfg.dupack_threshold;
        loop {
            let sb = self.sb.as_ref().expect("SACK scoreboard");
            let sc = sb.scan(self.snd_max, dupthresh);
            if self.cwnd - (sc.pipe as f64) < 1.0 {
                break;
            }
            let rwnd_end = self.snd_una.saturating_add(self.cfg.max_window);
            let seg = if let Some(s) = sc.lost_rxt {
                s
            } else if self.snd_max < self.limit && self.snd_max < rwnd_end {
                self.snd_max
            } else if let Some(s) = sc.hole_rxt {
                s
            } else {
                break;
            };
            if seg < self.snd_max {
                let sb = self.sb.as_mut().expect("SACK scoreboard");
                sb.high_rxt = sb.high_rxt.max(seg + 1);
                self.retransmit(seg, now, out, c);
            } else {
                self.send_seg(seg, now, out, c);
                self.snd_nxt = self.snd_max;
            }
        }
    }

    /// The connection opens (the application has data from `now`).
    pub fn start(&mut self, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        self.send_available(now, out, c);
    }

    fn rtt_sample(&mut self, r: f64, c: &mut FlowCounters) {
        if !self.has_rtt {
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.has_rtt = true;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.backoff = 0;
        self.update_rto();
        c.rtt_samples += 1;
        c.rtt_sum_ns += r;
        c.rtt_min_ns = c.rtt_min_ns.min(r);
    }

    /// Enter loss recovery (fast retransmit): congestion control sets `ssthresh`, the recovery
    /// algorithm the window and what to retransmit.
    fn enter_recovery(&mut self, info: &AckInfo, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        c.fast_retx += 1;
        self.ssthresh = self.hook(|cc, w| cc.on_loss(w, info));
        self.recover = self.snd_max as i64 - 1;
        self.in_recovery = true;
        self.partial_seen = false;
        self.ecn_reduced();
        let now = info.now;
        match self.cfg.recovery {
            Recovery::Reno | Recovery::NewReno => {
                let s = self.snd_una;
                self.retransmit(s, now, out, c);
                // inflated by the duplicate ACKs received (the threshold, or fewer when the
                // fine-grained timeout started the retransmission)
                self.cwnd = self.ssthresh + self.dupacks as f64;
                self.send_available(now, out, c);
            }
            Recovery::Sack => {
                // RFC 6675 §5 step (4): cwnd = ssthresh, retransmit NextSeg, then step (C)
                self.cwnd = self.ssthresh.max(1.0);
                let s = self.snd_una;
                let sb = self.sb.as_mut().expect("SACK scoreboard");
                sb.high_rxt = s + 1;
                self.retransmit(s, now, out, c);
                self.sack_send(now, out, c);
            }
        }
    }

    /// The first unacknowledged segment has been out longer than the congestion control's
    /// fine-grained timeout; returns how often it was sent.
    fn fine_expired(&mut self, now: Time) -> Option<u32> {
        let log = self.log.as_ref()?;
        let to = self.cc.fine_timeout()?;
        let (at, transmits) = log.get(self.snd_una);
        (self.snd_una < self.snd_max && now.saturating_sub(at) > to).then_some(transmits)
    }

    fn exit_recovery(&mut self, now: Time) {
        self.in_recovery = false;
        self.dupacks = 0;
        self.cwnd = self.ssthresh.max(1.0);
        self.hook(|cc, w| cc.on_recovery_exit(w, now));
    }

    /// An ACK arrived at `now`: cumulative acknowledgement `ack`, `flags`, the echoed send time of
    /// the segment that triggered it, and its SACK blocks (empty without SACK).
    pub fn on_ack(
        &mut self,
        ack: u32,
        flags: u8,
        echo: Time,
        blocks: &[Block],
        now: Time,
        out: &mut Vec<Packet>,
        c: &mut FlowCounters,
    ) {
        if ack > self.snd_max {
            return; // cannot acknowledge what was never sent
        }
        // RFC 3168 §6.1.2: an ECN-Echo halves the window once per window of data, with no
        // retransmission; not during loss recovery, which already reduced it. The next reduction
        // waits for an ACK that covers the first segment sent after this one (the CWR segment),
        // and the window does not also grow on the reducing ACK.
        let flight = self.flight() - self.lt_sent as f64;
        let newly = ack.saturating_sub(self.snd_una);
        let info = AckInfo {
            now,
            acked: if self.cfg.byte_counting { newly } else { newly.min(1) },
            flight,
            rtt: (ack > self.snd_una && echo <= now).then(|| now - echo),
            srtt: self.srtt(),
            snd_una: ack.max(self.snd_una),
            snd_max: self.snd_max,
        };
        let mut reduced = false;
        if self.cfg.ecn && flags & F_ECE != 0 && !self.in_recovery && ack as i64 > self.ecn_recover {
            c.ecn_reductions += 1;
            self.ssthresh = self.hook(|cc, w| cc.on_loss(w, &info));
            // reduce, never raise (after a timeout cwnd can be below flight / 2)
            self.cwnd = self.cwnd.min(self.ssthresh);
            self.ecn_reduced();
            reduced = true;
        }
        let mut new_sack = false;
        if let Some(sb) = self.sb.as_mut() {
            sb.advance(ack.max(self.snd_una));
            new_sack = sb.mark(blocks, self.snd_max);
        }
        if ack > self.snd_una {
            if self.timing && ack > self.timed_seq {
                self.timing = false;
                self.rtt_sample(now.saturating_sub(self.timed_at) as f64, c);
            }
            let newly = ack - self.snd_una;
            self.snd_una = ack;
            self.lt_sent = 0;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            let mut restart = true;
            if self.in_recovery {
                let full = ack as i64 > self.recover;
                match self.cfg.recovery {
                    Recovery::Reno => self.exit_recovery(now),
                    _ if full => self.exit_recovery(now),
                    Recovery::NewReno => {
                        // partial acknowledgement (RFC 6582 §3.2 step 4)
                        let s = self.snd_una;
                        self.retransmit(s, now, out, c);
                        self.cwnd = newreno::deflate(self.cwnd, newly);
                        restart = !self.partial_seen;
                        self.partial_seen = true;
                    }
                    Recovery::Sack => {} // pipe-based sending below
                }
            } else {
                self.dupacks = 0;
                if !reduced {
                    self.hook(|cc, w| cc.on_ack(w, &info));
                }
            }
            if self.snd_una >= self.snd_max {
                self.rto_deadline = 0;
            } else if restart {
                self.rto_deadline = now.saturating_add(self.rto());
            }
            if self.snd_una >= self.limit && self.completed_at.is_none() {
                self.completed_at = Some(now);
                self.rto_deadline = 0;
            }
            if self.worried > 0 {
                // one of the first two new ACKs after a retransmission: retransmit the next
                // segment too if it is overdue by the fine-grained timeout (window unchanged)
                self.worried -= 1;
                if self.fine_expired(now).is_some() {
                    let s = self.snd_una;
                    self.retransmit(s, now, out, c);
                } else {
                    self.worried = 0;
                }
            }
            self.send_available(now, out, c);
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            let sack = self.cfg.recovery == Recovery::Sack;
            // RFC 6675 §2: with SACK, a duplicate ACK is one that SACKs new data
            if sack && !new_sack && !blocks.is_empty() {
                return;
            }
            self.dupacks += 1;
            if self.in_recovery {
                if !sack {
                    self.cwnd += 1.0; // inflate
                }
                self.send_available(now, out, c);
                return;
            }
            self.hook(|cc, w| cc.on_dup_ack(w, &info));
            let fine = if self.dupacks <= self.cfg.dupack_threshold { self.fine_expired(now) } else { None };
            let thresh = self.dupacks >= self.cfg.dupack_threshold
                && (sack || self.dupacks == self.cfg.dupack_threshold)
                || sack && self.sb.as_ref().is_some_and(|sb| sb.is_lost(ack, self.cfg.dupack_threshold))
                || fine.is_some();
            // no second fast retransmit for the window already being recovered, nor for duplicate
            // ACKs caused by a timeout's go-back-N (RFC 6582 §3.2 step 2; ns-2's `bug_fix_`)
            let fast = thresh && ack as i64 > self.recover;
            if !fast && self.cfg.limited_transmit && self.dupacks < self.cfg.dupack_threshold {
                self.limited_transmit(now, out, c);
            }
            if fast {
                // fast retransmit (RFC 5681 §3.2 steps 2-3, RFC 6582 §3.2 step 2, RFC 6675 §5)
                let transmits = self.log.as_ref().map(|l| l.get(self.snd_una).1);
                self.enter_recovery(&info, out, c);
                if let Some(t) = transmits {
                    // Vegas: watch the next two new ACKs, and back off the fine-grained timeout
                    self.worried = 2.min(self.snd_max - self.snd_una);
                    self.cc.on_fine_retransmit(t);
                }
            }
        }
    }

    /// RFC 3042 §2 (ns-2's `send_one`): one new segment on a first or second duplicate ACK, if
    /// the receiver window allows it and no more than `cwnd + dupacks` segments would be out.
    fn limited_transmit(&mut self, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        let s = self.snd_nxt;
        let allowed = self.snd_una.saturating_add(self.window().saturating_add(self.dupacks));
        if s < self.limit && s < self.snd_una.saturating_add(self.cfg.max_window) && s < allowed {
            self.send_seg(s, now, out, c);
            self.snd_nxt += 1;
            self.lt_sent += 1;
        }
    }

    /// The retransmission timer expired at `now` (RFC 6298 §5.4-5.6, RFC 5681 eq. 4).
    pub fn on_timeout(&mut self, now: Time, out: &mut Vec<Packet>, c: &mut FlowCounters) {
        self.rto_deadline = 0;
        if self.snd_una >= self.snd_max {
            return;
        }
        c.timeouts += 1;
        let flight = self.flight();
        self.ssthresh = self.hook(|cc, w| cc.on_rto(w, flight, now));
        self.cwnd = 1.0;
        self.backoff = (self.backoff + 1).min(20);
        self.update_rto();
        self.recover = self.snd_max as i64 - 1;
        self.in_recovery = false;
        self.dupacks = 0;
        self.lt_sent = 0;
        self.timing = false;
        self.snd_nxt = self.snd_una; // go back N
        self.worried = 0;
        if let Some(sb) = self.sb.as_mut() {
            sb.clear();
        }
        self.ecn_reduced();
        self.rto_deadline = now.saturating_add(self.rto());
        self.send_available(now, out, c);
    }
}

/// Receiving side: cumulative ACKs with an out-of-order bitmap.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    rcv_nxt: u32,
    /// Ring bitmap of segments received above `rcv_nxt` (index = seq mod capacity).
    ooo: Box<[u64]>,
    /// The bitmap grows (doubling, from one word) up to this many words: enough for `max_window`.
    max_words: usize,
    ooo_count: u32,
    ack_size: u16,
    delayed: bool,
    delack_count: u32,
    delack_timeout: Time,
    unacked: u32,
    /// Delayed-ACK deadline, 0 when off.
    pub delack_deadline: Time,
    last_echo: Time,
    prio: u8,
    /// ECN: echo ECE on every ACK from a CE mark until a CWR arrives (RFC 3168 §6.1.3).
    ece: bool,
    /// SACK blocks to report (SACK recovery only).
    sack: Option<Box<sack::SackBlocks>>,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, prio: u8) -> Self {
        let words = (cfg.max_window as usize).div_ceil(64).max(1);
        TcpReceiver {
            rcv_nxt: 0,
            ooo: vec![0u64; 1].into_boxed_slice(),
            max_words: words.next_power_of_two(),
            ooo_count: 0,
            ack_size: cfg.ack_size,
            delayed: cfg.delayed_ack,
            delack_count: cfg.delack_count,
            delack_timeout: cfg.delack_timeout,
            unacked: 0,
            delack_deadline: 0,
            last_echo: 0,
            prio,
            ece: false,
            sack: (cfg.recovery == Recovery::Sack).then(|| Box::new(sack::SackBlocks::new(cfg.max_window))),
        }
    }

    /// The SACK blocks of the ACK with serial `aux` (see [`sack`]); `None` without SACK.
    pub fn sack_blocks(&mut self, aux: u16) -> Option<sack::AckBlocks> {
        self.sack.as_mut().and_then(|s| s.read(aux))
    }

    /// The connection is over: give back the out-of-order bitmap and the SACK ring (nothing is
    /// out of order any more; a late duplicate is still acknowledged, without blocks).
    pub fn release_buffers(&mut self) {
        if self.ooo_count == 0 {
            self.ooo = vec![0u64; 1].into_boxed_slice();
        }
        if self.sack.is_some() {
            self.sack = Some(Box::new(sack::SackBlocks::new(1)));
        }
    }

    /// The received block around out-of-order segment `s` (which is set in the bitmap).
    fn block_around(&self, s: u32) -> Block {
        let (mut l, mut r) = (s, s + 1);
        while l > self.rcv_nxt + 1 && self.bit(l - 1) {
            l -= 1;
        }
        while r - self.rcv_nxt < self.cap() && self.bit(r) {
            r += 1;
        }
        (l, r)
    }

    #[inline]
    fn cap(&self) -> u32 {
        (self.ooo.len() * 64) as u32
    }

    /// Make room for segment `s` (above `rcv_nxt`) if the receive window allows it: double the
    /// ring until it reaches `s`, moving the segments already held. Memory follows how far out of
    /// order segments actually arrive, not `max_window`.
    fn make_room(&mut self, s: u32) {
        while s - self.rcv_nxt >= self.cap() && self.ooo.len() < self.max_words {
            let old_cap = self.cap();
            let held: Vec<u32> =
                (self.rcv_nxt..self.rcv_nxt + old_cap).filter(|&t| self.ooo_count > 0 && self.bit(t)).collect();
            self.ooo = vec![0u64; self.ooo.len() * 2].into_boxed_slice();
            for t in held {
                self.set(t, true);
            }
        }
    }
    #[inline]
    fn bit(&self, s: u32) -> bool {
        let i = (s % self.cap()) as usize;
        self.ooo[i / 64] >> (i % 64) & 1 == 1
    }
    #[inline]
    fn set(&mut self, s: u32, v: bool) {
        let i = (s % self.cap()) as usize;
        if v {
            self.ooo[i / 64] |= 1 << (i % 64);
        } else {
            self.ooo[i / 64] &= !(1 << (i % 64));
        }
    }

    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    /// The ACK packet for the current state.
    pub fn ack(&mut self) -> Packet {
        self.unacked = 0;
        self.delack_deadline = 0;
        Packet {
            sent: self.last_echo,
            flow: 0, // set by the caller
            seq: self.rcv_nxt,
            size: self.ack_size,
            kind: PktKind::Ack,
            hop: 0,
            prio: self.prio,
            flags: if self.ece { F_ECE } else { 0 },
            aux: self.sack.as_mut().map(|s| s.stamp()).unwrap_or(0),
        }
    }

    /// A data segment arrived. Returns true if an ACK must be sent now (otherwise the delayed-ACK
    /// deadline may have been set).
    #[inline]
    pub fn on_data(&mut self, p: &Packet, now: Time, c: &mut FlowCounters) -> bool {
        c.delivered_pkts += 1;
        c.delivered_bytes += p.size as u64;
        self.last_echo = p.sent;
        if p.flags & F_CWR != 0 {
            self.ece = false;
        }
        if p.flags & F_CE != 0 {
            c.ce_marks += 1;
            self.ece = true;
        }
        let s = p.seq;
        let mut first = false;
        let mut filled_hole = false;
        if s == self.rcv_nxt {
            first = true;
            self.rcv_nxt += 1;
            while self.ooo_count > 0 && self.bit(self.rcv_nxt) {
                let r = self.rcv_nxt;
                self.set(r, false);
                self.ooo_count -= 1;
                self.rcv_nxt += 1;
                filled_hole = true;
            }
        } else if s > self.rcv_nxt
            && {
                self.make_room(s);
                s - self.rcv_nxt < self.cap()
            }
            && !self.bit(s)
        {
            first = true;
            self.set(s, true);
            self.ooo_count += 1;
        }
        if self.sack.is_some() {
            let blk = (s > self.rcv_nxt && s - self.rcv_nxt < self.cap() && self.bit(s)).then(|| self.block_around(s));
            let nxt = self.rcv_nxt;
            self.sack.as_mut().expect("sack").update(blk, nxt);
        }
        if first {
            c.unique_pkts += 1;
            c.unique_bytes += p.size as u64;
            c.max_seq_rcvd = c.max_seq_rcvd.max(s as u64 + 1);
        }
        if !self.delayed {
            return true;
        }
        let in_order = s + 1 == self.rcv_nxt && !filled_hole && self.ooo_count == 0 && first;
        if !in_order {
            return true;
        }
        self.unacked += 1;
        if self.unacked >= self.delack_count {
            return true;
        }
        if self.delack_deadline == 0 {
            self.delack_deadline = now.saturating_add(self.delack_timeout);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u32) -> Packet {
        Packet { sent: 0, flow: 0, seq, size: 1000, kind: PktKind::Data, hop: 0, prio: 1, flags: 0, aux: 0 }
    }

    #[test]
    fn receiver_counts_unique_and_acks_cumulatively() {
        let cfg = TcpConfig::default();
        let mut r = TcpReceiver::new(&cfg, 1);
        let mut c = FlowCounters::default();
        for s in [0, 1, 3, 4, 2, 2, 5, 1] {
            assert!(r.on_data(&data(s), 0, &mut c));
        }
        assert_eq!(r.rcv_nxt(), 6);
        assert_eq!(c.delivered_pkts, 8);
        assert_eq!(c.unique_pkts, 6);
        assert_eq!(c.unique_bytes, 6000);
    }

    #[test]
    fn slow_start_then_fast_retransmit_then_partial_and_full_ack() {
        let cfg = TcpConfig { limited_transmit: false, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        assert_eq!(out.len(), 2); // IW = 2
        out.clear();
        // ACK 1 and 2: slow start, cwnd 2 -> 4, each ACK releases 2 segments
        s.on_ack(1, 0, 0, &[], 10, &mut out, &mut c);
        s.on_ack(2, 0, 0, &[], 11, &mut out, &mut c);
        assert_eq!(s.cwnd(), 4.0);
        assert_eq!(out.len(), 4);
        assert_eq!(out.last().unwrap().seq, 5);
        out.clear();
        // segment 2 and 4 lost: dup ACKs for 2 (from 3, 5)... use 3 dupacks
        for _ in 0..3 {
            s.on_ack(2, 0, 0, &[], 20, &mut out, &mut c);
        }
        assert_eq!(c.fast_retx, 1);
        assert_eq!(out[0].seq, 2);
        assert!(out[0].flags & F_RETX != 0);
        // flight was 4 (2..=5) -> ssthresh 2, cwnd 2 + 3
        assert_eq!(s.ssthresh(), 2.0);
        assert_eq!(s.cwnd(), 5.0);
        out.clear();
        // partial ACK up to 4 (segment 4 also lost): retransmit 4, deflate by 2, add 1
        s.on_ack(4, 0, 0, &[], 30, &mut out, &mut c);
        assert_eq!(out[0].seq, 4);
        assert_eq!(s.cwnd(), 4.0);
        out.clear();
        // full ACK beyond recover (5): cwnd = ssthresh
        s.on_ack(6, 0, 0, &[], 40, &mut out, &mut c);
        assert_eq!(s.cwnd(), 2.0);
        assert_eq!(c.timeouts, 0);
    }

    #[test]
    fn limited_transmit_sends_one_new_segment_per_early_dupack() {
        let mut s = TcpSender::new(TcpConfig::default(), 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        s.on_ack(1, 0, 0, &[], 10, &mut out, &mut c);
        s.on_ack(2, 0, 0, &[], 11, &mut out, &mut c);
        assert_eq!(s.cwnd(), 4.0); // segments 2..=5 out
        out.clear();
        // first and second duplicate ACK: segments 6 and 7 (RFC 3042), cwnd unchanged
        s.on_ack(2, 0, 0, &[], 20, &mut out, &mut c);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![6]);
        s.on_ack(2, 0, 0, &[], 21, &mut out, &mut c);
        assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![6, 7]);
        assert_eq!(s.cwnd(), 4.0);
        out.clear();
        // third: fast retransmit; ssthresh from the flight before Limited Transmit (4 / 2)
        s.on_ack(2, 0, 0, &[], 22, &mut out, &mut c);
        assert_eq!(c.fast_retx, 1);
        assert_eq!(out[0].seq, 2);
        assert_eq!(s.ssthresh(), 2.0);
        // without it, nothing is sent before the third duplicate ACK
        let mut s = TcpSender::new(TcpConfig { limited_transmit: false, ..TcpConfig::default() }, 0, 1, 0, u32::MAX);
        s.start(0, &mut out, &mut c);
        s.on_ack(1, 0, 0, &[], 10, &mut out, &mut c);
        out.clear();
        s.on_ack(1, 0, 0, &[], 20, &mut out, &mut c);
        s.on_ack(1, 0, 0, &[], 21, &mut out, &mut c);
        assert!(out.is_empty());
    }

    #[test]
    fn ns2_2_1b9_backoff_stops_at_64() {
        let cfg = presets::preset("ns2-2.1b9").unwrap();
        let mut s = TcpSender::new(cfg, 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        assert_eq!(s.rto(), 6 * NS_PER_SEC); // rtxcur_init_
        let mut now = 0;
        for _ in 0..10 {
            now += s.rto();
            s.on_timeout(now, &mut out, &mut c);
        }
        assert_eq!(s.rto(), 64 * 6 * NS_PER_SEC);
        let mut s = TcpSender::new(presets::preset("ns2-2.35").unwrap(), 0, 1, 0, u32::MAX);
        s.start(0, &mut out, &mut c);
        for _ in 0..10 {
            now += s.rto();
            s.on_timeout(now, &mut out, &mut c);
        }
        assert_eq!(s.rto(), 60 * NS_PER_SEC); // maxrto_ only
    }

    #[test]
    fn timeout_backs_off_and_goes_back_n() {
        let cfg = TcpConfig::default();
        let mut s = TcpSender::new(cfg, 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        assert_eq!(s.rto(), 3 * NS_PER_SEC);
        out.clear();
        s.on_timeout(3 * NS_PER_SEC, &mut out, &mut c);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 0);
        assert_eq!(s.rto(), 6 * NS_PER_SEC);
        assert_eq!(s.rto_deadline, 9 * NS_PER_SEC);
        // Karn: the retransmitted segment is not timed; a later new segment gives the sample that
        // clears the back-off.
        out.clear();
        s.on_ack(1, 0, 0, &[], 3 * NS_PER_SEC + 50_000_000, &mut out, &mut c);
        assert_eq!(c.rtt_samples, 0);
        assert_eq!(s.rto(), 6 * NS_PER_SEC);
        let seq = out.iter().map(|p| p.seq).max().unwrap();
        s.on_ack(seq + 1, 0, 0, &[], 3 * NS_PER_SEC + 100_000_000, &mut out, &mut c);
        assert_eq!(c.rtt_samples, 1);
        // one sample R = 50 ms: RTO = R + max(G, 2R) = 150 ms, floored at min_rto 200 ms
        assert_eq!(s.rto(), NS_PER_SEC / 5);
    }

    #[test]
    fn ecn_echo_halves_once_per_window_and_sets_cwr() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        assert!(out.iter().all(|p| p.flags & F_ECT != 0), "new data is ECN-capable");
        for a in 1..=6 {
            s.on_ack(a, 0, 0, &[], a as Time, &mut out, &mut c);
        }
        let before = s.cwnd();
        let flight = (s.snd_max - s.snd_una) as f64;
        out.clear();
        // an ECN-Echo: halve (ssthresh = flight / 2), no retransmission
        s.on_ack(7, F_ECE, 0, &[], 10, &mut out, &mut c);
        assert_eq!(c.ecn_reductions, 1);
        assert_eq!(s.cwnd(), (flight / 2.0).max(2.0));
        assert!(s.cwnd() < before);
        assert!(out.iter().all(|p| p.flags & F_RETX == 0));
        // further echoes before the CWR segment is acknowledged do not reduce again, and the
        // first new segment after the reduction carries CWR (only it)
        let mut a = 7;
        while out.is_empty() {
            a += 1;
            s.on_ack(a, F_ECE, 0, &[], 11, &mut out, &mut c);
        }
        assert_eq!(c.ecn_reductions, 1);
        assert!(out[0].flags & F_CWR != 0);
        assert!(out[1..].iter().all(|p| p.flags & F_CWR == 0));
        // retransmissions are never ECN-capable
        out.clear();
        s.on_timeout(5 * NS_PER_SEC, &mut out, &mut c);
        assert!(out.iter().all(|p| p.flags & F_RETX == 0 || p.flags & F_ECT == 0));
    }

    #[test]
    fn receiver_echoes_ce_until_cwr() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&cfg, 1);
        let mut c = FlowCounters::default();
        let mut d = data(0);
        d.flags = F_ECT | F_CE;
        r.on_data(&d, 0, &mut c);
        assert!(r.ack().flags & F_ECE != 0);
        r.on_data(&data(1), 0, &mut c);
        assert!(r.ack().flags & F_ECE != 0, "ECE stays until CWR");
        let mut w = data(2);
        w.flags = F_ECT | F_CWR;
        r.on_data(&w, 0, &mut c);
        assert!(r.ack().flags & F_ECE == 0);
        assert_eq!(c.ce_marks, 1);
    }

    #[test]
    fn a_loss_reduction_is_the_ecn_response_for_its_window() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut s = TcpSender::new(cfg, 0, 1, 0, u32::MAX);
        let mut out = Vec::new();
        let mut c = FlowCounters::default();
        s.start(0, &mut out, &mut c);
        for a in 1..=6 {
            s.on_ack(a, 0, 0, &[], a as Time, &mut out, &mut c);
        }
        // three duplicate ACKs: fast retransmit halves the window
        for _ in 0..3 {
            s.on_ack(6, 0, 0, &[], 10, &mut out, &mut c);
        }
        assert_eq!(c.fast_retx, 1);
        // the full ACK ends recovery; an echo for data of the same window must not halve again
        let full = s.snd_max;
        s.on_ack(full, F_ECE, 0, &[], 20, &mut out, &mut c);
        assert_eq!(c.ecn_reductions, 0);
        // after a timeout, an echo never raises cwnd above its post-timeout value
        out.clear();
        s.on_timeout(10 * NS_PER_SEC, &mut out, &mut c);
        assert_eq!(s.cwnd(), 1.0);
    }
}
