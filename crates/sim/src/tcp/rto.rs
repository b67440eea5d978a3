//! The retransmission timeout (RFC 6298): smoothed RTT, its variation, and the back-off.
//!
//! One segment at a time is timed (no timestamps option), and no retransmitted segment is
//! (Karn's rule); the sender core takes the samples (`super::sender_core::SenderCore`). The
//! back-off doubles the timeout at each expiry, up to `2^max_backoff_exp` (ns-2 before 2.35: 64),
//! and is cleared by the next valid sample. `RTO = max(min_rto, SRTT + max(G, 4 RTTVAR))`, at most
//! `max_rto`; before the first sample, `initial_rto`.
//!
//! [`LinuxRtt`] is Linux's estimator instead (`rto_estimator = "linux"`), fed a sample from every
//! ACK that acknowledges a segment sent once (RACK-TLP recovery takes them): SRTT as RFC 6298, but
//! the deviation `mdev` gains only 1/32 of a sample below SRTT instead of 1/4 (a falling RTT
//! does not raise the RTO), its largest value in each round trip is kept (`mdev_max`, at least
//! `min_rto`), and the variation term follows that maximum, rising at once and falling by a
//! quarter of the gap per round trip (`tcp_rtt_estimator` in net/ipv4/tcp_input.c). `RTO = SRTT +
//! rttvar` (`__tcp_set_rto`): `min_rto` is *added* to SRTT (as a floor of the variation term), not
//! a floor of the sum, so a 44 ms path has an RTO of about 250 ms, not 200 ms.

use super::TcpConfig;
use aqm::Time;

/// RFC 6298's estimator and the current timeout.
#[derive(Debug, Clone)]
pub(super) struct Rto {
    srtt: f64,
    rttvar: f64,
    has_rtt: bool,
    backoff: u32,
    /// A recovery from timeouts is under way (its time is measured, `TcpMeter::rto_recovered`).
    pub(super) episode: bool,
    /// The current RTO with its back-off, recomputed only when a sample or a timeout changes it:
    /// it is read on every new ACK, and the f64 arithmetic is the same each time in between.
    rto: Time,
}

impl Rto {
    pub(super) fn new(cfg: &TcpConfig) -> Self {
        let mut r = Rto { srtt: 0.0, rttvar: 0.0, has_rtt: false, backoff: 0, episode: false, rto: 0 };
        r.update(cfg);
        r
    }

    /// The current timeout, with its back-off.
    #[inline]
    pub(super) fn get(&self) -> Time {
        self.rto
    }

    /// The smoothed RTT (ns), once there is one.
    #[inline]
    pub(super) fn srtt(&self) -> Option<f64> {
        self.has_rtt.then_some(self.srtt)
    }

