//! A TCP connection's options: the variant's congestion control ([`CcConfig`]) and loss recovery
//! ([`Recovery`]), and everything else a sender and receiver are configured with
//! ([`TcpConfig`], validated by the scenario loader; presets in [`super::presets`]).

use super::{cubic, dctcp, presets, vegas};
use aqm::{Time, NS_PER_SEC};

/// Loss recovery after three duplicate ACKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 5681 fast recovery: leave it on the first ACK of new data ([`super::recovery::reno`]).
    Reno,
    /// RFC 6582: retransmit on partial ACKs and stay in recovery ([`super::recovery::newreno`]).
    NewReno,
    /// RFC 6675 pipe-based recovery driven by SACK blocks ([`super::recovery::sack`]).
    Sack,
}

impl Recovery {
    pub fn name(self) -> &'static str {
        match self {
            Recovery::Reno => "reno",
            Recovery::NewReno => "newreno",
            Recovery::Sack => "sack",
        }
    }
}

/// How CUBIC leaves its first slow start before a loss ([`super::hystart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hystart {
    /// Slow start ends with a loss (RFC 9438 §4.10 with RFC 5681's slow start).
    Off,
    /// HyStart as Linux's `tcp_cubic.c` runs it (Ha & Rhee 2011): the ACK-train and the delay test.
    Linux,
    /// HyStart++ (RFC 9406): the delay test, then Conservative Slow Start.
    HystartPp,
}

impl Hystart {
    pub fn name(self) -> &'static str {
        match self {
            Hystart::Off => "off",
            Hystart::Linux => "linux",
            Hystart::HystartPp => "hystart++",
        }
    }
}

/// How the retransmission timeout is computed from RTT samples ([`super::rto`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtoEstimator {
    /// RFC 6298: `SRTT + max(G, 4·RTTVAR)`, at least `min_rto`, one segment timed per round trip.
    Rfc6298,
    /// Linux (`tcp_rtt_estimator`, `tcp_set_rto`): a sample from every ACK, the deviation's
    /// per-round maximum and `min_rto` added to SRTT instead of floored.
    Linux,
}

impl RtoEstimator {
    pub fn name(self) -> &'static str {
        match self {
            RtoEstimator::Rfc6298 => "rfc6298",
            RtoEstimator::Linux => "linux",
        }
    }
}

/// Congestion-control algorithm and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CcConfig {
    /// RFC 5681 AIMD (Reno, NewReno and SACK).
    Reno,
    /// TCP Vegas as ns-2 implements it ([`super::vegas`]); thresholds in packets.
    Vegas { alpha: f64, beta: f64, gamma: f64 },
    /// RFC 9438 CUBIC ([`super::cubic`]).
    Cubic { c: f64, beta: f64, fast_convergence: bool, tcp_friendly: bool },
    /// BBR v1 as Linux's `tcp_bbr.c` runs it ([`super::bbr`]); paces its sending.
    Bbr,
    /// DCTCP (RFC 8257) with estimation gain `g` ([`super::dctcp`]).
    Dctcp { g: f64 },
    /// A Prague-style scalable sender: DCTCP's control on ECT(1) with pacing ([`super::dctcp`]).
    Prague { g: f64 },
}

impl CcConfig {
    /// Vegas with ns-2's defaults (α = 1, β = 3, γ = 1).
    pub fn vegas() -> Self {
        CcConfig::Vegas { alpha: vegas::DEFAULT_ALPHA, beta: vegas::DEFAULT_BETA, gamma: vegas::DEFAULT_GAMMA }
    }
    /// CUBIC with RFC 9438's defaults (C = 0.4, β = 0.7, fast convergence, Reno-friendly region).
    pub fn cubic() -> Self {
        CcConfig::Cubic { c: cubic::DEFAULT_C, beta: cubic::DEFAULT_BETA, fast_convergence: true, tcp_friendly: true }
    }
    /// Whether the sender must keep per-segment delivery records for rate samples (BBR).
    pub fn wants_rate_samples(&self) -> bool {
        matches!(self, CcConfig::Bbr)
    }
    /// A scalable (L4S-style) congestion control: the receiver echoes every CE mark
    /// (RFC 8257 §3.2) instead of RFC 3168's sticky ECN-Echo.
    pub fn scalable(&self) -> bool {
        matches!(self, CcConfig::Dctcp { .. } | CcConfig::Prague { .. })
    }
    /// DCTCP with RFC 8257's gain g = 1/16.
    pub fn dctcp() -> Self {
        CcConfig::Dctcp { g: dctcp::DEFAULT_G }
    }
    pub fn prague() -> Self {
        CcConfig::Prague { g: dctcp::DEFAULT_G }
    }
}

