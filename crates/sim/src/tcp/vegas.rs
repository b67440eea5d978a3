//! TCP Vegas (Brakmo & Peterson, IEEE JSAC 13(8), 1995), modelled on ns-2's `Agent/TCP/Vegas`
//! (`tcp-vegas.cc`, the agent the papers' simulations used). Documentation: docs/tcp/vegas.md.
//!
//! Vegas compares the rate the window should give on an empty path with the rate it measures, once
//! per round trip, and keeps the difference — an estimate of its own packets queued in the network
//! — between `alpha` and `beta` packets.
//!
//! * **Base RTT**: the smallest per-ACK RTT seen (`AckInfo::rtt`, the echoed send time of the
//!   segment that triggered the ACK). As in ns-2 it is also replaced by the epoch's mean RTT when at
//!   most one segment was sent during the epoch.
//! * **Epochs**: an epoch starts at an ACK and records `beg_seq`, the first segment sent after it;
//!   it ends with the first ACK that acknowledges `beg_seq` — one round trip. At the end:
//!   `rtt` = mean of the per-ACK samples taken during the epoch (the closing ACK's own sample counts
//!   towards the next one; with no sample, the epoch's duration); `sent` = segments sent during the
//!   epoch; `win` = `snd_max − snd_una + 1` (ns-2's `t_seqno_ − last_ack_`: the window in use);
//!   `expected = win / base_rtt`, `actual = sent / rtt`, and
//!   `diff = (expected − actual) · base_rtt` in packets, rounded as ns-2 does (`int(x + 0.5)`,
//!   which truncates towards zero).
//! * **Congestion avoidance** (`cwnd ≥ ssthresh`): `diff > beta` → `cwnd −= 1` at once (at least
//!   2) and no growth during the next epoch; `diff < alpha` → grow by `1/cwnd` per ACK during the
//!   next epoch (one segment per round trip); otherwise hold.
//! * **Slow start** (`cwnd < ssthresh`): epochs alternate between holding and growing by one
//!   segment per ACK (doubling every other round trip). At the end of a growing-eligible epoch,
//!   `diff > gamma` ends slow start: `ssthresh = 2`, `cwnd −= cwnd / 8` (at least 2).
//! * Growth happens only while the window is used: `cwnd − win ≤ 2` (ns-2's check), so a
//!   receiver- or application-limited Vegas does not inflate `cwnd`.
//!
//! Loss handling (ns-2's Vegas is Reno-based; the default recovery is [`super::Recovery::Reno`]):
//! * **Fast retransmit** (three duplicate ACKs, from the core): the window becomes
//!   `win − floor(win/4)` with `win = floor(cwnd)` (2 if `win ≤ 3`) — ns-2 reduces by a quarter,
//!   not by half — inflated by the duplicate ACKs during recovery; at the end of recovery `cwnd` is
//!   that value and `ssthresh = 2` (Vegas uses `ssthresh` only to end slow start).
//! * **Timeout**: `ssthresh = max(floor(cwnd / 2), 2)` (ns-2's `slowdown(CLOSE_SSTHRESH_HALF)`,
//!   which halves the window, not the flight size); the core restarts from `cwnd = 1`.
//!
//! * **Fine-grained retransmission** (Brakmo & Peterson §3.1, ns-2's `vegas_expire`): Vegas keeps
//!   its own timeout from the per-ACK RTTs (Jacobson's estimator in ns-2's scaled form: SRTT + 2
//!   deviations, plus a sixteenth; [`CongestionControl::fine_timeout`]). The core records every
//!   outstanding segment's send time; on the first or second duplicate ACK it starts fast
//!   retransmit at once if the first unacknowledged segment is overdue by that timeout, and on the
//!   first two new ACKs after a fast retransmit it retransmits the next segment if that one is
//!   overdue (window unchanged). Each such retransmission backs the timeout off (×2 for a segment
//!   already retransmitted, else +1/8).
//!
//! Simplified relative to ns-2 (docs/tcp/vegas.md lists them):
//! * The reduction at fast retransmit is always the quarter; ns-2 halves instead when the lost
//!   segment had been retransmitted already.
//! * After a timeout the core restarts from `cwnd = 1`; ns-2's Vegas restarts from 2
//!   (`v_slowstart_`). The epoch is restarted at the next ACK (ns-2 keeps the old one, whose
//!   bookkeeping the go-back-N resets distort).
//! * ns-2 ignores RTT samples of retransmitted segments; here the sample of an ACK triggered by a
//!   retransmission uses the retransmission's send time (a timestamp echo), which is also a valid
//!   round trip. The ACK that ends loss recovery is not seen by `on_ack` (the core calls
//!   `on_recovery_exit` instead), so its sample and epoch check wait for the next ACK.
//! * An ECN echo (`on_loss` without a retransmission) gets the same three-quarter reduction; ns-2
//!   halves there.
//! * ns-2 reduces on fast retransmit only if the window has not been reduced since the lost
//!   segment was sent; the core's `recover` guard (one fast retransmit per window) plays that role.

