//! `[tcp]` and a group's `tcp = { ... }`: presets, variants and their parameters, merged and validated.

use super::error::{ScenarioError, R};
use super::raw::{RawTcp, RecoveryName, TcpVariantName};
use crate::tcp::{CcConfig, Recovery, TcpConfig};

/// TCP variants this build provides (`aqmlab list tcp`).
pub const TCP_NAMES: &[(&str, &str)] = &[
    ("reno", "TCP Reno: RFC 5681 slow start, congestion avoidance, fast retransmit and fast recovery"),
    ("newreno", "TCP NewReno: Reno with RFC 6582 partial-ACK recovery"),
    ("sack", "TCP SACK: RFC 2018 selective ACKs with RFC 6675 pipe-based loss recovery, Reno congestion control"),
    (
        "vegas",
        "TCP Vegas (Brakmo & Peterson 1995, as ns-2's agent): keeps alpha..beta packets queued, judged from RTTs once per round trip; Reno loss recovery",
    ),
    (
        "cubic",
        "TCP CUBIC (RFC 9438): cubic window growth around the last congestion point, Reno-friendly region, fast convergence; SACK loss recovery",
    ),
];

pub(super) fn merge_tcp(global: &RawTcp, local: Option<&RawTcp>, path: &str) -> R<TcpConfig> {
    let l = local.cloned().unwrap_or_default();
    macro_rules! pick {
        ($f:ident) => {
            l.$f.clone().or(global.$f.clone())
        };
    }
    // the preset gives every default; the variant its congestion control and loss recovery
    let preset = pick!(preset).unwrap_or_else(|| "ns2".to_string());
    let Some(mut d) = crate::tcp::presets::preset(&preset) else {
        let at = if l.preset.is_some() { format!("{path}.preset") } else { "tcp.preset".to_string() };
        let names = crate::tcp::presets::preset_names().join(", ");
        return Err(ScenarioError::new(at, format!("unknown preset \"{preset}\"; one of: {names}")));
    };
    let (name, cc, recovery) = match pick!(variant) {
        None => (d.variant, d.cc, d.recovery),
        Some(TcpVariantName::Reno) => ("reno", CcConfig::Reno, Recovery::Reno),
        Some(TcpVariantName::Newreno) => ("newreno", CcConfig::Reno, Recovery::NewReno),
        Some(TcpVariantName::Sack) => ("sack", CcConfig::Reno, Recovery::Sack),
        // ns-2's Vegas is Reno-based; Linux runs CUBIC with SACK
        Some(TcpVariantName::Vegas) => ("vegas", CcConfig::vegas(), Recovery::Reno),
        Some(TcpVariantName::Cubic) => ("cubic", CcConfig::cubic(), Recovery::Sack),
    };
    d.variant = name;
    d.cc = variant_params(cc, name, global, &l, path)?;
    d.recovery = match pick!(recovery) {
        None => recovery,
        Some(RecoveryName::Reno) => Recovery::Reno,
        Some(RecoveryName::Newreno) => Recovery::NewReno,
        Some(RecoveryName::Sack) => Recovery::Sack,
    };
    let mss = pick!(mss).unwrap_or(d.mss as u32);
    if !(1..=65535).contains(&mss) {
        return Err(ScenarioError::new(format!("{path}.mss"), format!("must be 1..65535 bytes, got {mss}")));
    }
    let ack_size = pick!(ack_size).unwrap_or(d.ack_size as u32);
    if !(1..=65535).contains(&ack_size) {
        return Err(ScenarioError::new(format!("{path}.ack_size"), format!("must be 1..65535 bytes, got {ack_size}")));
    }
    let iw = pick!(initial_window).unwrap_or(d.initial_window);
    if !(iw.is_finite() && iw >= 1.0) {
        return Err(ScenarioError::new(format!("{path}.initial_window"), format!("must be >= 1 segment, got {iw}")));
    }
    let max_window = pick!(max_window).unwrap_or(d.max_window);
    if !(1..=1_000_000).contains(&max_window) {
        return Err(ScenarioError::new(
            format!("{path}.max_window"),
            format!("must be 1..1000000 segments, got {max_window}"),
        ));
    }
    let min_rto = pick!(min_rto).map(|x| x.0).unwrap_or(d.min_rto);
    let initial_rto = pick!(initial_rto).map(|x| x.0).unwrap_or(d.initial_rto);
    let max_rto = pick!(max_rto).map(|x| x.0).unwrap_or(d.max_rto);
    if initial_rto == 0 {
        return Err(ScenarioError::new(format!("{path}.initial_rto"), "must be > 0"));
    }
    if max_rto < min_rto || max_rto == 0 {
        return Err(ScenarioError::new(format!("{path}.max_rto"), "must be > 0 and >= min_rto"));
    }
    let max_backoff_exp = match pick!(max_backoff) {
        None => d.max_backoff_exp,
        Some(b) if b.is_power_of_two() && b.trailing_zeros() <= crate::tcp::presets::MAX_BACKOFF_EXP => {
            b.trailing_zeros()
        }
        Some(b) => {
            return Err(ScenarioError::new(
                format!("{path}.max_backoff"),
                format!("must be a power of two from 1 to 1048576, got {b}"),
            ))
        }
    };
    let granularity = pick!(clock_granularity).map(|x| x.0).unwrap_or(d.granularity);
    let dupthresh = pick!(dupack_threshold).unwrap_or(d.dupack_threshold);
    if dupthresh == 0 {
        return Err(ScenarioError::new(format!("{path}.dupack_threshold"), "must be >= 1"));
    }
    let delack_count = pick!(delack_count).unwrap_or(d.delack_count);
    if delack_count == 0 {
        return Err(ScenarioError::new(format!("{path}.delack_count"), "must be >= 1"));
    }
    let delack_timeout = pick!(delack_timeout).map(|x| x.0).unwrap_or(d.delack_timeout);
    if delack_timeout == 0 {
        return Err(ScenarioError::new(format!("{path}.delack_timeout"), "must be > 0"));
    }
    Ok(TcpConfig {
        variant: d.variant,
        cc: d.cc,
        recovery: d.recovery,
        rto_restart_on_retransmit: pick!(rto_restart_on_retransmit).unwrap_or(d.rto_restart_on_retransmit),
        mss: mss as u16,
        ack_size: ack_size as u16,
        initial_window: iw,
        max_window,
        min_rto,
        initial_rto,
        max_rto,
        max_backoff_exp,
        granularity,
        dupack_threshold: dupthresh,
        // ns-2's Vegas agent has its own ACK processing, without Limited Transmit
        limited_transmit: pick!(limited_transmit).unwrap_or(d.limited_transmit && d.variant != "vegas"),
        delayed_ack: pick!(delayed_ack).unwrap_or(d.delayed_ack),
        delack_count,
        delack_timeout,
        byte_counting: pick!(byte_counting).unwrap_or(d.byte_counting),
        ecn: pick!(ecn).unwrap_or(d.ecn),
    })
}