/// Per-flow TCP options (validated by the scenario loader).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpConfig {
    /// Name of the variant (`tcp.variant`), for reports.
    pub variant: &'static str,
    pub cc: CcConfig,
    pub recovery: Recovery,
    /// Data segment size on the wire (bytes); also the payload counted as goodput.
    pub mss: u16,
    /// ACK size on the wire (bytes).
    pub ack_size: u16,
    /// Initial congestion window (segments).
    pub initial_window: f64,
    /// Receiver (maximum) window (segments).
    pub max_window: u32,
    pub min_rto: Time,
    pub initial_rto: Time,
    pub max_rto: Time,
    /// The RTO back-off stops doubling at `2^max_backoff_exp` (ns-2 before 2.35: 64 = 2^6).
    pub max_backoff_exp: u32,
    /// Clock granularity G of RFC 6298 (RTO = SRTT + max(G, 4 RTTVAR)).
    pub granularity: Time,
    pub dupack_threshold: u32,
    /// RFC 3042 Limited Transmit: on the first and second duplicate ACK, send one new segment if
    /// the receiver window allows and at most `cwnd + 2` would be outstanding (ns-2's `singledup_`).
    pub limited_transmit: bool,
    /// Restart the retransmission timer when a segment is retransmitted by fast retransmit, on the
    /// first NewReno partial ACK of a recovery or by SACK recovery (ns-2 and Linux do; RFC 6298
    /// restarts it only on new ACKs).
    pub rto_restart_on_retransmit: bool,
    /// NewReno partial ACKs restart the retransmission timer at the first of a recovery only, RFC
    /// 6582 §3.2's "Impatient" variant (ns-2's `newreno_changes1_ 1`, its default since
    /// 2003/05/06); with `false`, at every one, "Slow-but-Steady" (RFC 3782 §4; ns-2 before, and
    /// Linux, which re-arms the timer on every ACK of new data).
    pub newreno_impatient: bool,
    /// NewReno partial ACKs deflate the window by the segments acknowledged and add one back (RFC
    /// 6582 §3.2, ns-2's `partial_window_deflation_ 1`, its default since 2003/05/06); with
    /// `false` they remove the whole inflation, `cwnd = ssthresh` (ns-2 before).
    pub partial_window_deflation: bool,
    pub delayed_ack: bool,
    pub delack_count: u32,
    pub delack_timeout: Time,
    /// Credit window growth by segments acknowledged (RFC 3465, as Linux) instead of by ACKs (ns-2).
    pub byte_counting: bool,
    /// ECN (RFC 3168): new data is sent ECN-capable, the receiver echoes CE marks, and the sender
    /// halves its window at most once per window of data on an echo.
    pub ecn: bool,
    /// Pace new data at the rate the congestion control sets (BBR), or by default at
    /// `2·cwnd/srtt` in slow start and `1.2·cwnd/srtt` after it (Linux's `tcp_update_pacing_rate`).
    pub pacing: bool,
    /// With `ecn`: send ECT(1), the L4S identifier (RFC 9331), instead of ECT(0).
    pub l4s: bool,
    /// With SACK recovery: RACK-TLP loss detection (RFC 8985) and Linux's recovery around it
    /// ([`super::recovery::rack`]) instead of RFC 6675's duplicate-ACK counting.
    pub rack: bool,
    /// With `rack`: the tail loss probe (RFC 8985 §7).
    pub tlp: bool,
    /// With `rack`: proportional rate reduction of the window in recovery (RFC 6937, PRR-SSRB as
    /// Linux), instead of `cwnd = ssthresh` at once.
    pub prr: bool,
    /// CUBIC's slow-start exit.
    pub hystart: Hystart,
    /// The retransmission-timeout estimator.
    pub rto_estimator: RtoEstimator,
    /// Window of the minimum-RTT filter RACK uses (Linux's `tcp_min_rtt_wlen`).
    pub min_rtt_window: Time,
}

impl TcpConfig {
    /// The simulator-wide defaults of experiments.md §1.2: ns-2.35's agents (the `ns2` preset, the
    /// same as `ns2-2.35`; older releases in [`presets`]).
    pub fn ns2() -> Self {
        TcpConfig {
            variant: "newreno",
            cc: CcConfig::Reno,
            recovery: Recovery::NewReno,
            mss: 1000,
            ack_size: 40,
            initial_window: 2.0,
            max_window: 1000,
            min_rto: NS_PER_SEC / 5,
            initial_rto: 3 * NS_PER_SEC,
            max_rto: 60 * NS_PER_SEC,
            max_backoff_exp: presets::MAX_BACKOFF_EXP,
            granularity: NS_PER_SEC / 100,
            dupack_threshold: 3,
            limited_transmit: true,
            rto_restart_on_retransmit: true,
            newreno_impatient: true,
            partial_window_deflation: true,
            delayed_ack: false,
            delack_count: 2,
            delack_timeout: NS_PER_SEC / 10,
            byte_counting: false,
            ecn: false,
            pacing: false,
            l4s: false,
            rack: false,
            tlp: false,
            prr: false,
            hystart: Hystart::Off,
            rto_estimator: RtoEstimator::Rfc6298,
            min_rtt_window: 300 * NS_PER_SEC,
        }
    }

    /// Linux-like defaults (docs/tcp.md): CUBIC with HyStart, SACK recovery with RACK-TLP and PRR,
    /// Linux's RTO estimator (minimum 200 ms, at most 120 s), initial window 10 (RFC 6928), a 1 ms
    /// clock, delayed ACKs (every second segment, 40 ms), a large receive window.
    pub fn modern() -> Self {
        TcpConfig {
            variant: "cubic",
            cc: CcConfig::cubic(),
            recovery: Recovery::Sack,
            initial_window: 10.0,
            max_window: 65_535,
            granularity: NS_PER_SEC / 1000,
            initial_rto: NS_PER_SEC,
            max_rto: 120 * NS_PER_SEC,
            delayed_ack: true,
            delack_count: 2,
            delack_timeout: NS_PER_SEC / 25,
            byte_counting: true,
            rack: true,
            tlp: true,
            prr: true,
            hystart: Hystart::Linux,
            rto_estimator: RtoEstimator::Linux,
            // Linux re-arms the timer on every ACK of new data (tcp_ack, FLAG_SET_XMIT_TIMER)
            newreno_impatient: false,
            ..TcpConfig::ns2()
        }
    }
}

impl TcpConfig {
    /// RACK-TLP recovery is in force: `rack` with SACK recovery.
    #[inline]
    pub fn rack_on(&self) -> bool {
        self.rack && self.recovery == Recovery::Sack
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::ns2()
    }
}
