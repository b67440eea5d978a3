//! TCP presets: ns-2's agent defaults release by release, and a Linux-like `modern`.
//!
//! The papers ran different ns-2 releases, and ns-2's TCP defaults changed between them. The values
//! below were read from ns-2's own history (the CVS history of `tcl/lib/ns-default.tcl`, whose
//! comments date each change of a default, and of `tcp/tcp.cc` for the back-off cap), at the
//! commit of each release. Releases whose TCP defaults are equal form one *family*; each family is
//! one preset, and every release of it is accepted as a name (`ns2-2.26` is `ns2-2.1b9`'s values).
//! docs/tcp.md has the same table with the sources; `aqmlab list tcp -d` prints it.
//!
//! What is the same in every release from 2.1b9 to 2.35 (and so in every ns-2 preset): an initial
//! window of 2 segments (`windowInit_ 2`, changed from 1 on 2001/05/26), a 10 ms timer tick
//! (`tcpTick_ 0.01`, changed from 0.1 on 2002/03/07), no burst limit (`maxburst_ 0`), the
//! minimum RTO applied before the back-off (`rfc2988_ true`, 2002/03/07), Limited Transmit for
//! Reno, NewReno and SACK (`singledup_ 1`, changed on 2001/11/28; ns-2's Vegas agent has its own
//! ACK processing without it) and a sink that ACKs every segment. NewReno's answer to partial ACKs
//! changed between 2.26 and 2.27 (`newreno_changes1_` and `partial_window_deflation_` became 1 on
//! 2003/05/06), which splits 2.27 from the 2.1b9 family. Not taken from ns-2: its
//! advertised window `window_ 20` (the presets keep 1000 segments, or an experiment gives the
//! paper's value, so that the window does not cap a flow) and the 40 bytes of TCP/IP header it
//! adds to every segment (ignored, as the simulator-wide defaults say).

use super::TcpConfig;
use aqm::NS_PER_SEC;

/// One family of ns-2 releases with equal TCP defaults.
#[derive(Debug, Clone, Copy)]
pub struct Ns2Family {
    /// Preset name: `ns2-<first release of the family that a paper used>`.
    pub name: &'static str,
    /// The releases it covers, with their dates.
    pub covers: &'static str,
    /// Every release name of the family (each accepted as `ns2-<release>`).
    pub releases: &'static [&'static str],
    /// `minrto_` (ms).
    pub min_rto_ms: u64,
    /// `rtxcur_init_` (ms): the RTO before the first RTT sample.
    pub initial_rto_ms: u64,
    /// `maxrto_` (s).
    pub max_rto_s: u64,
    /// Largest back-off multiplier (`t_backoff_` stops doubling at 64 before 2.35); 0: none, the
    /// backed-off RTO is bounded by `max_rto` alone.
    pub max_backoff: u32,
    /// NewReno restarts the timer at the first partial ACK of a recovery only (`newreno_changes1_`,
    /// 1 since 2003/05/06) — [`TcpConfig::newreno_impatient`].
    pub newreno_impatient: bool,
    /// NewReno's partial window deflation (`partial_window_deflation_`, 1 since 2003/05/06) —
    /// [`TcpConfig::partial_window_deflation`].
    pub partial_window_deflation: bool,
    /// Where each value was read, one line per key.
    pub sources: &'static [(&'static str, &'static str)],
}

const COMMON: &[(&str, &str)] = &[
    ("initial_window", "2 — windowInit_ 2 (\"default changed on 2001/5/26\"), every release 2.1b9-2.35"),
    ("clock_granularity", "10 ms — tcpTick_ 0.01 (\"default changed on 2002/03/07\"), every release 2.1b9-2.35"),
    ("limited_transmit", "true — singledup_ 1 (\"default changed on 2001/11/28\"): Reno, NewReno and Sack1 send a new segment on the 1st and 2nd duplicate ACK"),
    ("max_window", "1000, not ns-2's window_ 20, which would cap a flow at 20 segments per round trip"),
];

