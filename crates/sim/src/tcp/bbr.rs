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
//! * **ACK aggregation** (`bbr_update_ack_aggregation`, Linux ≥ 5.1): the segments delivered
//!   beyond what the bandwidth estimate explains since the start of an aggregation epoch (reset
//!   when ACKs arrive no faster than expected), their maximum over 5–10 rounds
//!   (`extra_acked`), at most the window and 100 ms at the estimated rate, is added to the target
//!   window once the pipe is full, so inter-ACK silences do not starve the sender.
//! * **Long-term bandwidth** (`bbr_lt_bw_sampling`, policer detection): from the first loss,
//!   intervals of 4–16 rounds are timed; an interval that ends with a loss rate of 20 % or more
//!   gives a long-term rate (delivered / interval), and two consecutive such rates within 1/8
//!   (or 4 kb/s) of each other make BBR believe it is policed: it then paces at their mean with
//!   gain 1 for 48 rounds (`lt_use_bw`), and starts over. Needs the loss marks of RACK-TLP
//!   recovery (`tcp.rack`); without them it never starts.
//! * **Loss, with RACK-TLP recovery** (`tcp.rack`, as Linux: BBR's `cong_control` sets the
//!   window in every state, `bbr_set_cwnd_to_recover_or_restore`): the segments newly deemed lost
//!   come off the window; on entering fast recovery the window is cut to what is in flight plus
//!   what this ACK delivered, and for the first round of recovery it is *packet conservation*
//!   (at least in flight + delivered: a segment out per segment delivered); after that round it
//!   grows towards the target as always (at most two out per one delivered); on leaving recovery
//!   (or the loss state after a timeout) it is restored to at least the window saved when the
//!   loss began (`bbr_save_cwnd`). A timeout (`bbr_set_state(TCP_CA_Loss)`) also ends the round,
//!   restarts the full-pipe detection and counts as a loss for the long-term sampling; the
//!   sender sets the window to what is in flight plus one and BBR grows it back.
//! * **Loss, with RFC 6675 recovery** (without `tcp.rack`): BBR keeps `ssthresh = cwnd`, so the
//!   sender's SACK recovery runs with the window BBR had, which is restored to at least that when
//!   recovery ends; the model keeps running during recovery. After a timeout the window restarts
//!   at one segment and grows back by the delivered segments.

