//! The ns-2 release presets, read through the scenario loader: each family's values as found in
//! ns-2's history (tcl/lib/ns-default.tcl and tcp/tcp.cc at each release; docs/tcp.md), every
//! release name of a family, `ns2` as an alias of `ns2-2.35`, explicit keys over preset values,
//! and one-line errors.

use aqm::NS_PER_SEC;
use sim::scenario::{load, Transport};
use sim::tcp::TcpConfig;

const MS: u64 = NS_PER_SEC / 1000;

fn cfg(tcp: &str) -> TcpConfig {
    let text = format!(
        "[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"1ms\"\nlimit = 100\n[tcp]\n{tcp}\n[[flows]]\ntransport = \"tcp\"\n"
    );
    let sc = load(&text, &[], "t").unwrap_or_else(|e| panic!("{e}"));
    match &sc.groups[0].transport {
        Transport::Tcp { cfg, .. } => *cfg,
        _ => unreachable!(),
    }
}

/// (min_rto, initial_rto, max_rto, back-off cap as a power of two) of a preset.
fn rto(c: &TcpConfig) -> (u64, u64, u64, u32) {
    (c.min_rto / MS, c.initial_rto / MS, c.max_rto / MS, c.max_backoff_exp)
}

/// Release names, min_rto ms, initial_rto ms, max_rto ms, log2 of the back-off cap, and NewReno's
/// two options of 2003/05/06.
type Release = (&'static [&'static str], u64, u64, u64, u32, bool);

#[test]
fn each_era_preset_has_the_values_of_its_release() {
    // (names, min_rto ms, initial_rto ms, max_rto ms, log2 of the back-off cap, NewReno's
    // newreno_changes1_ and partial_window_deflation_: both 1 from 2003/05/06)
    let table: &[Release] = &[
        (&["ns2-2.1b9", "ns2-2.1b9a", "ns2-2.26"], 1000, 6000, 100_000_000, 6, false),
        (&["ns2-2.27"], 1000, 6000, 100_000_000, 6, true),
        (&["ns2-2.28", "ns2-2.29"], 200, 6000, 100_000_000, 6, true),
        (&["ns2-2.30", "ns2-2.31"], 200, 3000, 100_000_000, 6, true),
        (&["ns2-2.32", "ns2-2.33", "ns2-2.34"], 200, 3000, 60_000, 6, true),
        (&["ns2-2.35", "ns2"], 200, 3000, 60_000, 20, true),
    ];
    for (names, min, init, max, backoff, rfc2582) in table {
        for n in *names {
            let c = cfg(&format!("preset = \"{n}\""));
            assert_eq!(rto(&c), (*min, *init, *max, *backoff), "{n}");
            assert_eq!((c.newreno_impatient, c.partial_window_deflation), (*rfc2582, *rfc2582), "{n}");
            // the same in every release 2.1b9-2.35
            assert_eq!(c.granularity, 10 * MS, "{n}: tcpTick_");
            assert_eq!(c.initial_window, 2.0, "{n}: windowInit_");
            assert!(c.limited_transmit, "{n}: singledup_");
            assert!(!c.delayed_ack, "{n}: the sink ACKs every segment");
            assert_eq!(c.variant, "newreno", "{n}");
        }
    }
    // ns2 is the same preset as ns2-2.35, and the default
    assert_eq!(format!("{:?}", cfg("preset = \"ns2\"")), format!("{:?}", cfg("preset = \"ns2-2.35\"")));
    assert_eq!(format!("{:?}", cfg("")), format!("{:?}", cfg("preset = \"ns2-2.35\"")));
}

#[test]
fn explicit_keys_override_the_preset_and_vegas_has_no_limited_transmit() {
    let c = cfg("preset = \"ns2-2.1b9\"\nmin_rto = \"200ms\"\nmax_backoff = 8\nlimited_transmit = false");
    assert_eq!(rto(&c), (200, 6000, 100_000_000, 3));
    assert!(!c.limited_transmit);
    assert!(!cfg("preset = \"ns2-2.1b9\"\nvariant = \"vegas\"").limited_transmit);
    assert!(cfg("preset = \"ns2-2.1b9\"\nvariant = \"sack\"").limited_transmit);
    // NewReno's partial-ACK keys, either way against the preset's value
    let c = cfg("preset = \"ns2-2.1b9\"\nnewreno_impatient = true\npartial_window_deflation = true");
    assert!(c.newreno_impatient && c.partial_window_deflation);
    let c = cfg("newreno_impatient = false\npartial_window_deflation = false");
    assert!(!c.newreno_impatient && !c.partial_window_deflation);
    assert!(!cfg("preset = \"modern\"").newreno_impatient && cfg("preset = \"modern\"").partial_window_deflation);
}

