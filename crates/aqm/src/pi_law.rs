//! The PI controller of a drop probability on queueing delay, written once (RFC 8033 §4.2 and
//! §5.1; RFC 9332 Appendix A.2): its parameters, their checks, the update step with PIE's
//! auto-tuning and caps, the burst allowance's and the safeguard's conditions, and the
//! de-randomised drop test. Used by PIE over one FIFO ([`crate::pie`], RFC 8033's pseudo-code), by
//! every bucket of FQ-PIE ([`crate::fq_pie`], Linux `sch_pie.c`'s arithmetic) and by DualPI2's
//! classic side ([`crate::dualpi2`], RFC 9332's base probability `p'`), the way [`crate::codel_law`]
//! serves the CoDel family.
//!
//! References: R. Pan, P. Natarajan, F. Baker, G. White, "Proportional Integral Controller
//! Enhanced (PIE): A Lightweight Control Scheme to Address the Bufferbloat Problem", RFC 8033,
//! February 2017; K. De Schepper, B. Briscoe, G. White, "Dual-Queue Coupled Active Queue
//! Management (AQM) for Low Latency, Low Loss, and Scalable Throughput (L4S)", RFC 9332, January
//! 2023.
//!
//! Each discipline keeps what is its own: how it measures the delay (the head's sojourn, the last
//! departure's, RFC 8033 §4.3's departure rate), in which unit it keeps it (seconds, or Linux's
//! nanoseconds), how the probability decays when the queue is idle, and how the burst allowance
//! is spent. The functions take the delays in the caller's unit, so each keeps its arithmetic bit
//! for bit.

use crate::control::{check_period, check_positive, period_ns};
use crate::{ParamError, Time};

