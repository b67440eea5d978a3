//! Packet traces in the pcap format (libpcap's savefile, nanosecond timestamps, raw IPv4), so that
//! Wireshark, tshark, tcpdump and any pcap library read a simulated link like a captured one.
//!
//! Each record is the packet's headers as a real stack would have sent them — IPv4 (addresses per
//! host, ECN field, DSCP from the priority level) and TCP (ports per flow, sequence and
//! acknowledgement numbers in bytes, ACK/ECE/CWR flags) or UDP — with the simulated time as its
//! timestamp and the packet's size on the wire as its original length; the payload is not kept
//! (`incl_len` is the header length, as with `tcpdump -s 40`). Wireshark's TCP analysis
//! (retransmissions, duplicate ACKs, sequence graphs) works on these headers.
//!
//! A [`PcapWriter`] writes through a buffered file: one record costs a bounded copy into a stack
//! array and the buffer, no allocation. The simulator calls it only for links and points a scenario
//! asks to capture.

use crate::packet::{Packet, PktKind, F_CE, F_CWR, F_ECE, F_ECT};
use aqm::Time;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// pcap magic for nanosecond timestamps.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_RAW: each record starts with an IPv4 header.
pub const LINKTYPE_RAW: u32 = 101;
/// Bytes kept per record: IPv4 + TCP headers (40) or IPv4 + UDP (28).
pub const SNAPLEN: u32 = 40;
/// TCP port of receivers (data flows to it); senders use `1024 + flow % 64512`.
pub const TCP_PORT: u16 = 5001;
/// UDP port of receivers.
pub const UDP_PORT: u16 = 9;

/// The IPv4 address of host number `h`: 10.0.0.1, 10.0.0.2, ... (`h` from 0).
pub fn host_addr(h: u32) -> [u8; 4] {
    let n = h.wrapping_add(1);
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// The sender's port of flow `flow`.
pub fn flow_port(flow: u32) -> u16 {
    1024 + (flow % 64512) as u16
}

/// What a record needs besides the packet: who sends the flow's data and who receives it, the
/// transport, and the payload bytes of one of its data segments (sequence numbers count bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowInfo {
    /// Host number of the data sender (the source of data and UDP packets).
    pub sender: u32,
    /// Host number of the data receiver (the source of ACKs and web requests).
    pub receiver: u32,
    /// Payload bytes of a full data segment (the wire size less 40 header bytes), at least 1.
    pub payload: u32,
}

/// A pcap file being written.
pub struct PcapWriter {
    out: BufWriter<File>,
    records: u64,
}

impl PcapWriter {
    /// Create (or truncate) `path` and write the file header.
    pub fn create(path: &Path) -> io::Result<PcapWriter> {
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, records: 0 })
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Append one record: packet `p` of the flow described by `f`, seen at time `t`.
    #[inline]
    pub fn write(&mut self, t: Time, p: &Packet, f: &FlowInfo) -> io::Result<()> {
        let mut rec = [0u8; 16 + SNAPLEN as usize];
        let len = encode(p, f, &mut rec[16..]);
        let secs = (t / 1_000_000_000).min(u32::MAX as u64) as u32;
        let nanos = (t % 1_000_000_000) as u32;
        let orig = (p.size as u32).max(len as u32);
        rec[0..4].copy_from_slice(&secs.to_le_bytes());
        rec[4..8].copy_from_slice(&nanos.to_le_bytes());
        rec[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&orig.to_le_bytes());
        self.records += 1;
        self.out.write_all(&rec[..16 + len])
    }

    /// Flush the buffer to the file.
    pub fn finish(mut self) -> io::Result<u64> {
        self.out.flush()?;
        Ok(self.records)
    }
}

