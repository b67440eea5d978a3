//! The network of a scenario: nodes (routers and hosts), one-way links, and every flow group's
//! routes, computed once here so that an unroutable scenario is a validation error.
//!
//! Every shape expands to the same general form ([`Topology`]): the dumbbell (`[bottleneck]`,
//! `[reverse]`, the default), a parking lot and a star (builders in `[topology]`), or a network
//! written out as `routers`, `hosts` and `[[topology.links]]`. docs/topology.md documents the keys
//! and draws each shape.
//!
//! Flows attach to nodes. At a **router**, each flow of a group gets a host of its own, joined to
//! the router by a private access link in each direction (`[access]`, `sender_rate`, ...), as in
//! the papers' dumbbells; at a **host**, the flows start or end at that host and share its links.

use super::error::typed;
use super::error::{check_list, ScenarioError, R};
use super::link::{link_spec, LinkSpec};
use super::raw::{RawGroup, RawLink, RawTopology, RoutingName};
use crate::topology::{Edge, Graph, LinkId, Metric, NodeId, PathError, Tree};
use crate::units::OneOrMany;
use std::collections::HashMap;

/// The shape the network was built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// R1 -> R2 (`bottleneck`) and R2 -> R1 (`reverse`).
    Dumbbell,
    /// Routers r0 ... rk in a chain; k bottlenecks r(i-1) -> r(i).
    ParkingLot { hops: u32 },
    /// Leaves l1 ... ln around one hub router.
    Star { leaves: u32 },
    /// Written out in `[topology]`.
    Custom,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Dumbbell => "dumbbell",
            Shape::ParkingLot { .. } => "parking_lot",
            Shape::Star { .. } => "star",
            Shape::Custom => "custom",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Router,
    Host,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
}

/// A one-way link between two nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct TopoLink {
    pub name: String,
    pub from: NodeId,
    pub to: NodeId,
    pub spec: LinkSpec,
    /// Measure this link (per-link summary, time series, per-flow counters).
    pub monitor: bool,
}

/// Where a flow of a group runs: from node `src` to node `dst`, data along route `fwd`, ACKs
/// along route `rev` (indices into [`Topology::routes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    pub src: NodeId,
    pub dst: NodeId,
    pub fwd: u32,
    pub rev: u32,
}

/// A validated network in its general form.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub shape: Shape,
    pub routing: Metric,
    pub nodes: Vec<Node>,
    pub links: Vec<TopoLink>,
    /// Routes between nodes (lists of link indices), shared by the groups that use them.
    pub routes: Vec<Vec<LinkId>>,
}

impl Topology {
    /// The node a group starts and ends at by default (dumbbell: R1 -> R2; parking lot: the
    /// whole chain).
    fn default_ends(&self) -> Option<(NodeId, NodeId)> {
        match self.shape {
            Shape::Dumbbell => Some((0, 1)),
            Shape::ParkingLot { hops } => Some((0, hops)),
            _ => None,
        }
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as NodeId)
    }

    fn node_names(&self) -> String {
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        if names.len() > 12 {
            format!("{}, ... ({} in all)", names[..12].join(", "), names.len())
        } else {
            names.join(", ")
        }
    }
}

/// The raw sections the network is built from.
pub(super) struct RawNetwork {
    pub topology: Option<toml::Value>,
    pub bottleneck: Option<RawLink>,
    pub reverse: Option<RawLink>,
}

const SHAPES: &str = "dumbbell, parking_lot, star (or no type, with routers, hosts and links)";
/// Buffer of a reverse-path link that the scenario leaves unset (packets): ample, as in the
/// papers, whose ACK paths are uncongested.
const REVERSE_LIMIT: u64 = 10_000;

