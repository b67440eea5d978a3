//! Loading: TOML text, `--set` overrides, then the validated [`Scenario`].

use super::capture::CaptureSpec;
use super::error::{check_list, typed, ScenarioError, R};
use super::link::LinkSpec;
use super::raw::{RawAccess, RawGroup, RawScenario, RawSimulation, RawTcp, SnapshotTimes, TransportName};
use super::tcp::merge_tcp;
use super::topology::{parse_topology, RawNetwork, Router, Shape, Topology};
use super::traffic::{parse_start, parse_transport, GroupSpec, StartSpec, Transport};
use crate::units::OneOrMany as Om;
use crate::units::{Dur, OneOrMany};
use aqm::{Time, NS_PER_SEC};

/// A validated scenario: a network (a dumbbell unless `[topology]` says otherwise) and flow groups
/// with their routes.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub duration: Time,
    pub warmup: Time,
    pub seed: u64,
    pub sample_interval: Time,
    /// Record the measured queues' composition in the window (M10).
    pub queue_snapshots: bool,
    /// Snapshots at the instants of a Poisson process of rate 1 / `sample_interval` (default; time
    /// averages unbiased, no phase lock with periodic sources) instead of at every sample.
    pub snapshot_poisson: bool,
    /// Period of the per-flow time series (throughput, goodput, cwnd), if requested.
    pub flow_series_interval: Option<Time>,
    /// Record every flow's one-way delay and RTT distributions (`simulation.latency`; probe
    /// groups are recorded regardless).
    pub latency: bool,
    pub topology: Topology,
    pub access_limit: u64,
    pub groups: Vec<GroupSpec>,
    /// Links traced to pcap files (`[[pcap]]`).
    pub captures: Vec<CaptureSpec>,
}

impl Scenario {
    /// Host pairs (each with four access links): one per flow, session or connection slot.
    pub fn n_hosts(&self) -> usize {
        self.groups.iter().map(|g| g.count as usize).sum()
    }
    /// Flows that exist from the start of the run.
    pub fn n_static_flows(&self) -> usize {
        self.groups.iter().map(|g| g.static_flows() as usize).sum()
    }
    /// What each link's queue discipline never uses though it acts, one line each
    /// ([`aqm::AqmConfig::notes`]: RED's `max_th` beyond the buffer, ...): `bottleneck.aqm.max_th:
    /// <why>` for the dumbbell's links, `link r0-r1: aqm.max_th: <why>` for the others.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.topology.links {
            let at = match (self.topology.shape, l.name.as_str()) {
                (Shape::Dumbbell, name) => format!("{name}."),
                (_, name) => format!("link {name}: "),
            };
            for e in l.spec.aqm.notes(l.spec.limit, l.spec.rate_bps) {
                out.push(format!("{at}aqm.{}: {}", e.field, e.msg));
            }
        }
        out
    }

    /// The dumbbell's bottleneck link R1 -> R2 (`None` for other topologies).
    pub fn bottleneck(&self) -> Option<&LinkSpec> {
        (self.topology.shape == Shape::Dumbbell).then(|| &self.topology.links[0].spec)
    }
}

/// Parse TOML text (a scenario file's contents), apply `overrides` (`key.path=value`), validate.
/// `default_name` is used when the file gives no `name` (the file's stem).
pub fn load(text: &str, overrides: &[String], default_name: &str) -> R<Scenario> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let msg = e.message().to_string();
        let loc =
            e.span().map(|s| line_col(text, s.start)).map(|(l, c)| format!("line {l}, column {c}")).unwrap_or_default();
        ScenarioError::new(loc, format!("invalid TOML: {msg}"))
    })?;
    for o in overrides {
        super::overrides::apply(&mut table, o)?;
    }
    from_table(table, default_name)
}

