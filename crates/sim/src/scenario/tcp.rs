//! `[tcp]` and a group's `tcp = { ... }`: presets, variants and their parameters, merged and validated.

use super::error::{ScenarioError, R};
use super::raw::{HystartName, RawTcp, RecoveryName, RtoEstimatorName, TcpVariantName};
use crate::tcp::{CcConfig, Hystart, Recovery, RtoEstimator, TcpConfig};

/// TCP variants this build provides (`aqmlab list tcp`).
pub const TCP_NAMES: &[(&str, &str)] = &[
    ("reno", "TCP Reno: RFC 5681 slow start, congestion avoidance, fast retransmit and fast recovery"),
    ("newreno", "TCP NewReno: Reno with RFC 6582 partial-ACK recovery"),
    (
        "sack",
        "TCP SACK: RFC 2018 selective ACKs with RFC 6675 pipe-based loss recovery (with the modern preset: RACK-TLP and PRR as Linux), Reno congestion control",
    ),
    (
        "vegas",
        "TCP Vegas (Brakmo & Peterson 1995, as ns-2's agent): keeps alpha..beta packets queued, judged from RTTs once per round trip; Reno loss recovery",
    ),
    (
        "cubic",
        "TCP CUBIC (RFC 9438): cubic window growth around the last congestion point, Reno-friendly region, fast convergence; SACK loss recovery (with the modern preset: HyStart as Linux, RACK-TLP, PRR)",
    ),
    (
        "bbr",
        "BBR v1 (Cardwell et al. 2016, as Linux's tcp_bbr.c): paced at the windowed-max bandwidth times a gain cycle, cwnd 2 BDP plus the ACK-aggregation allowance; startup, drain, probe_bw, probe_rtt; long-term (policer) bandwidth; with the modern preset RACK-TLP recovery and packet conservation",
    ),
    (
        "dctcp",
        "DCTCP (RFC 8257): ECN on, every CE mark echoed, window cut by alpha/2 once per window, alpha's gain 1/16; ECT(0), or ECT(1) with l4s = true; SACK loss recovery",
    ),
    (
        "prague",
        "Prague-style scalable sender (L4S, RFC 9331): DCTCP's control law on ECT(1) packets, paced; SACK loss recovery",
    ),
];

/// A key of a group's `tcp` table, else of `[tcp]`.
macro_rules! pick {
    ($m:expr, $f:ident) => {
        $m.local.$f.clone().or($m.global.$f.clone())
    };
}

/// The two tables a group's TCP options come from, and where the group's is.
struct Merge<'a> {
    global: &'a RawTcp,
    local: &'a RawTcp,
    path: &'a str,
}

impl Merge<'_> {
    fn err(&self, key: &str, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::new(format!("{}.{key}", self.path), msg)
    }

    /// Where `key` was written: in the group's table (`local`) or in `[tcp]`.
    fn key_path(&self, key: &str, local: bool) -> String {
        if local {
            format!("{}.{key}", self.path)
        } else {
            format!("tcp.{key}")
        }
    }
}

