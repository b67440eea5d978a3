//! TCP CUBIC (RFC 9438). Documentation: docs/tcp/cubic.md.
//!
//! After a congestion event the window follows, in congestion avoidance,
//! `W_cubic(t) = C·(t − K)³ + W_max` (§4.2), with `t` the time since the current congestion
//! avoidance stage began (its *epoch*: the first ACK in congestion avoidance after a reduction)
//! and `K = cbrt((W_max − cwnd_epoch) / C)`, `cwnd_epoch` being `cwnd` at that ACK — after a
//! reduction to `β·W_max` this is `cbrt(W_max·(1 − β)/C)`.
//!
//! * **Concave and convex regions** (§4.4, §4.5): on every ACK,
//!   `target = W_cubic(t + RTT)` clamped to `[cwnd, 1.5·cwnd]`, with RTT the RFC 6298 smoothed
//!   RTT (§4.2), and `cwnd += (target − cwnd) / cwnd` — per ACK, as the RFC's text says (Linux
//!   counts acknowledged segments instead; it matters only with delayed ACKs).
//! * **Reno-friendly region** (§4.3): `W_est` starts at `cwnd_epoch` and grows by
//!   `α·segments_acked / cwnd` per ACK, `α = 3(1 − β)/(1 + β)` until `W_est ≥ cwnd_prior`, then 1.
//!   When `W_cubic(t) < W_est`, `cwnd = W_est` (never lowered).
//! * **Multiplicative decrease** (§4.6, on fast retransmit and on an ECN echo):
//!   `ssthresh = max(flight_size·β, 2)` — the RFC's formula uses the flight size, as does Reno in
//!   this simulator; the recovery algorithm then sets `cwnd` from it. `cwnd_prior = cwnd`.
//! * **Fast convergence** (§4.7): before the reduction, `W_max = cwnd·(1 + β)/2` if
//!   `cwnd < W_max`, else `W_max = cwnd`.
//! * **Timeout** (§4.8): `ssthresh = max(flight_size·β, 2)`, `cwnd = 1` (by the core); the first
//!   congestion-avoidance stage afterwards uses `K = 0` and `W_max = cwnd_epoch`, and `W_est`
//!   starts at `cwnd_epoch`. When `cwnd_epoch ≥ W_max` in any other case (the formula would give a
//!   negative `K`), the same rule is used, as Linux does.
//! * **Slow start** (§4.10): standard (`cwnd += 1` per ACK below `ssthresh`, RFC 5681, as the
//!   other variants here); HyStart++ is not implemented.
//! * **Application- or receiver-limited** (§5.8): `cwnd` does not grow on an ACK when fewer than
//!   `floor(cwnd) − 1` segments were outstanding, and the time `t` does not advance during such
//!   periods (the epoch start moves forward by the time since the previous ACK).
//!
//! **Slow start** ends by a loss, or earlier by HyStart (`tcp.hystart`, [`super::hystart`]: as
//! Linux's `tcp_cubic.c`, or RFC 9406's HyStart++), which sees every ACK while `cwnd < ssthresh`
//! and sets `ssthresh = cwnd` when the RTT rises.
//!
//! Not implemented: spurious-congestion undo (§4.9), pacing.

use super::cc::{linux_slow_start, reno_increase, AckInfo, CongestionControl, Window};
use super::config::Hystart;
use super::hystart::{HyStart, Verdict};
use aqm::{Time, NS_PER_SEC};

/// RFC 9438 §5.1 and §4.6: `C = 0.4` segments/s³, `β_cubic = 0.7`.
pub const DEFAULT_C: f64 = 0.4;
pub const DEFAULT_BETA: f64 = 0.7;

/// TCP CUBIC congestion control.
#[derive(Debug, Clone)]
pub struct Cubic {
    c: f64,
    beta: f64,
    fast_convergence: bool,
    tcp_friendly: bool,
    /// `W_max` (segments); 0 before the first congestion event.
    w_max: f64,
    /// `cwnd` when `ssthresh` was last set by a congestion event or timeout.
    cwnd_prior: f64,
    /// `K` of the current epoch (s).
    k: f64,
    /// Start of the current congestion-avoidance epoch; `None` until the first ACK in congestion
    /// avoidance after a reduction.
    epoch_start: Option<Time>,
    cwnd_epoch: f64,
    w_est: f64,
    /// The next epoch follows a timeout: `K = 0`, `W_max = cwnd_epoch` (§4.8).
    after_rto: bool,
    last_ack: Time,
    /// HyStart, if on (`tcp.hystart`).
    hystart: Option<HyStart>,
}