/// Build the network described by `raw`.
pub(super) fn parse_topology(raw: RawNetwork) -> R<Topology> {
    let t: Option<RawTopology> = match raw.topology {
        None => None,
        Some(toml::Value::String(s)) if s == "dumbbell" => None,
        Some(toml::Value::String(s)) => {
            return Err(ScenarioError::new(
                "topology",
                format!("unknown topology \"{s}\"; a string can only be \"dumbbell\"; other shapes are a [topology] table with type = {SHAPES}"),
            ))
        }
        Some(v @ toml::Value::Table(_)) => Some(super::error::typed(v, "topology")?),
        Some(_) => return Err(ScenarioError::new("topology", format!("expected \"dumbbell\" or a table with type = {SHAPES}"))),
    };
    let kind = t.as_ref().map_or(Some("dumbbell"), |t| t.kind.as_deref());
    let routing = match t.as_ref().and_then(|t| t.routing) {
        None | Some(RoutingName::Hops) => Metric::Hops,
        Some(RoutingName::Delay) => Metric::Delay,
    };
    if kind != Some("dumbbell") {
        for (key, there) in [("bottleneck", raw.bottleneck.is_some()), ("reverse", raw.reverse.is_some())] {
            if there {
                return Err(ScenarioError::new(
                    key,
                    "applies to the dumbbell only; the links of other topologies are set in [topology]",
                ));
            }
        }
    }
    let (shape, nodes, links) = match kind {
        Some("dumbbell") => {
            if let Some(t) = &t {
                only_keys(t, "dumbbell", &["routing"])?;
            }
            dumbbell(raw.bottleneck, raw.reverse)?
        }
        Some("parking_lot") => {
            let t = t.expect("a table");
            only_keys(&t, "parking_lot", &["routing", "hops", "link", "hop", "reverse"])?;
            parking_lot(t)?
        }
        Some("star") => {
            let t = t.expect("a table");
            only_keys(&t, "star", &["routing", "leaves", "link", "reverse"])?;
            star(t)?
        }
        None => {
            let t = t.expect("a table");
            only_keys(&t, "", &["routing", "routers", "hosts", "links"])?;
            custom(t)?
        }
        Some(other) => {
            return Err(ScenarioError::new(
                "topology.type",
                format!("unknown topology \"{other}\"; available: {SHAPES}"),
            ))
        }
    };
    let mut names = HashMap::new();
    for (i, l) in links.iter().enumerate() {
        if let Some(j) = names.insert(l.name.clone(), i) {
            return Err(ScenarioError::new(
                "topology",
                format!("two links are named \"{}\" (links {j} and {i}); link names must be unique", l.name),
            ));
        }
    }
    Ok(Topology { shape, routing, nodes, links, routes: Vec::new() })
}

/// Reject keys of `[topology]` that the shape does not take.
fn only_keys(t: &RawTopology, shape: &str, allowed: &[&str]) -> R<()> {
    let present = [
        ("routers", t.routers.is_some()),
        ("hosts", t.hosts.is_some()),
        ("links", t.links.is_some()),
        ("hops", t.hops.is_some()),
        ("leaves", t.leaves.is_some()),
        ("link", t.link.is_some()),
        ("reverse", t.reverse.is_some()),
        ("hop", t.hop.is_some()),
    ];
    for (k, there) in present {
        if there && !allowed.contains(&k) {
            let what = if shape.is_empty() {
                "a network without a type (it takes routers, hosts and links)".to_string()
            } else {
                format!("type = \"{shape}\" (it takes: {})", allowed.join(", "))
            };
            return Err(ScenarioError::new(format!("topology.{k}"), format!("does not apply to {what}")));
        }
    }
    Ok(())
}

type Built = (Shape, Vec<Node>, Vec<TopoLink>);

fn router(name: String) -> Node {
    Node { name, kind: NodeKind::Router }
}