pub(super) fn merge_tcp(global: &RawTcp, local: Option<&RawTcp>, path: &str) -> R<TcpConfig> {
    let l = local.cloned().unwrap_or_default();
    let m = Merge { global, local: &l, path };
    let mut d = preset_and_variant(&m)?;
    segments(&m, &mut d)?;
    timers(&m, &mut d)?;
    acks(&m, &mut d)?;
    d.rto_restart_on_retransmit = pick!(m, rto_restart_on_retransmit).unwrap_or(d.rto_restart_on_retransmit);
    d.newreno_impatient = pick!(m, newreno_impatient).unwrap_or(d.newreno_impatient);
    d.partial_window_deflation = pick!(m, partial_window_deflation).unwrap_or(d.partial_window_deflation);
    // ns-2's Vegas agent has its own ACK processing, without Limited Transmit
    d.limited_transmit = pick!(m, limited_transmit).unwrap_or(d.limited_transmit && d.variant != "vegas");
    d.delayed_ack = pick!(m, delayed_ack).unwrap_or(d.delayed_ack);
    d.byte_counting = pick!(m, byte_counting).unwrap_or(d.byte_counting);
    // the variants that need ECN (DCTCP, Prague) or pacing (BBR, Prague) have them on unless the
    // scenario turns them off
    d.ecn = pick!(m, ecn).unwrap_or(d.ecn || d.cc.scalable());
    d.pacing = pick!(m, pacing).unwrap_or(matches!(d.cc, CcConfig::Bbr | CcConfig::Prague { .. }));
    d.l4s = pick!(m, l4s).unwrap_or(matches!(d.cc, CcConfig::Prague { .. }));
    if d.l4s && !d.ecn {
        let at = m.key_path("l4s", m.local.l4s.is_some());
        return Err(ScenarioError::new(at, "ECT(1) needs ECN: l4s = true with ecn = false"));
    }
    linux_recovery(&m, &mut d)?;
    if let Some(g) = pick!(m, dctcp_g) {
        if !d.cc.scalable() {
            return Err(ScenarioError::new(
                m.key_path("dctcp_g", m.local.dctcp_g.is_some()),
                format!("applies to the dctcp and prague variants only (this group's variant is {})", d.variant),
            ));
        }
        if !(g > 0.0 && g <= 1.0) {
            return Err(ScenarioError::new(
                m.key_path("dctcp_g", m.local.dctcp_g.is_some()),
                format!("must be in (0, 1], got {g}"),
            ));
        }
        d.cc = match d.cc {
            CcConfig::Prague { .. } => CcConfig::Prague { g },
            _ => CcConfig::Dctcp { g },
        };
    }
    Ok(d)
}

/// The preset gives every default; the variant its congestion control (with its parameters)
/// and loss recovery, which `recovery` may replace.
fn preset_and_variant(m: &Merge) -> R<TcpConfig> {
    let preset = pick!(m, preset).unwrap_or_else(|| "ns2".to_string());
    let Some(mut d) = crate::tcp::presets::preset(&preset) else {
        let at = if m.local.preset.is_some() { format!("{}.preset", m.path) } else { "tcp.preset".to_string() };
        let names = crate::tcp::presets::preset_names().join(", ");
        return Err(ScenarioError::new(at, format!("unknown preset \"{preset}\"; one of: {names}")));
    };
    let (name, cc, recovery) = match pick!(m, variant) {
        None => (d.variant, d.cc, d.recovery),
        Some(TcpVariantName::Reno) => ("reno", CcConfig::Reno, Recovery::Reno),
        Some(TcpVariantName::Newreno) => ("newreno", CcConfig::Reno, Recovery::NewReno),
        Some(TcpVariantName::Sack) => ("sack", CcConfig::Reno, Recovery::Sack),
        // ns-2's Vegas is Reno-based; Linux runs CUBIC with SACK
        Some(TcpVariantName::Vegas) => ("vegas", CcConfig::vegas(), Recovery::Reno),
        Some(TcpVariantName::Cubic) => ("cubic", CcConfig::cubic(), Recovery::Sack),
        Some(TcpVariantName::Bbr) => ("bbr", CcConfig::Bbr, Recovery::Sack),
        Some(TcpVariantName::Dctcp) => ("dctcp", CcConfig::dctcp(), Recovery::Sack),
        Some(TcpVariantName::Prague) => ("prague", CcConfig::prague(), Recovery::Sack),
    };
    d.variant = name;
    d.cc = variant_params(cc, name, m)?;
    d.recovery = match pick!(m, recovery) {
        None => recovery,
        Some(RecoveryName::Reno) => Recovery::Reno,
        Some(RecoveryName::Newreno) => Recovery::NewReno,
        Some(RecoveryName::Sack) => Recovery::Sack,
    };
    Ok(d)
}

