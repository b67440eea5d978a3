//! The engine's exact shortcuts: a packet handed on at once instead of at an event of its own,
//! where nothing could tell the difference. Results are the same bit for bit with or without
//! them; only `engine.events` falls. docs/engine.md ("Early delivery", "Passing through") has the
//! argument at length; `tests/early.rs` runs scenarios with and without and compares them.
//!
//! * **Early delivery** ([`Sim::deliver_early`]): a packet entering its path's last link, which
//!   ends at its host, reaches the host at a time the link computes at once (`max(now, free_at)`
//!   plus transmission and propagation). The host's code then runs at once, with the clock set to
//!   that time, instead of at an event then.
//! * **Passing through** ([`Sim::pass_through`]): a packet leaving a link shared by several paths
//!   (a dumbbell's bottleneck or reverse link) goes next into its path's last link, which carries
//!   that path alone; it enters it at once, at the time it leaves the shared link, instead of at
//!   the shared link's event. A simple shared link does this when the packet enters it, an AQM
//!   link when the packet's transmission starts (in `Sim::advance`: the packet never enters the
//!   pipe, and the link's event only wakes its transmitter, `Sim::schedule_link`).
//!
//! Where their state lives:
//!
//! * which flows may take which shortcut: `Route::early` (flags [`EARLY_DATA`], [`EARLY_ACK`],
//!   [`THROUGH_DATA`], [`THROUGH_ACK`]), set once by [`allow`];
//! * packets of a path on their way to its last link that did not pass through:
//!   `Route::inbound` (while one is, none may pass, so a path's packets enter its last link in
//!   FIFO order);
//! * a packet that left a simple link early but whose transmission has not started yet: its pipe
//!   entry becomes [`Entry::Left`](crate::net::Entry), which holds its place in the FIFO for the
//!   buffer test (`Link::left_early`, removed by `Link::simple_arrive` once its transmission has
//!   started, skipped by `Sim::on_link_event`);
//! * the instant before which shortcuts may be taken, `Sim::horizon` ([`Sim::set_horizon`]: the
//!   run's end, the warm-up snapshot, the next per-flow sample), and whether one is being taken,
//!   `Sim::early` (they never nest).

use super::{is_reverse, Sim};
use crate::hosts::Flow;
use crate::net::{Network, Route, EARLY_ACK, EARLY_DATA, NEXT_HOST, NEXT_SHARED, THROUGH_ACK, THROUGH_DATA};
use crate::packet::{Packet, PktKind};
use crate::scenario::Scenario;
use aqm::Time;

/// Mark the flows that may take shortcuts (`Route::early`).
///
/// Early delivery: static bulk TCP flows without SACK (whose ACKs carry blocks the receiver files
/// as data arrives) and UDP flows, whose host pair is theirs alone, for the direction whose reply
/// goes into a simple first link that no other path uses: data at the receiver when the ACK
/// path's first link is such a link (always, for UDP: its receiver sends nothing), ACKs at the
/// sender when the data path's is. Passing through: the same packets, when their path's last link
/// is a simple link no other path uses. Web and short connections take none (their host pairs
/// carry several connections, and a completion starts others).
pub(super) fn allow(sc: &Scenario, net: &Network, flows: &[Flow], routes: &mut [Route]) {
    use crate::scenario::{TcpApp, Transport};
    let mut uses = vec![0u32; net.links.len()];
    for r in &net.host_routes {
        for ack in [false, true] {
            for &l in net.path(r, ack) {
                uses[l as usize] = uses[l as usize].saturating_add(1);
            }
        }
    }
    let alone = |l: u32| uses[l as usize] == 1 && net.aqm(l as usize).is_none();
    // packets may pass through the link before a path's last link when that one is theirs alone
    let through = |last: u32, flag: u8| if alone(last) { flag } else { 0 };
    for (f, r) in flows.iter().zip(routes.iter_mut()) {
        r.early = match &sc.groups[f.group as usize].transport {
            // a probe's receiver sends its echo: as a TCP receiver its ACK
            Transport::Udp { probe: Some(p), .. } if p.echo && alone(r.first_rev) => {
                EARLY_DATA | through(r.last_fwd, THROUGH_DATA)
            }
            Transport::Udp { probe: Some(p), .. } if p.echo => 0,
            Transport::Udp { .. } => EARLY_DATA | through(r.last_fwd, THROUGH_DATA),
            Transport::Tcp { cfg, app: TcpApp::Bulk { .. } } if cfg.recovery != crate::tcp::Recovery::Sack => {
                let data = if alone(r.first_rev) { EARLY_DATA | through(r.last_fwd, THROUGH_DATA) } else { 0 };
                let ack = if alone(r.first_fwd) { EARLY_ACK | through(r.last_rev, THROUGH_ACK) } else { 0 };
                data | ack
            }
            _ => 0,
        };
    }
}

/// A packet of `r`'s path that did not pass through (it was counted in `Route::inbound`) reaches
/// its path's last link at its own event.
#[inline(always)]
pub(super) fn reached_last_link(r: &mut Route, ack: bool) {
    let flag = if ack { THROUGH_ACK } else { THROUGH_DATA };
    if r.early & flag != 0 {
        r.inbound[ack as usize] -= 1;
    }
}

impl Sim {
    /// Turn the shortcuts off: every packet then takes an event at the end of every link. Results
    /// are the same either way except `engine.events`; the tests use this to show it.
    pub fn without_early_delivery(mut self) -> Sim {
        self.routes.iter_mut().for_each(|r| r.early = 0);
        self
    }