#[test]
fn unknown_presets_and_bad_back_off_caps_are_one_line_errors() {
    let text = "[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"1ms\"\nlimit = 100\n[tcp]\npreset = \"ns2-2.36\"\n[[flows]]\ntransport = \"tcp\"\n";
    let e = load(text, &[], "t").unwrap_err().to_string();
    assert!(e.contains("tcp.preset") && e.contains("ns2-2.1b9") && !e.contains('\n'), "{e}");
    let text = text.replace("preset = \"ns2-2.36\"", "max_backoff = 48");
    let e = load(&text, &[], "t").unwrap_err().to_string();
    assert!(e.contains("max_backoff") && e.contains("power of two"), "{e}");
}

/// The loader's one-line error for a `[tcp]` table (`Err` text), or `Ok` for a valid one.
fn tcp_error(tcp: &str) -> Option<String> {
    let text = format!(
        "[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"1ms\"\nlimit = 100\n[tcp]\n{tcp}\n[[flows]]\ntransport = \"tcp\"\n"
    );
    load(&text, &[], "t").err().map(|e| e.to_string())
}

#[test]
fn linux_recovery_is_on_in_modern_only_and_its_keys_are_checked() {
    use sim::tcp::{Hystart, RtoEstimator};
    // every ns-2 preset: off (the papers' senders); modern: on, as Linux
    for p in ["ns2", "ns2-2.1b9", "ns2-2.33"] {
        let c = cfg(&format!("preset = \"{p}\"\nvariant = \"cubic\""));
        assert!(!c.rack && !c.tlp && !c.prr, "{p}");
        assert_eq!((c.hystart, c.rto_estimator), (Hystart::Off, RtoEstimator::Rfc6298), "{p}");
    }
    let m = cfg("preset = \"modern\"");
    assert!(m.rack && m.tlp && m.prr && m.rack_on());
    assert_eq!((m.hystart, m.rto_estimator, m.min_rtt_window), (Hystart::Linux, RtoEstimator::Linux, 300 * NS_PER_SEC));
    // a modern group with a recovery other than SACK, or a variant other than CUBIC, leaves them off
    let r = cfg("preset = \"modern\"\nvariant = \"newreno\"");
    assert!(!r.rack && !r.tlp && !r.prr && r.rto_estimator == RtoEstimator::Rfc6298);
    assert_eq!(cfg("preset = \"modern\"\nvariant = \"bbr\"").hystart, Hystart::Off);
    assert!(cfg("preset = \"modern\"\nvariant = \"bbr\"").rack_on());
    // each can be set alone
    let c = cfg("preset = \"modern\"\ntlp = false\nhystart = \"hystart++\"\nmin_rtt_window = \"10s\"");
    assert!(c.rack && !c.tlp && c.prr);
    assert_eq!((c.hystart, c.min_rtt_window), (Hystart::HystartPp, 10 * NS_PER_SEC));
    assert!(cfg("variant = \"sack\"\nrack = true").rack_on(), "RACK-TLP with the ns-2 preset's other values");
    // and written where they cannot apply, they are errors naming the key
    for (tcp, key) in [
        ("variant = \"newreno\"\nrack = true", "tcp.rack"),
        ("variant = \"sack\"\ntlp = true", "tcp.tlp"),
        ("variant = \"sack\"\nprr = true", "tcp.prr"),
        ("preset = \"modern\"\nvariant = \"bbr\"\nhystart = \"linux\"", "tcp.hystart"),
        ("variant = \"sack\"\nrto_estimator = \"linux\"", "tcp.rto_estimator"),
        ("preset = \"modern\"\nmin_rtt_window = \"0s\"", "tcp.min_rtt_window"),
        ("preset = \"modern\"\nhystart = \"fast\"", "tcp"),
    ] {
        let e = tcp_error(tcp).unwrap_or_else(|| panic!("{tcp}: accepted"));
        assert!(e.starts_with(key), "{tcp}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
