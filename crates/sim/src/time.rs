//! The simulation clock's range and how sums of times stay inside it.
//!
//! Time is a `u64` count of nanoseconds: the clock reaches `u64::MAX` ns, about 584 years. A
//! scenario may give any single time up to [`MAX_SECS`] (checked by the loader, `units`), and the
//! run's duration is below that, so `Time::MAX` is always after the end of a run. Sums of times
//! (a start plus a link delay, `now` plus an RTO, a think time or a drawn ON period, ...) use
//! saturating addition: a sum past the clock's range becomes `Time::MAX`, an instant that never
//! comes, which is what the overflowing sum means (the event would fall after the run ends). A
//! sum that fits is exact, so saturation never changes a run whose times fit the clock.
//!
//! The queue disciplines (crate `aqm`) add only their own timer periods to the current time
//! (CoDel's interval and control law, PIE's and REM's update periods, BLUE's freeze time, RAQM's
//! T): each is at most 10^6 s (`aqm::control::check_period`), and a run ends before
//! [`MAX_SECS`], so those sums cannot leave the clock (checked below) and need no saturation.

use aqm::Time;

/// Largest time a scenario may give, in seconds (1.8·10^10 s ≈ 570 years, just inside the
/// clock's 1.8447·10^10 s).
pub const MAX_SECS: f64 = 1.8e10;

/// The sum of `parts`, saturating at `Time::MAX` (an instant after the end of every run).
#[inline]
pub fn sum(parts: &[Time]) -> Time {
    parts.iter().fold(0, |a: Time, &b| a.saturating_add(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_past_the_clock_and_are_exact_inside_it() {
        assert_eq!(sum(&[1, 2, 3]), 6);
        assert_eq!(sum(&[9_000_000_000 * 1_000_000_000, 10_000_000_000 * 1_000_000_000]), Time::MAX);
        assert!((MAX_SECS * 1e9) < Time::MAX as f64);
    }

    #[test]
    fn the_queue_disciplines_timer_sums_fit_the_clock() {
        // the latest `now` of a run plus the longest period a discipline accepts
        let last = aqm::control::period_ns(MAX_SECS);
        assert!(aqm::control::check_period("p", 1e6).is_ok() && aqm::control::check_period("p", 1.0001e6).is_err());
        assert!(last.checked_add(aqm::control::period_ns(1e6)).is_some());
        assert!(last.checked_add(aqm::codel_law::control_law(0, aqm::control::period_ns(1e6), 1)).is_some());
    }
}
