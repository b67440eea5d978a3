//! BBR v1 congestion control, with the state machine as Linux's `net/ipv4/tcp_bbr.c` runs it.
//!
//! Reference: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson, "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016; the constants and the order of
//! the per-ACK steps are Linux's (`bbr_main`: update the model, then set the pacing rate and the
//! window). Documentation: docs/tcp.md.
//!
//! * **Model.** Every ACK of new data carries a delivery-rate sample (`super::cc::RateSample`,
//!   Linux's `tcp_rate.c`): the bottleneck bandwidth `BtlBw` is the maximum of the samples over
//!   the last 10 round trips (application-limited samples only when they raise it; samples over
//!   less than `min_rtt` are ignored, as Linux), and `RTprop` (`min_rtt`) the minimum RTT over
//!   10 s. A round trip ends when a segment sent after the previous round's end is acknowledged.
//! * **Startup**: pacing and window gains `2/ln 2 ≈ 2.885`; left when the bandwidth has not grown
//!   by 25 % for three rounds ("full pipe"). **Drain**: pacing gain `1/2.885` until what is in
//!   flight fits one BDP. **ProbeBW**: the pacing gain cycles through `1.25, 0.75, 1, 1, 1, 1, 1,
//!   1`, one phase per `min_rtt` (the 1.25 phase longer until in flight reaches 1.25 BDP or a
//!   loss, the 0.75 phase shorter once in flight is down to one BDP), entered at a pseudo-random
//!   phase other than 0.75; window gain 2. **ProbeRTT**: when `min_rtt` is 10 s old, the window
//!   drops to 4 segments for 200 ms and one round trip, then the previous window is restored.
//! * **Pacing rate** `gain · BtlBw · 0.99` (Linux's 1 % margin), never lowered before the pipe
//!   is full; before the first RTT sample `2.885 · initial window / 1 ms`, after it from the
//!   smoothed RTT. **Window**: `cwnd_gain · BDP` plus Linux's quantisation allowance (three
//!   send quanta of 1 or 2 segments, rounded up to even, +2 in the 1.25 phase), grown towards
//!   it by the segments each ACK delivers, at least 4.
//! * **Loss** (a deviation from Linux, which keeps its own window through recovery with packet
//!   conservation): BBR keeps `ssthresh = cwnd`, so the sender's loss recovery (SACK, RFC 6675)
//!   runs with the window BBR had, and the window is restored to at least that when recovery
//!   ends; the model (bandwidth, RTT, state machine, pacing rate) keeps running during recovery.
//!   After a timeout the window restarts at one segment and grows back by the delivered
//!   segments, as Linux.

use super::cc::{AckInfo, CongestionControl, Window};
use aqm::{Time, NS_PER_SEC};

/// `2/ln 2`: the smallest gain that doubles the delivery rate each round (Linux `bbr_high_gain`
/// is 2885/1000).
pub const HIGH_GAIN: f64 = 2885.0 / 1000.0;
const DRAIN_GAIN: f64 = 1000.0 / 2885.0;
const CWND_GAIN: f64 = 2.0;
const PACING_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BW_ROUNDS: usize = 10;
const MIN_RTT_WINDOW: Time = 10 * NS_PER_SEC;
const PROBE_RTT_TIME: Time = 200_000_000;
const MIN_CWND: f64 = 4.0;
const FULL_BW_THRESH: f64 = 1.25;
const FULL_BW_COUNT: u32 = 3;
const PACING_MARGIN: f64 = 0.99;
/// Linux's `TCP_INIT_CWND`, the window before `min_rtt` is known.
const INIT_CWND: f64 = 10.0;

/// BBR's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// BBR's state (on the heap in [`super::dispatch::Cc`]: about 250 bytes).
#[derive(Debug, Clone)]
pub struct Bbr {
    mss: f64,
    pub mode: Mode,
    /// Windowed maximum of the bandwidth samples (segments per ns) per round, indexed by round.
    bw_max: [f64; BW_ROUNDS],
    bw_round: [u64; BW_ROUNDS],
    /// `RTprop` (ns; `Time::MAX` before the first sample) and when it was taken.
    pub min_rtt: Time,
    min_rtt_stamp: Time,
    round_count: u64,
    next_rtt_delivered: u64,
    round_start: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    full_bw: f64,
    full_bw_count: u32,
    pub full_bw_reached: bool,
    pub cycle_idx: usize,
    cycle_stamp: Time,
    probe_rtt_done: Time,
    probe_rtt_round_done: bool,
    prior_cwnd: f64,
    delivered: u64,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::new(1000)
    }
}