/// Defines a parameter struct of a PI-controlled discipline: the controller's four parameters
/// (`target`, `t_update`, `alpha`, `beta`, with the defaults of `crate::defaults::$d`) first, then
/// the listed fields. Scenario keys stay flat: `aqm = { type = "pie", target = "20ms",
/// ecn = true }`. `build.rs` reads the four fields' comments from here.
macro_rules! pi_law_params {
    (defaults = $d:ident; $(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Target queueing delay the controller steers to (`QDELAY_REF` of RFC 8033 §4.2; `target` of RFC 9332 Appendix A.2).
            #[serde(with = "crate::units::secs", default = "pi_law_defaults::target")]
            pub target: f64,
            /// Period of the probability update (`T_UPDATE`).
            #[serde(with = "crate::units::secs", default = "pi_law_defaults::t_update")]
            pub t_update: f64,
            /// Gain on the delay error `qdelay − target`, per second (the integral gain).
            #[serde(default = "pi_law_defaults::alpha")]
            pub alpha: f64,
            /// Gain on the delay change `qdelay − qdelay_old`, per second (the proportional gain).
            #[serde(default = "pi_law_defaults::beta")]
            pub beta: f64,
            $( $(#[$fm])* pub $f: $t, )*
        }
        impl Default for $name {
            fn default() -> Self {
                crate::defaults::of()
            }
        }
        mod pi_law_defaults {
            pub use crate::defaults::$d::{alpha, beta, t_update, target};
        }
        impl $name {
            /// The controller's part of the parameters.
            pub fn law(&self) -> crate::pi_law::PiLaw {
                crate::pi_law::PiLaw { target: self.target, t_update: self.t_update, alpha: self.alpha, beta: self.beta }
            }
        }
    };
}
pub(crate) use pi_law_params;

/// The controller's parameters (seconds and gains per second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PiLaw {
    pub target: f64,
    pub t_update: f64,
    pub alpha: f64,
    pub beta: f64,
}

impl PiLaw {
    /// `target` and `t_update` are usable times, the gains finite and positive.
    pub fn check(&self) -> Result<(), ParamError> {
        check_period("target", self.target)?;
        check_period("t_update", self.t_update)?;
        check_positive("alpha", self.alpha)?;
        check_positive("beta", self.beta)
    }

    /// The update timer's period in nanoseconds.
    pub fn period_ns(&self) -> Time {
        period_ns(self.t_update)
    }

    /// The PI step, `alpha · (qdelay − target) + beta · (qdelay − qdelay_old)` (RFC 8033 §4.2;
    /// RFC 9332 Appendix A.2), all in seconds; `target` as the caller keeps it (FQ-PIE's is the
    /// nanoseconds it compares with, back in seconds).
    #[inline]
    pub fn step(&self, qdelay: f64, target: f64, qdelay_old: f64) -> f64 {
        self.alpha * (qdelay - target) + self.beta * (qdelay - qdelay_old)
    }

    /// PIE's step (RFC 8033 §4.2): the PI step scaled by [`autotune_scale`] of the current
    /// probability, an increase capped at [`CAP`] once the probability is [`CAP_FROM`] or more,
    /// and [`BOOST`] on top when `boost` (Linux's extra push while the delay exceeds
    /// [`BOOST_ABOVE`]).
    #[inline]
    pub fn autotuned_step(&self, qdelay: f64, target: f64, qdelay_old: f64, prob: f64, boost: bool) -> f64 {
        let mut delta = self.step(qdelay, target, qdelay_old) * autotune_scale(prob);
        if prob >= CAP_FROM && delta > CAP {
            delta = CAP;
        }
        if boost {
            delta += BOOST;
        }
        delta
    }
}

/// From this probability on, one update raises it by at most [`CAP`] (RFC 8033 §4.2).
pub const CAP_FROM: f64 = 0.1;
/// The largest increase of one update from [`CAP_FROM`] on.
pub const CAP: f64 = 0.02;
/// Linux `sch_pie`'s extra increase per update while the delay exceeds [`BOOST_ABOVE`].
pub const BOOST: f64 = 0.02;
/// The delay (seconds) above which Linux adds [`BOOST`].
pub const BOOST_ABOVE: f64 = 0.25;

/// The auto-tuning table of RFC 8033 §4.2: the factor applied to the PI adjustment given the
/// current drop probability (1/2048 below 10^-6, ..., 1/2 below 0.1, 1 from 0.1 on).
pub fn autotune_scale(drop_prob: f64) -> f64 {
    if drop_prob < 1e-6 {
        1.0 / 2048.0
    } else if drop_prob < 1e-5 {
        1.0 / 512.0
    } else if drop_prob < 1e-4 {
        1.0 / 128.0
    } else if drop_prob < 1e-3 {
        1.0 / 32.0
    } else if drop_prob < 1e-2 {
        1.0 / 8.0
    } else if drop_prob < 1e-1 {
        1.0 / 2.0
    } else {
        1.0
    }
}

/// The probability after a step: `prob + delta` clamped to [0, 1], and whether it reached 1
/// (Linux then skips the idle decay of that update).
#[inline]
pub fn apply(prob: f64, delta: f64) -> (f64, bool) {
    let p = prob + delta;
    (p.clamp(0.0, 1.0), p >= 1.0)
}

/// The controller is calm (RFC 8033 §4.2: the burst allowance is restored): no drop probability,
/// and the delay below half the target at this update and the last. Delays and `half_target` in
/// the caller's unit.
#[inline]
pub fn calm<T: PartialOrd>(prob: f64, qdelay: T, qdelay_old: T, half_target: T) -> bool {
    prob == 0.0 && qdelay < half_target && qdelay_old < half_target
}

/// RFC 8033 §4.1's safeguard: with a delay below half the target and a probability below 0.2 the
/// queue is not congested, and no packet is dropped early.
#[inline]
pub fn uncongested<T: PartialOrd>(qdelay: T, half_target: T, prob: f64) -> bool {
    qdelay < half_target && prob < 0.2
}

/// RFC 8033 §5.1's de-randomisation (Linux `pie_drop_early`): `accu` accumulates the probability
/// `p` of each arrival it applies to (and restarts at `p = 0`); below 0.85 accumulated nothing is
/// dropped (`Some(false)`), from 8.5 on the arrival is dropped (`Some(true)`), and in between the
/// caller draws with `p` (`None`). The caller resets `accu` after a drop.
#[inline]
pub fn derandomised(accu: &mut f64, p: f64) -> Option<bool> {
    if p == 0.0 {
        *accu = 0.0;
    } else {
        *accu += p;
    }
    if *accu < 0.85 {
        Some(false)
    } else if *accu >= 8.5 {
        Some(true)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law() -> PiLaw {
        PiLaw { target: 0.015, t_update: 0.015, alpha: 0.125, beta: 1.25 }
    }

    #[test]
    fn checks_name_the_parameter() {
        assert!(law().check().is_ok());
        assert_eq!(PiLaw { target: 0.0, ..law() }.check().unwrap_err().field, "target");
        assert_eq!(PiLaw { t_update: -1.0, ..law() }.check().unwrap_err().field, "t_update");
        assert_eq!(PiLaw { alpha: 0.0, ..law() }.check().unwrap_err().field, "alpha");
        assert_eq!(PiLaw { beta: f64::NAN, ..law() }.check().unwrap_err().field, "beta");
        assert_eq!(law().period_ns(), 15_000_000);
    }

    #[test]
    fn autotune_table_of_rfc_8033() {
        let cases = [
            (0.0, 2048.0),
            (9.9e-7, 2048.0),
            (1e-6, 512.0),
            (9.9e-6, 512.0),
            (1e-5, 128.0),
            (1e-4, 32.0),
            (1e-3, 8.0),
            (5e-3, 8.0),
            (1e-2, 2.0),
            (0.0999, 2.0),
            (0.1, 1.0),
            (0.9, 1.0),
        ];
        for (p, div) in cases {
            assert_eq!(autotune_scale(p), 1.0 / div, "drop_prob {p}");
        }
    }

    #[test]
    fn steps_scale_cap_and_boost() {
        let l = law();
        assert_eq!(l.step(0.030, 0.015, 0.010), 0.125 * (0.030 - 0.015) + 1.25 * (0.030 - 0.010));
        // auto-tuned from 0: divided by 2048
        assert_eq!(l.autotuned_step(0.030, 0.015, 0.0, 0.0, false), l.step(0.030, 0.015, 0.0) / 2048.0);
        // from 10 % an increase is capped at 2 %, a decrease is not, and the boost adds 2 %
        assert_eq!(l.autotuned_step(0.5, 0.015, 0.0, 0.3, false), CAP);
        assert_eq!(l.autotuned_step(0.5, 0.015, 0.0, 0.3, true), CAP + BOOST);
        assert!(l.autotuned_step(0.0, 0.015, 0.5, 0.3, false) < -0.5);
        assert_eq!(apply(0.5, 0.7), (1.0, true));
        assert_eq!(apply(0.5, -0.7), (0.0, false));
        assert_eq!(apply(0.5, 0.25), (0.75, false));
    }

    #[test]
    fn calm_and_safeguard_in_any_unit() {
        assert!(calm(0.0, 0.001, 0.002, 0.0075));
        assert!(!calm(0.01, 0.001, 0.002, 0.0075));
        assert!(!calm(0.0, 7_500_000u64, 0, 7_500_000));
        assert!(uncongested(7_499_999u64, 7_500_000, 0.19));
        assert!(!uncongested(0.001, 0.0075, 0.2));
    }

    #[test]
    fn derandomisation_accumulates_and_bounds() {
        let mut accu = 0.0;
        for _ in 0..8 {
            assert_eq!(derandomised(&mut accu, 0.1), Some(false));
        }
        assert_eq!(derandomised(&mut accu, 0.1), None, "0.9 accumulated: the caller draws");
        assert_eq!(derandomised(&mut accu, 0.0), Some(false));
        assert_eq!(accu, 0.0, "p = 0 restarts the sum");
        accu = 8.45;
        assert_eq!(derandomised(&mut accu, 0.05), Some(true));
    }
}
