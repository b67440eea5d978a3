//! CSFQ's edges: where a flow enters the network, its packets are labelled with its rate.
//!
//! A core router running CSFQ ([`aqm::csfq`], `labels = "packet"`) drops by the rate written in
//! each packet; the rate is estimated where the flow enters the network, here when its host
//! injects a packet into the first link of its path (on the dumbbell: the sender's access link),
//! by [`aqm::csfq::EdgeRate`] with the averaging constant `k` of the scenario's CSFQ links (the
//! smallest, if several differ). Data and UDP packets are labelled; acknowledgements use the
//! packet's label field for their SACK serial and stay unlabelled. Nothing is built, and nothing
//! happens at an injection, in a scenario without such a link.

use crate::packet::{Packet, PktKind};
use crate::scenario::Scenario;
use aqm::csfq::{EdgeRate, Labels};
use aqm::{AqmConfig, Pkt, Time, NS_PER_SEC};

/// Every flow's rate estimate at its edge.
pub(super) struct Edges {
    k_ns: f64,
    rates: Vec<EdgeRate>,
}

impl Edges {
    /// The edges of `sc` (`n` flows at the start), or `None` without a CSFQ link reading labels.
    pub(super) fn new(sc: &Scenario, n: usize) -> Option<Box<Edges>> {
        let k = sc
            .topology
            .links
            .iter()
            .filter_map(|l| match &l.spec.aqm {
                AqmConfig::Csfq(p) if p.labels == Labels::Packet => Some(p.k),
                _ => None,
            })
            .reduce(f64::min)?;
        Some(Box::new(Edges { k_ns: k * NS_PER_SEC as f64, rates: vec![EdgeRate::default(); n] }))
    }

    /// Label `pkt`, entering the network at `now`, with its flow's rate.
    #[inline]
    pub(super) fn label(&mut self, pkt: &mut Packet, now: Time) {
        if !matches!(pkt.kind, PktKind::Data | PktKind::Udp) {
            return;
        }
        let i = pkt.flow as usize;
        if i >= self.rates.len() {
            // a connection opened during the run (short or web traffic)
            self.rates.resize(i + 1, EdgeRate::default());
        }
        let r = self.rates[i].update(now, pkt.size(), self.k_ns);
        pkt.set_rate_label(r);
    }
}
