//! UDP ON/OFF (experiments.md §1.4): while ON, CBR at the peak rate; ON and OFF durations drawn
//! independently from exponential ([RAQM] case 4) or Pareto ([WARD] §3.2, shape 1.5) distributions
//! with the configured means. A source starts with an ON period at its start time.
//!
//! As in ns-2's `Application/Traffic/Exponential` and `/Pareto`, an ON period of length `D` carries
//! `round(D / gap)` packets (so the long-run rate is `peak · mean_on / (mean_on + mean_off)`
//! without a bias from a partial last packet); an ON period too short for one packet sends none.
//! The OFF period starts when the ON period's time `D` ends.

use super::cbr::Cbr;
use super::dist::Dist;
use aqm::rng::Rng;
use aqm::Time;

/// ON/OFF period distributions (ON and OFF durations in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnOffSpec {
    pub on: Dist,
    pub off: Dist,
}

/// A UDP source: CBR, or ON/OFF when `onoff` is set.
#[derive(Debug, Clone)]
pub struct UdpSource {
    pub cbr: Cbr,
    pub seq: u32,
    /// Index of the next packet in the current sending period.
    k: u64,
    /// Packets of the current ON period (u64::MAX for plain CBR).
    burst: u64,
    period_start: Time,
    /// ON/OFF: when the current ON period's time ends.
    on_end: Time,
    onoff: Option<(OnOffSpec, Rng)>,
    /// ON periods begun and their total drawn length (ns), for checks.
    pub on_periods: u64,
    pub on_time_ns: f64,
    /// Nothing after this time matters (see [`UdpSource::set_horizon`]).
    horizon: Time,
    /// The last returned time continues a search rather than sending a packet.
    searching: bool,
}

const NS: f64 = 1e9;

/// Empty ON periods one call steps over before it hands control back to the engine.
pub const MAX_EMPTY_PERIODS: u32 = 64;

impl UdpSource {
    pub fn new(cbr: Cbr, onoff: Option<(OnOffSpec, Rng)>) -> Self {
        UdpSource {
            cbr,
            seq: 0,
            k: 0,
            burst: u64::MAX,
            period_start: 0,
            on_end: Time::MAX,
            onoff,
            on_periods: 0,
            on_time_ns: 0.0,
            horizon: Time::MAX,
            searching: false,
        }
    }

    /// Begin ON periods from `t` until one has at least one packet; returns when its first packet
    /// leaves. The search is bounded: it stops once `t` reaches the source's horizon (the run's
    /// end or the flow's stop: the returned time is then never scheduled), and after
    /// [`MAX_EMPTY_PERIODS`] empty ON periods it returns the time reached with
    /// [`UdpSource::searching`] set, so the engine resumes it from a later event and keeps
    /// control (progress, interruption) however short the periods are against the packet gap.
    fn begin_on(&mut self, mut t: Time) -> Time {
        let gap = self.cbr.gap_ns();
        let horizon = self.horizon;
        let (spec, rng) = self.onoff.as_mut().expect("on/off source");
        self.searching = false;
        for _ in 0..MAX_EMPTY_PERIODS {
            let d = (spec.on.sample(rng) * NS).round().max(0.0);
            self.on_periods += 1;
            self.on_time_ns += d;
            let n = (d / gap).round() as u64;
            if n > 0 {
                self.period_start = t;
                self.on_end = t.saturating_add(d as Time);
                self.burst = n;
                self.k = 0;
                return t;
            }
            let off = (spec.off.sample(rng) * NS).round().max(0.0) as Time;
            // an empty ON period and its OFF period; time moves on by at least 1 ns, so the
            // search always reaches the horizon
            t = t.saturating_add((d as Time).saturating_add(off).max(1));
            if t >= horizon {
                return t;
            }
        }
        self.searching = true;
        t
    }

    /// Set the time from which nothing the source does matters (the run's end, or the flow's
    /// stop if earlier): the search for a non-empty ON period stops there.
    pub fn set_horizon(&mut self, horizon: Time) {
        self.horizon = horizon;
    }

    /// The last call returned a time at which the search for a non-empty ON period goes on
    /// (call [`UdpSource::resume`] then), not a packet's departure.
    pub fn searching(&self) -> bool {
        self.searching
    }

    /// Go on searching for a non-empty ON period from `t`: when its first packet leaves.
    pub fn resume(&mut self, t: Time) -> Time {
        self.begin_on(t)
    }

    /// The source starts at `t`: when its first packet leaves.
    pub fn start(&mut self, t: Time) -> Time {
        if self.onoff.is_some() {
            self.begin_on(t)
        } else {
            self.period_start = t;
            self.k = 0;
            t
        }
    }

