//! Loss recovery of Reno, NewReno and SACK with several losses in one window.
//!
//! A small harness drives one sender and one receiver over a path with a fixed one-way delay and a
//! serialising bottleneck (1 ms per data segment, so ACK clocking is real), and drops chosen
//! segments on their first transmission. This isolates the recovery algorithms from queues and
//! other flows: the expected behaviour is textbook (RFC 5681, RFC 6582, RFC 6675; Fall & Floyd,
//! "Simulation-based comparisons of Tahoe, Reno and SACK TCP", 1996):
//! * NewReno repairs one loss per round trip: 3 losses take about 3 RTTs, without a timeout if
//!   every partial ACK restarts the timer (RFC 3782's Slow-but-Steady); with the Impatient variant
//!   (RFC 6582, ns-2.35) a recovery longer than one RTO after its first partial ACK times out;
//! * SACK repairs all of them in about one RTT;
//! * Reno leaves recovery on the first partial ACK and then needs a timeout (ns-2's Reno) — in any
//!   case much longer than NewReno.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use aqm::{Time, NS_PER_SEC};
use sim::measure::FlowCounters;
use sim::packet::Packet;
use sim::tcp::presets::preset;
use sim::tcp::{Ack, CcConfig, Cx, Recovery, TcpConfig, TcpReceiver, TcpSender};

const MS: Time = NS_PER_SEC / 1000;
const ONE_WAY: Time = 50 * MS;
const TX: Time = MS; // serialisation of one data segment

#[derive(Debug)]
struct Outcome {
    detect: Time,
    done: Time,
    timeouts: u64,
    fast_retx: u64,
    rtt: Time,
    /// When each segment of the burst was last retransmitted.
    rtx_at: Vec<Time>,
    /// When the retransmission timer first expired.
    timeout_at: Option<Time>,
    /// At each partial ACK (an ACK of new data that leaves the sender in recovery): its time,
    /// the window and `ssthresh` after it, and the timer's deadline.
    partial: Vec<Partial>,
}

#[derive(Debug, Clone, Copy)]
struct Partial {
    at: Time,
    cwnd: f64,
    ssthresh: f64,
    deadline: Time,
}

/// Run until `until`; drop the first transmission of every segment in `warm` (to end slow start)
/// and in `burst`, and measure the recovery of `burst`.
fn run(recovery: Recovery, warm: &[u32], burst: &[u32], until: Time) -> Outcome {
    run_twice(recovery, warm, burst, &[], until)
}

/// A pending event of [`run_twice`]: (time, order, is_ack, packet fields).
type Event = (Time, u64, bool, u32, u16, Time);

/// As [`run`], and also drop the first retransmission of every segment in `twice`.
fn run_twice(recovery: Recovery, warm: &[u32], burst: &[u32], twice: &[u32], until: Time) -> Outcome {
    run_with(TcpConfig { recovery, ..TcpConfig::ns2() }, warm, burst, twice, until)
}

