//! The `[[pcap]]` traces while a run goes on (`scenario::capture` reads them, `crate::pcap` writes
//! the files). A run without traces pays one test of an `Option` at a link's arrival, departure
//! and drop; a traced link a table lookup and one record copied into a buffered file.

use crate::hosts::Flow;
use crate::packet::Packet;
use crate::pcap::{FlowInfo, PcapWriter};
use crate::scenario::capture::POINTS;
use crate::scenario::{Scenario, Transport};
use aqm::Time;
use std::io;
use std::path::{Path, PathBuf};

/// Where on a link a packet is seen.
#[derive(Clone, Copy)]
pub(super) enum Point {
    Arrival = 0,
    Departure = 1,
    Drop = 2,
}

const NONE: u16 = u16::MAX;

struct Trace {
    start: Time,
    stop: Time,
    out: [Option<PcapWriter>; 3],
}

/// The open traces of a run.
pub(super) struct Captures {
    /// Per topology link: its trace in `traces`, or `NONE`.
    by_link: Vec<u16>,
    traces: Vec<Trace>,
    /// Per host pair: the host numbers of its sender and its receiver (`pcap::host_addr`).
    ends: Vec<(u32, u32)>,
    /// Per group: the payload of a full data segment (bytes), which sequence numbers count.
    payload: Vec<u32>,
    files: Vec<PathBuf>,
    /// The first write error; the trace stops there and the run reports it at the end.
    error: Option<io::Error>,
}

impl Captures {
    /// Open a file in `dir` for every traced point: `<link>.<point>.pcap`.
    pub(super) fn open(sc: &Scenario, dir: &Path) -> io::Result<Captures> {
        let topo = &sc.topology;
        let mut by_link = vec![NONE; topo.links.len()];
        let mut traces = Vec::new();
        let mut files = Vec::new();
        for c in &sc.captures {
            let name = &topo.links[c.link as usize].name;
            let mut out = [None, None, None];
            for (k, on) in [c.arrivals, c.departures, c.drops].into_iter().enumerate() {
                if on {
                    let f = dir.join(format!("{name}.{}.pcap", POINTS[k]));
                    out[k] = Some(PcapWriter::create(&f)?);
                    files.push(f);
                }
            }
            by_link[c.link as usize] = traces.len() as u16;
            traces.push(Trace { start: c.start, stop: c.stop, out });
        }
        let ends = crate::net::build::host_numbers(sc);
        let payload = sc
            .groups
            .iter()
            .map(|g| match &g.transport {
                Transport::Tcp { cfg, .. } => (cfg.mss as u32).saturating_sub(40).max(1),
                Transport::Udp { cbr, .. } => (cbr.size as u32).saturating_sub(28).max(1),
            })
            .collect();
        Ok(Captures { by_link, traces, ends, payload, files, error: None })
    }

    pub(super) fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Record `pkt` at point `p` of link `l` at time `t`, if that point of that link is traced.
    #[inline]
    pub(super) fn write(&mut self, l: usize, p: Point, t: Time, pkt: &Packet, flows: &[Flow]) {
        let Some(&i) = self.by_link.get(l) else { return };
        if i == NONE {
            return;
        }
        let tr = &mut self.traces[i as usize];
        if t < tr.start || t >= tr.stop || self.error.is_some() {
            return;
        }
        let Some(w) = tr.out[p as usize].as_mut() else { return };
        let f = &flows[pkt.flow as usize];
        let (sender, receiver) = self.ends[f.host as usize];
        let info = FlowInfo { sender, receiver, payload: self.payload[f.group as usize] };
        if let Err(e) = w.write(t, pkt, &info) {
            self.error = Some(e);
        }
    }

    /// Flush every file; the records written per file.
    pub(super) fn finish(self) -> io::Result<Vec<(PathBuf, u64)>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut out = Vec::new();
        let mut files = self.files.into_iter();
        for tr in self.traces {
            for w in tr.out.into_iter().flatten() {
                out.push((files.next().expect("one file per writer"), w.finish()?));
            }
        }
        Ok(out)
    }
}