/// The headers of `p` into `buf`; returns their length (40 for TCP, 28 for UDP).
pub fn encode(p: &Packet, f: &FlowInfo, buf: &mut [u8]) -> usize {
    let (from, to, reverse) = match p.kind {
        PktKind::Data | PktKind::Udp => (f.sender, f.receiver, false),
        PktKind::Ack | PktKind::Request | PktKind::Echo => (f.receiver, f.sender, true),
    };
    let udp = matches!(p.kind, PktKind::Udp | PktKind::Echo);
    let hdr = if udp { 28 } else { 40 };
    let total = (p.size as usize).max(hdr).min(u16::MAX as usize) as u16;
    // IPv4
    let ecn = if p.flags & F_CE != 0 {
        3
    } else if p.flags & F_ECT != 0 {
        2 // ECT(0)
    } else {
        0
    };
    let dscp = (p.prio.saturating_sub(1).min(7)) << 3; // class selector CS(prio - 1)
    buf[0] = 0x45;
    buf[1] = (dscp << 2) | ecn;
    buf[2..4].copy_from_slice(&total.to_be_bytes());
    buf[4..6].copy_from_slice(&(p.seq as u16).to_be_bytes());
    buf[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    buf[8] = 64;
    buf[9] = if udp { 17 } else { 6 };
    buf[10..12].copy_from_slice(&[0, 0]);
    buf[12..16].copy_from_slice(&host_addr(from));
    buf[16..20].copy_from_slice(&host_addr(to));
    let csum = ip_checksum(&buf[..20]);
    buf[10..12].copy_from_slice(&csum.to_be_bytes());
    let (sport, dport) = {
        let (s, d) = (flow_port(p.flow), if udp { UDP_PORT } else { TCP_PORT });
        if reverse {
            (d, s)
        } else {
            (s, d)
        }
    };
    buf[20..22].copy_from_slice(&sport.to_be_bytes());
    buf[22..24].copy_from_slice(&dport.to_be_bytes());
    if udp {
        buf[24..26].copy_from_slice(&(total - 20).to_be_bytes());
        buf[26..28].copy_from_slice(&[0, 0]); // no checksum (allowed over IPv4)
        return 28;
    }
    let bytes = |n: u32| (n as u64 * f.payload.max(1) as u64) as u32; // wraps like TCP's 32-bit space
    let (seq, ack, mut flags) = match p.kind {
        PktKind::Data => (bytes(p.seq), 0, 0x10u8), // ACK set, as on every segment of an open connection
        PktKind::Ack => (0, bytes(p.seq), 0x10u8),
        _ => (0, 0, 0x18u8), // web request: ACK + PSH
    };
    if p.flags & F_ECE != 0 {
        flags |= 0x40;
    }
    if p.flags & F_CWR != 0 {
        flags |= 0x80;
    }
    buf[24..28].copy_from_slice(&seq.to_be_bytes());
    buf[28..32].copy_from_slice(&ack.to_be_bytes());
    buf[32] = 5 << 4;
    buf[33] = flags;
    buf[34..36].copy_from_slice(&u16::MAX.to_be_bytes());
    buf[36..40].copy_from_slice(&[0, 0, 0, 0]); // checksum (payload not kept) and urgent pointer
    40
}

/// The Internet checksum (RFC 1071) of an IPv4 header.
pub fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in h.chunks(2) {
        sum += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(kind: PktKind, seq: u32, size: u16, flags: u8) -> Packet {
        Packet { sent: 0, flow: 7, seq, size, kind, hop: 0, prio: 2, flags, aux: 0 }
    }

    #[test]
    fn tcp_data_and_ack_headers() {
        let f = FlowInfo { sender: 0, receiver: 300, payload: 960 };
        let mut b = [0u8; 40];
        assert_eq!(encode(&pkt(PktKind::Data, 5, 1000, F_ECT), &f, &mut b), 40);
        assert_eq!(b[0], 0x45);
        assert_eq!(b[1] & 3, 2, "ECT(0)");
        assert_eq!(b[1] >> 2, 8, "CS1 for priority 2");
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 1000);
        assert_eq!(b[9], 6);
        assert_eq!(&b[12..16], &[10, 0, 0, 1]);
        assert_eq!(&b[16..20], &[10, 0, 1, 45]);
        assert_eq!(ip_checksum(&b[..20]), 0, "a valid header sums to zero");
        assert_eq!(u16::from_be_bytes([b[20], b[21]]), flow_port(7));
        assert_eq!(u16::from_be_bytes([b[22], b[23]]), TCP_PORT);
        assert_eq!(u32::from_be_bytes([b[24], b[25], b[26], b[27]]), 5 * 960);
        assert_eq!(b[33], 0x10, "ACK set on data, as on any segment of an open connection");
        // the ACK goes the other way and acknowledges bytes
        encode(&pkt(PktKind::Ack, 6, 40, F_ECE | F_CE), &f, &mut b);
        assert_eq!(&b[12..16], &[10, 0, 1, 45]);
        assert_eq!(u16::from_be_bytes([b[22], b[23]]), flow_port(7));
        assert_eq!(u32::from_be_bytes([b[28], b[29], b[30], b[31]]), 6 * 960);
        assert_eq!(b[33], 0x50, "ACK + ECE");
        assert_eq!(b[1] & 3, 3, "CE");
    }

    #[test]
    fn udp_header_and_small_packets() {
        let f = FlowInfo { sender: 2, receiver: 3, payload: 1 };
        let mut b = [0u8; 40];
        assert_eq!(encode(&pkt(PktKind::Udp, 1, 500, 0), &f, &mut b), 28);
        assert_eq!(b[9], 17);
        assert_eq!(u16::from_be_bytes([b[24], b[25]]), 480);
        // a packet smaller than its headers is recorded with the headers' length
        encode(&pkt(PktKind::Udp, 1, 10, 0), &f, &mut b);
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 28);
    }

    #[test]
    fn file_layout() {
        let dir = std::env::temp_dir().join(format!("aqmlab-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let mut w = PcapWriter::create(&path).unwrap();
        let f = FlowInfo { sender: 0, receiver: 1, payload: 960 };
        w.write(1_500_000_123, &pkt(PktKind::Data, 0, 1000, 0), &f).unwrap();
        w.write(2_000_000_000, &pkt(PktKind::Udp, 0, 1000, 0), &f).unwrap();
        assert_eq!(w.finish().unwrap(), 2);
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len(), 24 + 16 + 40 + 16 + 28);
        assert_eq!(u32::from_le_bytes(b[0..4].try_into().unwrap()), MAGIC_NS);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), LINKTYPE_RAW);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 500_000_123);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 40);
        assert_eq!(u32::from_le_bytes(b[36..40].try_into().unwrap()), 1000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