/// A link from raw keys, validated at `path`; `monitor` is the default of its `monitor` key.
fn link(
    raw: RawLink,
    path: &str,
    name: String,
    ends: (NodeId, NodeId),
    monitor: bool,
    rev_of: Option<&LinkSpec>,
) -> R<TopoLink> {
    let monitor = raw.monitor.unwrap_or(monitor);
    let spec = match rev_of {
        // a reverse path: the forward link's rate and delay, an ample DropTail buffer
        Some(f) => link_spec(raw, path, Some(f.rate_bps), Some(f.delay), Some(REVERSE_LIMIT))?,
        None => link_spec(raw, path, None, None, None)?,
    };
    Ok(TopoLink { name, from: ends.0, to: ends.1, spec, monitor })
}

fn dumbbell(bottleneck: Option<RawLink>, reverse: Option<RawLink>) -> R<Built> {
    let Some(b) = bottleneck else {
        return Err(ScenarioError::new("bottleneck", "missing; a table with rate, delay, limit and aqm"));
    };
    let fwd = link(b, "bottleneck", "bottleneck".into(), (0, 1), true, None)?;
    let rev = link(reverse.unwrap_or_default(), "reverse", "reverse".into(), (1, 0), false, Some(&fwd.spec))?;
    Ok((Shape::Dumbbell, vec![router("r1".into()), router("r2".into())], vec![fwd, rev]))
}

fn count(v: Option<i64>, path: &str, what: &str, range: std::ops::RangeInclusive<i64>) -> R<u32> {
    match v {
        None => Err(ScenarioError::new(path, format!("missing; the number of {what}"))),
        Some(n) if !range.contains(&n) => {
            Err(ScenarioError::new(path, format!("must be {}..{}, got {n}", range.start(), range.end())))
        }
        Some(n) => Ok(n as u32),
    }
}

fn parking_lot(t: RawTopology) -> R<Built> {
    let k = count(t.hops, "topology.hops", "bottleneck links in the chain", 1..=1000)?;
    let Some(base) = t.link else {
        return Err(ScenarioError::new("topology.link", "missing; the bottleneck links' rate, delay, limit and aqm"));
    };
    if let Some(h) = &t.hop {
        if h.len() != k as usize {
            return Err(ScenarioError::new(
                "topology.hop",
                format!("{} entries; give one per hop ({k}), or none", h.len()),
            ));
        }
    }
    let nodes = (0..=k).map(|i| router(format!("r{i}"))).collect();
    let mut links = Vec::with_capacity(2 * k as usize);
    for h in 1..=k {
        let (raw, path) = match &t.hop {
            Some(hs) => (hs[h as usize - 1].clone().over(&base), format!("topology.hop[{}]", h - 1)),
            None => (base.clone(), "topology.link".to_string()),
        };
        let fwd = link(raw, &path, format!("r{}-r{h}", h - 1), (h - 1, h), true, None)?;
        let rev_raw = t.reverse.clone().unwrap_or_default();
        let rev = link(rev_raw, "topology.reverse", format!("r{h}-r{}", h - 1), (h, h - 1), false, Some(&fwd.spec))?;
        links.push(fwd);
        links.push(rev);
    }
    Ok((Shape::ParkingLot { hops: k }, nodes, links))
}

fn star(t: RawTopology) -> R<Built> {
    let n = count(t.leaves, "topology.leaves", "leaf routers around the hub", 2..=100_000)?;
    let Some(base) = t.link else {
        return Err(ScenarioError::new("topology.link", "missing; the spokes' rate, delay, limit and aqm"));
    };
    let mut nodes = vec![router("hub".into())];
    nodes.extend((1..=n).map(|i| router(format!("l{i}"))));
    let mut links = Vec::with_capacity(2 * n as usize);
    for i in 1..=n {
        links.push(link(base.clone(), "topology.link", format!("l{i}-hub"), (i, 0), true, None)?);
        let raw = t.reverse.clone().unwrap_or_default().over(&base);
        links.push(link(raw, "topology.reverse", format!("hub-l{i}"), (0, i), true, None)?);
    }
    Ok((Shape::Star { leaves: n }, nodes, links))
}

