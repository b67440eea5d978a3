//! Real IPv4 packets as the forwarder sees them: the few header fields it reads (addresses,
//! ports, protocol, DSCP, ECN, TCP sequence numbers), the packet type the queue disciplines are
//! handed, and the one header field it writes (the ECN Congestion Experienced mark, RFC 3168 §5,
//! with the header checksum updated incrementally, RFC 1624).

use aqm::Pkt;

pub const PROTO_ICMP: u8 = 1;
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// TCP flags the forwarder looks at.
pub const TCP_SYN: u8 = 0x02;

/// A flow: protocol and the two endpoints, oriented from the sender side (the namespaces of the
/// flow groups) to the receiver side, whichever way the packet travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FlowKey {
    pub proto: u8,
    /// Sender-side address and port (host byte order).
    pub s_addr: u32,
    pub s_port: u16,
    /// Receiver-side address and port.
    pub r_addr: u32,
    pub r_port: u16,
}

/// The header fields of one IPv4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub proto: u8,
    pub src: u32,
    pub dst: u32,
    /// Ports for TCP and UDP, 0 otherwise.
    pub sport: u16,
    pub dport: u16,
    /// Differentiated Services codepoint (the upper six bits of the old TOS byte, RFC 2474).
    pub dscp: u8,
    /// The two ECN bits (RFC 3168): 0 not ECN-capable, 1 or 2 ECT, 3 CE.
    pub ecn: u8,
    /// IP total length: the size on the wire.
    pub len: u32,
    /// Transport payload bytes (TCP or UDP data; the IP payload for other protocols).
    pub payload: u32,
    /// TCP sequence number and flags (0 for other protocols).
    pub seq: u32,
    pub flags: u8,
}

/// Read the header of an IPv4 packet of `n` bytes; `None` for anything else (IPv6, truncated or
/// malformed packets, fragments after the first, which carry no ports).
pub fn parse(b: &[u8]) -> Option<Header> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    let len = u16::from_be_bytes([b[2], b[3]]) as usize;
    if ihl < 20 || len < ihl || len > b.len() {
        return None;
    }
    let frag_offset = u16::from_be_bytes([b[6], b[7]]) & 0x1fff;
    let proto = b[9];
    let src = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
    let dst = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
    let mut h = Header {
        proto,
        src,
        dst,
        sport: 0,
        dport: 0,
        dscp: b[1] >> 2,
        ecn: b[1] & 3,
        len: len as u32,
        payload: (len - ihl) as u32,
        seq: 0,
        flags: 0,
    };
    let l4 = &b[ihl..len];
    if frag_offset != 0 {
        return (proto != PROTO_TCP && proto != PROTO_UDP).then_some(h);
    }
    match proto {
        PROTO_TCP => {
            if l4.len() < 20 {
                return None;
            }
            let off = ((l4[12] >> 4) as usize) * 4;
            if off < 20 || off > l4.len() {
                return None;
            }
            h.sport = u16::from_be_bytes([l4[0], l4[1]]);
            h.dport = u16::from_be_bytes([l4[2], l4[3]]);
            h.seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
            h.flags = l4[13];
            h.payload = (l4.len() - off) as u32;
        }
        PROTO_UDP => {
            if l4.len() < 8 {
                return None;
            }
            h.sport = u16::from_be_bytes([l4[0], l4[1]]);
            h.dport = u16::from_be_bytes([l4[2], l4[3]]);
            h.payload = (l4.len() - 8) as u32;
        }
        _ => {}
    }
    Some(h)
}

/// Set the ECN field of an IPv4 header to CE (binary 11) and update the header checksum
/// incrementally (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
pub fn set_ce(b: &mut [u8]) {
    if b.len() < 20 || b[1] & 3 == 3 {
        return;
    }
    let old = u16::from_be_bytes([b[0], b[1]]);
    b[1] |= 3;
    let new = u16::from_be_bytes([b[0], b[1]]);
    let hc = u16::from_be_bytes([b[10], b[11]]);
    let mut sum = (!hc as u32) + (!old as u32) + new as u32;
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let out = !(sum as u16);
    b[10..12].copy_from_slice(&out.to_be_bytes());
}

