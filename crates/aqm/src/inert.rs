//! Settings that make a scheme a DropTail in disguise: a threshold the queue can never reach with
//! the link's buffer (RED's `min_th` at or above the limit), a delay target no packet can wait
//! for (CoDel's `target` longer than the full buffer takes to drain). PIE is not among them: its
//! probability also follows the delay's growth, below the target too. Such a scheme never drops
//! early, silently, so a scenario that sets one up is refused with the reason ([`AqmConfig::inert`]).

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

/// A delay target at or above the longest a packet can wait in the full buffer.
fn delay_target(field: &'static str, target: f64, limit: Limit, rate_bps: f64, what: &str) -> Option<ParamError> {
    let bytes = match limit.unit {
        QueueUnit::Packets => limit.value as f64 * MAX_PACKET_BYTES,
        QueueUnit::Bytes => limit.value as f64,
    };
    let longest = bytes * 8.0 / rate_bps;
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

impl AqmConfig {
    /// Why this configuration can never act on a link of `rate_bps` with buffer `limit` (it would
    /// be a DropTail in disguise), or `None`.
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
                threshold("min_th_out", p.min_th_out.min(p.min_th_in), limit, "neither RED of RIO drops early").map(
                    |mut e| {
                        if p.min_th_in < p.min_th_out {
                            e.field = "min_th_in";
                        }
                        e
                    },
                )
            }
            AqmConfig::Choked(p) => threshold("t_min", p.t_min, limit, "CHOKeD never draws"),
            AqmConfig::Chokew(p) => {
                // (its L counts the arrival: at most limit + 1)
                let red_acts = p.red.as_ref().is_some_and(|r| r.min_th < limit.value as f64);
                if red_acts || p.l_th < limit.value as f64 + 1.0 {
                    None
                } else {
                    threshold("l_th", p.l_th, limit, "CHOKeW never draws")
                }
            }
            AqmConfig::Codel(p) => delay_target("target", p.target, limit, rate_bps, "CoDel never drops"),
            AqmConfig::FqCodel(p) => delay_target("target", p.target, limit, rate_bps, "FQ-CoDel never drops"),
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
        // RED-PD and xCHOKe: a given min_th is checked; their defaults follow the buffer
        for kind in ["red_pd", "xchoke"] {
            assert!(config(kind, r#"{"min_th": 40, "max_th": 80}"#).inert(Limit::packets(30), 1e6).is_some());
            assert!(config(kind, r#"{"min_th": 40, "max_th": 80}"#).inert(Limit::packets(100), 1e6).is_none());
            assert!(config(kind, "{}").inert(Limit::packets(5), 1e6).is_none());
        }
    }
}