/// Values that several families share, each with where it was read.
const MIN_RTO_1S: (&str, &str) = ("min_rto", "1 s — minrto_ 1 (\"Default set to 1 on 2001/05/14\")");
const INITIAL_RTO_6S: (&str, &str) = ("initial_rto", "6 s — rtxcur_init_ 6.0");
const MAX_RTO_1E5: (&str, &str) = ("max_rto", "100000 s — maxrto_ 100000 (in effect no bound)");
const MAX_BACKOFF_64: (&str, &str) =
    ("max_backoff", "64 — tcp.cc rtt_backoff(): t_backoff_ doubles only while below 64");
const NEWRENO_RFC2582: (&str, &str) = (
    "newreno_impatient, partial_window_deflation",
    "true — newreno_changes1_ 1, partial_window_deflation_ 1 (\"Default changed to 1 on 5/5/03, to reflect RFC 2582\"; CHANGES.html: 2003/05/06)",
);

/// ns-2 families, oldest first.
pub const NS2_FAMILIES: &[Ns2Family] = &[
    Ns2Family {
        name: "ns2-2.1b9",
        covers: "ns-2.1b9 (April 2002), 2.1b9a (July 2002), 2.26 (Feb 2003)",
        releases: &["2.1b9", "2.1b9a", "2.26"],
        min_rto_ms: 1000,
        initial_rto_ms: 6000,
        max_rto_s: 100_000,
        max_backoff: 64,
        newreno_impatient: false,
        partial_window_deflation: false,
        sources: &[
            MIN_RTO_1S,
            INITIAL_RTO_6S,
            MAX_RTO_1E5,
            MAX_BACKOFF_64,
            ("newreno_impatient", "false — newreno_changes1_ 0 (added 1998/08/29 with default 0; changed to 1 on 2003/05/06, CHANGES.html): every partial ACK restarts the timer"),
            ("partial_window_deflation", "false — partial_window_deflation_ 0 (changed to 1 on 2003/05/06): a partial ACK sets the window back to ssthresh"),
        ],
    },
    Ns2Family {
        name: "ns2-2.27",
        covers: "ns-2.27 (Jan 2004)",
        releases: &["2.27"],
        min_rto_ms: 1000,
        initial_rto_ms: 6000,
        max_rto_s: 100_000,
        max_backoff: 64,
        newreno_impatient: true,
        partial_window_deflation: true,
        sources: &[
            MIN_RTO_1S,
            INITIAL_RTO_6S,
            MAX_RTO_1E5,
            MAX_BACKOFF_64,
            NEWRENO_RFC2582,
        ],
    },
    Ns2Family {
        name: "ns2-2.28",
        covers: "ns-2.28 (Feb 2005), 2.29 (Oct 2005)",
        releases: &["2.28", "2.29"],
        min_rto_ms: 200,
        initial_rto_ms: 6000,
        max_rto_s: 100_000,
        max_backoff: 64,
        newreno_impatient: true,
        partial_window_deflation: true,
        sources: &[
            ("min_rto", "200 ms — minrto_ 0.2 (\"Default changed to 200ms on 2004/10/14\")"),
            ("initial_rto", "6 s — rtxcur_init_ 6.0"),
            ("max_rto", "100000 s — maxrto_ 100000"),
            ("max_backoff", "64 — tcp.cc rtt_backoff(): t_backoff_ < 64"),
            NEWRENO_RFC2582,
        ],
    },
    Ns2Family {
        name: "ns2-2.31",
        covers: "ns-2.30 (Sep 2006), 2.31 (Mar 2007)",
        releases: &["2.30", "2.31"],
        min_rto_ms: 200,
        initial_rto_ms: 3000,
        max_rto_s: 100_000,
        max_backoff: 64,
        newreno_impatient: true,
        partial_window_deflation: true,
        sources: &[
            ("min_rto", "200 ms — minrto_ 0.2 (2004/10/14)"),
            ("initial_rto", "3 s — rtxcur_init_ 3.0 (\"Default changed on 2006/01/21\")"),
            ("max_rto", "100000 s — maxrto_ 100000"),
            ("max_backoff", "64 — tcp.cc rtt_backoff(): t_backoff_ < 64"),
            NEWRENO_RFC2582,
        ],
    },
    Ns2Family {
        name: "ns2-2.33",
        covers: "ns-2.32 (Sep 2007), 2.33 (Mar 2008), 2.34 (Jun 2009)",
        releases: &["2.32", "2.33", "2.34"],
        min_rto_ms: 200,
        initial_rto_ms: 3000,
        max_rto_s: 60,
        max_backoff: 64,
        newreno_impatient: true,
        partial_window_deflation: true,
        sources: &[
            ("min_rto", "200 ms — minrto_ 0.2 (2004/10/14)"),
            ("initial_rto", "3 s — rtxcur_init_ 3.0 (2006/01/21)"),
            ("max_rto", "60 s — maxrto_ 60 (\"default changed on 2007/03/28\", RFC 2988)"),
            ("max_backoff", "64 — tcp.cc rtt_backoff(): t_backoff_ < 64"),
            NEWRENO_RFC2582,
        ],
    },
    Ns2Family {
        name: "ns2-2.35",
        covers: "ns-2.35 (Nov 2011); the preset `ns2` is this family",
        releases: &["2.35"],
        min_rto_ms: 200,
        initial_rto_ms: 3000,
        max_rto_s: 60,
        max_backoff: 0,
        newreno_impatient: true,
        partial_window_deflation: true,
        sources: &[
            ("min_rto", "200 ms — minrto_ 0.2 (2004/10/14)"),
            ("initial_rto", "3 s — rtxcur_init_ 3.0 (2006/01/21)"),
            ("max_rto", "60 s — maxrto_ 60 (2007/03/28)"),
            ("max_backoff", "none — tcp.cc rtt_backoff() doubles on while the RTO is below maxrto_ (fix of 2010/04/02, tracker issue 2950826)"),
            NEWRENO_RFC2582,
        ],
    },
];

