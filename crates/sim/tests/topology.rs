//! Networks beyond the dumbbell: routes, the builders, two-way traffic, per-link measurement and
//! its identities, and the errors of a bad topology.
//!
//! Expected values come from the topology (sums of delays, serialisation times, which links a route
//! takes) and from accounting identities, never from a previous run.

use proptest::prelude::*;
use serde_json::Value;
use sim::Results;

fn run(text: &str) -> Results {
    sim::run_text(text, &[], None).unwrap_or_else(|e| panic!("run failed: {e}\n{text}"))
}

fn err(text: &str) -> sim::ScenarioError {
    sim::load(text, &[], "t").expect_err("the scenario should be rejected")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

fn strs<'a>(r: &'a Results, col: &str) -> Vec<&'a str> {
    r.flows.strs(col)
}

fn group<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["groups"].as_array().unwrap().iter().find(|g| g["name"] == name).unwrap_or_else(|| panic!("no group {name}"))
}

/// The identities every measured link satisfies over the window (docs/metrics.md, "Links"):
/// arrivals = transmitted + drops + backlog change; the groups' data packets and the ACKs make up
/// the link's arrivals and transmissions; the groups' and ACKs' drops there are the queue's drops
/// plus the random losses; utilisation at most 1.
fn check_links(r: &Results) {
    let s = &r.summary;
    for (name, l) in s["links"].as_object().expect("links") {
        let (arr, tx, drops) = (u(&l["arrivals"]), u(&l["transmitted"]), u(&l["drops_total"]));
        let (q0, q1) = (u(&l["queue_pkts_start"]), u(&l["queue_pkts_end"]));
        assert_eq!(
            arr + q0,
            tx + drops + q1,
            "{name}: arrivals + backlog at start != transmitted + drops + backlog at end"
        );
        let by_reason: u64 = l["drops"].as_object().unwrap().values().map(u).sum();
        assert_eq!(by_reason, drops, "{name}: drops by reason");
        let groups = l["groups"].as_object().unwrap();
        let acks = &l["acks"];
        let sum = |k: &str| groups.values().map(|g| u(&g[k])).sum::<u64>() + u(&acks[k]);
        assert_eq!(sum("arrivals"), arr, "{name}: the groups' and ACKs' arrivals");
        assert_eq!(sum("transmitted"), tx, "{name}: the groups' and ACKs' transmissions");
        assert_eq!(sum("drops"), drops + u(&l["link_loss_drops"]), "{name}: the groups' and ACKs' drops");
        let util = l["utilisation"].as_f64().unwrap();
        // a transmission started before the end may finish after it: at most one packet over
        let slack = 8.0 * 1500.0 / (l["capacity_bps"].as_f64().unwrap() * s["scenario"]["window_s"].as_f64().unwrap());
        assert!(util <= 1.0 + slack + 1e-12, "{name}: utilisation {util}");
    }
    // per flow, the drops hop by hop add up to its drops (data) and its ACK drops
    let hop_sum = |col: &str| -> Vec<u64> {
        strs(r, col).iter().map(|h| h.split(' ').map(|x| x.parse::<u64>().unwrap()).sum()).collect()
    };
    let data = hop_sum("hop_drops");
    let acks = hop_sum("ack_hop_drops");
    let total = r.flows.f64s("drops_total");
    let ack_drops = r.flows.f64s("ack_drops");
    for i in 0..data.len() {
        assert_eq!(data[i] as f64, total[i], "flow {i}: data drops by hop");
        assert_eq!(acks[i] as f64, ack_drops[i], "flow {i}: ACK drops by hop");
    }
    for (p, d) in strs(r, "path").iter().zip(strs(r, "hop_drops")) {
        assert_eq!(p.split(' ').count(), d.split(' ').count(), "a hop count per link of the path");
    }
}

// =============================================================================================
// routes

