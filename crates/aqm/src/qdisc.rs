//! The one small trait every discipline implements (aqm.md §1.5), and what it is handed.

use crate::rng::Rng;
use crate::{DropReason, Pkt, Time};

/// A packet dropped by a discipline, with its reason.
#[derive(Debug, Clone, Copy)]
pub struct Dropped<P> {
    pub pkt: P,
    pub reason: DropReason,
}

/// What a discipline is handed on every call: the time, its random stream, and the buffer into
/// which it reports every packet it drops (the arrival and any victims).
pub struct Cx<'a, P> {
    pub now: Time,
    pub rng: &'a mut Rng,
    pub drops: &'a mut Vec<Dropped<P>>,
}

impl<P> Cx<'_, P> {
    /// Report a dropped packet.
    #[inline]
    pub fn drop(&mut self, pkt: P, reason: DropReason) {
        self.drops.push(Dropped { pkt, reason });
    }
}

impl<P: Pkt> Cx<'_, P> {
    /// An early (probabilistic) congestion signal for `pkt` (RFC 3168 §5): with `ecn` on and an
    /// ECN-capable packet, mark it Congestion Experienced and hand it back to be queued; otherwise
    /// drop it as `Early` and return `None`.
    #[inline]
    pub fn signal(&mut self, mut pkt: P, ecn: bool) -> Option<P> {
        if ecn && pkt.ecn_capable() {
            pkt.mark_ce();
            Some(pkt)
        } else {
            self.drop(pkt, DropReason::Early);
            None
        }
    }

    /// Apply a drop decision: an `Early` drop becomes a CE mark where [`Cx::signal`] allows it;
    /// every other reason drops. Returns the packet if it is to be queued after all.
    #[inline]
    pub fn verdict(&mut self, pkt: P, reason: DropReason, ecn: bool) -> Option<P> {
        if reason == DropReason::Early {
            self.signal(pkt, ecn)
        } else {
            self.drop(pkt, reason);
            None
        }
    }
}

/// Unit in which queue lengths, thresholds and the buffer limit are counted (aqm.md §1.1, A1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueUnit {
    Packets,
    Bytes,
}

/// The buffer limit `B` (waiting packets only; the packet in transmission is not counted, A2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub unit: QueueUnit,
    /// Maximum waiting packets (packet unit) or bytes (byte unit).
    pub value: u64,
}

impl Limit {
    pub fn packets(n: u64) -> Self {
        Limit { unit: QueueUnit::Packets, value: n }
    }
    pub fn bytes(n: u64) -> Self {
        Limit { unit: QueueUnit::Bytes, value: n }
    }
    /// `qlen` in this limit's unit.
    #[inline]
    pub fn qlen(&self, pkts: usize, bytes: u64) -> u64 {
        match self.unit {
            QueueUnit::Packets => pkts as u64,
            QueueUnit::Bytes => bytes,
        }
    }
    /// `size_unit(pkt)`: 1 in packet mode, the byte size in byte mode.
    #[inline]
    pub fn size_unit(&self, size: u32) -> u64 {
        match self.unit {
            QueueUnit::Packets => 1,
            QueueUnit::Bytes => size as u64,
        }
    }
    /// The common admission rule of aqm.md §1.1: admit iff `qlen + size_unit(pkt) <= B`.
    #[inline]
    pub fn admits(&self, pkts: usize, bytes: u64, size: u32) -> bool {
        self.qlen(pkts, bytes) + self.size_unit(size) <= self.value
    }
}

/// What a discipline may know about its link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkInfo {
    /// Link rate in bits per second.
    pub rate_bps: f64,
}

/// A queue discipline: the ops table.
///
/// Contract: `enqueue` either stores the packet and returns `true`, or reports it through
/// `cx.drop(pkt, reason)` and returns `false`; in both cases it may also report queued packets as
/// victims (`DropReason::MatchedVictim`). `dequeue` returns the next packet to transmit with the time
/// it was enqueued, or `None` when no live packet waits. `len`/`bytes` count live waiting packets.
pub trait Qdisc<P: Pkt> {
    fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool;
    fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)>;
    fn len(&self) -> usize;
    fn bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The transmitter finished a packet and the queue is empty (starts an idle period, §1.4).
    fn on_link_idle(&mut self, _now: Time) {}
    /// Period of the discipline's own timer (PI, REM, RAQM, PIE), or `None`. The timer first fires
    /// one period after t = 0 (aqm.md §1.5); the caller advances the link to the firing time first.
    fn timer_period(&self) -> Option<Time> {
        None
    }
    /// The periodic timer fired at `cx.now`.
    fn on_timer(&mut self, _cx: &mut Cx<'_, P>) {}
    /// Visit the live waiting packets from head to tail, with their enqueue times (for queue
    /// snapshots: the spatial distribution, M10). Doomed packets are not visited.
    fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time));
    /// Names of the controller-state variables this discipline exposes (e.g. RED's `avg`).
    fn state_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// Current values of the variables named by `state_names`, written into `out`.
    fn state(&self, _out: &mut [f64]) {}
    /// Whether this discipline isolates hosts and so wants to be told each flow's hosts
    /// ([`Qdisc::flow_hosts`]; CAKE).
    fn wants_hosts(&self) -> bool {
        false
    }
    /// Flow `flow` runs from host `src` to host `dst` (opaque host ids, in the flow's data
    /// direction). Called by the simulator and the emulator for disciplines that want it; a
    /// flow it was never told about is its own host at both ends.
    fn flow_hosts(&mut self, _flow: u32, _src: u32, _dst: u32) {}
    /// The bytes of state the discipline keeps, at most over the run so far: its own variables and
    /// tables (per-flow entries, bins, a shadow buffer, a drop history), not the waiting packets
    /// nor the structures that only hold or index them (the FIFO's ring, the leaky buffer's slots,
    /// tags and rank tree). The default is the discipline's own value (`size_of::<Self>()`: its
    /// scalars and the headers of its containers), right for every scheme whose state does not
    /// grow; a scheme with tables adds them at their largest (entries × bytes per entry as this
    /// implementation stores them).
    fn state_bytes(&self) -> u64
    where
        Self: Sized,
    {
        std::mem::size_of::<Self>() as u64
    }
}