fn valid_node_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_') && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn valid_link_name(s: &str) -> bool {
    !s.is_empty() && s != "access" && s.chars().all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '-')
}

fn custom(t: RawTopology) -> R<Built> {
    let mut nodes = Vec::new();
    for (key, kind, list) in [("routers", NodeKind::Router, &t.routers), ("hosts", NodeKind::Host, &t.hosts)] {
        for (i, name) in list.iter().flatten().enumerate() {
            let p = format!("topology.{key}[{i}]");
            if !valid_node_name(name) {
                return Err(ScenarioError::new(
                    p,
                    format!("\"{name}\" is not a node name: letters, digits and _, starting with a letter or _"),
                ));
            }
            if nodes.iter().any(|n: &Node| &n.name == name) {
                return Err(ScenarioError::new(p, format!("\"{name}\" is declared twice; node names must be unique")));
            }
            nodes.push(Node { name: name.clone(), kind });
        }
    }
    if nodes.is_empty() {
        return Err(ScenarioError::new(
            "topology.routers",
            "missing; the network's nodes: routers = [...], hosts = [...]",
        ));
    }
    let raw_links = t.links.unwrap_or_default();
    if raw_links.is_empty() {
        return Err(ScenarioError::new(
            "topology.links",
            "missing; add [[topology.links]] with from, to, rate and delay",
        ));
    }
    let find = |name: Option<String>, p: String| -> R<NodeId> {
        let Some(name) = name else {
            return Err(ScenarioError::new(p, "missing; the name of a node (a router or a host)"));
        };
        nodes.iter().position(|n| n.name == name).map(|i| i as NodeId).ok_or_else(|| {
            let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
            ScenarioError::new(p, format!("unknown node \"{name}\"; nodes are: {}", names.join(", ")))
        })
    };
    let mut links = Vec::new();
    for (i, v) in raw_links.into_iter().enumerate() {
        let p = format!("topology.links[{i}]");
        let mut t = split_link(v, &p, &["from", "to", "name", "duplex", "reverse"])?;
        let from = find(take::<String>(&mut t, "from", &p)?, format!("{p}.from"))?;
        let to = find(take::<String>(&mut t, "to", &p)?, format!("{p}.to"))?;
        if from == to {
            return Err(ScenarioError::new(format!("{p}.to"), "a link must join two different nodes"));
        }
        let (fname, tname) = (&nodes[from as usize].name, &nodes[to as usize].name);
        let name = checked_name(take(&mut t, "name", &p)?, format!("{fname}-{tname}"), &format!("{p}.name"))?;
        let duplex = take::<bool>(&mut t, "duplex", &p)?.unwrap_or(true);
        let reverse = t.remove("reverse");
        let fwd_raw = link_keys(t, &p, &["from", "to", "name", "duplex", "reverse"])?;
        links.push(link(fwd_raw.clone(), &p, name, (from, to), true, None)?);
        match (reverse, duplex) {
            (Some(_), false) => {
                return Err(ScenarioError::new(format!("{p}.reverse"), "applies to duplex links (duplex = true)"))
            }
            (_, false) => {}
            (rev, true) => {
                let rp = format!("{p}.reverse");
                let mut rt = match rev {
                    Some(v) => split_link(v, &rp, &["name"])?,
                    None => toml::Table::new(),
                };
                let rname =
                    checked_name(take(&mut rt, "name", &rp)?, format!("{tname}-{fname}"), &format!("{rp}.name"))?;
                let raw = link_keys(rt, &rp, &["name"])?.over(&fwd_raw);
                links.push(link(raw, &rp, rname, (to, from), true, None)?);
            }
        }
    }
    Ok((Shape::Custom, nodes, links))
}