impl Ns2Family {
    /// The TCP defaults of this family.
    pub fn config(&self) -> TcpConfig {
        TcpConfig {
            min_rto: self.min_rto_ms * NS_PER_SEC / 1000,
            initial_rto: self.initial_rto_ms * NS_PER_SEC / 1000,
            max_rto: self.max_rto_s * NS_PER_SEC,
            max_backoff_exp: if self.max_backoff == 0 { MAX_BACKOFF_EXP } else { self.max_backoff.trailing_zeros() },
            newreno_impatient: self.newreno_impatient,
            partial_window_deflation: self.partial_window_deflation,
            ..TcpConfig::ns2()
        }
    }

    /// Where the values come from (the common rows first).
    pub fn all_sources(&self) -> impl Iterator<Item = &(&'static str, &'static str)> {
        self.sources.iter().chain(COMMON.iter())
    }
}

/// Where the `modern` preset's mechanisms come from (`aqmlab list tcp -d`).
const MODERN_SOURCES: &[(&str, &str)] = &[
    ("rack, tlp", "RFC 8985 as Linux's net/ipv4/tcp_recovery.c, tcp_output.c (docs/tcp/rack-tlp.md)"),
    ("prr", "RFC 6937, PRR-SSRB as Linux's tcp_cwnd_reduction"),
    ("rto_estimator", "linux: tcp_rtt_estimator, __tcp_set_rto (RTO = SRTT + max(min_rto, variation))"),
    ("hystart", "linux: HyStart as Linux 6.x's tcp_cubic.c (ACK train and delay; Linux runs no HyStart++)"),
];

/// Where a `modern` sender is still known to differ from Linux's, with where it shows
/// (docs/tcp-vs-linux.md measures it).
const MODERN_DIFFERENCES: &[(&str, &str)] = &[
    ("differs from Linux", "no undo of spurious reductions (D-SACK, timestamps, F-RTO): a timeout that an RTT rise makes spurious costs a reduction here"),
    ("differs from Linux", "CUBIC's window follows RFC 9438 (target an SRTT ahead), Linux's tcp_cubic.c aims a minimum RTT ahead: cycles over deep buffers differ, and the first slow start ends about a round later (more retransmissions after it)"),
    ("differs from Linux", "no TSO, unpaced retransmissions, aqmlab's delayed-ACK receiver (every second segment, 40 ms)"),
    ("differs from Linux", "BBR against CUBIC through RED, FQ-CoDel and CAKE: shares and timeouts as the kernel's, but BBR is dropped 2.7-4.8 times as often (RED's queue 50 % longer): it sends about 2 % faster than the kernel's relative to what it delivers (docs/tcp-vs-linux.md)"),
];

/// The largest back-off exponent the sender uses (2^20: beyond any `max_rto`).
pub const MAX_BACKOFF_EXP: u32 = 20;

