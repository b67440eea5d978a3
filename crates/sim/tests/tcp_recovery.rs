//! Loss recovery of Reno, NewReno and SACK with several losses in one window.
//!
//! A small harness drives one sender and one receiver over a path with a fixed one-way delay and a
//! serialising bottleneck (1 ms per data segment, so ACK clocking is real), and drops chosen
//! segments on their first transmission. This isolates the recovery algorithms from queues and
//! other flows: the expected behaviour is textbook (RFC 5681, RFC 6582, RFC 6675; Fall & Floyd,
//! "Simulation-based comparisons of Tahoe, Reno and SACK TCP", 1996):
//! * NewReno repairs one loss per round trip: 3 losses take about 3 RTTs, without a timeout;
//! * SACK repairs all of them in about one RTT;
//! * Reno leaves recovery on the first partial ACK and then needs a timeout (ns-2's Reno) — in any
//!   case much longer than NewReno.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use aqm::{Time, NS_PER_SEC};
use sim::measure::FlowCounters;
use sim::packet::Packet;
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
    let lost: Vec<u32> = warm.iter().chain(burst).copied().collect();
    let mut dropped_again: HashSet<u32> = HashSet::new();
    let cfg = TcpConfig { recovery, cc: CcConfig::Reno, max_window: 1000, ..TcpConfig::ns2() };
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
    #[allow(clippy::explicit_counter_loop)]
    while now < until {
        let next_ev = ev.peek().map(|r| r.0 .0).unwrap_or(Time::MAX);
        let rto = if tx.rto_deadline() == 0 { Time::MAX } else { tx.rto_deadline() };
        if next_ev == Time::MAX && rto == Time::MAX {
            break;
        }
        if rto < next_ev {
            now = rto;
            tx.on_timeout(&mut Cx::new(now, &mut out, &mut c));
        } else {
            let Reverse((t, _, is_ack, seq, aux_or_flags, sent)) = ev.pop().unwrap();
            now = t;
            if is_ack {
                let blocks = rx.sack_blocks(aux_or_flags).unwrap_or_default();
                let before = c.fast_retx;
                let ack = Ack { seq, flags: 0, echo: sent, blocks: blocks.as_slice() };
                tx.on_ack(&ack, &mut Cx::new(now, &mut out, &mut c));
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
    }
}

fn rtts(o: &Outcome) -> f64 {
    (o.done - o.detect) as f64 / o.rtt as f64
}

// a single loss early ends slow start (cwnd about 10); the three losses then hit one window in
// congestion avoidance (cwnd about 15-20), as in Fall & Floyd's comparison
const WARM: [u32; 1] = [20];
const BURST: [u32; 3] = [200, 204, 208];

#[test]
fn newreno_recovers_three_losses_in_about_three_rtts_without_timeout() {
    let o = run(Recovery::NewReno, &WARM, &BURST, 20 * NS_PER_SEC);
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