/// Groups with `per_hop = true` (parking lot) become one group per hop, named `<name>_<hop>`,
/// from r(hop-1) to r(hop). Returns (index in `[[flows]]`, group, name).
fn expand_per_hop(flows: Vec<RawGroup>, topo: &Topology) -> R<Vec<(usize, RawGroup, String)>> {
    let mut out = Vec::new();
    for (i, g) in flows.into_iter().enumerate() {
        let tname = if g.transport == TransportName::Tcp { "tcp" } else { "udp" };
        let name = g.name.clone().unwrap_or_else(|| format!("{tname}{i}"));
        if g.per_hop != Some(true) {
            out.push((i, g, name));
            continue;
        }
        let p = format!("flows[{i}]");
        let Shape::ParkingLot { hops } = topo.shape else {
            return Err(ScenarioError::new(
                format!("{p}.per_hop"),
                "applies to a parking lot (topology.type = \"parking_lot\")",
            ));
        };
        for (key, there) in [("from", g.from.is_some()), ("to", g.to.is_some()), ("path", g.path.is_some())] {
            if there {
                return Err(ScenarioError::new(
                    format!("{p}.{key}"),
                    "a per_hop group runs across each hop; drop from, to and path",
                ));
            }
        }
        for h in 1..=hops {
            let mut one = g.clone();
            one.from = Some(Om::One(format!("r{}", h - 1)));
            one.to = Some(Om::One(format!("r{h}")));
            out.push((i, one, format!("{name}_{h}")));
        }
    }
    Ok(out)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map(|s| s.chars().count()).unwrap_or(0) + 1;
    (line, col)
}

fn from_table(table: toml::Table, default_name: &str) -> R<Scenario> {
    let raw: RawScenario = typed(toml::Value::Table(table), "")?;
    let sim = raw.simulation;
    let (duration, warmup, sample_interval) = run_times(&sim)?;
    let mut topology =
        parse_topology(RawNetwork { topology: raw.topology, bottleneck: raw.bottleneck, reverse: raw.reverse })?;
    let access = raw.access;
    if access.limit == 0 {
        return Err(ScenarioError::new("access.limit", "must be at least 1"));
    }
    let global_tcp = raw.tcp.unwrap_or_default();
    merge_tcp(&global_tcp, None, "tcp")?;
    let groups = flow_groups(raw.flows, &mut topology, &access, &global_tcp)?;
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| default_name.to_string()),
        description: raw.description.unwrap_or_default(),
        duration,
        warmup,
        seed: sim.seed.unwrap_or(1),
        sample_interval,
        queue_snapshots: sim.queue_snapshots.unwrap_or(false),
        snapshot_poisson: sim.snapshot_times != Some(SnapshotTimes::Periodic),
        flow_series_interval: flow_series_interval(sim.flow_series_interval, duration)?,
        latency: sim.latency.unwrap_or(false),
        captures: super::capture::parse_captures(raw.pcap, &topology, duration)?,
        topology,
        access_limit: access.limit,
        groups,
    })
}

/// `[simulation]`'s duration, warm-up and sample interval.
fn run_times(sim: &RawSimulation) -> R<(Time, Time, Time)> {
    let duration = sim.duration.map(|d| d.0).unwrap_or(200 * NS_PER_SEC);
    if duration == 0 {
        return Err(ScenarioError::new("simulation.duration", "must be > 0"));
    }
    let warmup = sim.warmup.map(|d| d.0).unwrap_or(0);
    if warmup >= duration {
        return Err(ScenarioError::new("simulation.warmup", "must be shorter than simulation.duration"));
    }
    let sample_interval = sim.sample_interval.map(|d| d.0).unwrap_or(NS_PER_SEC / 10);
    if sample_interval == 0 {
        return Err(ScenarioError::new("simulation.sample_interval", "must be > 0"));
    }
    if duration / sample_interval > 10_000_000 {
        return Err(ScenarioError::new(
            "simulation.sample_interval",
            "would record more than 10 million samples; use a longer interval",
        ));
    }
    Ok((duration, warmup, sample_interval))
}

