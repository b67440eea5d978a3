//! Settings that make a scheme a DropTail in disguise: a threshold the queue can never reach with
//! the link's buffer (RED's `min_th` at or above the limit; CHOKeW's `l_plus`, above which alone
//! its drawing factor grows from 0), a delay no packet can wait for (CoDel's `target` longer than
//! the full buffer takes to drain; half PIE's target, below which its safeguard keeps every
//! packet). Such a scheme never drops early, silently, so a scenario that sets one up is refused
//! with the reason ([`AqmConfig::inert`]). Settings that leave part of a scheme unreachable but
//! let it act (RED's `max_th` beyond the buffer: `max_p` and the gentle ramp are never used) are
//! noted ([`AqmConfig::notes`]).

use crate::{AqmConfig, Limit, ParamError, QueueUnit};

/// The largest packet the engine sends (bytes): a bound on what one waiting packet adds.
const MAX_PACKET_BYTES: f64 = 1500.0;

fn buffer(limit: Limit) -> String {
    match limit.unit {
        QueueUnit::Packets => format!("limit = {} packets", limit.value),
        QueueUnit::Bytes => format!("limit = {} bytes", limit.value),
    }
}

/// `field = value` at or above the buffer: the (average) queue never reaches it.
fn threshold(field: &'static str, value: f64, limit: Limit, what: &str) -> Option<ParamError> {
    (value >= limit.value as f64).then(|| {
        ParamError::new(
            field,
            format!(
                "{field} = {value} is at or above the buffer ({}): the queue never reaches it, so {what} and the \
                 queue is a DropTail; give {field} below the limit",
                buffer(limit)
            ),
        )
    })
}

/// The longest a packet can wait in the full buffer (seconds): the buffer's bytes, with packets
/// of at most 1500 bytes, at the link's rate.
fn longest_wait(limit: Limit, rate_bps: f64) -> f64 {
    let bytes = match limit.unit {
        QueueUnit::Packets => limit.value as f64 * MAX_PACKET_BYTES,
        QueueUnit::Bytes => limit.value as f64,
    };
    bytes * 8.0 / rate_bps
}

/// A delay target at or above the longest a packet can wait in the full buffer.
fn delay_target(field: &'static str, target: f64, limit: Limit, rate_bps: f64, what: &str) -> Option<ParamError> {
    let longest = longest_wait(limit, rate_bps);
    (rate_bps > 0.0 && target >= longest).then(|| {
        ParamError::new(
            field,
            format!(
                "{field} = {} is at or above the longest a packet can wait in this buffer ({}{} at {} b/s: {}): {what} \
                 and the queue is a DropTail; give a {field} below that",
                crate::units::fmt_secs(target),
                buffer(limit),
                if limit.unit == QueueUnit::Packets { " of at most 1500 bytes" } else { "" },
                rate_bps,
                crate::units::fmt_secs(longest)
            ),
        )
    })
}

/// PIE's safeguard (RFC 8033 §4.1) keeps every packet while the delay stays below half the target
/// and the probability below 0.2. When the full buffer's delay is below half the target, the
/// probability rises only by the delay's growth (`beta` times it, no more than the longest delay
/// over a cycle of the queue) and falls by the `alpha` term: with `beta · longest < 0.2` it never
/// reaches 0.2 (nor the delay 250 ms, where Linux's boost adds to it), and PIE never drops.
fn pie_safeguard(target: f64, beta: f64, limit: Limit, rate_bps: f64, what: &str) -> Option<ParamError> {
    let longest = longest_wait(limit, rate_bps);
    (rate_bps > 0.0 && longest < target / 2.0 && beta * longest < 0.2 && longest <= crate::pi_law::BOOST_ABOVE).then(
        || {
            ParamError::new(
                "target",
                format!(
                    "target = {} is more than twice the longest a packet can wait in this buffer ({}{} at {} b/s: \
                     {}): below half the target {what} (the safeguard of RFC 8033 §4.1) and the queue is a DropTail; \
                     give a target below {}",
                    crate::units::fmt_secs(target),
                    buffer(limit),
                    if limit.unit == QueueUnit::Packets { " of at most 1500 bytes" } else { "" },
                    rate_bps,
                    crate::units::fmt_secs(longest),
                    crate::units::fmt_secs(2.0 * longest)
                ),
            )
        },
    )
}