/// A link's table, checked to be one; `own` are the keys that are not a link's (for the message).
fn split_link(v: toml::Value, p: &str, own: &[&str]) -> R<toml::Table> {
    match v {
        toml::Value::Table(t) => Ok(t),
        _ => Err(ScenarioError::new(
            p,
            format!("expected a table of a link's keys (rate, delay, limit, aqm, ...) and {}", own.join(", ")),
        )),
    }
}

/// The rest of a link's table as a link; an unknown key's message lists `own` keys too.
fn link_keys(t: toml::Table, p: &str, own: &[&str]) -> R<RawLink> {
    typed(toml::Value::Table(t), p).map_err(|mut e| {
        if e.msg.starts_with("unknown field") {
            let own: Vec<String> = own.iter().map(|k| format!("`{k}`")).collect();
            e.msg = format!("{}, {}", e.msg, own.join(", "));
        }
        e
    })
}

/// Remove `key` from `t` and read it as a `T`.
fn take<T: serde::de::DeserializeOwned>(t: &mut toml::Table, key: &str, p: &str) -> R<Option<T>> {
    t.remove(key).map(|v| typed(v, &format!("{p}.{key}"))).transpose()
}

fn checked_name(given: Option<String>, default: String, path: &str) -> R<String> {
    let name = given.unwrap_or(default);
    if !valid_link_name(&name) {
        return Err(ScenarioError::new(
            path,
            format!("\"{name}\" is not a link name: letters, digits, _ and -, and not \"access\""),
        ));
    }
    Ok(name)
}

// ---------------------------------------------------------------------------------------------
// flow groups: where they attach, their routes

/// Computes and keeps the routes of all groups (one shortest-path tree per source node).
pub(super) struct Router {
    graph: Graph,
    trees: HashMap<NodeId, Tree>,
    ids: HashMap<(NodeId, NodeId), u32>,
}

impl Router {
    pub fn new(topo: &Topology) -> Router {
        let edges: Vec<Edge> =
            topo.links.iter().map(|l| Edge { from: l.from, to: l.to, delay: l.spec.delay }).collect();
        Router { graph: Graph::new(topo.nodes.len(), &edges), trees: HashMap::new(), ids: HashMap::new() }
    }

    fn shortest(&mut self, topo: &mut Topology, src: NodeId, dst: NodeId) -> Option<u32> {
        if let Some(&id) = self.ids.get(&(src, dst)) {
            return Some(id);
        }
        let metric = topo.routing;
        let graph = &self.graph;
        let tree = self.trees.entry(src).or_insert_with(|| graph.tree(src, metric));
        let path = tree.path_to(dst, graph)?;
        let id = topo.routes.len() as u32;
        topo.routes.push(path);
        self.ids.insert((src, dst), id);
        Some(id)
    }

    fn explicit(&mut self, topo: &mut Topology, nodes: &[NodeId], names: &[String], p: &str) -> R<u32> {
        match self.graph.explicit(nodes) {
            Ok(path) => {
                topo.routes.push(path);
                Ok(topo.routes.len() as u32 - 1)
            }
            Err(PathError::TooShort) => Err(ScenarioError::new(p, "needs at least two nodes (from ... to)")),
            Err(PathError::Loop(i)) => Err(ScenarioError::new(
                format!("{p}[{i}]"),
                format!("\"{}\" appears twice: a path must not loop", names[i]),
            )),
            Err(PathError::NoLink(i)) => Err(ScenarioError::new(
                format!("{p}[{}]", i + 1),
                format!("no link from \"{}\" to \"{}\"", names[i], names[i + 1]),
            )),
        }
    }

