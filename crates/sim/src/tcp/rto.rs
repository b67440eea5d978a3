//! The retransmission timeout (RFC 6298): smoothed RTT, its variation, and the back-off.
//!
//! One segment at a time is timed (no timestamps option), and no retransmitted segment is
//! (Karn's rule); the sender core takes the samples (`super::core::Core`). The back-off doubles
//! the timeout at each expiry, up to `2^max_backoff_exp` (ns-2 before 2.35: 64), and is cleared
//! by the next valid sample. `RTO = max(min_rto, SRTT + max(G, 4 RTTVAR))`, at most `max_rto`;
//! before the first sample, `initial_rto`.

use super::TcpConfig;
use aqm::Time;

/// RFC 6298's estimator and the current timeout.
#[derive(Debug, Clone)]
pub(super) struct Rto {
    srtt: f64,
    rttvar: f64,
    has_rtt: bool,
    backoff: u32,
    /// The current RTO with its back-off, recomputed only when a sample or a timeout changes it:
    /// it is read on every new ACK, and the f64 arithmetic is the same each time in between.
    rto: Time,
}

impl Rto {
    pub(super) fn new(cfg: &TcpConfig) -> Self {
        let mut r = Rto { srtt: 0.0, rttvar: 0.0, has_rtt: false, backoff: 0, rto: 0 };
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
