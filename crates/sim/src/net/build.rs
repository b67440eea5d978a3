//! Building the [`Network`] of a scenario: its topology's links (each with its queue discipline and
//! random streams), the access links of flows attached at routers, and the paths of every host
//! pair. Routes themselves were computed when the scenario was loaded (`scenario::topology`).

use super::link::MAX_CLASSES;
use super::{Host, Link, LinkClass, Network, Route, NEXT_HOST, NEXT_SHARED, NO_MONITOR};
use crate::scenario::{GroupSpec, LinkSpec, NodeKind, Scenario};
use aqm::rng::{name_hash, Rng};
use aqm::{AqmConfig, LinkInfo, Qdisc, Queue, QueueUnit, Time};
use std::collections::HashMap;

/// A link of the topology. Measured links, and links whose queue does more than a DropTail
/// packet buffer, get a queue object (as do links traced by `[[pcap]]`); the others are simple links
/// (`net::link`).
fn topology_link(spec: &LinkSpec, name: &str, monitored: bool, seed: u64) -> LinkClass {
    let simple = !monitored
        && matches!(spec.aqm, AqmConfig::DropTail(_))
        && spec.loss_rate == 0.0
        && spec.limit.unit == QueueUnit::Packets;
    if simple {
        return LinkClass::simple(spec.rate_bps, spec.delay, spec.limit.value.min(u32::MAX as u64) as u32);
    }
    let disc = spec.aqm.build(LinkInfo { rate_bps: spec.rate_bps }, spec.limit);
    let q = Queue::new(disc, Rng::stream(seed, "aqm", name_hash(name)));
    let loss_rng = (spec.loss_rate > 0.0).then(|| Rng::stream(seed, "loss", name_hash(name)));
    LinkClass::with_aqm(spec.rate_bps, spec.delay, q, spec.loss_rate, loss_rng)
}

/// Per host pair, the host numbers of its sender and its receiver: a flow attached at a router
/// has private hosts (two per host pair, in the engine's order of host pairs); a host node of the
/// network is one host for all its flows. (The addresses of `[[pcap]]` traces, `pcap::host_addr`,
/// and the hosts CAKE isolates.)
pub(crate) fn host_numbers(sc: &Scenario) -> Vec<(u32, u32)> {
    let topo = &sc.topology;
    let pairs: usize = sc.groups.iter().map(|g| g.count as usize).sum();
    let named = |n: u32| (2 * pairs) as u32 + n;
    let at_host = |n: u32| topo.nodes[n as usize].kind == NodeKind::Host;
    let mut ends = Vec::with_capacity(pairs);
    for g in &sc.groups {
        for i in 0..g.count as usize {
            let e = g.endpoints[i % g.endpoints.len()];
            let hp = ends.len() as u32;
            let s = if at_host(e.src) { named(e.src) } else { 2 * hp };
            let r = if at_host(e.dst) { named(e.dst) } else { 2 * hp + 1 };
            ends.push((s, r));
        }
    }
    ends
}

/// Build the network of `sc` with random streams from `seed`: the topology's links, then per host
/// pair its access links, its two paths and its host record.
pub fn build(sc: &Scenario, seed: u64) -> Result<Network, String> {
    let (n_links, n_hosts) = sizes(sc)?;
    let mut b = Builder {
        links: crate::mem::huge_vec(n_links),
        classes: Classes::default(),
        paths: Vec::new(),
        path: Vec::new(),
        hosts: crate::mem::huge_vec(n_hosts),
        host_routes: crate::mem::huge_vec(n_hosts),
    };
    let monitored = b.topology_links(sc, seed);
    let core = b.links.len();
    let access_limit = sc.access_limit.min(u32::MAX as u64) as u32;
    for g in &sc.groups {
        for i in 0..g.count as usize {
            b.host_pair(sc, g, i, access_limit)?;
        }
    }
    let Builder { mut links, classes, mut paths, hosts, host_routes, .. } = b;
    let max_paths = host_routes.iter().map(|r| r.fwd_len as usize + r.rev_len as usize).max().unwrap_or(0);
    // (grown by doubling: up to half of it was room, 24 to 48 MB at a million host pairs)
    paths.shrink_to_fit();
    set_next_links(&mut links, &paths, &host_routes);
    let classes = classes.list;
    Ok(Network { links, classes, core, paths, hosts, host_routes, monitored, max_paths, store: Default::default() })
}