    /// The endpoints of every flow of group `g` (`count` flows; flow i uses entry `i % len`).
    pub fn endpoints(&mut self, topo: &mut Topology, g: &RawGroup, count: u32, p: &str) -> R<Vec<Endpoints>> {
        let defaults = topo.default_ends();
        let from = end_nodes(topo, &g.from, "from", defaults.map(|d| d.0), p)?;
        let to = end_nodes(topo, &g.to, "to", defaults.map(|d| d.1), p)?;
        let at_host = |ns: &[NodeId]| ns.iter().any(|&n| topo.nodes[n as usize].kind == NodeKind::Host);
        for (key, set, there) in [
            ("sender_rate", &from, g.sender_rate.is_some()),
            ("sender_delay", &from, g.sender_delay.is_some()),
            ("receiver_rate", &to, g.receiver_rate.is_some()),
            ("receiver_delay", &to, g.receiver_delay.is_some()),
        ] {
            if there && at_host(set) {
                return Err(ScenarioError::new(
                    format!("{p}.{key}"),
                    "applies to flows attached at a router (each with its own access link); a host's own links carry its flows",
                ));
            }
        }
        if g.path.is_some() || g.ack_path.is_some() {
            let key = if g.path.is_some() { "path" } else { "ack_path" };
            if from.len() != 1 || to.len() != 1 {
                return Err(ScenarioError::new(
                    format!("{p}.{key}"),
                    "applies to a group with a single from and to node",
                ));
            }
        }
        match &g.path {
            Some(path) => Ok(vec![self.given_paths(topo, (from[0], to[0]), path, g.ack_path.as_deref(), p)?]),
            None if g.ack_path.is_some() => {
                Err(ScenarioError::new(format!("{p}.ack_path"), "give path too (the data packets' path)"))
            }
            None => self.shortest_paths(topo, &from, &to, count, p),
        }
    }

    /// A group's `path` (from `src` to `dst`) and its `ack_path`, or the path reversed.
    fn given_paths(
        &mut self,
        topo: &mut Topology,
        (src, dst): (NodeId, NodeId),
        path: &[String],
        ack_path: Option<&[String]>,
        p: &str,
    ) -> R<Endpoints> {
        let fwd_nodes = self.path_nodes(topo, path, &format!("{p}.path"))?;
        path_ends(topo, &fwd_nodes, (src, dst), &format!("{p}.path"), ("from", "to"))?;
        let fwd = self.explicit(topo, &fwd_nodes, path, &format!("{p}.path"))?;
        let rev = match ack_path {
            Some(ap) => {
                let rev_nodes = self.path_nodes(topo, ap, &format!("{p}.ack_path"))?;
                path_ends(topo, &rev_nodes, (dst, src), &format!("{p}.ack_path"), ("to", "from"))?;
                self.explicit(topo, &rev_nodes, ap, &format!("{p}.ack_path"))?
            }
            None => {
                let rev_nodes: Vec<NodeId> = fwd_nodes.iter().rev().copied().collect();
                let rev_names: Vec<String> = path.iter().rev().cloned().collect();
                self.explicit(topo, &rev_nodes, &rev_names, &format!("{p}.path")).map_err(|e| {
                    ScenarioError::new(
                        format!("{p}.path"),
                        format!("the ACKs' way back (the path reversed): {}; give ack_path", e.msg),
                    )
                })?
            }
        };
        check_length(topo, fwd, &format!("{p}.path"))?;
        check_length(topo, rev, &format!("{p}.ack_path"))?;
        Ok(Endpoints { src, dst, fwd, rev })
    }

