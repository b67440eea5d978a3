//! DCTCP (RFC 8257) and the Prague-style scalable sender built on it.
//!
//! Reference: S. Bensley, D. Thaler, P. Balasubramanian, L. Eggert, G. Judd, "Data Center TCP
//! (DCTCP): TCP Congestion Control for Data Centers", RFC 8257, October 2017 (§3.2 the receiver's
//! echo of every CE mark, §3.3 the sender's estimate `alpha` and its response). Prague: the L4S
//! scalable sender of RFC 9331 §4 (ECT(1), a scalable response to marks), of which aqmlab models
//! the DCTCP control law on ECT(1) packets with pacing, not the RTT independence or the other
//! refinements of the Prague requirements (RFC 9331 §4.3). Documentation: docs/tcp.md.
//!
//! * The receiver echoes the CE state of every data segment (ECN-Echo on the ACK iff the
//!   segment that triggered it was marked, an immediate ACK when the state changes;
//!   `super::receiver`).
//! * Over each window of data (until the ACK of the segment that was last sent when the window
//!   began) the sender counts the segments acknowledged and those acknowledged with ECN-Echo;
//!   at the end of the window `alpha ← (1 − g)·alpha + g·F` with `F` the marked fraction
//!   (RFC 8257 §3.3, step 4; `g = 1/16`, `alpha` starts at 1 as Linux's `dctcp_alpha_on_init`).
//! * On an ECN-Echo, at most once per window of data (the sender's RFC 3168 gate), the window
//!   becomes `cwnd·(1 − alpha/2)` (§3.3 step 6), at least 2 segments.
//! * Growth (slow start and congestion avoidance) and the response to loss are Reno's (§3.3:
//!   loss is answered as by conventional TCP).

use super::cc::{AckInfo, CongestionControl, Window};

/// RFC 8257 §4.2's recommended estimation gain, 1/16.
pub const DEFAULT_G: f64 = 1.0 / 16.0;

/// DCTCP's state.
#[derive(Debug, Clone)]
pub struct Dctcp {
    g: f64,
    /// The estimate of the fraction of marked segments.
    pub alpha: f64,
    acked: u32,
    marked: u32,
    /// The observation window ends when `snd_una` passes this.
    window_end: u32,
}

impl Dctcp {
    pub fn new(g: f64) -> Self {
        Dctcp { g, alpha: 1.0, acked: 0, marked: 0, window_end: 0 }
    }
}

impl CongestionControl for Dctcp {
    fn on_any_ack(&mut self, _w: &mut Window, a: &AckInfo) {
        self.acked += a.newly;
        if a.ece {
            self.marked += a.newly;
        }
        if a.snd_una > self.window_end {
            if self.acked > 0 {
                let f = self.marked as f64 / self.acked as f64;
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            }
            self.acked = 0;
            self.marked = 0;
            self.window_end = a.snd_max;
        }
    }

    fn on_ecn(&mut self, w: &mut Window, _a: &AckInfo) -> f64 {
        (w.cwnd * (1.0 - self.alpha / 2.0)).max(2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(d: &mut Dctcp, una: u32, max: u32, newly: u32, ece: bool) {
        let mut w = Window { cwnd: 10.0, ssthresh: f64::MAX, pacing_rate: 0.0 };
        let a = AckInfo { snd_una: una, snd_max: max, newly, ece, ..Default::default() };
        d.on_any_ack(&mut w, &a);
    }

    #[test]
    fn alpha_is_the_moving_average_of_the_marked_fraction_per_window() {
        let mut d = Dctcp::new(DEFAULT_G);
        // the first ACK closes the (empty) first window and opens one up to 10
        ack(&mut d, 1, 10, 1, false);
        assert_eq!(d.alpha, 1.0 - DEFAULT_G);
        // a window of 10 segments, 3 of them echoed as marked
        for s in 2..=11 {
            ack(&mut d, s, 20, 1, s % 4 == 0 && s < 14);
        }
        let want = (1.0 - DEFAULT_G) * (1.0 - DEFAULT_G) + DEFAULT_G * 0.2;
        assert!((d.alpha - want).abs() < 1e-12, "{} vs {want}", d.alpha);
    }

    #[test]
    fn the_response_scales_with_alpha() {
        let mut d = Dctcp::new(DEFAULT_G);
        let mut w = Window { cwnd: 100.0, ssthresh: f64::MAX, pacing_rate: 0.0 };
        d.alpha = 0.1;
        assert_eq!(d.on_ecn(&mut w, &AckInfo::default()), 95.0);
        d.alpha = 1.0;
        assert_eq!(d.on_ecn(&mut w, &AckInfo::default()), 50.0);
        w.cwnd = 3.0;
        assert_eq!(d.on_ecn(&mut w, &AckInfo::default()), 2.0);
    }
}
