//! The network as the engine runs it: links (with their queues and pipes), and every host pair's
//! paths as runs of link indices in one flat vector. Built once from the scenario's topology
//! ([`build`]); the event loop only reads paths and drives links.
//!
//! Links `0 .. core` are the topology's links, in the scenario's order (for the dumbbell: the
//! bottleneck R1→R2, then the reverse link R2→R1); after them come the access links of the hosts
//! that flows have at routers, four per host pair (sender up, sender down, receiver down,
//! receiver up, for the ends that are at routers).

pub mod build;
pub mod link;
pub mod pipe;

pub use link::{AqmPart, Link, LinkClass, NEXT_HOST, NEXT_SHARED, NO_MONITOR};
pub use pipe::{Entry, Store};

use aqm::Time;

/// Where a host pair's paths start in [`Network::paths`]: kept small and apart from the flows, so
/// that forwarding a packet touches 20 bytes, not the flow's transport state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub fwd: u32,
    pub rev: u32,
    /// The first link of each path (`paths[fwd]`, `paths[rev]`), where a host injects a packet.
    pub first_fwd: u32,
    pub first_rev: u32,
    /// The last link of each path: where a packet goes after a shared link that is its path's
    /// last but one (a dumbbell's bottleneck and reverse link), read without the path.
    pub last_fwd: u32,
    pub last_rev: u32,
    pub fwd_len: u8,
    pub rev_len: u8,
    /// The engine's exact shortcuts this flow may take (`sim::shortcut`): which of its packets
    /// may reach their host *early*, [`EARLY_DATA`] (data at the receiver) and [`EARLY_ACK`]
    /// (ACKs at the sender), and which may pass *through* the shared link before their path's
    /// last, [`THROUGH_DATA`] and [`THROUGH_ACK`]. Set per flow when the simulation is built
    /// (`sim::shortcut::allow`); 0 for flows that take none, and for every flow of a host pair's
    /// route in `Network::host_routes`.
    pub early: u8,
    /// Data packets ([0]) and ACKs ([1]) of the flow on their way to their path's last link that
    /// did not pass through the shared link before it (`sim::shortcut`): while any is, none may
    /// pass. Counted only while the flow has [`THROUGH_DATA`] / [`THROUGH_ACK`]; a count that
    /// would overflow clears the flag for good instead.
    pub inbound: [u16; 2],
}

/// `Route::early`: the flow's data (or UDP) packets may be handed to the receiver when they enter
/// the path's last link.
pub const EARLY_DATA: u8 = 1;
/// `Route::early`: the flow's ACKs may be handed to the sender when they enter the ACK path's
/// last link.
pub const EARLY_ACK: u8 = 2;
/// `Route::early`: the flow's data packets may pass *through* the shared link before the data
/// path's last link (`sim::shortcut`): that last link carries this path alone.
pub const THROUGH_DATA: u8 = 4;
/// `Route::early`: the same for ACKs and the ACK path's last link.
pub const THROUGH_ACK: u8 = 8;

/// A flow slot's two ends (their route is `Network::host_routes`).
#[derive(Debug, Clone, Copy)]
pub struct Host {
    /// Sum of the propagation delays of both paths.
    pub rtt_prop: Time,
    /// The monitor of the last measured link on the data path, which the flow's throughput and
    /// share refer to ([`NO_MONITOR`] if the path has none).
    pub measured: u32,
}

/// All links and paths.
pub struct Network {
    pub links: Vec<Link>,
    /// What the links are (`Link::class`): rate, delay, buffer, the queue of an AQM link. The
    /// first `core` are the topology's links' own, in link order (class `l` is link `l`'s, so an
    /// AQM link's queue is found without reading the link); access links that are alike share
    /// one of the others.
    pub classes: Vec<LinkClass>,
    /// Number of topology links (the rest are access links).
    pub core: usize,
    /// Paths: runs of link indices, located by [`Route`]s.
    pub paths: Vec<u32>,
    pub hosts: Vec<Host>,
    /// Each host pair's route. Flows take a copy (`Sim::routes`); once they have, only new
    /// connections (short and web traffic) read it, so a run without them frees it.
    pub host_routes: Vec<Route>,
    /// The measured links, in link order (monitor `m` measures link `monitored[m]`).
    pub monitored: Vec<u32>,
    /// The most links a host pair's data and ACK paths have together.
    pub max_paths: usize,
    /// The entries of every link's pipe.
    pub store: Store,
}

impl Network {
    /// A host pair's data path (`ack = false`) or ACK path.
    pub fn path(&self, r: &Route, ack: bool) -> &[u32] {
        let (start, len) = if ack { (r.rev, r.rev_len) } else { (r.fwd, r.fwd_len) };
        &self.paths[start as usize..start as usize + len as usize]
    }

    /// Packets on all links (waiting, in transmission or propagating).
    pub fn in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.in_flight(&self.classes[l.class()], &self.store) as u64).sum()
    }

    /// Link `l`'s class.
    #[inline(always)]
    pub fn class(&self, l: usize) -> &LinkClass {
        &self.classes[self.links[l].class()]
    }

    /// Link `l`'s queue, if it is an AQM link (only topology links are).
    #[inline(always)]
    pub fn aqm(&self, l: usize) -> Option<&AqmPart> {
        if l < self.core {
            self.classes[l].aqm.as_deref()
        } else {
            None
        }
    }

    /// Link `l`'s queue, if it is an AQM link (only topology links are).
    #[inline(always)]
    pub fn aqm_mut(&mut self, l: usize) -> Option<&mut AqmPart> {
        if l < self.core {
            self.classes[l].aqm.as_deref_mut()
        } else {
            None
        }
    }

    /// Topology link `l` (`l < core`) and its own class, borrowed together.
    #[inline(always)]
    pub fn core_parts(&mut self, l: usize) -> (&mut Link, &mut LinkClass) {
        debug_assert!(l < self.core);
        (&mut self.links[l], &mut self.classes[l])
    }

    /// Link `l`, its class and the pipes' store, borrowed together.
    #[inline(always)]
    pub fn link_parts(&mut self, l: usize) -> (&mut Link, &mut LinkClass, &mut Store) {
        let link = &mut self.links[l];
        let c = link.class();
        (link, &mut self.classes[c], &mut self.store)
    }
}