use super::cc::{AckInfo, CaState, CongestionControl, Window};
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
/// Long-term sampling (`bbr_lt_*`): interval length in rounds, the lossy threshold (50/256 =
/// 20 %), consistency (1/8, or 4 kb/s) and how long a policed rate is used.
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF_BPS: f64 = 4000.0;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_*`): window of the maximum in rounds, its cap in time, and the
/// segments after which an epoch is restarted.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const EXTRA_ACKED_MAX: Time = 100_000_000;
const ACK_EPOCH_RESET: u64 = 1 << 20;

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
    /// Linux-recovery state: the recovery state at the previous ACK, and packet conservation on.
    prev_state: CaState,
    packet_conservation: bool,
    /// Segments deemed lost so far (Linux `tp->lost`).
    lost: u64,
    /// Long-term sampling: on, using `lt_bw` (segments per ns), rounds in the interval, and where
    /// the interval started (time, delivered, lost).
    lt_is_sampling: bool,
    pub lt_use_bw: bool,
    lt_bw: f64,
    lt_rtt_cnt: u32,
    lt_last_stamp: Time,
    lt_last_delivered: u64,
    lt_last_lost: u64,
    /// ACK aggregation: the epoch's start and segments, the two windows' maxima, their age and
    /// which is current.
    ack_epoch_start: Time,
    ack_epoch_acked: u64,
    extra_acked: [f64; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
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
            prev_state: CaState::Open,
            packet_conservation: false,
            lost: 0,
            lt_is_sampling: false,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_rtt_cnt: 0,
            lt_last_stamp: 0,
            lt_last_delivered: 0,
            lt_last_lost: 0,
            ack_epoch_start: 0,
            ack_epoch_acked: 0,
            extra_acked: [0.0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
        }
    }

    /// The bandwidth the model uses (`bbr_bw`): the long-term rate when policed, else `BtlBw`.
    pub fn bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// Segments in flight: Linux's count with RACK-TLP recovery, else outstanding.
    fn in_flight(a: &AckInfo) -> f64 {
        if a.linux {
            a.in_flight
        } else {
            (a.snd_max - a.snd_una) as f64
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
        self.quantize(self.bdp(bw, gain), pacing_rate)
    }

    /// `bbr_quantization_budget`: three send quanta more, rounded up to even, +2 in the 1.25 phase.
    fn quantize(&self, cwnd: f64, pacing_rate: f64) -> f64 {
        let min_tso = if pacing_rate < 1.2e6 / 8.0 { 1.0 } else { 2.0 };
        let tso_goal = (pacing_rate / 1024.0 / self.mss).floor().clamp(min_tso, 127.0);
        let mut cwnd = cwnd + 3.0 * tso_goal;
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
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(a.now, a.lost, rs.app_limited);
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

    /// Start a long-term sampling interval (`bbr_reset_lt_bw_sampling_interval`).
    fn lt_reset_interval(&mut self, now: Time) {
        self.lt_last_stamp = now;
        self.lt_last_delivered = self.delivered;
        self.lt_last_lost = self.lost;
        self.lt_rtt_cnt = 0;
    }

    fn lt_reset(&mut self, now: Time) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.lt_reset_interval(now);
    }

    /// `bbr_lt_bw_sampling`: `losses` segments were newly deemed lost on this ACK.
    fn lt_bw_sampling(&mut self, now: Time, losses: u32, app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.lt_reset(now);
                    self.enter_probe_bw_at(now);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if losses == 0 {
                return; // wait for the first loss: a policer's tokens are spent
            }
            self.lt_reset_interval(now);
            self.lt_is_sampling = true;
        }
        if app_limited {
            return self.lt_reset(now);
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            return self.lt_reset(now);
        }
        if losses == 0 {
            return; // the interval ends with a loss
        }
        let lost = (self.lost - self.lt_last_lost) as f64;
        let delivered = (self.delivered - self.lt_last_delivered) as f64;
        if delivered == 0.0 || lost < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = now.saturating_sub(self.lt_last_stamp);
        if t < 1_000_000 {
            return; // less than a millisecond
        }
        let bw = delivered / t as f64;
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw || diff * self.mss * 8.0 * 1e9 <= LT_BW_DIFF_BPS {
                // two lossy intervals at a consistent rate: policed
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.lt_reset_interval(now);
    }

    /// `bbr_update_ack_aggregation`: `acked` segments were delivered on this ACK at `now`.
    fn update_ack_aggregation(&mut self, a: &AckInfo, cwnd: f64) {
        let acked = a.delivered as u64;
        if acked == 0 || a.rs.interval == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(31);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0.0;
            }
        }
        let mut expected = self.bw() * a.now.saturating_sub(self.ack_epoch_start) as f64;
        if self.ack_epoch_acked as f64 <= expected || self.ack_epoch_acked + acked >= ACK_EPOCH_RESET {
            self.ack_epoch_acked = 0;
            self.ack_epoch_start = a.now;
            expected = 0.0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + acked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked as f64 - expected).min(cwnd);
        let i = self.extra_acked_win_idx;
        self.extra_acked[i] = self.extra_acked[i].max(extra);
    }

    /// `bbr_ack_aggregation_cwnd`: the window's allowance for ACK aggregation, once the pipe is
    /// full (segments, whole as Linux's).
    fn aggregation_cwnd(&self) -> f64 {
        if !self.full_bw_reached {
            return 0.0;
        }
        let max = self.bw() * EXTRA_ACKED_MAX as f64;
        self.extra_acked[0].max(self.extra_acked[1]).floor().min(max.floor())
    }

    /// `bbr_save_cwnd`: remember the window to restore after recovery or ProbeRTT.
    fn save_cwnd(&mut self, cwnd: f64) {
        if self.prev_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
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
        let gain = self.pacing_gain;
        let full_length = a.now.saturating_sub(self.cycle_stamp) > self.min_rtt;
        let bw = self.max_bw();
        let inflight = if a.linux { a.prior_in_flight } else { a.flight };
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (lost || inflight >= self.target_cwnd(bw, gain, pacing_rate))
        } else {
            full_length || inflight <= self.target_cwnd(bw, 1.0, pacing_rate)
        };
        if next {
            self.advance_cycle(a.now);
        }
    }

    fn enter_probe_bw(&mut self, a: &AckInfo) {
        self.enter_probe_bw_at(a.now);
    }

    fn enter_probe_bw_at(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        // a phase drawn among the seven that are not 0.75 (Linux: CYCLE_LEN − 1 − random(7),
        // then one step); the draw mixes the connection's state, so that flows differ
        let z = (self.delivered ^ now.rotate_left(17) ^ self.min_rtt.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.cycle_idx = PACING_GAINS.len() - 1 - ((z >> 33) % 7) as usize;
        self.advance_cycle(now);
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
        if self.mode == Mode::Drain && Self::in_flight(a) <= self.target_cwnd(self.max_bw(), 1.0, pacing_rate) {
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
            if a.linux {
                self.save_cwnd(w.cwnd);
            } else {
                self.prior_cwnd = self.prior_cwnd.max(w.cwnd);
            }
            self.mode = Mode::ProbeRtt;
            self.probe_rtt_done = 0;
        }
        if self.mode == Mode::ProbeRtt {
            let in_flight = Self::in_flight(a);
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
            Mode::ProbeBw => (if self.lt_use_bw { 1.0 } else { PACING_GAINS[self.cycle_idx] }, CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn set_pacing_rate(&mut self, w: &mut Window, a: &AckInfo) {
        let bw = self.bw();
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

    /// `bbr_set_cwnd` with RACK-TLP recovery (Linux): the window in every state.
    fn set_cwnd_linux(&mut self, w: &mut Window, a: &AckInfo) {
        let acked = a.delivered as f64;
        if acked > 0.0 {
            // bbr_set_cwnd_to_recover_or_restore
            let mut cwnd = w.cwnd;
            if a.lost > 0 {
                cwnd = (cwnd - a.lost as f64).max(1.0);
            }
            if a.state == CaState::Recovery && self.prev_state != CaState::Recovery {
                self.packet_conservation = true;
                self.next_rtt_delivered = self.delivered; // the round starts now
                cwnd = a.in_flight + acked;
            } else if self.prev_state >= CaState::Recovery && a.state < CaState::Recovery {
                cwnd = cwnd.max(self.prior_cwnd);
                self.packet_conservation = false;
            }
            self.prev_state = a.state;
            if self.packet_conservation {
                w.cwnd = cwnd.max(a.in_flight + acked);
            } else {
                let bw = self.bw();
                let target = self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd();
                let target = self.quantize(target, w.pacing_rate);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || (self.delivered as f64) < INIT_CWND {
                    cwnd += acked;
                }
                w.cwnd = cwnd.max(MIN_CWND);
            }
        }
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(MIN_CWND);
        }
    }

    fn set_cwnd(&mut self, w: &mut Window, a: &AckInfo) {
        if a.linux {
            return self.set_cwnd_linux(w, a);
        }
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
        self.lost += a.lost as u64;
        self.update_bw(a);
        self.update_ack_aggregation(a, w.cwnd);
        let lost = if a.linux { a.lost > 0 } else { a.in_recovery };
        self.update_cycle_phase(a, lost, pacing_rate);
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
    /// window to restore after recovery. (With RFC 6675 recovery, `ssthresh = cwnd` keeps the
    /// window through it.)
    fn on_loss(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        if a.linux {
            self.save_cwnd(w.cwnd);
            return w.ssthresh;
        }
        self.prior_cwnd = w.cwnd;
        w.cwnd
    }

    fn on_rto(&mut self, w: &mut Window, _flight: f64, _now: Time) -> f64 {
        self.save_cwnd(w.cwnd);
        w.cwnd
    }

    /// `bbr_set_state(TCP_CA_Loss)`: the timeout ends the round, restarts the full-pipe test and
    /// counts as a loss for the long-term sampling; the window saved (`bbr_ssthresh` was called
    /// just before, when the timeout began a loss episode) is kept for the restore.
    fn on_enter_loss(&mut self, _w: &mut Window, now: Time) {
        self.prev_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        self.lt_bw_sampling(now, 1, false);
    }

    fn controls_window(&self) -> bool {
        true
    }

    /// BBR v1 does not answer ECN: the window stays.
    fn on_ecn(&mut self, w: &mut Window, _a: &AckInfo) -> f64 {
        w.cwnd
    }

    fn on_recovery_exit(&mut self, w: &mut Window, _now: Time) {
        w.cwnd = w.cwnd.max(self.prior_cwnd);
    }
}

#[cfg(test)]
mod tests {
    //! The three mechanisms of `tcp_bbr.c` beyond the ACM Queue paper, driven ACK by ACK with
    //! Linux's recovery (`linux = true`): a path delivers one segment per ACK at a rate, with a
    //! pipe of segments in flight; each ACK's rate sample spans that pipe.
    use super::*;
    use crate::tcp::cc::RateSample;

    const MS: Time = 1_000_000;

    struct Path {
        bbr: Bbr,
        w: Window,
        now: Time,
        total: u64,
        rtt: Time,
    }

    impl Path {
        fn new(rtt: Time) -> Self {
            let w = Window { cwnd: INIT_CWND, ssthresh: f64::MAX, pacing_rate: 0.0 };
            Path { bbr: Bbr::new(1500), w, now: 0, total: 0, rtt }
        }

        /// An ACK `gap` after the previous one delivering `n` segments, `lost` newly deemed lost,
        /// `in_flight` after it; the rate sample is `rate` (segments per ns) over the pipe.
        fn ack(&mut self, gap: Time, n: u32, rate: f64, lost: u32, state: CaState, in_flight: f64) {
            self.now += gap;
            self.total += n as u64;
            let prior = self.total.saturating_sub(in_flight.max(1.0) as u64);
            let delivered = self.total - prior;
            let interval = ((delivered as f64 / rate) as Time).max(self.rtt);
            let rs = RateSample {
                delivered,
                interval,
                prior_delivered: prior,
                total_delivered: self.total,
                app_limited: false,
            };
            let a = AckInfo {
                now: self.now,
                acked: n,
                flight: in_flight + n as f64,
                rtt: Some(self.rtt),
                srtt: Some(self.rtt as f64),
                newly: n,
                in_recovery: state >= CaState::Recovery,
                rs,
                delivered: n,
                lost,
                prior_in_flight: in_flight + n as f64,
                in_flight,
                state,
                linux: true,
                ..Default::default()
            };
            self.bbr.on_any_ack(&mut self.w, &a);
        }

        /// `rounds` round trips of one ACK per segment at `rate`, one BDP in flight, no loss.
        fn steady(&mut self, rate: f64, rounds: u32) {
            let bdp = (rate * self.rtt as f64).round();
            for _ in 0..rounds * bdp as u32 {
                self.ack((1.0 / rate) as Time, 1, rate, 0, CaState::Open, bdp);
            }
        }
    }

    #[test]
    fn recovery_starts_with_packet_conservation_for_one_round_and_restores_the_window() {
        let rate = 1.0 / MS as f64; // 1 segment per ms: 12 Mb/s
        let mut p = Path::new(40 * MS);
        p.steady(rate, 20);
        assert_eq!(p.bbr.mode, Mode::ProbeBw);
        let before = p.w.cwnd;
        assert!(before >= 80.0, "cwnd_gain 2 over a 40-segment BDP: {before}");
        let info = AckInfo { state: CaState::Recovery, linux: true, ..Default::default() };
        p.bbr.on_loss(&mut p.w, &info);
        // entering fast recovery with 30 in flight and 5 deemed lost: the window is what is in
        // flight plus what this ACK delivered
        let (gap, flight) = (MS, 30.0);
        p.ack(gap, 1, rate, 5, CaState::Recovery, flight);
        assert_eq!(p.w.cwnd, flight + 1.0);
        // the rest of the first round: one segment out per segment delivered, no growth
        for _ in 1..flight as u32 {
            p.ack(gap, 1, rate, 0, CaState::Recovery, flight);
            assert_eq!(p.w.cwnd, flight + 1.0);
        }
        // the next round grows the window by what each ACK delivers (two out per one delivered)
        for k in 1..=5 {
            p.ack(gap, 1, rate, 0, CaState::Recovery, flight);
            assert_eq!(p.w.cwnd, flight + 1.0 + k as f64);
        }
        // leaving recovery restores the window saved when the loss began (bounded, as always
        // once the pipe is full, by the target: 2 BDPs and the quantisation allowance)
        p.ack(gap, 1, rate, 0, CaState::Open, flight);
        let b = &p.bbr;
        let target = b.quantize(b.bdp(b.bw(), b.cwnd_gain) + b.aggregation_cwnd(), p.w.pacing_rate);
        assert_eq!(p.w.cwnd, before.min(target));
        assert!(p.w.cwnd >= before - 2.0, "{} against {before}", p.w.cwnd);
    }

    #[test]
    fn aggregated_acks_raise_the_window_by_the_excess_capped_at_100_ms_of_bandwidth() {
        let rate = 1.0 / MS as f64;
        let mut p = Path::new(100 * MS); // BDP 100 segments, window about 200
        p.steady(rate, 12);
        assert!(p.bbr.full_bw_reached);
        assert!(p.bbr.aggregation_cwnd() <= 1.0, "smooth ACKs: {}", p.bbr.aggregation_cwnd());
        let smooth = p.w.cwnd;
        // for 3 rounds, ACKs in batches: 30 ms of silence, then one ACK for 30 segments
        for _ in 0..10 {
            p.ack(30 * MS, 30, rate, 0, CaState::Open, 100.0);
        }
        let extra = p.bbr.aggregation_cwnd();
        assert_eq!(extra, 30.0, "the segments beyond what the bandwidth explains");
        // the window grows by the allowance (within Linux's rounding up to even and the 1.25
        // phase's two segments)
        assert!(p.w.cwnd >= smooth + extra - 2.0, "{} against {smooth} + {extra}", p.w.cwnd);
        // a batch of 150 ms is more than 100 ms at the estimated bandwidth: capped at 100 segments
        p.ack(150 * MS, 150, rate, 0, CaState::Open, 100.0);
        assert_eq!(p.bbr.aggregation_cwnd(), (p.bbr.bw() * EXTRA_ACKED_MAX as f64).floor());
        assert!(p.bbr.aggregation_cwnd() < 150.0);
        // an ACK later than the estimate expects ends the epoch; with smooth ACKs again the
        // maxima age out within 10 rounds
        p.ack(200 * MS, 1, rate, 0, CaState::Open, 100.0);
        p.steady(rate, 11);
        assert!(p.bbr.aggregation_cwnd() <= 1.0, "{}", p.bbr.aggregation_cwnd());
    }

    /// `rounds` round trips through a token-bucket policer at `rate`: one ACK per segment, one
    /// loss every `every` ACKs, `pipe` segments in flight.
    fn policed(p: &mut Path, rate: f64, every: u32, pipe: f64, rounds: u32) {
        for i in 0..rounds * pipe as u32 {
            let lost = (i % every == every - 1) as u32;
            p.ack((1.0 / rate) as Time, 1, rate, lost, CaState::Open, pipe);
        }
    }

    #[test]
    fn a_policer_s_lossy_consistent_rate_becomes_the_long_term_bandwidth() {
        let (link, police) = (2.0 / MS as f64, 1.0 / MS as f64);
        let mut p = Path::new(20 * MS);
        p.steady(link, 10);
        assert_eq!(p.bbr.mode, Mode::ProbeBw);
        assert!(!p.bbr.lt_use_bw);
        // a third of what is sent is dropped (over Linux's 20 %), the rest delivered at the
        // policed rate: two consecutive 4-16-round intervals agree, so BBR paces at their mean
        let mut rounds = 0;
        while !p.bbr.lt_use_bw {
            policed(&mut p, police, 3, 40.0, 1);
            rounds += 1;
            assert!(rounds <= 2 * 4 * LT_INTVL_MIN_RTTS, "not detected in {rounds} rounds");
        }
        assert!((p.bbr.bw() - police).abs() <= LT_BW_RATIO * police, "{} against {police}", p.bbr.bw());
        // with gain 1 (no probing at 1.25), at the long-term rate less Linux's 1 % margin
        policed(&mut p, police, 3, 40.0, 1);
        assert_eq!(p.bbr.pacing_gain, 1.0);
        let rate = p.w.pacing_rate;
        assert!((rate - p.bbr.bw() * 1500.0 * 1e9 * PACING_MARGIN).abs() < 1e-6 * rate);
        // 48 rounds later BBR samples the bandwidth afresh
        policed(&mut p, police, 1000, 40.0, LT_BW_MAX_RTTS);
        assert!(!p.bbr.lt_use_bw);
    }

    #[test]
    fn losses_under_a_fifth_of_the_deliveries_are_not_a_policer() {
        let (link, police) = (2.0 / MS as f64, 1.0 / MS as f64);
        let mut p = Path::new(20 * MS);
        p.steady(link, 10);
        for round in 0..40 {
            policed(&mut p, police, 6, 40.0, 1); // 1 in 6: 17 % < 50/256
            assert!(!p.bbr.lt_use_bw, "policed after {round} rounds");
        }
    }
}