/// Linux's loss recovery (RACK-TLP, PRR), HyStart and RTO estimator. A preset's `rack` applies
/// only with SACK recovery, `hystart` only to CUBIC; written explicitly elsewhere they are errors.
fn linux_recovery(m: &Merge, d: &mut TcpConfig) -> R<()> {
    let at = |key: &str, local: bool| m.key_path(key, local);
    let sack = d.recovery == Recovery::Sack;
    d.rack = match pick!(m, rack) {
        Some(true) if !sack => {
            return Err(ScenarioError::new(
                at("rack", m.local.rack.is_some()),
                format!("RACK-TLP needs SACK recovery (this group's recovery is {})", d.recovery.name()),
            ))
        }
        Some(v) => v,
        None => d.rack && sack,
    };
    for (key, v, local) in
        [("tlp", pick!(m, tlp), m.local.tlp.is_some()), ("prr", pick!(m, prr), m.local.prr.is_some())]
    {
        if v == Some(true) && !d.rack {
            return Err(ScenarioError::new(at(key, local), "applies to RACK-TLP recovery only (rack = true)"));
        }
    }
    d.tlp = pick!(m, tlp).unwrap_or(d.tlp && d.rack);
    d.prr = pick!(m, prr).unwrap_or(d.prr && d.rack);
    let cubic = matches!(d.cc, CcConfig::Cubic { .. });
    d.hystart = match pick!(m, hystart) {
        Some(h) if !matches!(h, HystartName::Off) && !cubic => {
            return Err(ScenarioError::new(
                at("hystart", m.local.hystart.is_some()),
                format!("applies to the cubic variant only (this group's variant is {})", d.variant),
            ))
        }
        Some(HystartName::Off) => Hystart::Off,
        Some(HystartName::Linux) => Hystart::Linux,
        Some(HystartName::HystartPp) => Hystart::HystartPp,
        None if cubic => d.hystart,
        None => Hystart::Off,
    };
    // Linux's estimator takes a sample from every ACK, which RACK-TLP recovery's records give
    d.rto_estimator = match pick!(m, rto_estimator) {
        None if d.rack => d.rto_estimator,
        None | Some(RtoEstimatorName::Rfc6298) => RtoEstimator::Rfc6298,
        Some(RtoEstimatorName::Linux) if d.rack => RtoEstimator::Linux,
        Some(RtoEstimatorName::Linux) => {
            return Err(ScenarioError::new(
                at("rto_estimator", m.local.rto_estimator.is_some()),
                "\"linux\" needs RACK-TLP recovery (rack = true), whose records give a sample per ACK",
            ))
        }
    };
    if let Some(w) = pick!(m, min_rtt_window) {
        if w.0 == 0 {
            return Err(m.err("min_rtt_window", "must be > 0"));
        }
        d.min_rtt_window = w.0;
    }
    Ok(())
}

/// Segment and ACK sizes, the initial and the receiver's window.
fn segments(m: &Merge, d: &mut TcpConfig) -> R<()> {
    let mss = pick!(m, mss).unwrap_or(d.mss as u32);
    if !(1..=65535).contains(&mss) {
        return Err(m.err("mss", format!("must be 1..65535 bytes, got {mss}")));
    }
    let ack_size = pick!(m, ack_size).unwrap_or(d.ack_size as u32);
    if !(1..=65535).contains(&ack_size) {
        return Err(m.err("ack_size", format!("must be 1..65535 bytes, got {ack_size}")));
    }
    let iw = pick!(m, initial_window).unwrap_or(d.initial_window);
    if !(iw.is_finite() && iw >= 1.0) {
        return Err(m.err("initial_window", format!("must be >= 1 segment, got {iw}")));
    }
    let max_window = pick!(m, max_window).unwrap_or(d.max_window);
    if !(1..=1_000_000).contains(&max_window) {
        return Err(m.err("max_window", format!("must be 1..1000000 segments, got {max_window}")));
    }
    (d.mss, d.ack_size, d.initial_window, d.max_window) = (mss as u16, ack_size as u16, iw, max_window);
    Ok(())
}

