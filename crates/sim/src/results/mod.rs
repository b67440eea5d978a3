//! Results of a run: the summary (`summary.json`) and tidy tables (named columns, handed to Python
//! as-is, one DataFrame per table), computed once at the end from what the run counted:
//! `flows` (one row per flow), `summary` (links, groups, fairness, engine), `series` (time
//! series, queue snapshots, per-flow series). docs/metrics.md defines every figure.

pub mod flows;
mod latency;
mod series;
mod summary;

use crate::hosts::{App, Flow};
use crate::measure::{FlowCounters, FlowSeries, HopDrops};
use crate::monitor::{AtLink, LinkMonitor, Snapshots};
use crate::net::{Network, Route, NO_MONITOR};
use crate::scenario::Scenario;
use aqm::Time;
use aqm::NS_PER_SEC;

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Str(Vec<String>),
    /// Strings that repeat (link names, paths): each distinct value stored once, a code per row
    /// (the Python side shares one string object per level, so a million rows cost pointers).
    Cat {
        codes: Vec<u32>,
        levels: Vec<String>,
    },
}

impl Column {
    /// A categorical column of `values`, levels in order of first appearance.
    pub fn cat(values: impl Iterator<Item = String>) -> Column {
        let mut index: std::collections::HashMap<String, u32, std::hash::BuildHasherDefault<Fx>> = Default::default();
        let (mut codes, mut levels) = (Vec::new(), Vec::new());
        for v in values {
            let next = levels.len() as u32;
            let code = *index.entry(v).or_insert_with_key(|v: &String| {
                levels.push(v.clone());
                next
            });
            codes.push(code);
        }
        Column::Cat { codes, levels }
    }

    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Cat { codes, .. } => codes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values of a string column (plain or categorical), `None` for numbers.
    pub fn strs(&self) -> Option<Vec<&str>> {
        match self {
            Column::Str(v) => Some(v.iter().map(|s| s.as_str()).collect()),
            Column::Cat { codes, levels } => Some(codes.iter().map(|&c| levels[c as usize].as_str()).collect()),
            _ => None,
        }
    }
}

/// A tidy table: one row per observation, one named column per variable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn push(&mut self, name: &str, col: Column) {
        self.columns.push((name.to_string(), col));
    }
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
    /// A string column by name (plain or categorical; panics if absent or numeric: for tests).
    pub fn strs(&self, name: &str) -> Vec<&str> {
        self.get(name).and_then(|c| c.strs()).unwrap_or_else(|| panic!("no string column {name}"))
    }
    /// A float column by name (panics if absent or not float: for tests and internal use).
    pub fn f64s(&self, name: &str) -> &[f64] {
        match self.get(name) {
            Some(Column::F64(v)) => v,
            _ => panic!("no float column {name}"),
        }
    }
}

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct Results {
    /// Run summary (deterministic: no wall-clock values), written as summary.json.
    pub summary: serde_json::Value,
    /// One row per flow.
    pub flows: Table,
    /// One row per sample per measured link.
    pub timeseries: Table,
    /// With `simulation.queue_snapshots`: one row per waiting packet per snapshot (M10).
    pub snapshots: Option<Table>,
    /// With `simulation.flow_series_interval`: one row per active flow per sample.
    pub flow_series: Option<Table>,
    /// With `simulation.latency` or a probe group: the delay distributions, one row per non-empty
    /// bucket per recorded flow and metric.
    pub latency: Option<Table>,
}

/// Engine-wide counts.
pub struct Engine {
    pub events: u64,
    pub created: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
}

/// What a finished run hands over to make its results.
/// What the results read of a flow once its run is over: `Sim::finish` keeps this and frees the
/// flows with their TCP state before it builds the tables (at a million flows, 56 bytes a flow in
/// place of 296, at the moment the result tables take their own memory).
#[derive(Debug, Clone)]
pub struct FlowRecord {
    pub start: Time,
    pub stop: Time,
    /// When a TCP flow had every offered byte acknowledged, if it did.
    pub completed: Option<Time>,
    pub group: u32,
    pub host: u32,
    pub session: u32,
    /// Data packet size: a TCP flow's MSS, a UDP source's packet size (bytes).
    pub size: u32,
    pub prio: u8,
    pub tcp: bool,
}

impl FlowRecord {
    pub fn of(f: &Flow) -> FlowRecord {
        let (completed, tcp) = match &f.app {
            App::Tcp { tx, .. } => (tx.completed_at(), true),
            App::Udp(_) => (None, false),
        };
        FlowRecord {
            start: f.start,
            stop: f.stop,
            completed,
            group: f.group,
            host: f.host,
            session: f.session,
            size: f.packet_size(),
            prio: f.prio,
            tcp,
        }
    }
}

pub struct Run<'a> {
    pub sc: &'a Scenario,
    pub seed: u64,
    pub net: &'a Network,
    pub routes: &'a [Route],
    pub flows: &'a [FlowRecord],
    /// Cumulative flow counters, and their snapshot at the start of the window.
    pub ctr: &'a [FlowCounters],
    pub base_ctr: Option<&'a [FlowCounters]>,
    /// Drops by flow and hop within the window.
    pub hop_drops: HopDrops,
    pub monitors: &'a [LinkMonitor],
    pub snaps: &'a Snapshots,
    pub fseries: &'a FlowSeries,
    /// Latency histograms, if the run records any.
    pub lat: Option<&'a crate::latency::Latency>,
    pub engine: Engine,
}