/// The ns-2 family a name refers to: `ns2` (= `ns2-2.35`), a family name, or `ns2-<release>`.
pub fn ns2_family(name: &str) -> Option<&'static Ns2Family> {
    let rel = if name == "ns2" { "2.35" } else { name.strip_prefix("ns2-")? };
    NS2_FAMILIES.iter().find(|f| f.releases.contains(&rel))
}

/// The defaults of preset `name`, or `None` if there is no such preset.
pub fn preset(name: &str) -> Option<TcpConfig> {
    if name == "modern" {
        return Some(TcpConfig::modern());
    }
    ns2_family(name).map(|f| f.config())
}

/// Every accepted preset name, for error messages.
pub fn preset_names() -> Vec<String> {
    let mut v = vec!["ns2".to_string(), "modern".to_string()];
    for f in NS2_FAMILIES {
        v.extend(f.releases.iter().map(|r| format!("ns2-{r}")));
    }
    v
}

/// Presets with a one-line description each (`aqmlab list tcp`), and with `details` their values
/// and sources (`aqmlab list tcp -d`).
pub fn describe(details: bool) -> Vec<(String, String)> {
    let ms = |t: u64| {
        let s = t as f64 / NS_PER_SEC as f64;
        if s >= 1.0 {
            format!("{s} s")
        } else {
            format!("{} ms", s * 1e3)
        }
    };
    let mut out = vec![("ns2".to_string(), "preset: the same as ns2-2.35 (the default preset)".to_string())];
    for f in NS2_FAMILIES {
        let c = f.config();
        let backoff = if f.max_backoff == 0 { "none".to_string() } else { format!("x{}", f.max_backoff) };
        let mut d = format!(
            "preset: ns-2 agents of {}: min_rto {}, initial_rto {}, max_rto {}, max_backoff {}, \
             clock_granularity {}, initial_window {}, limited_transmit {}",
            f.covers,
            ms(c.min_rto),
            ms(c.initial_rto),
            ms(c.max_rto),
            backoff,
            ms(c.granularity),
            c.initial_window,
            c.limited_transmit
        );
        if details {
            d.push_str(&format!(
                "; names: {}",
                f.releases.iter().map(|r| format!("ns2-{r}")).collect::<Vec<_>>().join(", ")
            ));
            for (k, v) in f.all_sources() {
                d.push_str(&format!("\n      {k}: {v}"));
            }
            d.push_str(
                "\n      source: ns-2 CVS history, tcl/lib/ns-default.tcl (Agent/TCP) and tcp/tcp.cc at each release",
            );
        }
        out.push((f.name.to_string(), d));
    }
    let mut modern = "preset: Linux-like: CUBIC with HyStart, SACK with RACK-TLP loss detection, tail loss probe and \
                      PRR, Linux's RTO (min 200 ms added to SRTT, max 120 s), initial window 10, 1 ms clock, \
                      delayed ACKs, byte counting"
        .to_string();
    if details {
        for (k, v) in MODERN_SOURCES.iter().chain(MODERN_DIFFERENCES) {
            modern.push_str(&format!("\n      {k}: {v}"));
        }
    }
    out.push(("modern".to_string(), modern));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_name_resolves_to_its_family() {
        assert_eq!(ns2_family("ns2-2.26").unwrap().name, "ns2-2.1b9");
        assert_eq!(ns2_family("ns2-2.27").unwrap().name, "ns2-2.27");
        assert_eq!(ns2_family("ns2-2.29").unwrap().name, "ns2-2.28");
        assert_eq!(ns2_family("ns2-2.30").unwrap().name, "ns2-2.31");
        assert_eq!(ns2_family("ns2-2.34").unwrap().name, "ns2-2.33");
        assert_eq!(ns2_family("ns2").unwrap().name, "ns2-2.35");
        assert!(ns2_family("ns2-2.36").is_none());
        assert!(preset("ns3").is_none());
        for n in preset_names() {
            assert!(preset(&n).is_some(), "{n}");
        }
    }

    #[test]
    fn ns2_is_an_alias_of_2_35() {
        let a = preset("ns2").unwrap();
        let b = preset("ns2-2.35").unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(format!("{a:?}"), format!("{:?}", TcpConfig::ns2()));
    }
}