/// The variant's own parameters (`vegas_*`, `cubic_*`): validated, and an error for a key of
/// another variant. An inherited key (from `[tcp]`) is reported at `tcp.<key>`.
fn variant_params(cc: CcConfig, name: &str, global: &RawTcp, l: &RawTcp, path: &str) -> R<CcConfig> {
    macro_rules! pick {
        ($f:ident) => {
            l.$f.or(global.$f)
        };
    }
    let key_path = |key: &str, local: bool| if local { format!("{path}.{key}") } else { format!("tcp.{key}") };
    let foreign = |key: &str, local: bool, owner: &str| {
        let whose = if local || path == "tcp" { String::new() } else { format!(" (inherited by {path})") };
        ScenarioError::new(
            key_path(key, local),
            format!("applies to tcp.variant = \"{owner}\" only; the variant here is \"{name}\"{whose}"),
        )
    };
    let vegas_keys = [
        ("vegas_alpha", l.vegas_alpha.is_some(), pick!(vegas_alpha).is_some()),
        ("vegas_beta", l.vegas_beta.is_some(), pick!(vegas_beta).is_some()),
        ("vegas_gamma", l.vegas_gamma.is_some(), pick!(vegas_gamma).is_some()),
    ];
    let cubic_keys = [
        ("cubic_c", l.cubic_c.is_some(), pick!(cubic_c).is_some()),
        ("cubic_beta", l.cubic_beta.is_some(), pick!(cubic_beta).is_some()),
        ("cubic_fast_convergence", l.cubic_fast_convergence.is_some(), pick!(cubic_fast_convergence).is_some()),
        ("cubic_tcp_friendly", l.cubic_tcp_friendly.is_some(), pick!(cubic_tcp_friendly).is_some()),
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
        CcConfig::Reno => {
            check_foreign(&vegas_keys, "vegas")?;
            check_foreign(&cubic_keys, "cubic")?;
            Ok(cc)
        }
        CcConfig::Vegas { alpha, beta, gamma } => {
            check_foreign(&cubic_keys, "cubic")?;
            let alpha = pick!(vegas_alpha).unwrap_or(alpha);
            let beta = pick!(vegas_beta).unwrap_or(beta);
            let gamma = pick!(vegas_gamma).unwrap_or(gamma);
            if !(alpha.is_finite() && alpha >= 0.0) {
                return Err(ScenarioError::new(
                    key_path("vegas_alpha", l.vegas_alpha.is_some()),
                    format!("must be >= 0 packets, got {alpha}"),
                ));
            }
            if !(beta.is_finite() && beta >= alpha) {
                // blame the key the user wrote
                return Err(if pick!(vegas_beta).is_some() {
                    ScenarioError::new(
                        key_path("vegas_beta", l.vegas_beta.is_some()),
                        format!("must be >= vegas_alpha ({alpha}) packets, got {beta}"),
                    )
                } else {
                    ScenarioError::new(
                        key_path("vegas_alpha", l.vegas_alpha.is_some()),
                        format!("must be <= vegas_beta (default {beta}) packets, got {alpha}"),
                    )
                });
            }
            if !(gamma.is_finite() && gamma >= 0.0) {
                return Err(ScenarioError::new(
                    key_path("vegas_gamma", l.vegas_gamma.is_some()),
                    format!("must be >= 0 packets, got {gamma}"),
                ));
            }
            Ok(CcConfig::Vegas { alpha, beta, gamma })
        }
        CcConfig::Cubic { c, beta, fast_convergence, tcp_friendly } => {
            check_foreign(&vegas_keys, "vegas")?;
            let c = pick!(cubic_c).unwrap_or(c);
            let beta = pick!(cubic_beta).unwrap_or(beta);
            if !(c.is_finite() && c > 0.0) {
                return Err(ScenarioError::new(
                    key_path("cubic_c", l.cubic_c.is_some()),
                    format!("must be > 0 segments/s^3, got {c}"),
                ));
            }
            if !(beta > 0.0 && beta < 1.0) {
                return Err(ScenarioError::new(
                    key_path("cubic_beta", l.cubic_beta.is_some()),
                    format!("must be in (0, 1), got {beta}"),
                ));
            }
            Ok(CcConfig::Cubic {
                c,
                beta,
                fast_convergence: pick!(cubic_fast_convergence).unwrap_or(fast_convergence),
                tcp_friendly: pick!(cubic_tcp_friendly).unwrap_or(tcp_friendly),
            })
        }
    }
}