    /// Shortest routes for a group's flows between its `from` and `to` nodes, paired in turn
    /// (as many pairs as the lists' least common multiple, at most `count`).
    fn shortest_paths(
        &mut self,
        topo: &mut Topology,
        from: &[NodeId],
        to: &[NodeId],
        count: u32,
        p: &str,
    ) -> R<Vec<Endpoints>> {
        let (a, b) = (from.len() as u64, to.len() as u64);
        let n = (a / gcd(a, b) * b).min(count as u64) as usize;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (src, dst) = (from[i % from.len()], to[i % to.len()]);
            let (sname, dname) = (&topo.nodes[src as usize].name, &topo.nodes[dst as usize].name);
            let key =
                |k: &str, len: usize, j: usize| if len == 1 { format!("{p}.{k}") } else { format!("{p}.{k}[{j}]") };
            if src == dst {
                return Err(ScenarioError::new(
                    key("to", to.len(), i % to.len()),
                    format!("the flows would start and end at \"{sname}\"; from and to must differ"),
                ));
            }
            let (sname, dname) = (sname.clone(), dname.clone());
            let Some(fwd) = self.shortest(topo, src, dst) else {
                return Err(ScenarioError::new(
                    key("to", to.len(), i % to.len()),
                    format!("no route from \"{sname}\" to \"{dname}\": no chain of links joins them"),
                ));
            };
            let Some(rev) = self.shortest(topo, dst, src) else {
                return Err(ScenarioError::new(
                    key("from", from.len(), i % from.len()),
                    format!("no route back from \"{dname}\" to \"{sname}\" for the ACKs: no chain of links joins them"),
                ));
            };
            check_length(topo, fwd, &key("to", to.len(), i % to.len()))?;
            check_length(topo, rev, &key("from", from.len(), i % from.len()))?;
            out.push(Endpoints { src, dst, fwd, rev });
        }
        Ok(out)
    }

    fn path_nodes(&self, topo: &Topology, names: &[String], p: &str) -> R<Vec<NodeId>> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                topo.node_id(n).ok_or_else(|| {
                    ScenarioError::new(
                        format!("{p}[{i}]"),
                        format!("unknown node \"{n}\"; nodes are: {}", topo.node_names()),
                    )
                })
            })
            .collect()
    }
}

/// A group's `from` or `to` (`key`): one node or a list of nodes, by name; the network's default
/// end (a dumbbell's routers) when it is not given.
fn end_nodes(
    topo: &Topology,
    v: &Option<OneOrMany<String>>,
    key: &str,
    default: Option<NodeId>,
    p: &str,
) -> R<Vec<NodeId>> {
    check_list(v, format!("{p}.{key}"))?;
    let names: Vec<(String, String)> = match v {
        None => {
            let Some(d) = default else {
                return Err(ScenarioError::new(
                    format!("{p}.{key}"),
                    format!(
                        "missing; the node (or a list of nodes) the flows {} at",
                        if key == "from" { "start" } else { "end" }
                    ),
                ));
            };
            return Ok(vec![d]);
        }
        Some(OneOrMany::One(n)) => vec![(n.clone(), format!("{p}.{key}"))],
        Some(OneOrMany::Many(ns)) => {
            ns.iter().enumerate().map(|(i, n)| (n.clone(), format!("{p}.{key}[{i}]"))).collect()
        }
    };
    names
        .into_iter()
        .map(|(n, path)| {
            topo.node_id(&n).ok_or_else(|| {
                ScenarioError::new(path, format!("unknown node \"{n}\"; nodes are: {}", topo.node_names()))
            })
        })
        .collect()
}

/// A path given as `nodes` (at key path `p`) must go from `a` to `b`, the group's ends `whose`.
fn path_ends(topo: &Topology, nodes: &[NodeId], (a, b): (NodeId, NodeId), p: &str, whose: (&str, &str)) -> R<()> {
    if nodes.first() != Some(&a) || nodes.last() != Some(&b) {
        return Err(ScenarioError::new(
            p,
            format!(
                "must start at \"{}\" (the group's {}) and end at \"{}\" (its {})",
                topo.nodes[a as usize].name, whose.0, topo.nodes[b as usize].name, whose.1
            ),
        ));
    }
    Ok(())
}

/// Longest route through the network: a packet counts its hops in 8 bits, and a flow at routers
/// adds an access link at each end.
pub const MAX_ROUTE: usize = 253;

fn check_length(topo: &Topology, route: u32, p: &str) -> R<()> {
    let n = topo.routes[route as usize].len();
    if n > MAX_ROUTE {
        return Err(ScenarioError::new(p, format!("a route of {n} links; at most {MAX_ROUTE} are supported")));
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