/// `simulation.flow_series_interval`, if given.
fn flow_series_interval(v: Option<Dur>, duration: Time) -> R<Option<Time>> {
    match v {
        Some(Dur(0)) => Err(ScenarioError::new("simulation.flow_series_interval", "must be > 0")),
        Some(Dur(d)) if duration / d > 1_000_000 => Err(ScenarioError::new(
            "simulation.flow_series_interval",
            "would record more than a million samples per flow; use a longer interval",
        )),
        Some(Dur(d)) => Ok(Some(d)),
        None => Ok(None),
    }
}

/// The `[[flows]]` groups (those with `per_hop` expanded), each with its routes through
/// `topology`: uniquely named, at most 10 million flows in all.
fn flow_groups(flows: Vec<RawGroup>, topology: &mut Topology, access: &RawAccess, tcp: &RawTcp) -> R<Vec<GroupSpec>> {
    if flows.is_empty() {
        return Err(ScenarioError::new("flows", "no flows; add at least one [[flows]] group"));
    }
    let mut groups = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut router = Router::new(topology);
    for (i, g, name) in expand_per_hop(flows, topology)? {
        let p = format!("flows[{i}]");
        if name.is_empty() {
            return Err(ScenarioError::new(format!("{p}.name"), "must not be empty"));
        }
        if !names.insert(name.clone()) {
            return Err(ScenarioError::new(
                format!("{p}.name"),
                format!("\"{name}\" is used by another group; names must be unique"),
            ));
        }
        groups.push(flow_group(g, name, &p, (&mut router, topology), access, tcp)?);
    }
    let total: u64 = groups.iter().map(|g| g.count as u64).sum();
    if total > 10_000_000 {
        return Err(ScenarioError::new("flows", format!("{total} flows in all; at most 10000000 are supported")));
    }
    Ok(groups)
}

