//! The simulator's packet: a small `Copy` value moved through ring buffers, never allocated.

use aqm::{Pkt, Time};

/// What a packet carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PktKind {
    /// TCP data segment.
    Data = 0,
    /// TCP acknowledgement.
    Ack = 1,
    /// UDP datagram.
    Udp = 2,
    /// A web request (receiver to sender, on the ACK path); opens the response connection.
    Request = 3,
    /// A probe's echo (receiver to sender, on the ACK path), carrying the probe's `sent`.
    Echo = 4,
}

/// Flag: this data segment is a retransmission.
pub const F_RETX: u8 = 1;
/// Flag: RIO in-profile mark.
pub const F_IN_PROFILE: u8 = 2;
/// Flag: ECN-capable transport (ECT codepoint), set by an ECN sender on new data (RFC 3168).
pub const F_ECT: u8 = 4;
/// Flag: Congestion Experienced, set by an AQM instead of an early drop.
pub const F_CE: u8 = 8;
/// ACK flag: ECN-Echo, the receiver saw CE.
pub const F_ECE: u8 = 16;
/// Data flag: Congestion Window Reduced, the sender answered an ECE.
pub const F_CWR: u8 = 32;
/// UDP flag: a probe the receiver echoes back (`app = "probe"`, `echo = true`).
pub const F_ECHO: u8 = 64;
/// Flag (with [`F_ECT`]): the ECT(1) codepoint, the L4S identifier (RFC 9331 §5.1), set by a
/// scalable sender (DCTCP in L4S mode, Prague); without it an ECN-capable packet carries ECT(0).
pub const F_ECT1: u8 = 128;

/// A packet on the wire (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// When the source created it (data/UDP) or, for an ACK (a probe's echo), the echoed creation
    /// time of the data segment (the probe) that triggered it.
    pub sent: Time,
    pub flow: u32,
    /// Data/UDP: sequence number in packets. ACK: cumulative next expected sequence number.
    pub seq: u32,
    /// Size on the wire in bytes.
    pub size: u16,
    pub kind: PktKind,
    /// Index of the next link on the packet's path.
    pub hop: u8,
    /// DiffServ priority level (1 = lowest).
    pub prio: u8,
    pub flags: u8,
    /// ACK: serial number of the ACK, under which the receiver filed its SACK blocks (tcp::sack).
    /// Data and UDP: CSFQ's rate label ([`label_code`]; 0 = unlabelled).
    pub aux: u16,
}

/// Steps of CSFQ's 16-bit label per octave of rate: a relative precision of 2^(1/1024) − 1, 0.07 %.
const LABEL_STEPS: f64 = 1024.0;

/// CSFQ's label of a rate in bits per second as 16 bits: `1 + round(1024 · log2(rate))` for a rate of
/// at least 1 b/s (lower rates are labelled 1 b/s), up to 2^64 b/s; 0 is kept for "unlabelled".
#[inline]
pub fn label_code(rate_bps: f64) -> u16 {
    let c = 1.0 + (LABEL_STEPS * libm::log2(rate_bps.max(1.0))).round();
    c.min(u16::MAX as f64) as u16
}

/// The rate (bits per second) of a label code (`code >= 1`).
#[inline]
pub fn label_rate(code: u16) -> f64 {
    libm::exp2((code - 1) as f64 / LABEL_STEPS)
}

impl Packet {
    /// A placeholder (an unused place in a pipe's ring).
    pub const EMPTY: Packet =
        Packet { sent: 0, flow: 0, seq: 0, size: 0, kind: PktKind::Data, hop: 0, prio: 0, flags: 0, aux: 0 };
}

impl Pkt for Packet {
    #[inline]
    fn flow(&self) -> u32 {
        self.flow
    }
    #[inline]
    fn size(&self) -> u32 {
        self.size as u32
    }
    #[inline]
    fn prio(&self) -> u8 {
        self.prio
    }
    #[inline]
    fn in_profile(&self) -> bool {
        self.flags & F_IN_PROFILE != 0
    }
    #[inline]
    fn ecn_capable(&self) -> bool {
        self.flags & F_ECT != 0
    }
    #[inline]
    fn mark_ce(&mut self) {
        self.flags |= F_CE;
    }
    /// ECT(1) or CE (RFC 9331 §5.1: a CE packet goes to the L4S queue whatever it carried before).
    #[inline]
    fn l4s(&self) -> bool {
        self.flags & (F_ECT1 | F_CE) != 0
    }
    /// Data and UDP packets carry CSFQ's label in `aux` (an ACK's `aux` is its SACK serial, so
    /// ACKs are never labelled).
    #[inline]
    fn rate_label(&self) -> Option<f64> {
        (self.aux != 0 && matches!(self.kind, PktKind::Data | PktKind::Udp)).then(|| label_rate(self.aux))
    }
    #[inline]
    fn set_rate_label(&mut self, rate_bps: f64) {
        if matches!(self.kind, PktKind::Data | PktKind::Udp) {
            self.aux = label_code(rate_bps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_is_small() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 24);
    }

    /// CSFQ's labels: within 0.04 % of the rate from 1 b/s to 10^15 b/s, monotone, 0 reserved;
    /// ACKs keep their SACK serial.
    #[test]
    fn rate_labels_round_trip() {
        let mut prev = 0;
        for e in 0..=150 {
            let r = 10f64.powf(e as f64 / 10.0);
            let c = label_code(r);
            assert!(c >= 1 && c >= prev);
            prev = c;
            let back = label_rate(c);
            assert!((back / r - 1.0).abs() < 3.5e-4, "{r} -> {c} -> {back}");
        }
        assert_eq!(label_code(0.0), 1);
        let mut p = Packet { kind: PktKind::Udp, ..Packet::EMPTY };
        assert_eq!(p.rate_label(), None);
        p.set_rate_label(2e6);
        assert!((p.rate_label().unwrap() / 2e6 - 1.0).abs() < 3.5e-4);
        let mut ack = Packet { kind: PktKind::Ack, aux: 77, ..Packet::EMPTY };
        ack.set_rate_label(1e6);
        assert_eq!((ack.aux, ack.rate_label()), (77, None));
    }
}