    /// Set `Sim::horizon` from the run's end, the warm-up (until it has passed) and the next
    /// per-flow sample: the measurements that read flows' counters.
    pub(super) fn set_horizon(&mut self) {
        let warmup = if self.base.is_none() && self.sc.warmup > 0 { self.sc.warmup } else { Time::MAX };
        self.horizon = self.sc.duration.min(warmup).min(self.next_flow_sample);
    }

    /// `pkt` has just entered simple link `l`, whose packets go next to `next`, as the pipe's last
    /// entry, whose transmission starts at `start` and which reaches the far end at `at` (as
    /// `Link::simple_arrive` returned them). Hand it on at once if it may: to its host at the end
    /// of its path ([`Sim::deliver_early`]), or through into its path's last link after a shared
    /// link ([`Sim::pass_through`]); its entry then only holds its place ([`Entry::Left`]).
    /// Returns whether it did.
    ///
    /// [`Entry::Left`]: crate::net::Entry::Left
    #[inline]
    pub(super) fn leave_simple_early(&mut self, l: usize, next: u32, pkt: Packet, (start, at): (Time, Time)) -> bool {
        match next {
            NEXT_HOST => self.deliver_early(l, pkt, (start, at)),
            NEXT_SHARED if self.pass_through(pkt, at) => {
                let net = &mut self.net;
                net.links[l].left_early(start, self.now, &mut net.store);
                true
            }
            _ => false,
        }
    }

    /// `pkt` has just entered link `l`, its path's last, as the pipe's last entry; its
    /// transmission starts at `start` and it reaches its host at `at`: hand it to the host now,
    /// at `at`, instead of scheduling an event for it — when nothing could tell the difference.
    /// Returns whether it did; its entry is then [`Entry::Left`].
    ///
    /// [`Entry::Left`]: crate::net::Entry::Left
    ///
    /// The host's processing reads and changes the state of its own flow only, and what it sends
    /// goes into its first link, which no other flow uses ([`allow`]). So doing it early gives
    /// the same result as doing it at its time provided nothing else touches that flow in
    /// between: no timer of the flow is due before (an RTO or delayed-ACK deadline earlier than
    /// the arrival), the flow's application does not stop before, no measurement reads the
    /// flow's counters before (`Sim::horizon`), and no packet ahead of it in the link waits for
    /// its own event (the link has none pending). Packets of one flow reach its host in FIFO
    /// order either way, and events are taken in (time, kind, index) order, so every result is
    /// the same bit for bit; only the number of events falls (one fewer per packet delivered
    /// early).
    #[inline]
    fn deliver_early(&mut self, l: usize, mut pkt: Packet, (start, at): (Time, Time)) -> bool {
        // `pending`: a packet ahead of it waits for its own event
        if self.net.links[l].pending() || self.early || at >= self.horizon {
            return false;
        }
        let fi = pkt.flow as usize;
        let early = self.routes[fi].early;
        let ok = match pkt.kind {
            PktKind::Data | PktKind::Udp => early & EARLY_DATA != 0 && self.flows[fi].due_by(at, false),
            PktKind::Ack => early & EARLY_ACK != 0 && at < self.flows[fi].stop && self.flows[fi].due_by(at, true),
            PktKind::Request | PktKind::Echo => false,
        };
        if !ok {
            return false;
        }
        let now = self.now;
        let net = &mut self.net;
        net.links[l].left_early(start, now, &mut net.store);
        self.now = at;
        self.early = true;
        pkt.hop += 1;
        self.delivered += 1;
        self.deliver(pkt);
        self.early = false;
        self.now = now;
        true
    }

    /// `pkt` will leave a link shared by several paths at `exit`, and go next into the last link
    /// of its path, which carries that path alone: move it on into that link now, at `exit`,
    /// instead of scheduling an event for it at the shared link — and from there, if it may, to
    /// its host ([`Sim::deliver_early`]). Returns whether it did.
    ///
    /// The last link's state changes only when a packet of this path enters it, and those leave
    /// the shared link in FIFO order: so entering it early gives the same result as entering it
    /// at its time provided every packet of the path ahead in the shared link has entered it
    /// already (none is counted in its `inbound`, none waits there for its own event), and
    /// nothing reads the link or the flow before (the same `Sim::horizon`; a drop there is
    /// counted at once). Only the number of events falls (one fewer per packet passed through).
    #[inline]
    pub(super) fn pass_through(&mut self, mut pkt: Packet, exit: Time) -> bool {
        let ack = is_reverse(pkt.kind);
        let r = &mut self.routes[pkt.flow as usize];
        let (flag, len, last) =
            if ack { (THROUGH_ACK, r.rev_len, r.last_rev) } else { (THROUGH_DATA, r.fwd_len, r.last_fwd) };
        if r.early & flag == 0 || pkt.hop as u32 + 2 != len as u32 {
            return false;
        }
        let e = last as usize;
        let inbound = &mut r.inbound[ack as usize];
        if self.net.links[e].pending() || *inbound != 0 || self.early || exit >= self.horizon {
            // on its way at its own event (`reached_last_link` takes it off); a count that would
            // overflow ends passing through for the flow instead (the count is then never read
            // again)
            match inbound.checked_add(1) {
                Some(n) => *inbound = n,
                None => r.early &= !flag,
            }
            return false;
        }
        let now = self.now;
        self.now = exit;
        pkt.hop += 1;
        self.link_arrive(e, pkt);
        self.now = now;
        true
    }
}
