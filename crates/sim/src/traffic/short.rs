//! Short TCP connections arriving as a Poisson process (experiments.md §1.4, [RAQM] case 4).
//!
//! Connections arrive between the group's `start` and `stop` with exponential inter-arrival times
//! of mean `1 / arrival_rate`; each is a new TCP connection with its own flow id, placed on one of
//! the group's `count` host pairs chosen uniformly at random (several connections may share a pair,
//! as they share a client–server pair in the paper). Each connection either sends `size` bytes
//! (a distribution, e.g. Pareto) and completes, or sends like FTP for `flow_duration` (e.g. uniform
//! on [1, 2] s) and then stops offering data (data already sent is still delivered) — or both,
//! whichever ends first. Completion time is recorded per connection.

use super::dist::Dist;
use aqm::rng::Rng;
use aqm::Time;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShortSpec {
    /// Mean arrivals per second.
    pub arrival_rate: f64,
    /// Bytes per connection.
    pub size: Option<Dist>,
    /// Seconds a connection sends for.
    pub duration: Option<Dist>,
}

/// One connection to open: its host pair, bytes to send (`None` = unlimited) and how long it may
/// send (`None` = until done).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewConn {
    pub host: u32,
    pub bytes: Option<u64>,
    pub duration: Option<Time>,
}

/// The arrival process of one group.
#[derive(Debug, Clone)]
pub struct ShortGen {
    pub spec: ShortSpec,
    pub hosts: u32,
    rng: Rng,
}

impl ShortGen {
    pub fn new(spec: ShortSpec, hosts: u32, rng: Rng) -> Self {
        ShortGen { spec, hosts, rng }
    }

    /// Time from one arrival to the next.
    pub fn gap(&mut self) -> Time {
        let d = Dist::Exponential { mean: 1.0 / self.spec.arrival_rate };
        (d.sample(&mut self.rng) * 1e9).round() as Time
    }

    /// Draw the next connection.
    pub fn conn(&mut self) -> NewConn {
        let host = self.rng.below(self.hosts as u64) as u32;
        let bytes = self.spec.size.map(|d| d.sample(&mut self.rng).round().max(1.0) as u64);
        let duration = self.spec.duration.map(|d| (d.sample(&mut self.rng) * 1e9).round() as Time);
        NewConn { host, bytes, duration }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_poisson() {
        // mean count per 1 s window = rate, and variance = mean (index of dispersion 1)
        let spec = ShortSpec { arrival_rate: 10.0, size: None, duration: None };
        let mut g = ShortGen::new(spec, 5, Rng::stream(1, "short", 0));
        let windows = 20_000usize;
        let mut counts = vec![0u32; windows];
        let mut t: Time = 0;
        loop {
            t += g.gap();
            let w = (t / 1_000_000_000) as usize;
            if w >= windows {
                break;
            }
            counts[w] += 1;
        }
        let n = windows as f64;
        let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
        let var = counts.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((mean / 10.0 - 1.0).abs() < 0.02, "mean {mean}");
        assert!((var / mean - 1.0).abs() < 0.05, "dispersion {}", var / mean);
    }

    #[test]
    fn hosts_are_uniform() {
        let spec = ShortSpec { arrival_rate: 1.0, size: None, duration: Some(Dist::Uniform { lo: 1.0, hi: 2.0 }) };
        let mut g = ShortGen::new(spec, 5, Rng::stream(1, "short", 0));
        let mut per = [0u32; 5];
        for _ in 0..50_000 {
            let c = g.conn();
            per[c.host as usize] += 1;
            let d = c.duration.unwrap();
            assert!((1_000_000_000..=2_000_000_000).contains(&d));
        }
        assert!(per.iter().all(|&n| (n as f64 / 10_000.0 - 1.0).abs() < 0.05), "{per:?}");
    }
}