/// A diamond with a slow short way and a fast long way:
///
/// ```text
///   a -- r1 ------------ r2 -- b      r1 -> r2: 50 ms (one hop)
///         \            /
///          r3 ------ r4               r1 -> r3 -> r4 -> r2: 1 ms each (three hops)
/// ```
const DIAMOND: &str = r#"
[simulation]
duration = "2s"
[topology]
routing = "ROUTING"
routers = ["r1", "r2", "r3", "r4"]
hosts = ["a", "b"]
[[topology.links]]
from = "a"
to = "r1"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[topology.links]]
from = "r1"
to = "r2"
rate = "10Mb/s"
delay = "50ms"
limit = 100
[[topology.links]]
from = "r1"
to = "r3"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[topology.links]]
from = "r3"
to = "r4"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[topology.links]]
from = "r4"
to = "r2"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[topology.links]]
from = "r2"
to = "b"
rate = "10Mb/s"
delay = "1ms"
limit = 100
[[flows]]
name = "f"
transport = "tcp"
from = "a"
to = "b"
"#;

fn path_of(s: &Value, g: &str, key: &str) -> Vec<String> {
    group(s, g)[key].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

#[test]
fn routes_take_the_fewest_hops_or_the_least_delay() {
    let hops = run(&DIAMOND.replace("ROUTING", "hops"));
    assert_eq!(path_of(&hops.summary, "f", "path"), ["a-r1", "r1-r2", "r2-b"]);
    // ACKs come back the same way (the links are duplex by default)
    assert_eq!(path_of(&hops.summary, "f", "ack_path"), ["b-r2", "r2-r1", "r1-a"]);
    let delay = run(&DIAMOND.replace("ROUTING", "delay"));
    assert_eq!(path_of(&delay.summary, "f", "path"), ["a-r1", "r1-r3", "r3-r4", "r4-r2", "r2-b"]);
    // flows attached at hosts have no access links of their own
    assert_eq!(strs(&delay, "path")[0], "a-r1 r1-r3 r3-r4 r4-r2 r2-b");
    // round-trip propagation: the sum of both paths' delays
    let rtt = |r: &Results| r.flows.f64s("rtt_prop_s")[0];
    assert!((rtt(&hops) - 2.0 * 0.052).abs() < 1e-12, "{}", rtt(&hops));
    assert!((rtt(&delay) - 2.0 * 0.005).abs() < 1e-12, "{}", rtt(&delay));
}

#[test]
fn explicit_paths_override_routing() {
    // DIAMOND ends with the flow group: its keys can be appended
    let with = |extra: &str| DIAMOND.replace("ROUTING", "hops") + extra;
    let text =
        with("path = [\"a\", \"r1\", \"r3\", \"r4\", \"r2\", \"b\"]\nack_path = [\"b\", \"r2\", \"r1\", \"a\"]\n");
    let r = run(&text);
    assert_eq!(path_of(&r.summary, "f", "path"), ["a-r1", "r1-r3", "r3-r4", "r4-r2", "r2-b"]);
    assert_eq!(path_of(&r.summary, "f", "ack_path"), ["b-r2", "r2-r1", "r1-a"]);
    // without ack_path the ACKs take the path reversed, which needs links r2 -> r4 -> r3 -> r1:
    // they exist (duplex), so this works too
    let text = with("path = [\"a\", \"r1\", \"r3\", \"r4\", \"r2\", \"b\"]\n");
    let r = run(&text);
    assert_eq!(path_of(&r.summary, "f", "ack_path"), ["b-r2", "r2-r4", "r4-r3", "r3-r1", "r1-a"]);
}

// =============================================================================================
// a two-hop path's round-trip time

#[test]
fn a_two_hop_paths_rtt_is_the_sum_of_its_delays() {
    // host h1 -> router r -> host h2; delays 3 ms and 7 ms, ACKs back over 5 ms and 2 ms. One
    // segment in flight at a time, so no packet ever waits: every RTT sample is propagation
    // plus serialisation.
    let text = r#"
        [simulation]
        duration = "5s"
        [topology]
        routers = ["r"]
        hosts = ["h1", "h2"]
        [[topology.links]]
        from = "h1"
        to = "r"
        rate = "8Mb/s"
        delay = "3ms"
        limit = 100
        reverse = { delay = "2ms" }
        [[topology.links]]
        from = "r"
        to = "h2"
        rate = "4Mb/s"
        delay = "7ms"
        limit = 100
        reverse = { delay = "5ms", rate = "2Mb/s" }
        [tcp]
        initial_window = 1
        max_window = 1
        [[flows]]
        transport = "tcp"
        from = "h1"
        to = "h2"
        start = "0s"
    "#;
    let r = run(text);
    let prop = 0.003 + 0.007 + 0.005 + 0.002;
    assert!((r.flows.f64s("rtt_prop_s")[0] - prop).abs() < 1e-15);
    // serialisation: 1000-byte data at 8 and 4 Mb/s, 40-byte ACKs at 2 and 8 Mb/s (ns)
    let ser = 1_000_000 + 2_000_000 + 160_000 + 40_000;
    let exact = prop + ser as f64 / 1e9;
    let (min, mean) = (r.flows.f64s("rtt_min_s")[0], r.flows.f64s("rtt_mean_s")[0]);
    assert!((min - exact).abs() < 1e-12, "min RTT {min} != {exact}");
    assert!((mean - exact).abs() < 1e-12, "mean RTT {mean} != {exact}: some packet waited");
}

// =============================================================================================
// builders

const PARKING: &str = r#"
[simulation]
duration = "30s"
warmup = "5s"
[topology]
type = "parking_lot"
hops = 3
link = { rate = "1Mb/s", delay = "10ms", limit = 60, aqm = { type = "choke", min_th = 15, max_th = 45 } }
[tcp]
variant = "reno"
[[flows]]
name = "long"
transport = "tcp"
count = 4
[[flows]]
name = "cross"
transport = "tcp"
count = 4
per_hop = true
[[flows]]
name = "udp"
transport = "udp"
rate = "2Mb/s"
"#;

#[test]
fn a_parking_lot_is_a_chain_with_cross_traffic_per_hop() {
    let r = run(PARKING);
    let s = &r.summary;
    assert!(s.get("bottleneck").is_none(), "a bottleneck section is for dumbbells");
    assert_eq!(s["topology"]["type"], "parking_lot");
    let links = s["links"].as_object().unwrap();
    assert_eq!(links.keys().collect::<Vec<_>>(), ["r0-r1", "r1-r2", "r2-r3"], "the forward chain is measured");
    assert_eq!(path_of(s, "long", "path"), ["r0-r1", "r1-r2", "r2-r3"]);
    assert_eq!(path_of(s, "long", "ack_path"), ["r3-r2", "r2-r1", "r1-r0"]);
    for h in 1..=3 {
        let name = format!("cross_{h}");
        assert_eq!(path_of(s, &name, "path"), [format!("r{}-r{h}", h - 1)]);
        let l = &links[&format!("r{}-r{h}", h - 1)];
        let groups: Vec<&String> = l["groups"].as_object().unwrap().keys().collect();
        assert_eq!(groups, [&name, &"long".to_string(), &"udp".to_string()]);
        // every hop is congested: it drops packets (the UDP flow alone offers twice the first
        // hop's capacity, and what passes fills the next ones with the cross traffic)
        assert!(u(&l["drops_total"]) > 0, "hop {h} dropped nothing");
    }
    // downstream hops see only what the upstream ones passed on (within the window, give or
    // take the packets on the 10 ms link when it opened: at most 1.25 propagating, 1 in
    // transmission)
    let udp = |l: &str, k: &str| u(&links[l]["groups"]["udp"][k]);
    assert!(udp("r1-r2", "arrivals") <= udp("r0-r1", "transmitted") + 2);
    assert!(udp("r2-r3", "arrivals") <= udp("r1-r2", "transmitted") + 2);
    // a long flow's throughput is measured at the last bottleneck it crosses
    assert_eq!(group(s, "long")["measured_link"], "r2-r3");
    assert_eq!(strs(&r, "path")[0], "access r0-r1 r1-r2 r2-r3 access");
    check_links(&r);
}

#[test]
fn a_star_routes_leaf_to_leaf_through_the_hub() {
    let text = r#"
        [simulation]
        duration = "20s"
        [topology]
        type = "star"
        leaves = 4
        link = { rate = "2Mb/s", delay = "5ms", limit = 50, aqm = { type = "red", min_th = 10, max_th = 30 } }
        [[flows]]
        name = "incast"
        transport = "tcp"
        count = 6
        from = ["l1", "l2", "l3"]
        to = "l4"
        [[flows]]
        name = "back"
        transport = "tcp"
        count = 2
        from = "l4"
        to = "l1"
    "#;
    let r = run(text);
    let s = &r.summary;
    assert_eq!(s["links"].as_object().unwrap().len(), 8, "every spoke, both ways, is measured");
    // host sets: flow i of the group starts at from[i % 3]
    let paths = strs(&r, "path");
    for (i, path) in paths.iter().enumerate().take(6) {
        assert_eq!(*path, format!("access l{}-hub hub-l4 access", i % 3 + 1));
    }
    assert_eq!(group(s, "incast")["from"], serde_json::json!(["l1", "l2", "l3"]));
    assert!(group(s, "incast")["path"].is_null(), "flows of a host set take several routes");
    // the spoke into l4 carries all six incast flows: it is the congested one
    let util = |l: &str| s["links"][l]["utilisation"].as_f64().unwrap();
    assert_eq!(s["links"]["hub-l4"]["groups"].as_object().unwrap().keys().collect::<Vec<_>>(), ["incast"]);
    for l in ["hub-l1", "hub-l2", "hub-l3", "l1-hub", "l2-hub", "l3-hub"] {
        assert!(util("hub-l4") > util(l), "hub-l4 {} <= {l} {}", util("hub-l4"), util(l));
    }
    assert!(u(&s["links"]["hub-l4"]["drops_total"]) > 0);
    check_links(&r);
}

#[test]
fn data_on_the_reverse_path_of_a_dumbbell() {
    // two-way traffic: one group R1 -> R2, one R2 -> R1; both directions measured, and each
    // direction carries one group's data and the other's ACKs
    let text = r#"
        [simulation]
        duration = "30s"
        warmup = "5s"
        [bottleneck]
        rate = "1Mb/s"
        delay = "10ms"
        limit = 50
        aqm = { type = "red", min_th = 10, max_th = 30 }
        [reverse]
        limit = 50
        monitor = true
        aqm = { type = "choke", min_th = 10, max_th = 30 }
        [[flows]]
        name = "east"
        transport = "tcp"
        count = 3
        [[flows]]
        name = "west"
        transport = "tcp"
        count = 3
        from = "r2"
        to = "r1"
    "#;
    let r = run(text);
    let s = &r.summary;
    let (fwd, rev) = (&s["links"]["bottleneck"], &s["links"]["reverse"]);
    assert_eq!(fwd["groups"].as_object().unwrap().keys().collect::<Vec<_>>(), ["east"]);
    assert_eq!(rev["groups"].as_object().unwrap().keys().collect::<Vec<_>>(), ["west"]);
    for l in [fwd, rev] {
        // the other group's ACKs share the link, with less of it than the data
        let data: f64 = l["groups"].as_object().unwrap().values().map(|g| g["throughput_bps"].as_f64().unwrap()).sum();
        let acks = l["acks"]["throughput_bps"].as_f64().unwrap();
        assert!(acks > 0.0 && acks < data, "ACKs {acks} b/s, data {data} b/s");
    }
    assert_eq!(group(s, "west")["measured_link"], "reverse");
    assert_eq!(s["bottleneck"]["aqm"], "red");
    check_links(&r);
}

// =============================================================================================
// bad topologies

#[test]
fn bad_topologies_name_the_key() {
    let custom = |links: &str, flows: &str| {
        format!(
            "[topology]\nrouters = [\"r1\", \"r2\", \"r3\"]\nhosts = [\"a\", \"b\"]\n{links}\n[[flows]]\ntransport = \"tcp\"\n{flows}\n"
        )
    };
    let link = |from: &str, to: &str| {
        format!("[[topology.links]]\nfrom = \"{from}\"\nto = \"{to}\"\nrate = \"1Mb/s\"\ndelay = \"1ms\"\nlimit = 10\n")
    };
    let chain = [link("a", "r1"), link("r1", "r2"), link("r2", "b")].concat();
    // unknown node in a link and in a group
    let e = err(&custom(&[chain.clone(), link("r2", "r9")].concat(), "from = \"a\"\nto = \"b\""));
    assert_eq!(e.path, "topology.links[3].to");
    assert!(e.msg.contains("unknown node \"r9\""), "{}", e.msg);
    let e = err(&custom(&chain, "from = \"a\"\nto = \"x\""));
    assert_eq!(e.path, "flows[0].to");
    // a pair no links join
    let e = err(&custom(&chain, "from = \"a\"\nto = \"r3\""));
    assert_eq!(e.path, "flows[0].to");
    assert!(e.msg.contains("no route from \"a\" to \"r3\""), "{}", e.msg);
    // one-way links: no way back for the ACKs
    let oneway = chain.replace("limit = 10\n", "limit = 10\nduplex = false\n");
    let e = err(&custom(&oneway, "from = \"a\"\nto = \"b\""));
    assert_eq!(e.path, "flows[0].from");
    assert!(e.msg.contains("for the ACKs"), "{}", e.msg);
    // a loop in an explicit path
    let e = err(&custom(&chain, "from = \"a\"\nto = \"b\"\npath = [\"a\", \"r1\", \"r2\", \"r1\", \"r2\", \"b\"]"));
    assert_eq!(e.path, "flows[0].path[3]");
    assert!(e.msg.contains("loop"), "{}", e.msg);
    // a hop no link makes
    let e = err(&custom(&chain, "from = \"a\"\nto = \"b\"\npath = [\"a\", \"r2\", \"b\"]"));
    assert_eq!(e.path, "flows[0].path[1]");
    // an unknown key in a link, and in its reverse direction
    let e = err(&custom(&chain.replacen("limit = 10\n", "limit = 10\ncolour = 1\n", 1), "from = \"a\"\nto = \"b\""));
    assert_eq!(e.path, "topology.links[0].colour");
    assert!(e.msg.contains("`from`") && e.msg.contains("`aqm`"), "{}", e.msg);
    let e = err(&custom(
        &chain.replacen("limit = 10\n", "limit = 10\nreverse = { colour = 1 }\n", 1),
        "from = \"a\"\nto = \"b\"",
    ));
    assert_eq!(e.path, "topology.links[0].reverse.colour");
    // a link with no rate
    let e = err(&custom(&chain.replacen("rate = \"1Mb/s\"\n", "", 1), "from = \"a\"\nto = \"b\""));
    assert_eq!(e.path, "topology.links[0].rate");
    // builders
    let e = err(&PARKING.replace("hops = 3", "hops = 300"));
    assert_eq!(e.path, "flows[0].to", "a route longer than a packet can count");
    let e = err(&PARKING.replace("hops = 3", "hops = 0"));
    assert_eq!(e.path, "topology.hops");
    let e = err(&PARKING.replace("type = \"parking_lot\"", "type = \"torus\""));
    assert_eq!(e.path, "topology.type");
    let e = err(&PARKING.replace("hops = 3", "hops = 3\nleaves = 4"));
    assert_eq!(e.path, "topology.leaves");
    let e = err(&PARKING.replace("[topology]", "[bottleneck]\nrate = \"1Mb/s\"\n[topology]"));
    assert_eq!(e.path, "bottleneck");
    let e = err(&PARKING.replace("per_hop = true", "per_hop = true\nto = \"r2\""));
    assert_eq!(e.path, "flows[1].to");
    // per_hop is a parking lot's
    let e = err(
        "[bottleneck]\nrate = \"1Mb/s\"\ndelay = \"1ms\"\nlimit = 10\n[[flows]]\ntransport = \"tcp\"\nper_hop = true\n",
    );
    assert_eq!(e.path, "flows[0].per_hop");
    // access keys need a router at that end
    let e = err(&custom(&chain, "from = \"a\"\nto = \"b\"\nsender_rate = \"5Mb/s\""));
    assert_eq!(e.path, "flows[0].sender_rate");
}

// =============================================================================================
// random networks: conservation (checked inside every run) and the per-link identities

const AQMS: &[&str] = &[
    "{ type = \"droptail\" }",
    // (thresholds below the smallest buffer drawn, 3 packets: a scheme that can never act is refused;
    // CHOKeW's p0 grows only while L, at most 4 with the arrival, is above l_plus)
    "{ type = \"red\", min_th = 1, max_th = 15 }",
    "{ type = \"choke\", min_th = 1, max_th = 15 }",
    "{ type = \"chokew\", l_th = 1, l_minus = 2, l_plus = 3 }",
    "{ type = \"ward\" }",
    "{ type = \"fq_codel\" }",
    "{ type = \"pie\" }",
];

#[derive(Debug, Clone)]
struct Net {
    routers: usize,
    hosts: usize,
    /// (node, parent) of a spanning tree, then extra links (from, to, duplex)
    tree: Vec<usize>,
    extra: Vec<(usize, usize, bool)>,
    /// per link: rate (Mb/s), delay (ms), limit, aqm, monitor, lossy
    links: Vec<(u32, u32, u32, usize, bool, bool)>,
    groups: Vec<(usize, usize, bool, u32)>,
    routing_delay: bool,
    seed: u64,
}

fn net() -> impl Strategy<Value = Net> {
    (2usize..5, 0usize..3).prop_flat_map(|(routers, hosts)| {
        let n = routers + hosts;
        (
            Just(routers),
            Just(hosts),
            // node i > 0 hangs off a node before it (hosts off routers)
            (1..n).map(|i| 0..i.min(routers).max(1)).collect::<Vec<_>>(),
            prop::collection::vec((0..n, 0..n, any::<bool>()), 0..3),
            prop::collection::vec(
                (1u32..4, 0u32..6, 3u32..40, 0..AQMS.len(), any::<bool>(), prop::bool::weighted(0.1)),
                2 * n + 6,
            ),
            prop::collection::vec((0..n, 0..n, any::<bool>(), 1u32..4), 1..4),
            any::<bool>(),
            0u64..1000,
        )
            .prop_map(|(routers, hosts, tree, extra, links, groups, routing_delay, seed)| Net {
                routers,
                hosts,
                tree,
                extra,
                links,
                groups,
                routing_delay,
                seed,
            })
    })
}

fn scenario(net: &Net) -> String {
    let n = net.routers + net.hosts;
    let name = |i: usize| if i < net.routers { format!("r{i}") } else { format!("h{}", i - net.routers) };
    let mut s = format!(
        "[simulation]\nduration = \"4s\"\nwarmup = \"1s\"\nseed = {}\n[topology]\nrouting = \"{}\"\nrouters = [{}]\nhosts = [{}]\n",
        net.seed,
        if net.routing_delay { "delay" } else { "hops" },
        (0..net.routers).map(|i| format!("\"{}\"", name(i))).collect::<Vec<_>>().join(", "),
        (net.routers..n).map(|i| format!("\"{}\"", name(i))).collect::<Vec<_>>().join(", "),
    );
    let mut pairs: Vec<(usize, usize, bool)> = net.tree.iter().enumerate().map(|(i, &p)| (i + 1, p, true)).collect();
    pairs.extend(net.extra.iter().filter(|(a, b, _)| a != b).copied());
    for (k, (a, b, duplex)) in pairs.iter().enumerate() {
        let (rate, delay, limit, aqm, monitor, lossy) = net.links[k % net.links.len()];
        s += &format!(
            "[[topology.links]]\nname = \"l{k}\"\nfrom = \"{}\"\nto = \"{}\"\nduplex = {duplex}\nrate = \"{rate}Mb/s\"\ndelay = \"{delay}ms\"\nlimit = {limit}\naqm = {}\nmonitor = {monitor}\nloss_rate = {}\n",
            name(*a),
            name(*b),
            AQMS[aqm],
            if lossy { 0.01 } else { 0.0 },
        );
        if *duplex {
            // the way back: its own name, another discipline and buffer
            let (_, _, limit, aqm, monitor, _) = net.links[(k + 7) % net.links.len()];
            s += &format!(
                "reverse = {{ name = \"l{k}r\", limit = {limit}, aqm = {}, monitor = {monitor} }}\n",
                AQMS[aqm]
            );
        }
    }
    for (g, (from, to, udp, count)) in net.groups.iter().enumerate() {
        let to = if from == to { (to + 1) % n } else { *to };
        s += &format!(
            "\n[[flows]]\nname = \"g{g}\"\ntransport = \"{}\"\ncount = {count}\nfrom = \"{}\"\nto = \"{}\"\n{}",
            if *udp { "udp" } else { "tcp" },
            name(*from),
            name(to),
            if *udp { "rate = \"1Mb/s\"\n" } else { "" },
        );
    }
    s
}

proptest! {
    // 48 cases by default; PROPTEST_CASES=n for more
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_networks_conserve_packets_and_keep_link_identities(net in net()) {
        let text = scenario(&net);
        // the spanning tree joins every node both ways, so every group has routes
        let r = sim::run_text(&text, &[], None).unwrap_or_else(|e| panic!("{e}\n{text}"));
        check_links(&r);
        let e = &r.summary["engine"];
        prop_assert_eq!(
            u(&e["packets_created"]),
            u(&e["packets_delivered"]) + u(&e["packets_dropped"]) + u(&e["packets_in_flight"])
        );
        // deterministic
        let again = sim::run_text(&text, &[], None).unwrap();
        prop_assert_eq!(&again.summary, &r.summary);
    }
}
