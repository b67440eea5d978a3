//! Random distributions for traffic models (ON/OFF periods, flow sizes and durations, think times).
//!
//! Every draw takes one uniform from the caller's seeded stream (inverse-transform sampling), so a
//! source's sequence of periods depends only on its own stream.

use aqm::rng::Rng;

/// A distribution of a non-negative quantity (seconds, bytes, ...), in the quantity's base unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Always this value.
    Const(f64),
    /// Exponential with this mean.
    Exponential { mean: f64 },
    /// Pareto (type I) with this mean and shape `a > 1`: scale `x_m = mean (a − 1) / a`,
    /// `P(X > x) = (x_m / x)^a` for `x ≥ x_m`; optionally truncated at `max` (values above become
    /// `max`). `mean` is the mean *before* the cap; the cap lowers it to
    /// `mean − x_m^a max^(1−a) / (a − 1)`, which matters for heavy tails: the spec's web responses
    /// (mean 12 000 B, shape 1.2, cap 2 MB) have a capped mean of 9 488 B ([`Dist::capped_mean`]).
    Pareto { mean: f64, shape: f64, max: Option<f64> },
    /// Uniform on `[lo, hi]`.
    Uniform { lo: f64, hi: f64 },
}

impl Dist {
    /// One draw.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match *self {
            Dist::Const(v) => v,
            Dist::Exponential { mean } => -mean * libm::log(open01(rng)),
            Dist::Pareto { mean, shape, max } => {
                let xm = mean * (shape - 1.0) / shape;
                let x = xm * libm::pow(open01(rng), -1.0 / shape);
                max.map_or(x, |m| x.min(m))
            }
            Dist::Uniform { lo, hi } => lo + (hi - lo) * rng.uniform(),
        }
    }

    /// The mean of the distribution as configured (ignoring a Pareto cap).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const(v) => v,
            Dist::Exponential { mean } | Dist::Pareto { mean, .. } => mean,
            Dist::Uniform { lo, hi } => (lo + hi) / 2.0,
        }
    }

    /// The mean of what [`Dist::sample`] draws, with a Pareto cap taken into account.
    pub fn capped_mean(&self) -> f64 {
        match *self {
            Dist::Pareto { mean, shape, max: Some(m) } => {
                let xm = mean * (shape - 1.0) / shape;
                mean - libm::pow(xm, shape) * libm::pow(m, 1.0 - shape) / (shape - 1.0)
            }
            _ => self.mean(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Dist::Const(_) => "constant",
            Dist::Exponential { .. } => "exponential",
            Dist::Pareto { .. } => "pareto",
            Dist::Uniform { .. } => "uniform",
        }
    }
}

/// Uniform in (0, 1]: never 0, so logarithms and negative powers are finite.
fn open01(rng: &mut Rng) -> f64 {
    1.0 - rng.uniform()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(d: Dist, n: usize) -> Vec<f64> {
        let mut r = Rng::stream(7, "dist", 0);
        (0..n).map(|_| d.sample(&mut r)).collect()
    }

    #[test]
    fn means_match() {
        let n = 400_000;
        for d in [
            Dist::Exponential { mean: 2.0 },
            Dist::Uniform { lo: 1.0, hi: 2.0 },
            Dist::Pareto { mean: 1.0, shape: 2.5, max: None },
        ] {
            let m = draws(d, n).iter().sum::<f64>() / n as f64;
            assert!((m / d.mean() - 1.0).abs() < 0.02, "{d:?}: sample mean {m}");
        }
    }

    #[test]
    fn pareto_tail_index_by_hill_estimator() {
        // shape 1.5 (the spec's ON/OFF shape): the Hill estimator over the top 1% recovers it
        let mut x = draws(Dist::Pareto { mean: 0.5, shape: 1.5, max: None }, 200_000);
        x.sort_by(|a, b| b.partial_cmp(a).unwrap());
        let k = 2000;
        let hill = k as f64 / x[..k].iter().map(|v| (v / x[k]).ln()).sum::<f64>();
        assert!((hill / 1.5 - 1.0).abs() < 0.1, "Hill estimate {hill}");
        assert!(x.iter().all(|&v| v >= 0.5 / 3.0 - 1e-12), "support starts at x_m");
    }

    #[test]
    fn capped_mean_matches_draws() {
        let d = Dist::Pareto { mean: 12_000.0, shape: 1.2, max: Some(2e6) };
        assert!((d.capped_mean() - 9488.0).abs() < 1.0, "{}", d.capped_mean());
        let x = draws(d, 2_000_000);
        let m = x.iter().sum::<f64>() / x.len() as f64;
        assert!((m / d.capped_mean() - 1.0).abs() < 0.03, "sample mean {m}");
    }

    #[test]
    fn pareto_cap_truncates() {
        let x = draws(Dist::Pareto { mean: 12_000.0, shape: 1.2, max: Some(2e6) }, 100_000);
        assert!(x.iter().all(|&v| v <= 2e6));
        assert!(x.contains(&2e6));
    }
}
