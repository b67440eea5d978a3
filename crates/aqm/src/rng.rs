//! Seeded random streams.
//!
//! Every random draw in aqmlab comes from an [`Rng`] derived from the scenario seed and a stream
//! name plus index (e.g. `("flow", 17)` or `("aqm", link)`), so the same scenario and seed give
//! bit-identical results on any machine, and adding a component does not perturb the streams of the
//! others. The generator is xoshiro256++ (from `rand_xoshiro`); the conversion to floats and to
//! bounded integers is written out here so it is fixed by this crate, not by a library version.

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random stream.
#[derive(Clone, Debug)]
pub struct Rng(Xoshiro256PlusPlus);

#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit finaliser (splitmix64's mixing step): a fixed, platform-independent hash of a key,
/// used to map flow ids to bins (SFB, HHF) with a salt drawn from the discipline's stream.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a hash of a name (stable across platforms and versions).
pub fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Rng {
    /// The stream `(name, index)` of the run seeded with `seed`.
    pub fn stream(seed: u64, name: &str, index: u64) -> Self {
        let key = splitmix64(seed ^ splitmix64(name_hash(name) ^ splitmix64(index.wrapping_add(1))));
        Rng(Xoshiro256PlusPlus::seed_from_u64(key))
    }

    /// Next raw 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform real in [0, 1) with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n) (n > 0), unbiased (Lemire's multiply-and-reject).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// True with probability `p` (one uniform draw).
    #[inline]
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::stream(1, "flow", 3).next_u64()).collect();
        assert!(a.iter().all(|x| *x == a[0]));
        assert_ne!(Rng::stream(1, "flow", 3).next_u64(), Rng::stream(1, "flow", 4).next_u64());
        assert_ne!(Rng::stream(1, "flow", 3).next_u64(), Rng::stream(2, "flow", 3).next_u64());
        assert_ne!(Rng::stream(1, "flow", 3).next_u64(), Rng::stream(1, "aqm", 3).next_u64());
    }

    #[test]
    fn uniform_and_below_are_in_range_with_right_mean() {
        let mut r = Rng::stream(7, "t", 0);
        let n = 200_000;
        let mut s = 0.0;
        for _ in 0..n {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            s += u;
        }
        assert!((s / n as f64 - 0.5).abs() < 0.005);
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[r.below(7) as usize] += 1;
        }
        for c in counts {
            assert!((c as i64 - 10_000).abs() < 500, "{counts:?}");
        }
    }
}