impl Bbr {
    pub fn new(mss: u16) -> Self {
        Bbr {
            mss: mss as f64,
            mode: Mode::Startup,
            bw_max: [0.0; BW_ROUNDS],
            bw_round: [0; BW_ROUNDS],
            min_rtt: Time::MAX,
            min_rtt_stamp: 0,
            round_count: 0,
            next_rtt_delivered: 0,
            round_start: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: 0,
            probe_rtt_done: 0,
            probe_rtt_round_done: false,
            prior_cwnd: 0.0,
            delivered: 0,
        }
    }

    /// `BtlBw`: the largest sample of the last 10 rounds, segments per ns.
    pub fn max_bw(&self) -> f64 {
        let oldest = self.round_count.saturating_sub(BW_ROUNDS as u64 - 1);
        (0..BW_ROUNDS).filter(|&i| self.bw_round[i] >= oldest).map(|i| self.bw_max[i]).fold(0.0, f64::max)
    }

    /// The bandwidth estimate in bits per second (for traces and tests).
    pub fn btl_bw_bps(&self) -> f64 {
        self.max_bw() * self.mss * 8.0 * 1e9
    }

    /// `gain · BDP` in segments, rounded up (Linux `bbr_bdp`); the initial window before a min_rtt.
    fn bdp(&self, bw: f64, gain: f64) -> f64 {
        if self.min_rtt == Time::MAX {
            return INIT_CWND;
        }
        (bw * self.min_rtt as f64 * gain).ceil()
    }