/// The retransmission timer: its bounds, back-off and clock granularity (RFC 6298).
fn timers(m: &Merge, d: &mut TcpConfig) -> R<()> {
    let min_rto = pick!(m, min_rto).map(|x| x.0).unwrap_or(d.min_rto);
    let initial_rto = pick!(m, initial_rto).map(|x| x.0).unwrap_or(d.initial_rto);
    let max_rto = pick!(m, max_rto).map(|x| x.0).unwrap_or(d.max_rto);
    if initial_rto == 0 {
        return Err(m.err("initial_rto", "must be > 0"));
    }
    if max_rto < min_rto || max_rto == 0 {
        return Err(m.err("max_rto", "must be > 0 and >= min_rto"));
    }
    let max_backoff_exp = match pick!(m, max_backoff) {
        None => d.max_backoff_exp,
        Some(b) if b.is_power_of_two() && b.trailing_zeros() <= crate::tcp::presets::MAX_BACKOFF_EXP => {
            b.trailing_zeros()
        }
        Some(b) => return Err(m.err("max_backoff", format!("must be a power of two from 1 to 1048576, got {b}"))),
    };
    (d.min_rto, d.initial_rto, d.max_rto, d.max_backoff_exp) = (min_rto, initial_rto, max_rto, max_backoff_exp);
    d.granularity = pick!(m, clock_granularity).map(|x| x.0).unwrap_or(d.granularity);
    Ok(())
}

/// The duplicate-ACK threshold and delayed ACKs.
fn acks(m: &Merge, d: &mut TcpConfig) -> R<()> {
    let dupthresh = pick!(m, dupack_threshold).unwrap_or(d.dupack_threshold);
    if dupthresh == 0 {
        return Err(m.err("dupack_threshold", "must be >= 1"));
    }
    let delack_count = pick!(m, delack_count).unwrap_or(d.delack_count);
    if delack_count == 0 {
        return Err(m.err("delack_count", "must be >= 1"));
    }
    let delack_timeout = pick!(m, delack_timeout).map(|x| x.0).unwrap_or(d.delack_timeout);
    if delack_timeout == 0 {
        return Err(m.err("delack_timeout", "must be > 0"));
    }
    (d.dupack_threshold, d.delack_count, d.delack_timeout) = (dupthresh, delack_count, delack_timeout);
    Ok(())
}

/// The variant's own parameters (`vegas_*`, `cubic_*`): validated, and an error for a key of
/// another variant. An inherited key (from `[tcp]`) is reported at `tcp.<key>`.
fn variant_params(cc: CcConfig, name: &str, m: &Merge) -> R<CcConfig> {
    let (l, path) = (m.local, m.path);
    let foreign = |key: &str, local: bool, owner: &str| {
        let whose = if local || path == "tcp" { String::new() } else { format!(" (inherited by {path})") };
        ScenarioError::new(
            m.key_path(key, local),
            format!("applies to tcp.variant = \"{owner}\" only; the variant here is \"{name}\"{whose}"),
        )
    };
    let vegas_keys = [
        ("vegas_alpha", l.vegas_alpha.is_some(), pick!(m, vegas_alpha).is_some()),
        ("vegas_beta", l.vegas_beta.is_some(), pick!(m, vegas_beta).is_some()),
        ("vegas_gamma", l.vegas_gamma.is_some(), pick!(m, vegas_gamma).is_some()),
    ];
    let cubic_keys = [
        ("cubic_c", l.cubic_c.is_some(), pick!(m, cubic_c).is_some()),
        ("cubic_beta", l.cubic_beta.is_some(), pick!(m, cubic_beta).is_some()),
        ("cubic_fast_convergence", l.cubic_fast_convergence.is_some(), pick!(m, cubic_fast_convergence).is_some()),
        ("cubic_tcp_friendly", l.cubic_tcp_friendly.is_some(), pick!(m, cubic_tcp_friendly).is_some()),
    ];
    let check_foreign = |keys: &[(&str, bool, bool)], owner: &str| -> R<()> {
        for &(key, local, set) in keys {
            if set {
                return Err(foreign(key, local, owner));
            }
        }
        Ok(())
    };
    match cc {
        CcConfig::Reno | CcConfig::Bbr | CcConfig::Dctcp { .. } | CcConfig::Prague { .. } => {
            check_foreign(&vegas_keys, "vegas")?;
            check_foreign(&cubic_keys, "cubic")?;
            Ok(cc)
        }
        CcConfig::Vegas { alpha, beta, gamma } => {
            check_foreign(&cubic_keys, "cubic")?;
            vegas_params(m, (alpha, beta, gamma))
        }
        CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
            check_foreign(&vegas_keys, "vegas")?;
            cubic_params(m, (c, beta, fast_convergence, tcp_friendly))
        }
    }
}