    /// An RTT sample of `r` ns (RFC 6298 §2.2–2.3); clears the back-off.
    pub(super) fn sample(&mut self, r: f64, cfg: &TcpConfig) {
        if !self.has_rtt {
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.has_rtt = true;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.backoff = 0;
        self.update(cfg);
    }

    /// Linux's estimate (`srtt`, and `rttvar` as Linux's `rttvar_us`, four deviations): the RTO
    /// becomes `srtt + rttvar`, bounded as always, and the back-off is cleared.
    pub(super) fn set_linux(&mut self, srtt: f64, rttvar: f64, cfg: &TcpConfig) {
        self.srtt = srtt;
        // `update` adds 4·RTTVAR; Linux's rttvar_us already holds four deviations
        self.rttvar = rttvar / 4.0;
        self.has_rtt = true;
        self.backoff = 0;
        self.update(cfg);
    }

    /// The timer expired: back off (RFC 6298 §5.5).
    pub(super) fn back_off(&mut self, cfg: &TcpConfig) {
        self.backoff = (self.backoff + 1).min(20);
        self.update(cfg);
    }

    /// Recompute the timeout after a change of `srtt`, `rttvar` or `backoff`.
    fn update(&mut self, cfg: &TcpConfig) {
        let base = if self.has_rtt {
            self.srtt + (cfg.granularity as f64).max(4.0 * self.rttvar)
        } else {
            cfg.initial_rto as f64
        };
        let base = base.max(cfg.min_rto as f64);
        let backed = base * (1u64 << self.backoff.min(cfg.max_backoff_exp)) as f64;
        self.rto = backed.min(cfg.max_rto as f64) as Time;
    }
}

/// Linux's RTT estimator (`tcp_rtt_estimator`): the state beyond SRTT that it keeps, in ns.
#[derive(Debug, Clone, Default)]
pub(super) struct LinuxRtt {
    srtt: f64,
    /// Four times the mean deviation (`mdev_us`), its largest value this round trip
    /// (`mdev_max_us`) and the variation term of the RTO (`rttvar_us`).
    mdev: f64,
    mdev_max: f64,
    rttvar: f64,
    /// The round trip ends when `snd_una` passes this (`rtt_seq`).
    rtt_seq: u32,
}

impl LinuxRtt {
    /// A sample `m` (ns) with `snd_una` and `snd_nxt` after the ACK; returns (SRTT, rttvar).
    pub(super) fn sample(&mut self, m: f64, snd_una: u32, snd_nxt: u32, min_rto: f64) -> (f64, f64) {
        if self.srtt == 0.0 {
            self.srtt = m.max(1.0);
            self.mdev = 2.0 * m; // "make sure rto = 3*rtt"
            self.rttvar = self.mdev.max(min_rto);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
            return (self.srtt, self.rttvar);
        }
        let err = m - self.srtt;
        self.srtt = (self.srtt + err / 8.0).max(1.0);
        let mut d = err.abs() - self.mdev / 4.0;
        if err < 0.0 && d > 0.0 {
            d /= 8.0; // a falling RTT: 1/32 instead of 1/4
        }
        self.mdev += d;
        if self.mdev > self.mdev_max {
            self.mdev_max = self.mdev;
            self.rttvar = self.rttvar.max(self.mdev_max);
        }
        if snd_una > self.rtt_seq {
            // a round trip is over: the variation term moves a quarter of the way to its maximum
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) / 4.0;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max = min_rto;
        }
        (self.srtt, self.rttvar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: f64 = 1e6;

    #[test]
    fn linux_rto_is_srtt_plus_at_least_min_rto() {
        let cfg = TcpConfig::modern();
        let mut l = LinuxRtt::default();
        let mut r = Rto::new(&cfg);
        // a steady 44 ms path: RTO = 44 ms + 200 ms (min_rto as the variation term), where
        // RFC 6298 gives max(200 ms, 44 ms + 4·RTTVAR) = 200 ms
        let mut una = 0;
        for _ in 0..200 {
            una += 10;
            let (srtt, var) = l.sample(44.0 * MS, una, una + 10, cfg.min_rto as f64);
            r.set_linux(srtt, var, &cfg);
        }
        assert!((r.get() as f64 - 244.0 * MS).abs() < 0.5 * MS, "{}", r.get());
        // the first sample: srtt = m, rttvar = max(2m, min_rto): RTO = 3 m for a long path
        let mut l = LinuxRtt::default();
        let (srtt, var) = l.sample(300.0 * MS, 1, 2, cfg.min_rto as f64);
        r.set_linux(srtt, var, &cfg);
        assert_eq!(r.get(), 900_000_000);
    }

    #[test]
    fn a_falling_rtt_barely_moves_the_deviation() {
        let min_rto = 200.0 * MS;
        let mut up = LinuxRtt::default();
        let mut down = LinuxRtt::default();
        up.sample(100.0 * MS, 0, 10, min_rto);
        down.sample(100.0 * MS, 0, 10, min_rto);
        let a = up.mdev;
        up.sample(180.0 * MS, 0, 10, min_rto);
        down.sample(20.0 * MS, 0, 10, min_rto);
        // the same |error| of 80 ms moves mdev (4 deviations) by |error| − mdev/4 when the RTT
        // rises, by an eighth of that when it falls
        assert!(((up.mdev - a) - 30.0 * MS).abs() < 1.0, "{}", up.mdev - a);
        assert!(((down.mdev - a) - 30.0 * MS / 8.0).abs() < 1.0, "{}", down.mdev - a);
    }
}