/// Per-flow figures that several tables use, computed once.
struct Derived<'a> {
    r: &'a Run<'a>,
    /// Length of the measurement window in seconds.
    w: f64,
    /// Flow counters within the window (computed per read from the live counters, not copied).
    window: Window<'a>,
}

/// Per-flow values the flows table and the summary both read, computed when read (as vectors they
/// took 56 bytes a flow at the run's peak of memory, the results being built).
impl<'a> Derived<'a> {
    fn new(r: &'a Run<'a>) -> Derived<'a> {
        let sc = r.sc;
        let w = (sc.duration - sc.warmup) as f64 / NS_PER_SEC as f64;
        let window = Window { ctr: r.ctr, base: r.base_ctr };
        Derived { r, w, window }
    }

    /// Flow `i`'s measured monitor ([`NO_MONITOR`] if none).
    fn measured(&self, i: usize) -> u32 {
        self.r.net.hosts[self.r.flows[i].host as usize].measured
    }

    /// Flow `i`'s measured monitor ([`NO_MONITOR`] if none) and its packets there in the window.
    fn at(&self, i: usize) -> (u32, AtLink) {
        let m = self.measured(i);
        (m, if m == NO_MONITOR { AtLink::default() } else { self.r.monitors[m as usize].flow_in_window(i) })
    }

    /// Capacity (b/s) of monitor `m`'s link (NaN for [`NO_MONITOR`]).
    fn link_rate(&self, m: u32) -> f64 {
        match m {
            NO_MONITOR => f64::NAN,
            m => self.r.net.class(self.r.monitors[m as usize].link as usize).rate_bps as f64,
        }
    }

    /// Capacity (b/s) of flow `i`'s measured link (NaN if none).
    fn cap(&self, i: usize) -> f64 {
        self.link_rate(self.measured(i))
    }

    /// Throughput (b/s) of flow `i` at its measured link (NaN if none).
    fn thr(&self, i: usize) -> f64 {
        match self.at(i) {
            (NO_MONITOR, _) => f64::NAN,
            (_, a) => a.tx_bytes as f64 * 8.0 / self.w,
        }
    }

    /// Completion time (s) of flow `i` if it is a finite TCP flow that completed (NaN otherwise).
    fn fct(&self, i: usize) -> f64 {
        let fl = &self.r.flows[i];
        fl.completed.map(|c| (c - fl.start) as f64 / 1e9).unwrap_or(f64::NAN)
    }

    /// Goodput (b/s) of flow `i`: its data delivered for the first time within the window.
    fn goodput(&self, i: usize) -> f64 {
        self.rate(FlowCounters::bytes(self.window.get(i).unique_pkts, self.r.flows[i].size))
    }

    /// Throughput of every flow, in flow order.
    fn thrs(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.r.flows.len()).map(|i| self.thr(i))
    }

    /// Rate in b/s of `bytes` over the window.
    fn rate(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.w
    }
}

/// Each flow's counters within the measurement window: the live counters less their snapshot at
/// the window's start, computed when read (a copy of every flow's counters for the results would
/// be 200 bytes per flow at the run's peak of memory).
#[derive(Clone, Copy)]
struct Window<'a> {
    ctr: &'a [FlowCounters],
    base: Option<&'a [FlowCounters]>,
}

const ZERO: FlowCounters = FlowCounters::ZERO;

impl<'a> Window<'a> {
    /// Flow `i`'s counters within the window (a flow created after the warm-up has no snapshot:
    /// it counts from zero).
    #[inline]
    fn get(&self, i: usize) -> FlowCounters {
        match self.base {
            Some(b) => self.ctr[i].since(b.get(i).unwrap_or(&ZERO)),
            None => self.ctr[i],
        }
    }

    fn iter(&self) -> impl Iterator<Item = FlowCounters> + 'a {
        let w = *self;
        (0..w.ctr.len()).map(move |i| w.get(i))
    }
}

/// Builds a categorical column from rows given as small integer keys: a row whose key was seen
/// before costs a hash of the key, a new one the making of its string.
#[derive(Default)]
struct Interner {
    index: std::collections::HashMap<Box<[u32]>, u32, std::hash::BuildHasherDefault<Fx>>,
    levels: Vec<String>,
    codes: Vec<u32>,
}

impl Interner {
    fn push(&mut self, key: &[u32], make: impl FnOnce() -> String) {
        let code = match self.index.get(key) {
            Some(&c) => c,
            None => {
                let c = self.levels.len() as u32;
                self.levels.push(make());
                self.index.insert(key.into(), c);
                c
            }
        };
        self.codes.push(code);
    }

    fn column(self) -> Column {
        Column::Cat { codes: self.codes, levels: self.levels }
    }
}

/// The multiply-rotate hash of rustc (FxHash): fast for short integer keys, which is all the
/// results hash (nothing here needs resistance to chosen keys).
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for b in chunks.remainder() {
            self.write_u64(*b as u64);
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// A link's name: the topology's name, or "access" for a flow's own access link.
fn link_name<'a>(r: &'a Run, l: u32) -> &'a str {
    if (l as usize) < r.net.core {
        &r.sc.topology.links[l as usize].name
    } else {
        "access"
    }
}

/// Compute everything a run reports.
pub fn collect(r: &Run) -> Results {
    let d = Derived::new(r);
    // the summary first: its working vectors are freed before the flows table is built
    let summary = summary::summary(r, &d);
    let mut flows = flows::table(r, &d);
    latency::flow_columns(r, &mut flows);
    let (timeseries, snapshots, flow_series) = series::tables(r);
    let latency = latency::table(r);
    Results { summary, flows, timeseries, snapshots, flow_series, latency }
}