/// Vegas's `alpha <= beta` and `gamma`, in packets, over its defaults.
fn vegas_params(m: &Merge, (alpha, beta, gamma): (f64, f64, f64)) -> R<CcConfig> {
    let l = m.local;
    let alpha = pick!(m, vegas_alpha).unwrap_or(alpha);
    let beta = pick!(m, vegas_beta).unwrap_or(beta);
    let gamma = pick!(m, vegas_gamma).unwrap_or(gamma);
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(ScenarioError::new(
            m.key_path("vegas_alpha", l.vegas_alpha.is_some()),
            format!("must be >= 0 packets, got {alpha}"),
        ));
    }
    if !(beta.is_finite() && beta >= alpha) {
        // blame the key the user wrote
        return Err(if pick!(m, vegas_beta).is_some() {
            ScenarioError::new(
                m.key_path("vegas_beta", l.vegas_beta.is_some()),
                format!("must be >= vegas_alpha ({alpha}) packets, got {beta}"),
            )
        } else {
            ScenarioError::new(
                m.key_path("vegas_alpha", l.vegas_alpha.is_some()),
                format!("must be <= vegas_beta (default {beta}) packets, got {alpha}"),
            )
        });
    }
    if !(gamma.is_finite() && gamma >= 0.0) {
        return Err(ScenarioError::new(
            m.key_path("vegas_gamma", l.vegas_gamma.is_some()),
            format!("must be >= 0 packets, got {gamma}"),
        ));
    }
    Ok(CcConfig::Vegas { alpha, beta, gamma })
}

/// CUBIC's `C` and `beta` and its two switches, over its defaults.
fn cubic_params(m: &Merge, (c, beta, fast_convergence, tcp_friendly): (f64, f64, bool, bool)) -> R<CcConfig> {
    let l = m.local;
    let c = pick!(m, cubic_c).unwrap_or(c);
    let beta = pick!(m, cubic_beta).unwrap_or(beta);
    if !(c.is_finite() && c > 0.0) {
        return Err(ScenarioError::new(
            m.key_path("cubic_c", l.cubic_c.is_some()),
            format!("must be > 0 segments/s^3, got {c}"),
        ));
    }
    if !(beta > 0.0 && beta < 1.0) {
        return Err(ScenarioError::new(
            m.key_path("cubic_beta", l.cubic_beta.is_some()),
            format!("must be in (0, 1), got {beta}"),
        ));
    }
    Ok(CcConfig::Cubic {
        c,
        beta,
        fast_convergence: pick!(m, cubic_fast_convergence).unwrap_or(fast_convergence),
        tcp_friendly: pick!(m, cubic_tcp_friendly).unwrap_or(tcp_friendly),
    })
}