/// One flow group `g` (named `name`, at key path `p`), validated, with its routes.
fn flow_group(
    g: RawGroup,
    name: String,
    p: &str,
    (router, topology): (&mut Router, &mut Topology),
    access: &RawAccess,
    tcp: &RawTcp,
) -> R<GroupSpec> {
    let count = g.count.unwrap_or(1);
    if !(1..=10_000_000).contains(&count) {
        return Err(ScenarioError::new(format!("{p}.count"), format!("must be 1..10000000, got {count}")));
    }
    let priority = g.priority.unwrap_or(1);
    if !(1..=255).contains(&priority) {
        return Err(ScenarioError::new(format!("{p}.priority"), format!("must be 1..255, got {priority}")));
    }
    check_list(&g.sender_rate, format!("{p}.sender_rate"))?;
    check_list(&g.sender_delay, format!("{p}.sender_delay"))?;
    check_list(&g.receiver_rate, format!("{p}.receiver_rate"))?;
    check_list(&g.receiver_delay, format!("{p}.receiver_delay"))?;
    let transport = parse_transport(&g, tcp, p)?;
    let endpoints = router.endpoints(topology, &g, count as u32, p)?;
    let start = match g.start {
        Some(v) => parse_start(v, &format!("{p}.start"))?,
        None => match transport {
            // experiments.md §1.2: TCP flows start uniformly in [0, 1] s, UDP at 0
            Transport::Tcp { .. } => StartSpec::Uniform(0, NS_PER_SEC),
            Transport::Udp { .. } => StartSpec::At(0),
        },
    };
    let latest_start = match start {
        StartSpec::At(t) => t,
        StartSpec::Uniform(_, hi) => hi,
    };
    if let Some(stop) = g.stop {
        if stop.0 <= latest_start {
            return Err(ScenarioError::new(format!("{p}.stop"), "must be later than the start time"));
        }
    }
    Ok(GroupSpec {
        name,
        count: count as u32,
        transport,
        start,
        stop: g.stop.map(|d| d.0),
        priority: priority as u8,
        in_profile: g.in_profile.unwrap_or(false),
        sender_rate: g.sender_rate.unwrap_or(OneOrMany::One(access.rate)),
        sender_delay: g.sender_delay.unwrap_or(OneOrMany::One(access.delay)),
        receiver_rate: g.receiver_rate.unwrap_or(OneOrMany::One(access.rate)),
        receiver_delay: g.receiver_delay.unwrap_or(OneOrMany::One(access.delay)),
        endpoints,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::AqmConfig;

    const OK: &str = r#"
        [simulation]
        duration = "10s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = 100
        aqm = { type = "red", min_th = 40, max_th = 80 }
        [[flows]]
        name = "tcp"
        transport = "tcp"
        count = 3
        [[flows]]
        transport = "udp"
        rate = "2Mb/s"
    "#;

    fn err(text: &str) -> ScenarioError {
        load(text, &[], "t").unwrap_err()
    }

    #[test]
    fn loads_a_valid_scenario_with_defaults() {
        let s = load(OK, &[], "t").unwrap();
        assert_eq!(s.duration, 10 * NS_PER_SEC);
        assert_eq!(s.n_hosts(), 4);
        assert_eq!(s.groups[1].name, "udp1");
        assert_eq!(s.topology.links[1].spec.rate_bps, 1e6);
        assert_eq!(s.groups[0].start, StartSpec::Uniform(0, NS_PER_SEC));
        assert!(matches!(s.bottleneck().unwrap().aqm, AqmConfig::Red(_)));
    }

    #[test]
    fn errors_name_the_key_path() {
        let e = err(&OK.replace("min_th = 40, max_th = 80", "min_th = 80, max_th = 40"));
        assert_eq!(e.path, "bottleneck.aqm.max_th");
        let e = err(&OK.replace("limit = 100", "limit = 0"));
        assert_eq!(e.path, "bottleneck.limit");
        let e = err(&OK.replace("rate = \"1Mb/s\"", "rate = \"-5Mb/s\""));
        assert_eq!(e.path, "bottleneck.rate");
        assert!(e.msg.contains("positive"), "{}", e.msg);
        let e = err(&OK.replace("count = 3", "count = 3\nbogus = 1"));
        assert_eq!(e.path, "flows[0].bogus");
        assert!(e.msg.contains("unknown field"), "{}", e.msg);
        let e = err(&OK.replace("count = 3", "count = \"three\""));
        assert_eq!(e.path, "flows[0].count");
        let e = err(&OK.replace("min_th = 40,", "min_th = 40, colour = 1,"));
        assert_eq!(e.path, "bottleneck.aqm.colour");
        let e = err(&OK.replace("type = \"red\"", "type = \"purple\""));
        assert_eq!(e.path, "bottleneck.aqm.type");
        let e = err(&OK.replace("rate = \"2Mb/s\"", ""));
        assert_eq!(e.path, "flows[1].rate");
        let e = err(&OK.replace("delay = \"10ms\"", "delay = \"10 parsecs\""));
        assert_eq!(e.path, "bottleneck.delay");
        let e = err("[bottleneck\n");
        assert!(e.to_string().starts_with("line 1, column"), "{e}");
    }

    #[test]
    fn overrides_apply_before_validation() {
        let s = load(OK, &["bottleneck.aqm.max_p=0.25".into(), "flows[0].count=7".into()], "t").unwrap();
        let AqmConfig::Red(p) = &s.bottleneck().unwrap().aqm else { panic!() };
        assert_eq!(p.max_p, 0.25);
        assert_eq!(s.groups[0].count, 7);
        let e = load(OK, &["bottleneck.aqm.max_p=2".into()], "t").unwrap_err();
        assert_eq!(e.path, "bottleneck.aqm.max_p");
    }
}