/// As [`run_twice`], with the sender's configuration `base` (its window growth Reno's).
fn run_with(base: TcpConfig, warm: &[u32], burst: &[u32], twice: &[u32], until: Time) -> Outcome {
    let lost: Vec<u32> = warm.iter().chain(burst).copied().collect();
    let mut dropped_again: HashSet<u32> = HashSet::new();
    let cfg = TcpConfig { cc: CcConfig::Reno, max_window: 1000, ..base };
    let mut timeout_at = None;
    let mut partial = Vec::new();
    let mut tx = TcpSender::new(cfg, u32::MAX);
    let mut rx = TcpReceiver::new(&cfg, 1);
    let mut c = FlowCounters::default();
    let mut dropped: HashSet<u32> = HashSet::new();
    // events: (time, order, is_ack, packet)
    let mut ev: BinaryHeap<Reverse<Event>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut link_free: Time = 0;
    let mut out: Vec<Packet> = Vec::new();
    let mut detect = None;
    let mut recover_at = 0u32;
    let mut done = None;
    let mut rtx_at = vec![0; burst.len()];
    let mut send = |out: &mut Vec<Packet>,
                    now: Time,
                    ev: &mut BinaryHeap<_>,
                    dropped: &mut HashSet<u32>,
                    link_free: &mut Time,
                    order: &mut u64| {
        for p in out.drain(..) {
            let start = now.max(*link_free);
            *link_free = start + TX;
            if let Some(i) = burst.iter().position(|&b| b == p.seq) {
                if p.flags & sim::packet::F_RETX != 0 {
                    rtx_at[i] = now;
                }
            }
            if lost.contains(&p.seq) && dropped.insert(p.seq) {
                continue;
            }
            if p.flags & sim::packet::F_RETX != 0 && twice.contains(&p.seq) && dropped_again.insert(p.seq) {
                continue;
            }
            *order += 1;
            ev.push(Reverse((start + TX + ONE_WAY, *order, false, p.seq, p.flags as u16, p.sent)));
        }
    };
    tx.start(&mut Cx::new(0, &mut out, &mut c));
    send(&mut out, 0, &mut ev, &mut dropped, &mut link_free, &mut order);
    let mut now = 0;
    while now < until {
        let next_ev = ev.peek().map(|r| r.0 .0).unwrap_or(Time::MAX);
        let rto = if tx.rto_deadline() == 0 { Time::MAX } else { tx.rto_deadline() };
        if next_ev == Time::MAX && rto == Time::MAX {
            break;
        }
        if rto < next_ev {
            now = rto;
            timeout_at.get_or_insert(now);
            tx.on_timeout(&mut Cx::new(now, &mut out, &mut c));
        } else {
            let Reverse((t, _, is_ack, seq, aux_or_flags, sent)) = ev.pop().unwrap();
            now = t;
            if is_ack {
                let blocks = rx.sack_blocks(aux_or_flags).unwrap_or_default();
                let before = c.fast_retx;
                let una = tx.snd_una();
                let ack = Ack { seq, flags: 0, echo: sent, blocks: blocks.as_slice() };
                tx.on_ack(&ack, &mut Cx::new(now, &mut out, &mut c));
                if tx.snd_una() > una && tx.in_recovery() && c.fast_retx == before {
                    let (cwnd, ssthresh, deadline) = (tx.cwnd(), tx.ssthresh(), tx.rto_deadline());
                    partial.push(Partial { at: now, cwnd, ssthresh, deadline });
                }
                if c.fast_retx > before && detect.is_none() && tx.snd_una() == burst[0] {
                    detect = Some(now);
                    recover_at = *burst.iter().max().unwrap() + 1;
                }
                if detect.is_some() && done.is_none() && tx.snd_una() >= recover_at {
                    done = Some(now);
                }
            } else {
                let p = Packet {
                    sent,
                    flow: 0,
                    seq,
                    size: 1000,
                    kind: sim::packet::PktKind::Data,
                    hop: 0,
                    prio: 1,
                    flags: 0,
                    aux: 0,
                };
                if rx.on_data(&p, now, &mut c, &cfg) {
                    let a = rx.ack(&cfg);
                    order += 1;
                    ev.push(Reverse((now + ONE_WAY, order, true, a.seq, a.aux, a.sent)));
                }
            }
        }
        send(&mut out, now, &mut ev, &mut dropped, &mut link_free, &mut order);
    }
    Outcome {
        detect: detect.expect("losses detected by duplicate ACKs"),
        done: done.unwrap_or(Time::MAX),
        timeouts: c.timeouts as u64,
        fast_retx: c.fast_retx as u64,
        rtt: 2 * ONE_WAY + TX,
        rtx_at,
        timeout_at,
        partial,
    }
}

fn rtts(o: &Outcome) -> f64 {
    (o.done - o.detect) as f64 / o.rtt as f64
}

// a single loss early ends slow start (cwnd about 10); the three losses then hit one window in
// congestion avoidance (cwnd about 15-20), as in Fall & Floyd's comparison
const WARM: [u32; 1] = [20];
const BURST: [u32; 3] = [200, 204, 208];