    /// `bbr_inflight` with the quantisation allowance (`bbr_quantization_budget`).
    fn target_cwnd(&self, bw: f64, gain: f64, pacing_rate: f64) -> f64 {
        let min_tso = if pacing_rate < 1.2e6 / 8.0 { 1.0 } else { 2.0 };
        let tso_goal = (pacing_rate / 1024.0 / self.mss).floor().clamp(min_tso, 127.0);
        let mut cwnd = self.bdp(bw, gain) + 3.0 * tso_goal;
        cwnd = 2.0 * (cwnd / 2.0).ceil();
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2.0;
        }
        cwnd
    }

    fn update_bw(&mut self, a: &AckInfo) {
        self.round_start = false;
        let rs = &a.rs;
        if rs.interval == 0 || rs.delivered == 0 {
            return;
        }
        self.delivered = rs.total_delivered;
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = rs.total_delivered;
            self.round_count += 1;
            self.round_start = true;
        }
        // Linux discards a sample over less than min_rtt (tcp_rate_gen): it measured a burst
        if self.min_rtt != Time::MAX && rs.interval < self.min_rtt {
            return;
        }
        let bw = rs.delivered as f64 / rs.interval as f64;
        if !rs.app_limited || bw >= self.max_bw() {
            let i = (self.round_count % BW_ROUNDS as u64) as usize;
            if self.bw_round[i] != self.round_count {
                self.bw_round[i] = self.round_count;
                self.bw_max[i] = 0.0;
            }
            self.bw_max[i] = self.bw_max[i].max(bw);
        }
    }

    fn advance_cycle(&mut self, now: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAINS.len();
        self.cycle_stamp = now;
    }

    fn update_cycle_phase(&mut self, a: &AckInfo, lost: bool, pacing_rate: f64) {
        if self.mode != Mode::ProbeBw {
            return;
        }
        let gain = PACING_GAINS[self.cycle_idx];
        let full_length = a.now.saturating_sub(self.cycle_stamp) > self.min_rtt;
        let bw = self.max_bw();
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (lost || a.flight >= self.target_cwnd(bw, gain, pacing_rate))
        } else {
            full_length || a.flight <= self.target_cwnd(bw, 1.0, pacing_rate)
        };
        if next {
            self.advance_cycle(a.now);
        }
    }

    fn enter_probe_bw(&mut self, a: &AckInfo) {
        self.mode = Mode::ProbeBw;
        // a phase drawn among the seven that are not 0.75 (Linux: CYCLE_LEN − 1 − random(7),
        // then one step); the draw mixes the connection's state, so that flows differ
        let z = (self.delivered ^ a.now.rotate_left(17) ^ self.min_rtt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.cycle_idx = PACING_GAINS.len() - 1 - ((z >> 33) % 7) as usize;
        self.advance_cycle(a.now);
    }

    fn check_full_bw(&mut self, a: &AckInfo) {
        if self.full_bw_reached || !self.round_start || a.rs.app_limited {
            return;
        }
        let bw = self.max_bw();
        if bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_COUNT;
    }

    fn check_drain(&mut self, w: &mut Window, a: &AckInfo, pacing_rate: f64) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.target_cwnd(self.max_bw(), 1.0, pacing_rate);
        }
        let in_flight = (a.snd_max - a.snd_una) as f64;
        if self.mode == Mode::Drain && in_flight <= self.target_cwnd(self.max_bw(), 1.0, pacing_rate) {
            self.enter_probe_bw(a);
        }
    }

    fn update_min_rtt(&mut self, w: &mut Window, a: &AckInfo) {
        let expired = a.now > self.min_rtt_stamp.saturating_add(MIN_RTT_WINDOW);
        if let Some(rtt) = a.rtt {
            if rtt < self.min_rtt || expired {
                self.min_rtt = rtt.max(1);
                self.min_rtt_stamp = a.now;
            }
        }
        if expired && self.mode != Mode::ProbeRtt && self.min_rtt != Time::MAX {
            self.mode = Mode::ProbeRtt;
            self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
            self.probe_rtt_done = 0;
        }
        if self.mode == Mode::ProbeRtt {
            let in_flight = (a.snd_max - a.snd_una) as f64;
            if self.probe_rtt_done == 0 && in_flight <= MIN_CWND {
                self.probe_rtt_done = a.now + PROBE_RTT_TIME;
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = self.delivered;
            } else if self.probe_rtt_done != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && a.now > self.probe_rtt_done {
                    self.min_rtt_stamp = a.now;
                    w.cwnd = w.cwnd.max(self.prior_cwnd);
                    self.prior_cwnd = 0.0;
                    if self.full_bw_reached {
                        self.enter_probe_bw(a);
                    } else {
                        self.mode = Mode::Startup;
                    }
                }
            }
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw => (PACING_GAINS[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn set_pacing_rate(&mut self, w: &mut Window, a: &AckInfo) {
        let bw = self.max_bw();
        if bw == 0.0 || self.min_rtt == Time::MAX {
            // before a bandwidth sample: high_gain · cwnd / RTT (1 ms without one), as bbr_init
            let rtt = a.srtt.unwrap_or(1e6).max(1.0);
            let r = HIGH_GAIN * w.cwnd * self.mss * 1e9 / rtt;
            if w.pacing_rate == 0.0 || r > w.pacing_rate {
                w.pacing_rate = r;
            }
            return;
        }
        let rate = self.pacing_gain * bw * self.mss * 1e9 * PACING_MARGIN;
        if self.full_bw_reached || rate > w.pacing_rate {
            w.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, w: &mut Window, a: &AckInfo) {
        if !a.in_recovery {
            let target = self.target_cwnd(self.max_bw(), self.cwnd_gain, w.pacing_rate);
            let acked = a.newly as f64;
            if self.full_bw_reached {
                w.cwnd = (w.cwnd + acked).min(target);
            } else if w.cwnd < target || (self.delivered as f64) < INIT_CWND {
                w.cwnd += acked;
            }
            w.cwnd = w.cwnd.max(MIN_CWND);
        }
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(MIN_CWND);
        }
    }
}

impl CongestionControl for Bbr {
    /// `bbr_main`: the model, then the pacing rate and the window.
    fn on_any_ack(&mut self, w: &mut Window, a: &AckInfo) {
        let pacing_rate = w.pacing_rate;
        self.update_bw(a);
        self.update_cycle_phase(a, a.in_recovery, pacing_rate);
        self.check_full_bw(a);
        self.check_drain(w, a, pacing_rate);
        self.update_min_rtt(w, a);
        self.update_gains();
        self.set_pacing_rate(w, a);
        self.set_cwnd(w, a);
    }

    /// The window is BBR's, set in [`Bbr::on_any_ack`].
    fn on_ack(&mut self, _w: &mut Window, _a: &AckInfo) {}

    /// BBR does not reduce on loss (Linux `bbr_ssthresh` keeps `ssthresh`); it remembers the
    /// window to restore after recovery.
    fn on_loss(&mut self, w: &mut Window, _a: &AckInfo) -> f64 {
        self.prior_cwnd = w.cwnd;
        w.cwnd
    }

    fn on_rto(&mut self, w: &mut Window, _flight: f64, _now: Time) -> f64 {
        self.prior_cwnd = w.cwnd;
        w.cwnd
    }

    /// BBR v1 does not answer ECN: the window stays.
    fn on_ecn(&mut self, w: &mut Window, _a: &AckInfo) -> f64 {
        w.cwnd
    }

    fn on_recovery_exit(&mut self, w: &mut Window, _now: Time) {
        w.cwnd = w.cwnd.max(self.prior_cwnd);
    }
}
