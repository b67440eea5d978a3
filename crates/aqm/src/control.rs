//! Small pieces shared by the controller disciplines — BLUE (aqm.md §5), RAQM (§11), PI (§12) and
//! REM (§13) — written once: the unbiased random early test on a probability that the controller
//! maintains (none of these schemes uniformises its drops the way RED does), the conversion of a
//! period in seconds to the integer nanoseconds of a timer, and the parameter checks they share.

use crate::fifo::Fifo;
use crate::rng::Rng;
use crate::{Cx, DropReason, Limit, ParamError, Pkt, Time, NS_PER_SEC};

/// "With probability `p`: drop" (aqm.md §5 step 1, §11 step 3, §12 step 2, §13 step 3): one
/// independent Bernoulli trial, no count-based spreading.
///
/// One uniform number is drawn from the stream only when `0 < p < 1`; `p <= 0` never drops and
/// `p >= 1` always drops without consuming the stream.
#[inline]
pub fn early_drop(rng: &mut Rng, p: f64) -> bool {
    if p <= 0.0 {
        false
    } else if p >= 1.0 {
        true
    } else {
        rng.uniform() < p
    }
}

/// [`early_drop`] as a congestion signal: with probability `p` the arrival is marked Congestion
/// Experienced (with `ecn` and an ECN-capable packet) or dropped as `early` ([`Cx::signal`]).
/// Returns the packet to queue, or `None` once it is dropped.
#[inline]
pub fn early_signal<P: Pkt>(p: f64, pkt: P, ecn: bool, cx: &mut Cx<'_, P>) -> Option<P> {
    if early_drop(cx.rng, p) {
        cx.signal(pkt, ecn)
    } else {
        Some(pkt)
    }
}

/// The arrival at a FIFO under a controlled probability, buffer first (ns-2's order for PI and
/// REM, aqm.md §12 step 1 and §13 step 2): a tail drop (`overflow`) when `pkt` does not fit,
/// else [`early_signal`] with probability `p`, else the packet is queued. Returns whether it was.
/// (Always inlined: as a call it cost REM 3.7 % and PI 2 % more instructions in `examples/ops.rs`.)
#[inline(always)]
pub fn enqueue_tested<P: Pkt>(
    fifo: &mut Fifo<P>,
    limit: &Limit,
    pkt: P,
    p: f64,
    ecn: bool,
    cx: &mut Cx<'_, P>,
) -> bool {
    if !limit.admits(fifo.len(), fifo.bytes(), pkt.size()) {
        cx.drop(pkt, DropReason::Overflow);
        return false;
    }
    let Some(pkt) = early_signal(p, pkt, ecn, cx) else { return false };
    fifo.push(pkt, cx.now);
    true
}

/// A period given in seconds as timer nanoseconds, rounded to the nearest nanosecond.
#[inline]
pub fn period_ns(secs: f64) -> Time {
    (secs * NS_PER_SEC as f64).round() as Time
}

/// Check that `secs` is a usable timer period (or freeze time): finite, positive and at least
/// one nanosecond once rounded; at most about 10^6 s.
pub fn check_period(field: &'static str, secs: f64) -> Result<(), ParamError> {
    if !(secs.is_finite() && secs > 0.0 && secs <= 1e6) || period_ns(secs) == 0 {
        return Err(ParamError::new(field, format!("must be a time in seconds in [1e-9, 1e6], got {secs}")));
    }
    Ok(())
}

/// Check a size in bytes: at least one.
pub fn check_bytes(field: &'static str, v: u32) -> Result<(), ParamError> {
    if v == 0 {
        return Err(ParamError::new(field, "must be at least 1 byte"));
    }
    Ok(())
}

/// Check `lo <= v <= hi` (finite).
pub fn check_range(field: &'static str, v: f64, lo: f64, hi: f64) -> Result<(), ParamError> {
    if !(v.is_finite() && v >= lo && v <= hi) {
        return Err(ParamError::new(field, format!("must be in [{lo}, {hi}], got {v}")));
    }
    Ok(())
}

/// Check `v >= 0` (finite).
pub fn check_nonneg(field: &'static str, v: f64) -> Result<(), ParamError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(ParamError::new(field, format!("must be a finite number >= 0, got {v}")));
    }
    Ok(())
}

/// Check `v > 0` (finite).
pub fn check_positive(field: &'static str, v: f64) -> Result<(), ParamError> {
    if !(v.is_finite() && v > 0.0) {
        return Err(ParamError::new(field, format!("must be a finite number > 0, got {v}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_drop_draws_only_for_interior_probabilities() {
        let mut rng = Rng::stream(1, "ctl", 0);
        let mut shadow = rng.clone();
        assert!(!early_drop(&mut rng, 0.0));
        assert!(early_drop(&mut rng, 1.0));
        assert!(early_drop(&mut rng, 1.5));
        // nothing was drawn so far: the next interior test uses the stream's first number
        let u = shadow.uniform();
        assert_eq!(early_drop(&mut rng, 0.5), u < 0.5);
        let n = 200_000;
        let hits = (0..n).filter(|_| early_drop(&mut rng, 0.3)).count();
        assert!((hits as f64 / n as f64 - 0.3).abs() < 0.005);
    }

    #[test]
    fn periods_round_to_nanoseconds_and_are_checked() {
        assert_eq!(period_ns(1.0 / 170.0), 5_882_353);
        assert_eq!(period_ns(0.002), 2_000_000);
        assert!(check_period("t", 0.0).is_err());
        assert!(check_period("t", 1e-10).is_err());
        assert!(check_period("t", f64::NAN).is_err());
        assert_eq!(check_period("t_upd", -1.0).unwrap_err().field, "t_upd");
        assert!(check_period("t", 0.1).is_ok());
    }
}