/// CHOKeW: its thresholds in order on this buffer, `l_th` within reach, and `p0` able to grow
/// (`L > l_plus`) unless it starts above 0; a RED stage that acts is enough on its own.
fn chokew(p: &crate::chokew::ChokewParams, limit: Limit) -> Option<ParamError> {
    if let Err(e) = p.order(limit) {
        return Some(e);
    }
    if p.red.as_ref().is_some_and(|r| r.min_th < limit.value as f64) {
        return None;
    }
    // L counts the arrival: at most the limit plus one packet; thresholds in the queue unit
    let (scale, arrival) = match limit.unit {
        QueueUnit::Packets => (1.0, 1.0),
        QueueUnit::Bytes => (p.mean_pkt_size as f64, MAX_PACKET_BYTES),
    };
    let l_max = limit.value as f64 + arrival;
    let (l_th, _, l_plus) = p.thresholds(limit);
    let unit = if limit.unit == QueueUnit::Packets { "" } else { " packets" };
    if l_th * scale >= l_max {
        return threshold("l_th", l_th * scale, limit, "CHOKeW never draws");
    }
    (p.p0_init == 0.0 && l_plus * scale >= l_max).then(|| {
        ParamError::new(
            "l_plus",
            format!(
                "l_plus = {l_plus}{unit} is at or above the largest queue this buffer holds ({}, the arrival \
                 counted): p0 starts at p0_init = 0 and grows only while the queue is above l_plus, so CHOKeW \
                 never draws and the queue is a DropTail; give l_plus (and l_minus, l_th) below the limit, or \
                 leave them out to follow the buffer",
                buffer(limit)
            ),
        )
    })
}

impl AqmConfig {
    /// Set the parameters that follow the link's buffer where the scenario left them out
    /// (CHOKeW's and RIO's thresholds: [CHOKeW] §4's for its 500-packet buffer, as the same
    /// fractions of this one), after checking that they are in order with those it gave.
    pub fn fill_for_buffer(&mut self, limit: Limit) -> Result<(), ParamError> {
        match self {
            AqmConfig::Chokew(p) => p.fill(limit),
            AqmConfig::Rio(p) => p.fill(limit),
            _ => Ok(()),
        }
    }

    /// Why this configuration can never act on a link of `rate_bps` with buffer `limit` (it would
    /// be a DropTail in disguise), or why its thresholds do not fit this buffer (CHOKeW's given
    /// ones against those that follow the buffer); `None` when it can run and act.
    pub fn inert(&self, limit: Limit, rate_bps: f64) -> Option<ParamError> {
        let red = "RED never drops early";
        match self {
            AqmConfig::Red(p) => threshold("min_th", p.min_th, limit, red),
            AqmConfig::Choke(p) => threshold("min_th", p.min_th, limit, "CHOKe never draws and RED never drops early"),
            AqmConfig::GChoke(p) => {
                threshold("min_th", p.min_th, limit, "gCHOKe never draws and RED never drops early")
            }
            AqmConfig::PerfectChoke(p) => threshold("min_th", p.min_th, limit, "Perfect CHOKe never drops early"),
            AqmConfig::Fred(p) => threshold("min_th", p.min_th, limit, "FRED never drops early"),
            AqmConfig::Rio(p) => {
                let ((min_in, _), (min_out, _)) = p.thresholds(limit);
                threshold("min_th_out", min_out.min(min_in), limit, "neither RED of RIO drops early").map(|mut e| {
                    if min_in < min_out {
                        e.field = "min_th_in";
                    }
                    e
                })
            }
            AqmConfig::Choked(p) => threshold("t_min", p.t_min, limit, "CHOKeD never draws"),
            AqmConfig::Chokew(p) => chokew(p, limit),
            AqmConfig::Codel(p) => delay_target("target", p.target, limit, rate_bps, "CoDel never drops"),
            AqmConfig::FqCodel(p) => delay_target("target", p.target, limit, rate_bps, "FQ-CoDel never drops"),
            AqmConfig::Pie(p) => pie_safeguard(p.target, p.beta, limit, rate_bps, "PIE never drops"),
            AqmConfig::FqPie(p) => pie_safeguard(p.target, p.beta, limit, rate_bps, "FQ-PIE never drops"),
            AqmConfig::RedPd(p) => p
                .min_th
                .and_then(|m| threshold("min_th", m, limit, "RED-PD's RED never drops, so it identifies no flow")),
            AqmConfig::Xchoke(p) => {
                p.min_th.and_then(|m| threshold("min_th", m, limit, "xCHOKe never draws and RED never drops early"))
            }
            _ => None,
        }
    }
}