use super::cc::{AckInfo, CongestionControl, Window};
use aqm::Time;

/// ns-2 defaults (`v_alpha_`, `v_beta_`, `v_gamma_`), the values of experiments.md §1.3.
pub const DEFAULT_ALPHA: f64 = 1.0;
pub const DEFAULT_BETA: f64 = 3.0;
pub const DEFAULT_GAMMA: f64 = 1.0;

/// How `cwnd` grows per ACK during the current epoch (decided at the end of the previous one).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Incr {
    Hold,
    /// One segment per ACK (slow start), up to `ssthresh`.
    SlowStart,
    /// A fixed amount per ACK: `1 / cwnd` at the start of the epoch (congestion avoidance).
    Linear(f64),
}

/// TCP Vegas congestion control.
#[derive(Debug, Clone)]
pub struct Vegas {
    alpha: f64,
    beta: f64,
    gamma: f64,
    /// Minimum RTT (ns); `None` before the first sample.
    base_rtt: Option<f64>,
    /// The epoch ends when this segment is acknowledged (`snd_una > beg_seq`).
    beg_seq: u32,
    beg_time: Time,
    sum_rtt: f64,
    cnt_rtt: u32,
    /// Slow start grows only in epochs where this flag has just turned on (every other epoch).
    inc_flag: bool,
    incr: Incr,
    /// A timeout happened: the next ACK starts a new epoch without a decision.
    restart: bool,
    /// The last epoch's `diff` (packets, after rounding), for tests and traces.
    last_diff: Option<i64>,
    epochs: u64,
    /// Fine-grained timeout estimator (ns-2's `v_sa_`, `v_sd_`, `v_timeout_`; ns).
    sa: f64,
    sd: f64,
    fine_timeout: Option<f64>,
}

impl Vegas {
    pub fn new(alpha: f64, beta: f64, gamma: f64) -> Self {
        Vegas {
            alpha,
            beta,
            gamma,
            base_rtt: None,
            beg_seq: 0,
            beg_time: 0,
            sum_rtt: 0.0,
            cnt_rtt: 0,
            inc_flag: true,
            incr: Incr::Hold,
            restart: false,
            last_diff: None,
            epochs: 0,
            sa: 0.0,
            sd: 0.0,
            fine_timeout: None,
        }
    }

    /// Jacobson's estimator in ns-2's scaled form: `sa` is 8 × the smoothed RTT, `sd` 4 × the
    /// mean deviation; the fine-grained timeout is `(sa/4 + sd)/2` (SRTT + 2 deviations), plus a
    /// sixteenth.
    fn fine_sample(&mut self, r: f64) {
        let mut n = r - self.sa / 8.0;
        self.sa += n;
        n = n.abs() - self.sd / 4.0;
        self.sd += n;
        let t = (self.sa / 4.0 + self.sd) / 2.0;
        self.fine_timeout = Some(t + t / 16.0);
    }

    /// The base (minimum) RTT in ns.
    pub fn base_rtt(&self) -> Option<f64> {
        self.base_rtt
    }
    /// `diff` of the last completed epoch, in packets (rounded as ns-2 does).
    pub fn last_diff(&self) -> Option<i64> {
        self.last_diff
    }
    /// Epochs completed so far.
    pub fn epochs(&self) -> u64 {
        self.epochs
    }