/// The IPv4 header checksum of `b[..ihl]` (for tests and for building packets).
pub fn header_checksum(b: &[u8]) -> u16 {
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    let mut sum = 0u32;
    for i in (0..ihl).step_by(2) {
        if i != 10 {
            sum += u16::from_be_bytes([b[i], b[i + 1]]) as u32;
        }
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Direction of travel: sender side to receiver side (data), or back (ACKs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Fwd,
    Rev,
}

/// The packet handed to the queue disciplines: a handle on the bytes in the buffer pool plus
/// what the disciplines and the forwarder need to know without touching them.
#[derive(Debug, Clone, Copy)]
pub struct EPkt {
    /// Slot of the bytes in the buffer pool.
    pub slot: u32,
    /// Index of the packet's flow (its 5-tuple) in the flow table.
    pub flow: u32,
    /// Size on the wire (IP total length).
    pub size: u32,
    /// Links of the packet's path, and which of them it is on.
    pub route: [u32; 3],
    pub hop: u8,
    /// Port the packet leaves by after its last link.
    pub out: u16,
    pub dir: Dir,
    /// DiffServ priority level (1 + the DSCP's class selector bits) and the RIO in-profile mark
    /// (AF drop precedence 1): see `dscp_priority`.
    pub prio: u8,
    pub in_profile: bool,
    /// ECN-capable transport, and marked CE by a discipline (written into the bytes when the
    /// packet leaves the queue).
    pub ect: bool,
    pub ce: bool,
    /// The ECN field held ECT(1) or CE on arrival: the L4S identifier (RFC 9331 §5.1).
    pub l4s: bool,
    /// A data packet (TCP segment with payload, UDP datagram, anything not TCP); false for pure
    /// TCP ACKs and SYN/FIN without data.
    pub data: bool,
    /// A TCP segment whose sequence number is below the highest already sent on its flow.
    pub retx: bool,
    /// Transport payload bytes.
    pub payload: u32,
    /// TCP: sequence number one past the segment's last byte.
    pub seq_end: u32,
}

impl Pkt for EPkt {
    #[inline]
    fn flow(&self) -> u32 {
        self.flow
    }
    #[inline]
    fn size(&self) -> u32 {
        self.size
    }
    #[inline]
    fn prio(&self) -> u8 {
        self.prio
    }
    #[inline]
    fn in_profile(&self) -> bool {
        self.in_profile
    }
    #[inline]
    fn ecn_capable(&self) -> bool {
        self.ect
    }
    #[inline]
    fn mark_ce(&mut self) {
        self.ce = true;
    }
    #[inline]
    fn l4s(&self) -> bool {
        self.l4s || self.ce
    }
}

/// Priority level and in-profile mark from a DSCP: the class selector bits (RFC 2474 §4.2.2, the
/// DSCP's upper three bits) give level `1 + class` (CS0, best effort, is level 1; CS7 level 8),
/// and the Assured Forwarding drop-precedence bits `010` (AFx1, low drop precedence, RFC 2597)
/// mark a packet in profile.
#[inline]
pub fn dscp_priority(dscp: u8) -> (u8, bool) {
    (1 + (dscp >> 3), dscp & 7 == 2)
}

/// The DSCP the built-in senders set for a priority level (1–8) and in-profile mark: the inverse
/// of [`dscp_priority`].
pub fn priority_dscp(level: u8, in_profile: bool) -> u8 {
    ((level.clamp(1, 8) - 1) << 3) | if in_profile { 2 } else { 0 }
}

/// Build an IPv4 packet of `len` bytes (for tests and benchmarks): header with a valid checksum,
/// then a UDP or TCP header; the payload is zero.
#[allow(clippy::too_many_arguments)]
pub fn build(
    proto: u8,
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    len: usize,
    dscp: u8,
    ecn: u8,
    seq: u32,
) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[0] = 0x45;
    b[1] = (dscp << 2) | (ecn & 3);
    b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    b[8] = 64;
    b[9] = proto;
    b[12..16].copy_from_slice(&src.to_be_bytes());
    b[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = header_checksum(&b);
    b[10..12].copy_from_slice(&c.to_be_bytes());
    b[20..22].copy_from_slice(&sport.to_be_bytes());
    b[22..24].copy_from_slice(&dport.to_be_bytes());
    match proto {
        PROTO_UDP => b[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes()),
        PROTO_TCP => {
            b[24..28].copy_from_slice(&seq.to_be_bytes());
            b[32] = 5 << 4;
            b[33] = 0x10; // ACK
        }
        _ => {}
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
        u32::from_be_bytes([a, b, c, d])
    }

    #[test]
    fn parses_udp_and_tcp() {
        let p = build(PROTO_UDP, ip(10, 1, 0, 1), ip(10, 2, 0, 1), 4000, 9, 1000, 8, 0, 0);
        let h = parse(&p).unwrap();
        assert_eq!((h.proto, h.src, h.dst, h.sport, h.dport), (PROTO_UDP, ip(10, 1, 0, 1), ip(10, 2, 0, 1), 4000, 9));
        assert_eq!((h.len, h.payload, h.dscp, h.ecn), (1000, 972, 8, 0));
        let t = build(PROTO_TCP, ip(10, 1, 0, 2), ip(10, 2, 0, 2), 5000, 9, 1052, 0, 2, 77);
        let h = parse(&t).unwrap();
        assert_eq!((h.proto, h.seq, h.payload, h.ecn), (PROTO_TCP, 77, 1012, 2));
    }

    #[test]
    fn rejects_what_is_not_ipv4() {
        assert!(parse(&[0x60; 40]).is_none()); // IPv6
        assert!(parse(&[0x45; 10]).is_none()); // truncated
        let mut p = build(PROTO_UDP, 1, 2, 3, 4, 100, 0, 0, 0);
        p[2..4].copy_from_slice(&200u16.to_be_bytes()); // length beyond the buffer
        assert!(parse(&p).is_none());
    }

    #[test]
    fn ce_mark_keeps_the_checksum_valid() {
        for ecn in [1u8, 2] {
            for dscp in [0u8, 10, 63] {
                let mut p = build(PROTO_TCP, ip(10, 1, 0, 9), ip(10, 2, 3, 4), 1, 2, 60, dscp, ecn, 5);
                set_ce(&mut p);
                let h = parse(&p).unwrap();
                assert_eq!((h.ecn, h.dscp), (3, dscp));
                assert_eq!(u16::from_be_bytes([p[10], p[11]]), header_checksum(&p));
            }
        }
    }

    #[test]
    fn dscp_round_trips_priority_and_profile() {
        for level in 1..=8u8 {
            for inp in [false, true] {
                assert_eq!(dscp_priority(priority_dscp(level, inp)), (level, inp));
            }
        }
        assert_eq!(dscp_priority(0), (1, false)); // best effort
        assert_eq!(dscp_priority(46), (6, false)); // EF: class 5
        assert_eq!(dscp_priority(10), (2, true)); // AF11
        assert_eq!(dscp_priority(12), (2, false)); // AF12
    }
}