/// With the timer restarted at every partial ACK (Slow-but-Steady, the NewReno of Fall & Floyd's
/// comparison: ns-2 gained the Impatient option only in 1998). The Impatient variant times out here,
/// as the RTO (200 ms) is shorter than the three RTTs (next tests).
#[test]
fn newreno_recovers_three_losses_in_about_three_rtts_without_timeout() {
    let steady = TcpConfig { newreno_impatient: false, ..TcpConfig::ns2() };
    let o = run_with(steady, &WARM, &BURST, &[], 20 * NS_PER_SEC);
    println!("NewReno: {o:?}, {:.2} RTTs", rtts(&o));
    assert_eq!(o.timeouts, 0);
    assert_eq!(o.fast_retx, 2, "one fast retransmit per episode, the rest on partial ACKs");
    let r = rtts(&o);
    assert!((2.5..=3.6).contains(&r), "NewReno took {r:.2} RTTs");
}

/// SACK repairs all three losses in one round of retransmissions: every lost segment is
/// retransmitted before the first retransmission is acknowledged (NewReno needs one round trip per
/// loss). The whole recovery takes less than two RTTs: RFC 6675 sends nothing beyond the first
/// retransmission until `pipe` falls below the halved window, i.e. until about half a window of
/// SACKs has arrived (ns-2's Sack1 waits the same way), so completion is 1.5–2 RTTs after
/// detection, not 1 — measured 1.89 here.
#[test]
fn sack_recovers_three_losses_in_one_round_of_retransmissions() {
    let o = run(Recovery::Sack, &WARM, &BURST, 20 * NS_PER_SEC);
    let newreno = run(Recovery::NewReno, &WARM, &BURST, 20 * NS_PER_SEC);
    println!("SACK: {o:?}, {:.2} RTTs", rtts(&o));
    assert_eq!(o.timeouts, 0);
    assert_eq!(o.fast_retx, 2, "one fast retransmit per episode");
    for (seq, t) in BURST.iter().zip(&o.rtx_at) {
        assert!(*t >= o.detect && *t < o.detect + o.rtt, "segment {seq} retransmitted at {t}, not within one RTT");
    }
    let last = *newreno.rtx_at.last().unwrap();
    assert!(last + newreno.rtt / 10 > newreno.detect + 2 * newreno.rtt, "NewReno retransmits one loss per RTT");
    let r = rtts(&o);
    assert!((0.9..2.0).contains(&r), "SACK took {r:.2} RTTs");
    assert!(r + 1.0 < rtts(&newreno));
}

#[test]
fn reno_needs_a_timeout_or_much_longer() {
    let reno = run(Recovery::Reno, &WARM, &BURST, 20 * NS_PER_SEC);
    let newreno = run(Recovery::NewReno, &WARM, &BURST, 20 * NS_PER_SEC);
    println!("Reno: {reno:?}, {:.2} RTTs", rtts(&reno));
    assert!(reno.timeouts >= 1 || rtts(&reno) > rtts(&newreno) + 1.0, "Reno recovered as fast as NewReno");
    assert!(reno.done > newreno.done);
}

#[test]
fn a_single_loss_is_one_rtt_for_all_three() {
    for rec in [Recovery::Reno, Recovery::NewReno, Recovery::Sack] {
        let o = run(rec, &WARM, &[200], 20 * NS_PER_SEC);
        let r = rtts(&o);
        println!("{rec:?}, one loss: {r:.2} RTTs");
        assert_eq!(o.timeouts, 0, "{rec:?}");
        assert!((0.9..=1.6).contains(&r), "{rec:?}: {r:.2} RTTs");
    }
}

/// A lost retransmission of the first unacknowledged segment can only be repaired by the
/// retransmission timer. SACK recovery keeps retransmitting later holes and sending new data
/// meanwhile; those must not keep re-arming the timer (a bug once did: recovery then lasted for
/// the rest of the run).
#[test]
fn a_lost_retransmission_is_repaired_by_the_timer() {
    for rec in [Recovery::NewReno, Recovery::Sack] {
        let o = run_twice(rec, &WARM, &BURST, &[BURST[0]], 20 * NS_PER_SEC);
        println!("{rec:?}, first retransmission lost: {o:?}, {:.2} RTTs", rtts(&o));
        assert_eq!(o.timeouts, 1, "{rec:?}");
        // the timer expires one RTO (here the 200 ms minimum: the RTT is a steady 101 ms) after the
        // lost retransmission, not later: re-sending other holes did not push it out
        let resent = o.rtx_at[0] - o.detect;
        assert!(resent <= 2 * NS_PER_SEC / 10 + MS, "{rec:?}: segment re-sent {resent} ns after the fast retransmit");
        assert!(rtts(&o) < 10.0, "{rec:?}: {:.2} RTTs", rtts(&o));
    }
}