    fn start_epoch(&mut self, a: &AckInfo) {
        self.beg_seq = a.snd_max;
        self.beg_time = a.now;
        self.sum_rtt = 0.0;
        self.cnt_rtt = 0;
    }

    /// The once-per-RTT decision (ns-2's `recv`, "once per-rtt actions").
    fn end_epoch(&mut self, w: &mut Window, a: &AckInfo) {
        // segments sent during the epoch, and the window in use (ns-2: t_seqno_ - last_ack_)
        let sent = a.snd_max.saturating_sub(self.beg_seq) as f64;
        let win = (a.snd_max.saturating_sub(a.snd_una) + 1) as f64;
        let rtt = if self.cnt_rtt > 0 {
            self.sum_rtt / self.cnt_rtt as f64
        } else {
            a.now.saturating_sub(self.beg_time) as f64
        };
        if rtt > 0.0 {
            // The very first ACK closes an epoch with no sample at all: ns-2 then compares the
            // window with itself (its base RTT starts as that epoch's length), so diff = 0.
            let diff = if self.cnt_rtt == 0 && self.base_rtt.is_none() {
                0.0
            } else {
                if self.base_rtt.is_none_or(|b| rtt < b) || sent <= 1.0 {
                    self.base_rtt = Some(rtt);
                }
                let base = self.base_rtt.expect("set above");
                let expected = win / base;
                let actual = sent / rtt;
                ((expected - actual) * base + 0.5).trunc()
            };
            self.last_diff = Some(diff as i64);
            self.epochs += 1;
            if w.cwnd < w.ssthresh {
                // slow start: grow only every other epoch
                self.inc_flag = !self.inc_flag;
                if !self.inc_flag {
                    self.incr = Incr::Hold;
                } else if diff > self.gamma {
                    // leave slow start, backing off an eighth
                    w.ssthresh = 2.0;
                    w.cwnd = (w.cwnd - w.cwnd / 8.0).max(2.0);
                    self.incr = Incr::Hold;
                } else {
                    self.incr = Incr::SlowStart;
                }
            } else if diff > self.beta {
                w.cwnd = (w.cwnd - 1.0).max(2.0);
                self.incr = Incr::Hold;
            } else if diff < self.alpha {
                self.incr = Incr::Linear(1.0 / w.cwnd);
            } else {
                self.incr = Incr::Hold;
            }
        }
        self.start_epoch(a);
    }
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas::new(DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_GAMMA)
    }
}