/// RED's `max_th` at or above the buffer: the average never reaches it, so the probability stays
/// below `max_p` (what it reaches with the average at the limit is said) and the gentle ramp
/// above `max_th` is never used.
fn red_ramp(field: &'static str, min_th: f64, max_th: f64, max_p: f64, limit: Limit) -> Option<ParamError> {
    let b = limit.value as f64;
    (max_th >= b && min_th < b).then(|| {
        let top = max_p * (b - min_th) / (max_th - min_th);
        ParamError::new(
            field,
            format!(
                "{field} = {max_th} is at or above the buffer ({}): the average never reaches it, so the drop \
                 probability stays below max_p = {max_p} (at most {top:.3} with the average at the limit) and the \
                 gentle ramp above {field} is never used",
                buffer(limit)
            ),
        )
    })
}

impl AqmConfig {
    /// What of this configuration the link never uses though the scheme acts (a one-line note
    /// each, `field` and why): RED's `max_th` at or above the buffer (`max_p` and the gentle
    /// ramp unreachable), PI's reference queue `q_ref` at or above it (the integral term only
    /// lowers `p`), DualPI2's `target` beyond the full buffer's delay (the classic side's `p'`
    /// rises only with the delay's growth).
    pub fn notes(&self, limit: Limit, rate_bps: f64) -> Vec<ParamError> {
        let b = limit.value as f64;
        let mut out = Vec::new();
        let mut push = |e: Option<ParamError>| out.extend(e);
        match self {
            AqmConfig::Red(p) => push(red_ramp("max_th", p.min_th, p.max_th, p.max_p, limit)),
            AqmConfig::Choke(p) => push(red_ramp("max_th", p.min_th, p.max_th, p.max_p, limit)),
            AqmConfig::GChoke(p) => push(red_ramp("max_th", p.min_th, p.max_th, p.max_p, limit)),
            AqmConfig::PerfectChoke(p) => push(red_ramp("max_th", p.min_th, p.max_th, p.max_p, limit)),
            AqmConfig::Fred(p) => push(red_ramp("max_th", p.min_th, p.max_th, p.max_p, limit)),
            AqmConfig::Rio(p) => {
                let ((min_in, max_in), (min_out, max_out)) = p.thresholds(limit);
                push(red_ramp("max_th_out", min_out, max_out, p.max_p_out, limit));
                push(red_ramp("max_th_in", min_in, max_in, p.max_p_in, limit));
            }
            AqmConfig::Chokew(p) => {
                if let Some(r) = &p.red {
                    push(red_ramp("red.max_th", r.min_th, r.max_th, r.max_p, limit));
                }
            }
            AqmConfig::Pi(p) => push((p.q_ref >= b).then(|| {
                ParamError::new(
                    "q_ref",
                    format!(
                        "q_ref = {} is at or above the buffer ({}): the queue never exceeds it, so the PI law's \
                         proportional term raises p only while the queue grows and its integral term only lowers it",
                        p.q_ref,
                        buffer(limit)
                    ),
                )
            })),
            AqmConfig::DualPi2(p) => {
                let longest = longest_wait(limit, rate_bps);
                push((rate_bps > 0.0 && longest < p.target).then(|| {
                    ParamError::new(
                        "target",
                        format!(
                            "target = {} is above the longest a packet can wait in this buffer ({}): the classic \
                             side's p' rises only while the delay grows, so classic packets are rarely dropped or \
                             marked; L4S packets still see the step at {}",
                            crate::units::fmt_secs(p.target),
                            crate::units::fmt_secs(longest),
                            crate::units::fmt_secs(p.step_thresh)
                        ),
                    )
                }));
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::config;
    use crate::Limit;

    #[test]
    fn thresholds_beyond_the_buffer_are_inert() {
        let red = config("red", r#"{"min_th": 100, "max_th": 200}"#);
        let e = red.inert(Limit::packets(100), 1e6).unwrap();
        assert_eq!(e.field, "min_th");
        assert!(
            e.msg.contains("at or above the buffer (limit = 100 packets)") && e.msg.contains("DropTail"),
            "{}",
            e.msg
        );
        assert!(red.inert(Limit::packets(101), 1e6).is_none());
        let choke = config("choke", r#"{"min_th": 40, "max_th": 80}"#);
        assert!(choke.inert(Limit::packets(100), 1e6).is_none());
        assert!(choke.inert(Limit::packets(30), 1e6).is_some());
        // CoDel's 5 ms target against 100 packets at 1 Mb/s (up to 1.2 s of queue): acts; 5 s does not
        let codel = config("codel", r#"{"target": "5ms"}"#);
        assert!(codel.inert(Limit::packets(100), 1e6).is_none());
        let slow = config("codel", r#"{"target": "5s", "interval": "100s"}"#);
        let e = slow.inert(Limit::packets(100), 1e6).unwrap();
        assert!(e.field == "target" && e.msg.contains("1.2s"), "{}", e.msg);
        // a CHOKeW whose RED stage acts is not inert even if its draws never happen
        let cw =
            config("chokew", r#"{"l_th": 500, "l_minus": 600, "l_plus": 700, "red": {"min_th": 5, "max_th": 30}}"#);
        assert!(cw.inert(Limit::packets(100), 1e6).is_none());
        assert!(config("droptail", "{}").inert(Limit::packets(1), 1e6).is_none());
        // CHOKeW's p0 grows from 0 only above l_plus: l_plus beyond the buffer is refused, by name
        let cw = config("chokew", r#"{"l_th": 60, "l_minus": 125, "l_plus": 175}"#);
        let e = cw.inert(Limit::packets(100), 1e6).unwrap();
        assert!(e.field == "l_plus" && e.msg.contains("p0_init = 0") && e.msg.contains("DropTail"), "{}", e.msg);
        assert!(config("chokew", r#"{"l_th": 60, "l_minus": 125, "l_plus": 175, "p0_init": 0.5}"#)
            .inert(Limit::packets(100), 1e6)
            .is_none());
        assert!(cw.inert(Limit::packets(175), 1e6).is_none(), "L = 176 > l_plus: p0 grows");
        // ... while its defaults follow the buffer and act on any
        for b in [10, 100, 174, 500, 5000] {
            assert!(config("chokew", "{}").inert(Limit::packets(b), 1e6).is_none(), "buffer {b}");
        }
        // a given threshold that does not fit those following the buffer
        let e = config("chokew", r#"{"l_th": 150}"#).inert(Limit::packets(100), 1e6).unwrap();
        assert!(e.field == "l_th" && e.msg.contains("25, from the buffer"), "{}", e.msg);
        // PIE: half its target beyond the full buffer's delay keeps every packet (the safeguard)
        let pie = config("pie", "{}");
        let e = pie.inert(Limit::packets(100), 1e9).unwrap();
        assert!(e.field == "target" && e.msg.contains("RFC 8033 §4.1"), "{}", e.msg);
        assert!(pie.inert(Limit::packets(100), 1e6).is_none());
        assert!(config("fq_pie", "{}").inert(Limit::packets(100), 1e9).is_some());
        assert!(config("fq_pie", r#"{"target": "1ms"}"#).inert(Limit::packets(100), 1e9).is_none());
        // RED-PD and xCHOKe: a given min_th is checked; their defaults follow the buffer
        for kind in ["red_pd", "xchoke"] {
            assert!(config(kind, r#"{"min_th": 40, "max_th": 80}"#).inert(Limit::packets(30), 1e6).is_some());
            assert!(config(kind, r#"{"min_th": 40, "max_th": 80}"#).inert(Limit::packets(100), 1e6).is_none());
            assert!(config(kind, "{}").inert(Limit::packets(5), 1e6).is_none());
        }
    }

    #[test]
    fn notes_name_what_a_buffer_never_reaches() {
        // RED's max_th beyond the buffer: acts, but max_p and the gentle ramp are out of reach
        let red = config("red", r#"{"min_th": 20, "max_th": 300, "max_p": 0.1, "gentle": true}"#);
        assert!(red.inert(Limit::packets(100), 1e6).is_none());
        let n = red.notes(Limit::packets(100), 1e6);
        assert_eq!(n.len(), 1);
        assert!(
            n[0].field == "max_th" && n[0].msg.contains("at most 0.029") && n[0].msg.contains("gentle"),
            "{}",
            n[0].msg
        );
        assert!(red.notes(Limit::packets(301), 1e6).is_empty());
        assert_eq!(
            config("choke", r#"{"min_th": 40, "max_th": 200}"#).notes(Limit::packets(100), 1e6)[0].field,
            "max_th"
        );
        assert_eq!(config("pi", r#"{"q_ref": 200}"#).notes(Limit::packets(100), 1e6)[0].field, "q_ref");
        assert!(config("pi", "{}").notes(Limit::packets(100), 1e6).is_empty());
        assert_eq!(config("dualpi2", "{}").notes(Limit::packets(100), 1e9)[0].field, "target");
        assert!(config("dualpi2", "{}").notes(Limit::packets(100), 1e6).is_empty());
        // RIO's defaults follow the buffer: nothing to note
        assert!(config("rio", "{}").notes(Limit::packets(100), 1e6).is_empty());
    }
}
