//! What a discipline may read of a packet (aqm.md §1.1).
//!
//! The simulator owns the packet type; disciplines see it only through this trait, so the crate has
//! no simulator dependency. A packet's transport kind (data, ACK, UDP) is deliberately absent:
//! the specification forbids AQMs to read it.

/// Packet fields a discipline may use.
pub trait Pkt: Copy {
    /// Opaque flow identifier; equality is the only meaningful operation.
    fn flow(&self) -> u32;
    /// Size on the wire in bytes.
    fn size(&self) -> u32;
    /// DiffServ priority level, 1..M (CHOKeW); larger is higher priority.
    fn prio(&self) -> u8 {
        1
    }
    /// RIO in-profile mark.
    fn in_profile(&self) -> bool {
        false
    }
    /// The sender is ECN-capable (ECT codepoint): the packet may be marked instead of dropped.
    fn ecn_capable(&self) -> bool {
        false
    }
    /// Set the Congestion Experienced codepoint (only called on ECN-capable packets).
    fn mark_ce(&mut self) {}
    /// The packet carries the L4S identifier: ECN field ECT(1) or CE (RFC 9331 §5.1), which
    /// dual-queue disciplines (DualPI2) classify into their low-latency queue.
    fn l4s(&self) -> bool {
        false
    }
    /// CSFQ's label: the rate of the packet's flow in bits per second, as estimated where the flow
    /// entered the network (or lowered by a congested core router on the way), or `None` for an
    /// unlabelled packet.
    fn rate_label(&self) -> Option<f64> {
        None
    }
    /// Set CSFQ's label (`rate_bps` > 0). A packet type without room for a label ignores it.
    fn set_rate_label(&mut self, _rate_bps: f64) {}
}