/// The links (the topology's and two per host-pair end at a router) and host pairs of `sc`,
/// within what the event set can index.
fn sizes(sc: &Scenario) -> Result<(usize, usize), String> {
    let topo = &sc.topology;
    let at_router = |n: u32| topo.nodes[n as usize].kind == NodeKind::Router;
    let mut n_access = 0u64;
    for g in &sc.groups {
        for i in 0..g.count as usize {
            let e = g.endpoints[i % g.endpoints.len()];
            n_access += 2 * (at_router(e.src) as u64 + at_router(e.dst) as u64);
        }
    }
    let n_hosts = sc.n_hosts();
    let n_links = topo.links.len() as u64 + n_access;
    let max = crate::event::MAX_INDEX as u64;
    if n_links > max || (2 * n_hosts) as u64 > max {
        return Err(format!("{n_hosts} flows exceed what the event set can index"));
    }
    Ok((n_links as usize, n_hosts))
}

/// A network being built.
struct Builder {
    links: Vec<Link>,
    classes: Classes,
    /// Every host pair's two paths, one after the other, and the one being written.
    paths: Vec<u32>,
    path: Vec<u32>,
    hosts: Vec<Host>,
    host_routes: Vec<Route>,
}

impl Builder {
    /// The topology's links, in its order; returns the measured ones.
    fn topology_links(&mut self, sc: &Scenario, seed: u64) -> Vec<u32> {
        let mut monitored = Vec::new();
        let mut ends = None;
        for (l, tl) in sc.topology.links.iter().enumerate() {
            // a traced link ([[pcap]]) keeps a queue object too: its packets are seen there
            let traced = sc.captures.iter().any(|c| c.link == l as u32);
            let mut class = topology_link(&tl.spec, &tl.name, tl.monitor || traced, seed);
            // a discipline that isolates hosts (CAKE) is told each flow's hosts, in its data direction
            if let Some(a) = class.aqm.as_mut().filter(|a| a.queue.disc.wants_hosts()) {
                for (f, &(s, d)) in ends.get_or_insert_with(|| host_numbers(sc)).iter().enumerate() {
                    a.queue.disc.flow_hosts(f as u32, s, d);
                }
            }
            if let (true, Some(a)) = (tl.monitor, class.aqm.as_mut()) {
                a.monitor = monitored.len() as u32;
                monitored.push(l as u32);
            }
            self.links.push(Link::new(self.classes.own(class)));
        }
        monitored
    }

    /// Two simple access links (up and down) of `rate` and `delay`; returns their indices.
    fn access_pair(&mut self, rate: f64, delay: Time, limit: u32) -> Result<(u32, u32), String> {
        for _ in 0..2 {
            let class = self.classes.add(LinkClass::simple(rate, delay, limit))?;
            self.links.push(Link::new(class));
        }
        Ok((self.links.len() as u32 - 2, self.links.len() as u32 - 1))
    }

    /// Host pair `i` of group `g`: a host of its own at each end that is a router, with its up
    /// and down access links (pushed in the order sender up, sender down, receiver down, receiver
    /// up), its paths both ways, and its host record.
    fn host_pair(&mut self, sc: &Scenario, g: &GroupSpec, i: usize, access_limit: u32) -> Result<(), String> {
        let topo = &sc.topology;
        let at_router = |n: u32| topo.nodes[n as usize].kind == NodeKind::Router;
        let e = g.endpoints[i % g.endpoints.len()];
        let mut sender = None;
        if at_router(e.src) {
            sender = Some(self.access_pair(g.sender_rate.get(i).0, g.sender_delay.get(i).0, access_limit)?);
        }
        let mut receiver = None;
        if at_router(e.dst) {
            let (down, up) = self.access_pair(g.receiver_rate.get(i).0, g.receiver_delay.get(i).0, access_limit)?;
            receiver = Some((up, down));
        }
        let mut route = Route {
            fwd: 0,
            rev: 0,
            first_fwd: 0,
            first_rev: 0,
            last_fwd: 0,
            last_rev: 0,
            fwd_len: 0,
            rev_len: 0,
            early: 0,
            inbound: [0; 2],
        };
        for ack in [false, true] {
            let (first, last, core_route) = match ack {
                false => (sender.map(|s| s.0), receiver.map(|r| r.1), e.fwd),
                true => (receiver.map(|r| r.0), sender.map(|s| s.1), e.rev),
            };
            let (start, len, first, last) = self.add_path(first, &topo.routes[core_route as usize], last, &g.name)?;
            if ack {
                (route.rev, route.rev_len, route.first_rev, route.last_rev) = (start, len, first, last);
            } else {
                (route.fwd, route.fwd_len, route.first_fwd, route.last_fwd) = (start, len, first, last);
            }
        }
        self.hosts.push(self.host(&route));
        self.host_routes.push(route);
        Ok(())
    }

