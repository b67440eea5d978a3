//! The engine's speed machinery apart from its model: requests to load, ahead of use, the memory
//! the next events and departures will read. At core-router scale an event misses the cache
//! several times in a row before any work (the link, its pipe's front entry, the packet's flow),
//! each load needing the one before; these hints start those loads a few events early so that
//! the misses overlap other work (docs/engine.md, "Why it is fast"; the rounds that measured
//! them: docs/engine-history.md). Nothing here changes a result: every function only reads and
//! requests, and a run without them (`PREFETCH_FLOWS` flows or fewer) is the same bit for bit.

use super::{is_reverse, Sim};
use crate::event::Kind;
use crate::hosts::TimerKey;
use crate::net::{Entry, NEXT_HOST};
use crate::packet::Packet;
use aqm::hint::Upcoming;
use aqm::AnyQdisc;

/// Runs with this many flows or more request the state of the next events and departures ahead
/// (`Sim::prefetch_ahead`, `Sim::prefetch_flow`; below it, a run's state mostly stays in the
/// caches, and the requests only add work: 2 % more instructions at the bench's point `a`, 1 000
/// flows, for the tenth round's first request alone).
pub(super) const PREFETCH_FLOWS: usize = 50_000;

/// How far behind its head a queue's packet is when its flow's state is requested (at the
/// departures of runs with `PREFETCH_FLOWS`; `Sim::prefetch_flow`).
const QUEUE_AHEAD: usize = 4;

/// The flows of the packets `QUEUE_AHEAD`, half and a quarter of it behind a queue's head, as
/// far as its discipline can tell ([`Upcoming`]), in a run that requests state ahead (`flows`
/// at least `PREFETCH_FLOWS`).
#[inline(always)]
pub(super) fn coming(q: &AnyQdisc<Packet>, flows: usize) -> Coming {
    if flows < PREFETCH_FLOWS {
        return Coming::default();
    }
    let flow = |k| q.upcoming(k).map(|p| p.flow as usize);
    Coming { state: flow(QUEUE_AHEAD), links: flow(QUEUE_AHEAD / 2), pipes: flow(QUEUE_AHEAD / 4) }
}

/// Flows whose state, end links and pipes to request at a departure ([`coming`]).
#[derive(Default, Clone, Copy)]
pub(super) struct Coming {
    state: Option<usize>,
    links: Option<usize>,
    pipes: Option<usize>,
}

impl Sim {
    /// Start loading what the next events will read (a hint only: nothing changes), and return
    /// the flow whose state was requested. At scale an event misses the cache several times in a
    /// row before any work, each load needing the one before: the link, its pipe's front entry
    /// (the packet), then the packet's flow. The links of the current granule's events were
    /// requested at its refill (`pop_before`); here each step of that chain is requested ahead
    /// of the next, as a pipeline over the events to come, so that every miss overlaps an
    /// event's work. (One step alone, the next event's front entry, was the tenth round's; the
    /// eleventh added the others; the twelfth dropped the ring's header, which a ring no longer
    /// has: docs/engine.md.)
    #[inline(always)]
    pub(super) fn prefetch_ahead(&self) -> Option<usize> {
        if !self.prefetching() {
            return None;
        }
        // as a pipeline: a link three events ahead, the front entry of the next but one, then
        // the state of the next one's flow (each step reads what an earlier one requested; the
        // link two events before its entry, as when its ring's header came between: requesting
        // it four or five events ahead, or the entry two ahead, measured the same)
        let net = &self.net;
        const LINK_AHEAD: usize = 3;
        const FRONT_AHEAD: usize = 1;
        if let Some((Kind::Link, j)) = self.ev.peek_next(LINK_AHEAD) {
            crate::mem::prefetch(&net.links[j as usize]);
        }
        if let Some((Kind::Link, j)) = self.ev.peek_next(FRONT_AHEAD) {
            net.links[j as usize].pipe.prefetch_front(&net.store);
        }
        let f = match self.ev.peek_next(0) {
            Some((Kind::Link, j)) => match net.links[j as usize].pipe.front(&net.store) {
                // a data packet going on into a link (from its access link into the bottleneck)
                // reads nothing of its flow there but its entries at the measured links
                Some(Entry::InFlight { pkt, .. })
                    if !is_reverse(pkt.kind) && net.links[j as usize].next < NEXT_HOST =>
                {
                    for m in &self.monitors {
                        m.prefetch_flow(pkt.flow as usize);
                    }
                    return None;
                }
                Some(Entry::InFlight { pkt, .. }) => pkt.flow as usize,
                _ => return None,
            },
            Some((Kind::Timer, k)) => TimerKey(k as usize).flow(),
            _ => return None,
        };
        self.prefetch_flow(f);
        Some(f)
    }

    /// Whether this run requests state ahead (`PREFETCH_FLOWS`).
    #[inline(always)]
    fn prefetching(&self) -> bool {
        self.flows.len() >= PREFETCH_FLOWS
    }

    /// The links of flow `f`'s paths where its host puts a packet and where its host takes one
    /// (reading `f`'s route).
    #[inline(always)]
    fn end_links(&self, f: usize) -> impl Iterator<Item = &crate::net::Link> {
        let ends = self.routes.get(f).map(|r| [r.first_fwd, r.first_rev, r.last_fwd, r.last_rev]);
        ends.into_iter().flatten().filter_map(|l| self.net.links.get(l as usize))
    }

    /// Start loading flow `f`'s end links (its route was requested before). A hint only.
    #[inline(always)]
    pub(super) fn prefetch_links(&self, f: usize) {
        self.end_links(f).for_each(crate::mem::prefetch);
    }

    /// Start loading the rings, or the one entry, of flow `f`'s end links' pipes (its route and
    /// those links were requested before). A hint only.
    #[inline(always)]
    fn prefetch_pipes(&self, f: usize) {
        self.end_links(f).for_each(|link| link.pipe.prefetch_where(&self.net.store));
    }

    /// A busy link's pipe says which packets its next events forward: start loading the state of
    /// the flow of the packet `AHEAD` entries behind its front, so that those misses overlap the
    /// events in between. A hint only.
    #[inline(always)]
    pub(super) fn prefetch_behind(&self, l: usize) {
        const AHEAD: usize = 2;
        if !self.prefetching() {
            return;
        }
        let net = &self.net;
        let pipe = &net.links[l].pipe;
        if pipe.len() > AHEAD {
            if let Entry::InFlight { pkt, .. } = pipe.get(&net.store, AHEAD) {
                self.prefetch_flow(pkt.flow as usize);
            }
        }
    }

    /// Start loading what an event for flow `f` reads: its route, its TCP state, its counters,
    /// its timer slots and its entries at the measured links. A hint only.
    #[inline(always)]
    fn prefetch_flow(&self, f: usize) {
        use crate::mem::{prefetch, prefetch_all};
        if f >= self.flows.len() {
            return;
        }
        prefetch(&self.routes[f]);
        prefetch_all(&self.flows[f]);
        prefetch_all(&self.ctr[f]);
        prefetch(&self.timers[TimerKey::new(f, 0).0]);
        for m in &self.monitors {
            m.prefetch_flow(f);
        }
    }

    /// At a departure: request the first coming flow's state, the second's end links and the
    /// third's pipes, each reading what was requested for it at earlier departures.
    #[inline(always)]
    pub(super) fn prefetch_coming(&self, c: Coming) {
        if let Some(f) = c.state {
            self.prefetch_flow(f);
        }
        if let Some(f) = c.links {
            self.prefetch_links(f);
        }
        if let Some(f) = c.pipes {
            self.prefetch_pipes(f);
        }
    }
}