    /// A packet was just sent: when the next one leaves.
    pub fn advance(&mut self) -> Time {
        self.seq = self.seq.wrapping_add(1);
        self.k += 1;
        if self.k < self.burst {
            return self.period_start.saturating_add(self.cbr.offset(self.k));
        }
        // the ON period's packets are out: OFF until the next ON period
        let (spec, rng) = self.onoff.as_mut().expect("on/off source");
        let off = (spec.off.sample(rng) * NS).round().max(0.0) as Time;
        let next = self.on_end.saturating_add(off);
        if next >= self.horizon {
            return next;
        }
        self.begin_on(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(on: Dist, off: Dist) -> UdpSource {
        let cbr = Cbr { rate_bps: 80_000, size: 500, interval: 0 }; // 20 packets/s while ON
        UdpSource::new(cbr, Some((OnOffSpec { on, off }, Rng::stream(3, "onoff", 0))))
    }

    fn long_run_rate(mut s: UdpSource, horizon: Time) -> f64 {
        let mut t = s.start(0);
        let mut n = 0u64;
        while t < horizon {
            n += 1;
            t = s.advance();
        }
        n as f64 * 500.0 * 8.0 / (horizon as f64 / NS)
    }

    #[test]
    fn exponential_onoff_mean_rate() {
        // RAQM case 4: mean ON = mean OFF = 1 s, 80 kb/s while ON -> 40 kb/s on average
        let s = source(Dist::Exponential { mean: 1.0 }, Dist::Exponential { mean: 1.0 });
        let r = long_run_rate(s, 20_000 * 1_000_000_000);
        assert!((r / 40_000.0 - 1.0).abs() < 0.03, "rate {r}");
    }

    #[test]
    fn pareto_onoff_mean_rate() {
        // WARD: shape 1.5, duty cycle 1/4 -> a quarter of the peak (heavy tails converge slowly)
        let s = source(
            Dist::Pareto { mean: 0.5, shape: 1.5, max: None },
            Dist::Pareto { mean: 1.5, shape: 1.5, max: None },
        );
        let r = long_run_rate(s, 200_000 * 1_000_000_000);
        assert!((r / 20_000.0 - 1.0).abs() < 0.05, "rate {r}");
    }

    #[test]
    fn plain_cbr_never_stops() {
        let mut s = UdpSource::new(Cbr { rate_bps: 8000, size: 1000, interval: 0 }, None);
        assert_eq!(s.start(5), 5);
        assert_eq!(s.advance(), 5 + 1_000_000_000);
        assert_eq!(s.advance(), 5 + 2_000_000_000);
    }
}

#[cfg(test)]
mod period_tests {
    use super::*;

    /// Rebuild the ON and OFF periods from the packet departure times the source produces (a gap
    /// longer than the packet gap ends an ON period) — what a receiver would see.
    fn periods(mut s: UdpSource, horizon: Time) -> (Vec<f64>, Vec<f64>) {
        let gap = s.cbr.gap_ns();
        let mut t = s.start(0);
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let (mut n, mut last) = (0u64, t);
        while t < horizon {
            if t > last && (t - last) as f64 > 1.5 * gap {
                on.push(n as f64 * gap / NS);
                off.push((t - last) as f64 / NS - gap / NS);
                n = 0;
            }
            n += 1;
            last = t;
            t = s.advance();
        }
        (on, off)
    }

    fn mean(x: &[f64]) -> f64 {
        x.iter().sum::<f64>() / x.len() as f64
    }

    /// Hill estimator of the tail index over the largest `k` values.
    fn hill(x: &[f64], k: usize) -> f64 {
        let mut v = x.to_vec();
        v.sort_by(|a, b| b.partial_cmp(a).unwrap());
        k as f64 / v[..k].iter().map(|y| (y / v[k]).ln()).sum::<f64>()
    }

    #[test]
    fn exponential_periods_have_the_configured_means() {
        // 2 Mb/s peak, 1000 B: 4 ms gap; mean ON 0.5 s, OFF 1.5 s
        let cbr = Cbr { rate_bps: 2_000_000, size: 1000, interval: 0 };
        let spec = OnOffSpec { on: Dist::Exponential { mean: 0.5 }, off: Dist::Exponential { mean: 1.5 } };
        let s = UdpSource::new(cbr, Some((spec, Rng::stream(11, "onoff", 0))));
        let (on, off) = periods(s, 40_000 * 1_000_000_000);
        println!("{} periods: mean ON {:.4} s, mean OFF {:.4} s", on.len(), mean(&on), mean(&off));
        assert!((mean(&on) / 0.5 - 1.0).abs() < 0.05);
        assert!((mean(&off) / 1.5 - 1.0).abs() < 0.05);
        // exponential: the coefficient of variation is 1
        let cv = (on.iter().map(|x| (x - mean(&on)).powi(2)).sum::<f64>() / on.len() as f64).sqrt() / mean(&on);
        assert!((cv - 1.0).abs() < 0.05, "ON coefficient of variation {cv}");
    }

    #[test]
    fn pareto_periods_have_the_configured_means_and_tail_index() {
        let cbr = Cbr { rate_bps: 400_000, size: 1000, interval: 0 }; // 20 ms gap: fewer packets to step through
        let spec = OnOffSpec {
            on: Dist::Pareto { mean: 0.5, shape: 1.5, max: None },
            off: Dist::Pareto { mean: 1.5, shape: 1.5, max: None },
        };
        let s = UdpSource::new(cbr, Some((spec, Rng::stream(11, "onoff", 1))));
        let (on, off) = periods(s, 400_000 * 1_000_000_000);
        let (hon, hoff) = (hill(&on, on.len() / 100), hill(&off, off.len() / 100));
        println!(
            "{} periods: mean ON {:.4} s, mean OFF {:.4} s, tail index ON {hon:.3}, OFF {hoff:.3}",
            on.len(),
            mean(&on),
            mean(&off)
        );
        // heavy tails (infinite variance) make the sample mean converge slowly: 200k periods
        assert!((mean(&on) / 0.5 - 1.0).abs() < 0.05);
        assert!((mean(&off) / 1.5 - 1.0).abs() < 0.05);
        assert!((hon / 1.5 - 1.0).abs() < 0.15 && (hoff / 1.5 - 1.0).abs() < 0.15);
    }
}