impl CongestionControl for Vegas {
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.acked == 0 {
            return;
        }
        if self.restart {
            self.restart = false;
            self.incr = Incr::Hold;
            self.start_epoch(a);
        } else if a.snd_una > self.beg_seq {
            self.end_epoch(w, a);
        }
        if self.incr == Incr::SlowStart && w.cwnd >= w.ssthresh {
            self.incr = Incr::Hold;
        }
        let win = (a.snd_max.saturating_sub(a.snd_una) + 1) as f64;
        let step = match self.incr {
            Incr::Hold => 0.0,
            Incr::SlowStart => 1.0,
            Incr::Linear(x) => x,
        };
        // grow only while the window is being used
        if step > 0.0 && w.cwnd - win <= 2.0 {
            w.cwnd += step;
        }
        if let Some(r) = a.rtt {
            let r = r as f64;
            if r > 0.0 {
                self.fine_sample(r);
            }
            self.sum_rtt += r;
            self.cnt_rtt += 1;
            if r > 0.0 && self.base_rtt.is_none_or(|b| r < b) {
                self.base_rtt = Some(r);
            }
        }
    }

    fn on_loss(&mut self, w: &mut Window, _a: &AckInfo) -> f64 {
        let win = w.cwnd.floor();
        if win <= 3.0 {
            2.0
        } else {
            win - (win / 4.0).floor()
        }
    }

    fn on_rto(&mut self, w: &mut Window, _flight: f64, _now: Time) -> f64 {
        self.restart = true;
        (w.cwnd.floor() / 2.0).floor().max(2.0)
    }

    fn on_recovery_exit(&mut self, w: &mut Window, _now: Time) {
        // Vegas uses ssthresh only to leave slow start: after a loss it is in congestion avoidance
        w.ssthresh = 2.0;
    }

    fn fine_timeout(&self) -> Option<Time> {
        self.fine_timeout.map(|t| t.max(0.0) as Time)
    }

    /// ns-2's back-off of `v_timeout_` at a retransmission: doubled if the segment had been
    /// retransmitted already, else raised by an eighth.
    fn on_fine_retransmit(&mut self, transmits: u32) {
        if let Some(t) = self.fine_timeout.as_mut() {
            if transmits > 1 {
                *t *= 2.0;
            } else {
                *t += *t / 8.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = 1_000_000;

    /// A synthetic path: the sender keeps `floor(cwnd)` segments outstanding, every segment is
    /// acknowledged one round trip after it was sent, with the round trip of its round given by
    /// `rtt(round, window)`. Returns `cwnd` at the end of every round.
    struct Path {
        vegas: Vegas,
        w: Window,
        snd_una: u32,
        snd_max: u32,
        now: Time,
    }

    impl Path {
        fn new(cwnd: f64, ssthresh: f64) -> Self {
            Path {
                vegas: Vegas::default(),
                w: Window { cwnd, ssthresh, pacing_rate: 0.0 },
                snd_una: 0,
                snd_max: 0,
                now: 0,
            }
        }

        /// One round: the window outstanding at its start is acknowledged, ACK by ACK, spread over
        /// the round trip; new segments are sent as the window allows.
        fn round(&mut self, rtt: Time) {
            if self.snd_max == self.snd_una {
                self.snd_max = self.snd_una + self.w.cwnd.floor() as u32;
            }
            let n = self.snd_max - self.snd_una;
            let start = self.now;
            for i in 0..n {
                let now = start + rtt * (i as Time + 1) / n as Time;
                let a = AckInfo {
                    now,
                    acked: 1,
                    flight: (self.snd_max - self.snd_una) as f64,
                    rtt: Some(rtt),
                    srtt: Some(rtt as f64),
                    snd_una: self.snd_una + 1,
                    snd_max: self.snd_max,
                    ..Default::default()
                };
                self.vegas.on_ack(&mut self.w, &a);
                self.snd_una += 1;
                let wnd = (self.w.cwnd.floor() as u32).max(1);
                self.snd_max = self.snd_max.max(self.snd_una + wnd);
            }
            self.now = start + rtt;
        }
    }

    #[test]
    fn congestion_avoidance_grows_one_segment_per_rtt_on_an_empty_path() {
        let mut p = Path::new(10.0, 2.0);
        for _ in 0..3 {
            p.round(100 * MS);
        }
        let c0 = p.w.cwnd;
        for _ in 0..10 {
            p.round(100 * MS);
        }
        assert_eq!(p.vegas.last_diff(), Some(0));
        // diff = 0 < alpha: one segment per round trip (the decision lags one epoch)
        let grown = p.w.cwnd - c0;
        assert!((9.0..=11.0).contains(&grown), "grew {grown} in 10 RTTs");
    }

    #[test]
    fn congestion_avoidance_shrinks_when_diff_exceeds_beta() {
        let mut p = Path::new(20.0, 2.0);
        for _ in 0..3 {
            p.round(100 * MS);
        }
        assert_eq!(p.vegas.base_rtt(), Some((100 * MS) as f64));
        // RTT 150 ms: diff = win · (1 − 100/150) ≈ 7 > beta = 3 → one segment less per epoch
        p.round(150 * MS); // the epoch under way still carries the old decision
        let c0 = p.w.cwnd;
        for _ in 0..3 {
            p.round(150 * MS);
            assert!(p.vegas.last_diff().unwrap() > 3);
        }
        let shrunk = c0 - p.w.cwnd;
        assert!((shrunk - 3.0).abs() < 1e-9, "shrank by {shrunk} in 3 RTTs (from {c0})");
        assert_eq!(p.vegas.base_rtt(), Some((100 * MS) as f64), "base RTT is the minimum");
    }

    #[test]
    fn congestion_avoidance_holds_between_alpha_and_beta() {
        let mut p = Path::new(20.0, 2.0);
        for _ in 0..2 {
            p.round(100 * MS);
        }
        // freeze the window near 20 and measure with RTT = 100/0.9 ms: diff = 20 · 0.1 = 2
        p.w.cwnd = 20.0;
        let rtt = 100 * MS * 10 / 9;
        p.round(rtt); // the epoch under way still carries the old decision (cwnd may reach 21)
        p.round(rtt);
        let c0 = p.w.cwnd;
        for _ in 0..8 {
            p.round(rtt);
            assert_eq!(p.vegas.last_diff(), Some(2));
        }
        assert_eq!(p.w.cwnd, c0, "held");
        // diff = alpha (1) and diff = beta (3) also hold: RTT = base / 0.95 and base / 0.85
        for (num, den, d) in [(20, 19, 1), (20, 17, 3)] {
            let rtt = 100 * MS * num / den;
            p.round(rtt);
            p.round(rtt);
            let c1 = p.w.cwnd;
            for _ in 0..5 {
                p.round(rtt);
                assert_eq!(p.vegas.last_diff(), Some(d));
            }
            assert_eq!(p.w.cwnd, c1);
        }
    }

    #[test]
    fn slow_start_doubles_every_other_rtt_and_ends_when_diff_exceeds_gamma() {
        let mut p = Path::new(2.0, f64::MAX);
        let mut seen = Vec::new();
        for _ in 0..8 {
            p.round(100 * MS);
            seen.push(p.w.cwnd);
        }
        // hold, double, hold, double, ...: 2 2 4 4 8 8 16 16 (one epoch per round)
        assert_eq!(seen, vec![2.0, 4.0, 4.0, 8.0, 8.0, 16.0, 16.0, 32.0], "{seen:?}");
        assert!(p.w.cwnd < p.w.ssthresh);
        // a queue builds: RTT 120 ms gives diff = win · (1 − 100/120) ≥ 5 > gamma
        let before = p.w.cwnd;
        for _ in 0..3 {
            p.round(120 * MS);
        }
        assert_eq!(p.w.ssthresh, 2.0, "slow start ended");
        assert!(p.vegas.last_diff().unwrap() > 1);
        // cwnd lost an eighth once (plus congestion-avoidance decrements afterwards)
        assert!(p.w.cwnd <= before * 7.0 / 8.0 + 1e-9 && p.w.cwnd >= before * 7.0 / 8.0 - 3.0, "{}", p.w.cwnd);
    }

    #[test]
    fn settles_with_between_alpha_and_beta_packets_queued() {
        // a bottleneck of 100 packets/s, 100 ms propagation: BDP = 10 packets; the queue is what the
        // window holds beyond it, and the RTT grows by queue / rate
        let mut p = Path::new(2.0, f64::MAX);
        let mut q = Vec::new();
        for _ in 0..200 {
            let w = p.w.cwnd.floor();
            let queue = (w - 10.0).max(0.0);
            p.round(100 * MS + (queue * 10.0) as Time * MS);
            q.push(queue);
        }
        let tail = &q[150..];
        let mean = tail.iter().sum::<f64>() / tail.len() as f64;
        assert!((1.0..=3.0).contains(&mean), "mean queue {mean}: {tail:?}");
    }

    #[test]
    fn loss_reduces_by_a_quarter_and_timeout_halves() {
        let mut v = Vegas::default();
        let a = AckInfo {
            now: 0,
            acked: 0,
            flight: 20.0,
            rtt: None,
            srtt: None,
            snd_una: 0,
            snd_max: 20,
            ..Default::default()
        };
        let mut w = Window { cwnd: 20.7, ssthresh: 2.0, pacing_rate: 0.0 };
        assert_eq!(v.on_loss(&mut w, &a), 15.0);
        w.cwnd = 3.5;
        assert_eq!(v.on_loss(&mut w, &a), 2.0);
        let mut w = Window { cwnd: 15.0, ssthresh: 100.0, pacing_rate: 0.0 };
        v.on_recovery_exit(&mut w, 0);
        assert_eq!(w.ssthresh, 2.0);
        let mut w = Window { cwnd: 21.0, ssthresh: 2.0, pacing_rate: 0.0 };
        assert_eq!(v.on_rto(&mut w, 30.0, 0), 10.0);
    }
}
