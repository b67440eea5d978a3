//! A windowed minimum in constant space: the smallest value seen over the last `window` of
//! time, kept as three candidates (the best, and the best of the later two quarters of the
//! window), as K. Nichols' algorithm that Linux uses for `tcp_min_rtt` (`lib/win_minmax.c`).
//!
//! When the best candidate ages out of the window the next one takes its place, so the estimate
//! can rise again after a path's delay grows, without storing every sample.

use aqm::Time;

/// A (time, value) candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    t: Time,
    v: Time,
}

/// The minimum of the samples of the last `window` ns (approximately, as the algorithm keeps
/// only three candidates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowedMin {
    s: [Sample; 3],
}

impl Default for WindowedMin {
    fn default() -> Self {
        WindowedMin { s: [Sample { t: 0, v: Time::MAX }; 3] }
    }
}

impl WindowedMin {
    /// The current minimum (`Time::MAX` before the first sample).
    #[inline]
    pub fn get(&self) -> Time {
        self.s[0].v
    }

    /// A sample `v` at time `t`, with the window `window`; returns the new minimum.
    pub fn update(&mut self, t: Time, v: Time, window: Time) -> Time {
        let new = Sample { t, v };
        if self.s[0].v == Time::MAX || v <= self.s[0].v || t.saturating_sub(self.s[2].t) > window {
            // a new best, or nothing in the window any longer: start over
            self.s = [new; 3];
            return v;
        }
        if v <= self.s[1].v {
            self.s[1] = new;
            self.s[2] = new;
        } else if v <= self.s[2].v {
            self.s[2] = new;
        }
        let age = t.saturating_sub(self.s[0].t);
        if age > window {
            // the best aged out: the later candidates move up
            self.s = [self.s[1], self.s[2], new];
            if t.saturating_sub(self.s[0].t) > window {
                self.s = [self.s[1], self.s[2], new];
            }
        } else if self.s[1].t == self.s[0].t && age > window / 4 {
            // a quarter of the window without a second candidate: take this one
            self.s[1] = new;
            self.s[2] = new;
        } else if self.s[2].t == self.s[1].t && age > window / 2 {
            self.s[2] = new;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn follows_the_minimum_and_forgets_it_after_the_window() {
        let mut m = WindowedMin::default();
        assert_eq!(m.get(), Time::MAX);
        assert_eq!(m.update(0, 50, 100), 50);
        assert_eq!(m.update(10, 40, 100), 40);
        assert_eq!(m.update(20, 60, 100), 40);
        // 40 is older than the window at t = 200: a later candidate takes over
        let v = m.update(200, 70, 100);
        assert!(v > 40, "{v}");
    }

    proptest! {
        /// The estimate is never below the smallest sample of the last window and never above
        /// the newest sample.
        #[test]
        fn bounded_by_the_window(samples in prop::collection::vec((1u64..50, 1u64..1000), 1..200)) {
            let window = 100;
            let mut m = WindowedMin::default();
            let mut t = 0;
            let mut seen: Vec<(Time, Time)> = Vec::new();
            for (dt, v) in samples {
                t += dt;
                let got = m.update(t, v, window);
                seen.push((t, v));
                let floor = seen.iter().filter(|(s, _)| t - s <= window).map(|&(_, v)| v).min().unwrap();
                prop_assert!(got >= floor, "got {got} < min of the window {floor}");
                prop_assert!(got <= v, "got {got} > newest {v}");
            }
        }
    }
}
