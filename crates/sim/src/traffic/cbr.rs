//! UDP constant bit rate (experiments.md §1.4): fixed packet size, constant gap `8 · size / rate`,
//! no jitter. Packet `k` of a sending period that began at `t0` leaves at
//! `t0 + floor(k · 8 · size · 10^9 / rate)` ns, so rounding never accumulates. A probe flow
//! (`app = "probe"`) gives its gap as an `interval` instead: packet `k` leaves at `t0 + k · interval`.

use aqm::{Time, NS_PER_SEC};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cbr {
    /// Sending rate (b/s, at least 1).
    pub rate_bps: u64,
    /// Packet size on the wire (bytes).
    pub size: u16,
    /// The gap in ns when the source is given by its interval (a probe); 0: from the rate.
    pub interval: Time,
}

impl Cbr {
    /// Offset of packet `k` from the start of its sending period.
    #[inline]
    pub fn offset(&self, k: u64) -> Time {
        if self.interval > 0 {
            return (k as u128 * self.interval as u128).min(Time::MAX as u128) as Time;
        }
        let ns = (k as u128 * self.size as u128 * 8 * NS_PER_SEC as u128) / self.rate_bps as u128;
        ns.min(Time::MAX as u128) as Time
    }

    /// The gap between packets in nanoseconds (as a real number).
    pub fn gap_ns(&self) -> f64 {
        if self.interval > 0 {
            return self.interval as f64;
        }
        self.size as f64 * 8.0 * NS_PER_SEC as f64 / self.rate_bps as f64
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_do_not_accumulate_rounding() {
        let c = super::Cbr { rate_bps: 3_000_000, size: 1000, interval: 0 }; // gap 2.666... ms
        assert_eq!(c.offset(0), 0);
        assert_eq!(c.offset(3), 8_000_000);
        assert_eq!(c.offset(3_000_000), 8_000_000_000_000);
    }
}