impl Cubic {
    pub fn new(c: f64, beta: f64, fast_convergence: bool, tcp_friendly: bool) -> Self {
        Cubic {
            c,
            beta,
            fast_convergence,
            tcp_friendly,
            w_max: 0.0,
            cwnd_prior: 0.0,
            k: 0.0,
            epoch_start: None,
            cwnd_epoch: 0.0,
            w_est: 0.0,
            after_rto: false,
            last_ack: 0,
            hystart: None,
        }
    }

    /// With HyStart (`Hystart::Off`: none).
    pub fn with_hystart(mut self, mode: Hystart) -> Self {
        self.hystart = (mode != Hystart::Off).then(|| HyStart::new(mode));
        self
    }

    /// Slow start's growth for `acked` credited segments (HyStart++'s CSS divides it by 4);
    /// returns what is left for congestion avoidance (Linux's slow start stops at `ssthresh`).
    fn slow_start(&self, w: &mut Window, a: &AckInfo) -> u32 {
        let div = self.hystart.as_ref().map_or(1.0, |h| h.growth_divisor());
        if a.linux {
            return linux_slow_start(w, a.acked, div);
        }
        if div == 1.0 {
            reno_increase(w, a.acked);
        } else {
            w.cwnd += a.acked.min(2) as f64 / div;
        }
        0
    }

    /// A loss or timeout ends slow start for HyStart.
    fn end_hystart(&mut self) {
        if let Some(h) = self.hystart.as_mut() {
            h.end();
        }
    }

    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    /// `K` of the current epoch (s).
    pub fn k(&self) -> f64 {
        self.k
    }
    pub fn w_est(&self) -> f64 {
        self.w_est
    }
    pub fn epoch_start(&self) -> Option<Time> {
        self.epoch_start
    }
    /// `α_cubic = 3(1 − β)/(1 + β)` (§4.3).
    pub fn alpha_cubic(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }

    /// `W_cubic(t)` of the current epoch, `t` in seconds from its start.
    pub fn w_cubic(&self, t: f64) -> f64 {
        self.c * (t - self.k).powi(3) + self.w_max
    }

    fn start_epoch(&mut self, cwnd: f64, now: Time) {
        self.epoch_start = Some(now);
        self.cwnd_epoch = cwnd;
        if self.after_rto || cwnd >= self.w_max {
            self.w_max = cwnd;
            self.k = 0.0;
        } else {
            self.k = libm::cbrt((self.w_max - cwnd) / self.c);
        }
        self.after_rto = false;
        self.w_est = cwnd;
    }