    /// A path: its access link `first` (if any), the core route, its access link `last`; returns
    /// where it starts in `paths`, its length and its first and last links.
    fn add_path(
        &mut self,
        first: Option<u32>,
        core: &[u32],
        last: Option<u32>,
        group: &str,
    ) -> Result<(u32, u8, u32, u32), String> {
        let path = &mut self.path;
        path.clear();
        path.extend(first);
        path.extend_from_slice(core);
        path.extend(last);
        if path.len() > u8::MAX as usize {
            return Err(format!(
                "group {group}: a path of {} links is longer than the engine's limit of 255",
                path.len()
            ));
        }
        let start = self.paths.len() as u32;
        self.paths.extend_from_slice(path);
        // (an empty path never carries a packet: validation gives every host pair a route)
        let (first, last) = (path.first().copied().unwrap_or(0), path.last().copied().unwrap_or(0));
        Ok((start, path.len() as u8, first, last))
    }

    /// A host pair's record: its round-trip propagation delay, and the last measured link of its
    /// data path (the link its throughput refers to).
    fn host(&self, route: &Route) -> Host {
        let path = |r: u32, len: u8| &self.paths[r as usize..(r + len as u32) as usize];
        // (saturating: a sum past the clock's range is an instant that never comes, crate::time)
        let delays = |r: u32, len: u8, from: Time| -> Time {
            path(r, len).iter().fold(from, |a, &l| a.saturating_add(self.classes.of(&self.links[l as usize]).delay))
        };
        let rtt_prop = delays(route.rev, route.rev_len, delays(route.fwd, route.fwd_len, 0));
        let measured = path(route.fwd, route.fwd_len)
            .iter()
            .rev()
            .map(|&l| self.classes.of(&self.links[l as usize]).monitor())
            .find(|&m| m != NO_MONITOR)
            .unwrap_or(NO_MONITOR);
        Host { rtt_prop, measured }
    }
}

/// The classes of a network being built: an AQM link's its own, simple links' shared by all
/// that are alike.
#[derive(Default)]
struct Classes {
    list: Vec<LinkClass>,
    simple: HashMap<(u64, Time, u32), u32>,
}

impl Classes {
    /// A class of its own for a topology link (class `l` for link `l`).
    fn own(&mut self, c: LinkClass) -> u32 {
        self.list.push(c);
        self.list.len() as u32 - 1
    }

    /// The index of an access link's class `c`: a new one, or the one it is like.
    fn add(&mut self, c: LinkClass) -> Result<u32, String> {
        let key = c.key();
        if let Some(&i) = key.as_ref().and_then(|k| self.simple.get(k)) {
            return Ok(i);
        }
        if self.list.len() >= MAX_CLASSES {
            return Err(format!("more than {MAX_CLASSES} distinct links: more than the engine can index"));
        }
        let i = self.list.len() as u32;
        if let Some(k) = key {
            self.simple.insert(k, i);
        }
        self.list.push(c);
        Ok(i)
    }

    fn of(&self, l: &Link) -> &LinkClass {
        &self.list[l.class()]
    }
}

/// A link whose packets all go on to the same place (a host pair's access links, and any link
/// that is on one path only) knows that place, so forwarding from it reads neither the flow's
/// route nor the path: the next link, or [`NEXT_HOST`] when every path ends there. Links on
/// paths that continue differently keep [`NEXT_SHARED`] (look the next hop up).
fn set_next_links(links: &mut [Link], paths: &[u32], routes: &[Route]) {
    const UNSEEN: u32 = NEXT_SHARED - 2;
    let mut next = vec![UNSEEN; links.len()];
    for r in routes {
        for (start, len) in [(r.fwd, r.fwd_len), (r.rev, r.rev_len)] {
            let path = &paths[start as usize..start as usize + len as usize];
            for (i, &l) in path.iter().enumerate() {
                let succ = path.get(i + 1).copied().unwrap_or(NEXT_HOST);
                let n = &mut next[l as usize];
                *n = if *n == UNSEEN || *n == succ { succ } else { NEXT_SHARED };
            }
        }
    }
    for (link, n) in links.iter_mut().zip(next) {
        link.next = if n == UNSEEN { NEXT_SHARED } else { n };
    }
}