/// Eight losses in one window (as a slow-start overshoot leaves them): NewReno repairs one per
/// round trip, which takes longer than the RTO (200 ms, two RTTs here). RFC 6582 §3.2's Impatient
/// variant — ns-2.35's NewReno agent (`newreno_changes1_ 1`, every preset from ns2-2.27 on) —
/// restarts the timer at the first partial ACK only: the deadline stays where that ACK set it, the
/// timer expires one RTO later and go-back-N repairs the rest. Slow-but-Steady (`false`: ns-2
/// before 2003/05/06, and Linux) restarts it at every partial ACK and stays in recovery about one
/// RTT per loss without a timeout. (aqmlab once restarted it at every partial-ACK retransmission
/// with the Impatient setting; this test fails on that.)
#[test]
fn impatient_newreno_restarts_the_timer_at_the_first_partial_ack_only() {
    let many: Vec<u32> = (0..8).map(|i| 200 + 3 * i).collect();
    let imp = run_with(TcpConfig::ns2(), &WARM, &many, &[], 20 * NS_PER_SEC);
    let steady =
        run_with(TcpConfig { newreno_impatient: false, ..TcpConfig::ns2() }, &WARM, &many, &[], 20 * NS_PER_SEC);
    println!("Impatient: {imp:?}\nSlow-but-Steady: {steady:?}");
    assert!(TcpConfig::ns2().newreno_impatient, "ns-2.35's default");
    // Impatient: one deadline for all partial ACKs, set at the first; the timer expires there
    let first = imp.partial[0];
    let before: Vec<&Partial> = imp.partial.iter().filter(|p| p.at < first.deadline).collect();
    assert!(before.len() >= 2, "{imp:?}");
    assert!(before.iter().all(|p| p.deadline == first.deadline), "{before:?}");
    assert_eq!(imp.timeouts, 1);
    assert_eq!(imp.timeout_at, Some(first.deadline));
    assert!(first.deadline > first.at && first.deadline <= first.at + 3 * imp.rtt);
    // Slow-but-Steady: each partial ACK pushes the deadline out; no timeout, one RTT per loss
    assert!(steady.partial.windows(2).all(|w| w[1].deadline > w[0].deadline), "{:?}", steady.partial);
    assert_eq!(steady.timeouts, 0);
    assert_eq!(steady.partial.len(), many.len() - 1);
    assert!(rtts(&steady) >= many.len() as f64 - 0.5, "{:.2} RTTs", rtts(&steady));
}

/// Partial window deflation (RFC 6582 §3.2; ns-2's `partial_window_deflation_ 1` from ns2-2.27
/// on): a partial ACK of `n` segments takes `n - 1` off the inflated window. Without it (ns-2
/// before 2003/05/06, the ns2-2.1b9 preset) the whole inflation goes: `cwnd = ssthresh`.
#[test]
fn partial_window_deflation_or_back_to_ssthresh() {
    let base = TcpConfig { newreno_impatient: false, ..TcpConfig::ns2() };
    let on = run_with(base, &WARM, &BURST, &[], 20 * NS_PER_SEC);
    let off = run_with(TcpConfig { partial_window_deflation: false, ..base }, &WARM, &BURST, &[], 20 * NS_PER_SEC);
    println!("deflation: {:?}\nto ssthresh: {:?}", on.partial, off.partial);
    assert_eq!(off.partial.len(), BURST.len() - 1);
    assert!(off.partial.iter().all(|p| p.cwnd == p.ssthresh), "{:?}", off.partial);
    // the duplicate ACKs between two partial ACKs inflated the window beyond ssthresh, and a
    // partial ACK of four segments takes three off it
    assert!(on.partial.iter().all(|p| p.cwnd > p.ssthresh), "{:?}", on.partial);
    let old = preset("ns2-2.1b9").unwrap();
    assert!(!old.partial_window_deflation && !old.newreno_impatient);
}