    /// A congestion event or timeout: the next ACK in congestion avoidance starts a new epoch.
    fn end_epoch(&mut self) {
        self.epoch_start = None;
    }
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::new(DEFAULT_C, DEFAULT_BETA, true, true)
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if a.acked == 0 {
            return;
        }
        let since_last = a.now.saturating_sub(self.last_ack);
        self.last_ack = a.now;
        // §5.8: no growth, and no curve time, while the window is not being used
        if a.flight + 1.0 < w.cwnd.floor() {
            if let Some(s) = self.epoch_start.as_mut() {
                *s = (*s + since_last).min(a.now);
            }
            return;
        }
        let mut acked = a.acked;
        if w.cwnd < w.ssthresh {
            acked = self.slow_start(w, a);
            if acked == 0 || w.cwnd < w.ssthresh {
                return;
            }
        }
        let cwnd = w.cwnd;
        if self.epoch_start.is_none() {
            self.start_epoch(cwnd, a.now);
        }
        let t = a.now.saturating_sub(self.epoch_start.expect("started")) as f64 / NS_PER_SEC as f64;
        let rtt = a.srtt.or(a.rtt.map(|r| r as f64)).unwrap_or(0.0) / NS_PER_SEC as f64;
        if self.tcp_friendly {
            let alpha = if self.w_est >= self.cwnd_prior { 1.0 } else { self.alpha_cubic() };
            self.w_est += alpha * acked as f64 / cwnd;
            if self.w_cubic(t) < self.w_est {
                w.cwnd = cwnd.max(self.w_est);
                return;
            }
        }
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        // (target − cwnd)/cwnd per credited segment: per ACK with ns-2's counting, per segment
        // acknowledged with byte counting (as Linux, so delayed ACKs do not halve the growth)
        w.cwnd = cwnd + acked as f64 * (target - cwnd) / cwnd;
    }

    /// HyStart sees every ACK of slow start.
    fn on_any_ack(&mut self, w: &mut Window, a: &AckInfo) {
        if w.cwnd >= w.ssthresh {
            return;
        }
        if let Some(h) = self.hystart.as_mut() {
            if h.on_ack(a.now, a.rtt, w.cwnd, a.snd_una, a.snd_max) == Verdict::Exit {
                w.ssthresh = w.cwnd;
            }
        }
    }

    fn on_loss(&mut self, w: &mut Window, a: &AckInfo) -> f64 {
        self.end_hystart();
        self.w_max =
            if self.fast_convergence && w.cwnd < self.w_max { w.cwnd * (1.0 + self.beta) / 2.0 } else { w.cwnd };
        self.cwnd_prior = w.cwnd;
        self.after_rto = false;
        self.end_epoch();
        (a.flight * self.beta).max(2.0)
    }

    /// Linux (`cubictcp_state(TCP_CA_Loss)`) starts HyStart afresh for the slow start after a
    /// timeout, with a new minimum delay (RACK-TLP recovery only; RFC 9406's HyStart++ is for the
    /// initial slow start).
    fn on_enter_loss(&mut self, _w: &mut Window, _now: Time) {
        if let Some(h) = self.hystart.as_mut() {
            if h.mode() == Hystart::Linux {
                *h = HyStart::new(Hystart::Linux);
            }
        }
    }

    fn on_rto(&mut self, w: &mut Window, flight: f64, _now: Time) -> f64 {
        self.end_hystart();
        self.cwnd_prior = w.cwnd;
        self.after_rto = true;
        self.end_epoch();
        (flight * self.beta).max(2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = 1_000_000;

    /// Drives a CUBIC sender in congestion avoidance over a path with a fixed round trip: every
    /// ACK acknowledges one segment, `floor(cwnd)` ACKs per round trip, evenly spaced.
    struct Driver {
        cc: Cubic,
        w: Window,
        now: Time,
        rtt: Time,
        snd_una: u32,
    }

    impl Driver {
        /// A loss at `w_max` with as many segments outstanding, then recovery to `ssthresh`.
        fn after_loss(cc: Cubic, w_max: f64, rtt: Time) -> Self {
            let mut d =
                Driver { cc, w: Window { cwnd: w_max, ssthresh: f64::MAX, pacing_rate: 0.0 }, now: 0, rtt, snd_una: 0 };
            let info = d.info(0);
            let ss = d.cc.on_loss(&mut d.w, &info);
            d.w = Window { cwnd: ss, ssthresh: ss, pacing_rate: 0.0 };
            d
        }
        fn info(&self, acked: u32) -> AckInfo {
            let flight = self.w.cwnd.floor();
            AckInfo {
                now: self.now,
                acked,
                flight,
                rtt: Some(self.rtt),
                srtt: Some(self.rtt as f64),
                snd_una: self.snd_una,
                snd_max: self.snd_una + flight as u32,
                ..Default::default()
            }
        }
        /// Run until `until` (ns from the first ACK); returns (t, cwnd) once per round trip.
        fn run(&mut self, until: Time) -> Vec<(f64, f64)> {
            let mut out = Vec::new();
            let start = self.now;
            while self.now - start < until {
                let n = self.w.cwnd.floor() as Time;
                let round = self.now;
                for i in 0..n {
                    self.now = round + self.rtt * i / n;
                    self.snd_una += 1;
                    let a = self.info(1);
                    self.cc.on_ack(&mut self.w, &a);
                }
                self.now = round + self.rtt;
                out.push(((self.now - start) as f64 / 1e9, self.w.cwnd));
            }
            out
        }
    }

    #[test]
    fn k_is_the_time_to_return_to_w_max() {
        let mut d = Driver::after_loss(Cubic::default(), 1000.0, 100 * MS);
        assert!((d.w.cwnd - 700.0).abs() < 1e-9);
        assert_eq!(d.cc.w_max(), 1000.0);
        d.run(1);
        let k = (1000.0f64 * (1.0 - 0.7) / 0.4).cbrt();
        assert!((d.cc.k() - k).abs() < 1e-12, "K = {} vs {k}", d.cc.k());
        // with a different epoch window (e.g. Reno recovery ending at a flight-based ssthresh)
        let mut cc = Cubic::default();
        let mut w = Window { cwnd: 100.0, ssthresh: f64::MAX, pacing_rate: 0.0 };
        let info = AckInfo {
            now: 0,
            acked: 0,
            flight: 80.0,
            rtt: None,
            srtt: None,
            snd_una: 0,
            snd_max: 80,
            ..Default::default()
        };
        assert_eq!(cc.on_loss(&mut w, &info), 56.0, "ssthresh = flight_size · β");
        let mut w = Window { cwnd: 56.0, ssthresh: 56.0, pacing_rate: 0.0 };
        let a = AckInfo {
            now: 5,
            acked: 1,
            flight: 56.0,
            rtt: Some(MS),
            srtt: Some(MS as f64),
            snd_una: 1,
            snd_max: 57,
            ..Default::default()
        };
        cc.on_ack(&mut w, &a);
        assert!((cc.k() - ((100.0f64 - 56.0) / 0.4).cbrt()).abs() < 1e-12);
        assert_eq!(cc.epoch_start(), Some(5));
    }

    /// `cwnd` at the end of each round trip against `W_cubic(t)`: the largest relative error at
    /// the sample times.
    fn curve_error(w_max: f64, rtt: Time, at: &[f64]) -> (f64, Vec<(f64, f64)>) {
        let mut d = Driver::after_loss(Cubic::default(), w_max, rtt);
        let end = at.iter().cloned().fold(0.0, f64::max);
        let trace = d.run(((end + 1.0) * 1e9) as Time);
        let k = (w_max * 0.3 / 0.4).cbrt();
        let w_cubic = |t: f64| 0.4 * (t - k).powi(3) + w_max;
        let mut worst = 0.0f64;
        for want in at {
            let &(t, cwnd) = trace.iter().find(|(t, _)| t >= want).unwrap();
            let err = (cwnd - w_cubic(t)).abs() / w_cubic(t);
            eprintln!("W_max {w_max}, RTT {rtt} ns, t = {t:.2}: cwnd {cwnd:.2} vs W_cubic {:.2}", w_cubic(t));
            worst = worst.max(err);
        }
        (worst, trace)
    }

    #[test]
    fn window_follows_the_cubic_curve_after_a_loss() {
        // W_max = 1000 at 100 ms: the cubic curve is far above the Reno estimate
        let k = (1000.0f64 * 0.3 / 0.4).cbrt();
        let (worst, trace) = curve_error(1000.0, 100 * MS, &[1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0]);
        assert!(worst < 0.005, "worst relative error {worst:.4}");
        // W_max = 100 at 1 s: the curve moves a lot within one round trip, and aiming at
        // W_cubic(t + RTT) is what keeps cwnd on it (aiming at W_cubic(t) lags by about a round
        // trip: 10–30 % here)
        let (worst_long, _) = curve_error(100.0, NS_PER_SEC, &[2.0, 4.0, 6.0, 8.0]);
        assert!(worst_long < 0.05, "worst relative error at RTT 1 s {worst_long:.4}");
        // concave below W_max, plateau near K, convex beyond
        let at = |x: f64| trace.iter().find(|(t, _)| *t >= x).unwrap().1;
        assert!(at(1.0) - at(0.1) > at(k) - at(k - 0.9), "concave growth slows down towards W_max");
        assert!(at(k + 4.0) - at(k + 3.0) > at(k + 1.0) - at(k), "convex growth speeds up");
    }

    #[test]
    fn target_is_clamped_to_one_and_a_half_cwnd() {
        // with a long RTT and a small W_max the curve a round trip ahead is more than 1.5 times
        // the window: one round trip of ACKs can add at most half a window
        let mut d = Driver::after_loss(Cubic::new(0.4, 0.7, true, false), 10.0, NS_PER_SEC);
        let trace = d.run(15 * NS_PER_SEC);
        for pair in trace.windows(2) {
            assert!(pair[1].1 <= 1.5 * pair[0].1 + 1e-9, "{pair:?}");
        }
        assert!(trace.windows(2).any(|p| p[1].1 > 1.4 * p[0].1), "the clamp is reached");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        for (fc, want) in [(true, 90.0 * 0.85), (false, 90.0)] {
            let mut cc = Cubic::new(0.4, 0.7, fc, true);
            let info = |f: f64| AckInfo {
                now: 0,
                acked: 0,
                flight: f,
                rtt: None,
                srtt: None,
                snd_una: 0,
                snd_max: 0,
                ..Default::default()
            };
            let mut w = Window { cwnd: 100.0, ssthresh: f64::MAX, pacing_rate: 0.0 };
            cc.on_loss(&mut w, &info(100.0));
            assert_eq!(cc.w_max(), 100.0);
            // the next loss comes below the previous W_max
            let mut w = Window { cwnd: 90.0, ssthresh: 70.0, pacing_rate: 0.0 };
            assert!((cc.on_loss(&mut w, &info(90.0)) - 63.0).abs() < 1e-9);
            assert!((cc.w_max() - want).abs() < 1e-9, "fast_convergence {fc}: W_max {}", cc.w_max());
            // a loss above W_max remembers cwnd
            let mut w = Window { cwnd: 120.0, ssthresh: 70.0, pacing_rate: 0.0 };
            cc.on_loss(&mut w, &info(120.0));
            assert_eq!(cc.w_max(), 120.0);
        }
    }

    #[test]
    fn reno_friendly_region_dominates_at_small_rtt_and_window() {
        // W_max = 20 at 1 ms: the cubic curve needs K ≈ 2.5 s to get back, Reno one segment per ms
        let rtt = MS;
        let mut on = Driver::after_loss(Cubic::default(), 20.0, rtt);
        let mut off = Driver::after_loss(Cubic::new(0.4, 0.7, true, false), 20.0, rtt);
        let t_on = on.run(NS_PER_SEC / 10);
        let t_off = off.run(NS_PER_SEC / 10);
        let (c_on, c_off) = (t_on.last().unwrap().1, t_off.last().unwrap().1);
        // Reno estimate: from 14 by α = 0.529 per RTT up to W_max (cwnd_prior) = 20, then 1 per RTT
        let alpha = 3.0 * 0.3 / 1.7;
        let rtts_to_prior = (20.0 - 14.0) / alpha;
        let expected = 20.0 + (t_on.len() as f64 - rtts_to_prior);
        assert!((c_on - expected).abs() / expected < 0.05, "cwnd {c_on:.1} vs W_est {expected:.1}");
        assert!((on.cc.w_est() - c_on).abs() < 1e-9, "cwnd = W_est in the Reno-friendly region");
        let w_cubic = 0.4 * (0.1 - (20.0f64 * 0.3 / 0.4).cbrt()).powi(3) + 20.0;
        assert!(c_off < w_cubic + 1.0, "without it: the cubic curve ({c_off:.1} vs {w_cubic:.1})");
        assert!(c_on > 3.0 * c_off);
    }

    #[test]
    fn timeout_restarts_with_k_zero_from_the_epoch_window() {
        let mut cc = Cubic::default();
        let mut w = Window { cwnd: 100.0, ssthresh: f64::MAX, pacing_rate: 0.0 };
        assert_eq!(cc.on_rto(&mut w, 80.0, 0), 56.0);
        // slow start back to ssthresh, then the first congestion-avoidance ACK starts the epoch
        let mut w = Window { cwnd: 56.0, ssthresh: 56.0, pacing_rate: 0.0 };
        let a = AckInfo {
            now: 7,
            acked: 1,
            flight: 56.0,
            rtt: Some(MS),
            srtt: Some(MS as f64),
            snd_una: 1,
            snd_max: 57,
            ..Default::default()
        };
        cc.on_ack(&mut w, &a);
        assert_eq!(cc.k(), 0.0);
        assert_eq!(cc.w_max(), 56.0);
        assert_eq!(cc.epoch_start(), Some(7));
    }

    #[test]
    fn no_growth_when_the_window_is_not_used() {
        let mut d = Driver::after_loss(Cubic::default(), 100.0, 10 * MS);
        d.run(NS_PER_SEC);
        let c = d.w.cwnd;
        let start = d.cc.epoch_start().unwrap();
        // receiver-limited: 20 segments outstanding for a window of ~80
        for i in 1..=1000 {
            let a = AckInfo {
                now: d.now + i * MS,
                acked: 1,
                flight: 20.0,
                rtt: Some(10 * MS),
                srtt: Some(1e7),
                snd_una: 0,
                snd_max: 20,
                ..Default::default()
            };
            d.cc.on_ack(&mut d.w, &a);
        }
        assert_eq!(d.w.cwnd, c);
        let moved = d.cc.epoch_start().unwrap() - start;
        assert!((1000 * MS..=1011 * MS).contains(&moved), "curve time paused: epoch moved {moved} ns");
    }
}
