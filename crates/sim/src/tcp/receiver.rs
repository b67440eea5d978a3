//! The receiving side of a TCP connection, [`TcpReceiver`]: cumulative ACKs over an
//! out-of-order bitmap, delayed ACKs (RFC 5681 §4.2), the ECN echo (RFC 3168 §6.1.3) and, with
//! SACK recovery, the blocks each ACK reports ([`super::sack`]).
//!
//! The receiver ACKs every segment (ns-2's default sink) unless delayed ACKs are on: then every
//! `delack_count`-th in-order segment, or when `delack_timeout` expires, and at once on
//! out-of-order or duplicate segments and on segments that fill a hole.

use super::meter::TcpMeter;
use super::sack::{AckBlocks, Block, SackBlocks};
use super::{Recovery, TcpConfig};
use crate::packet::{Packet, PktKind, F_CE, F_CWR, F_ECE};
use aqm::Time;

/// Receiving side: cumulative ACKs with an out-of-order bitmap.
///
/// Its options (ACK size, delayed ACKs, the receive window) are the connection's `TcpConfig`,
/// which the group's connections share: the methods that need them take it from the caller
/// (the sender holds it) rather than each receiver keeping a copy (20 bytes a flow, issue 28).
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    rcv_nxt: u32,
    /// Ring bitmap of segments received above `rcv_nxt` (index = seq mod capacity).
    ooo: Bitmap,
    ooo_count: u32,
    unacked: u32,
    /// Delayed-ACK deadline, 0 when off.
    pub delack_deadline: Time,
    last_echo: Time,
    prio: u8,
    /// ECN: echo ECE on every ACK from a CE mark until a CWR arrives (RFC 3168 §6.1.3).
    ece: bool,
    /// SACK blocks to report (SACK recovery only).
    sack: Option<Box<SackBlocks>>,
}

/// The out-of-order bitmap's words: one held inline (most connections never need more: it covers
/// 64 segments above `rcv_nxt`), or, once it has grown, all of them on the heap. A one-word heap
/// bitmap took 32 bytes of allocator memory per connection besides its 16-byte pointer; the
/// grown words sit behind one thin pointer (8 bytes, not a slice's 16), read through one more
/// indirection by the few connections whose segments arrive that far out of order.
#[derive(Debug, Clone, Default)]
struct Bitmap {
    word: u64,
    /// `None` (no allocation) while `word` is the bitmap.
    more: Option<Box<Box<[u64]>>>,
}

impl Bitmap {
    /// A bitmap of `n` zero words.
    fn zeros(n: usize) -> Self {
        if n <= 1 {
            Bitmap::default()
        } else {
            Bitmap { word: 0, more: Some(Box::new(vec![0; n].into_boxed_slice())) }
        }
    }

    #[inline]
    fn words(&self) -> &[u64] {
        match &self.more {
            None => std::slice::from_ref(&self.word),
            Some(m) => m,
        }
    }

    #[inline]
    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.more {
            None => std::slice::from_mut(&mut self.word),
            Some(m) => m,
        }
    }
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, prio: u8) -> Self {
        TcpReceiver {
            rcv_nxt: 0,
            ooo: Bitmap::default(),
            ooo_count: 0,
            unacked: 0,
            delack_deadline: 0,
            last_echo: 0,
            prio,
            ece: false,
            sack: (cfg.recovery == Recovery::Sack).then(|| Box::new(SackBlocks::new(cfg.max_window))),
        }
    }

    /// The SACK blocks of the ACK with serial `aux` (see [`super::sack`]); `None` without SACK.
    pub fn sack_blocks(&mut self, aux: u16) -> Option<AckBlocks> {
        self.sack.as_mut().and_then(|s| s.read(aux))
    }

    /// The connection is over: give back the out-of-order bitmap and the SACK ring (nothing is
    /// out of order any more; a late duplicate is still acknowledged, without blocks).
    pub fn release_buffers(&mut self) {
        if self.ooo_count == 0 {
            self.ooo = Bitmap::default();
        }
        if self.sack.is_some() {
            self.sack = Some(Box::new(SackBlocks::new(1)));
        }
    }

    /// The received block around out-of-order segment `s` (which is set in the bitmap).
    fn block_around(&self, s: u32) -> Block {
        let (mut l, mut r) = (s, s + 1);
        while l > self.rcv_nxt + 1 && self.bit(l - 1) {
            l -= 1;
        }
        while r - self.rcv_nxt < self.cap() && self.bit(r) {
            r += 1;
        }
        (l, r)
    }

    #[inline]
    fn cap(&self) -> u32 {
        (self.ooo.words().len() * 64) as u32
    }

    /// Make room for segment `s` (above `rcv_nxt`) if the receive window allows it: double the
    /// ring until it reaches `s`, moving the segments already held. Memory follows how far out of
    /// order segments actually arrive, not `max_window`: the ring grows (doubling, from one word)
    /// up to the power of two of words that covers `max_window`.
    fn make_room(&mut self, s: u32, cfg: &TcpConfig) {
        if s - self.rcv_nxt < self.cap() {
            return;
        }
        let words = (cfg.max_window as usize).div_ceil(64).max(1);
        let max_words = words.next_power_of_two().min(1 << 31);
        while s - self.rcv_nxt >= self.cap() && self.ooo.words().len() < max_words {
            let old_cap = self.cap();
            let held: Vec<u32> =
                (self.rcv_nxt..self.rcv_nxt + old_cap).filter(|&t| self.ooo_count > 0 && self.bit(t)).collect();
            self.ooo = Bitmap::zeros(self.ooo.words().len() * 2);
            for t in held {
                self.set(t, true);
            }
        }
    }
    #[inline]
    fn bit(&self, s: u32) -> bool {
        let i = (s % self.cap()) as usize;
        self.ooo.words()[i / 64] >> (i % 64) & 1 == 1
    }
    #[inline]
    fn set(&mut self, s: u32, v: bool) {
        let i = (s % self.cap()) as usize;
        let w = &mut self.ooo.words_mut()[i / 64];
        if v {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }

    pub fn rcv_nxt(&self) -> u32 {
        self.rcv_nxt
    }

    /// The ACK packet for the current state (`cfg`: the connection's options).
    pub fn ack(&mut self, cfg: &TcpConfig) -> Packet {
        self.unacked = 0;
        self.delack_deadline = 0;
        Packet {
            sent: self.last_echo,
            flow: 0, // set by the caller
            seq: self.rcv_nxt,
            size: cfg.ack_size,
            kind: PktKind::Ack,
            hop: 0,
            prio: self.prio,
            flags: if self.ece { F_ECE } else { 0 },
            aux: self.sack.as_mut().map(|s| s.stamp()).unwrap_or(0),
        }
    }

    /// A data segment arrived (`cfg`: the connection's options). Returns true if an ACK must be
    /// sent now (otherwise the delayed-ACK deadline may have been set).
    #[inline]
    pub fn on_data<M: TcpMeter>(&mut self, p: &Packet, now: Time, meter: &mut M, cfg: &TcpConfig) -> bool {
        let ce = p.flags & F_CE != 0;
        meter.segment_received(ce);
        self.last_echo = p.sent;
        // a scalable sender's receiver (RFC 8257 §3.2) echoes the CE state of the last segment,
        // and ACKs at once when that state changes; RFC 3168's holds ECE until CWR
        let mut ce_changed = false;
        if cfg.cc.scalable() {
            ce_changed = self.ece != ce;
            self.ece = ce;
        } else {
            if p.flags & F_CWR != 0 {
                self.ece = false;
            }
            if ce {
                self.ece = true;
            }
        }
        let s = p.seq;
        let mut first = false;
        let mut filled_hole = false;
        if s == self.rcv_nxt {
            first = true;
            self.rcv_nxt += 1;
            while self.ooo_count > 0 && self.bit(self.rcv_nxt) {
                let r = self.rcv_nxt;
                self.set(r, false);
                self.ooo_count -= 1;
                self.rcv_nxt += 1;
                filled_hole = true;
            }
        } else if s > self.rcv_nxt
            && {
                self.make_room(s, cfg);
                s - self.rcv_nxt < self.cap()
            }
            && !self.bit(s)
        {
            first = true;
            self.set(s, true);
            self.ooo_count += 1;
        }
        if self.sack.is_some() {
            let blk = (s > self.rcv_nxt && s - self.rcv_nxt < self.cap() && self.bit(s)).then(|| self.block_around(s));
            let nxt = self.rcv_nxt;
            if let Some(sack) = &mut self.sack {
                sack.update(blk, nxt);
            }
        }
        if first {
            meter.new_segment_received(s);
        }
        if !cfg.delayed_ack || ce_changed {
            return true;
        }
        let in_order = s + 1 == self.rcv_nxt && !filled_hole && self.ooo_count == 0 && first;
        if !in_order {
            return true;
        }
        self.unacked += 1;
        if self.unacked >= cfg.delack_count {
            return true;
        }
        if self.delack_deadline == 0 {
            self.delack_deadline = now.saturating_add(cfg.delack_timeout);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::FlowCounters;
    use crate::packet::F_ECT;

    fn data(seq: u32) -> Packet {
        Packet { sent: 0, flow: 0, seq, size: 1000, kind: PktKind::Data, hop: 0, prio: 1, flags: 0, aux: 0 }
    }

    #[test]
    fn receiver_counts_unique_and_acks_cumulatively() {
        let cfg = TcpConfig::default();
        let mut r = TcpReceiver::new(&cfg, 1);
        let mut c = FlowCounters::default();
        for s in [0, 1, 3, 4, 2, 2, 5, 1] {
            assert!(r.on_data(&data(s), 0, &mut c, &cfg));
        }
        assert_eq!(r.rcv_nxt(), 6);
        assert_eq!(c.delivered_pkts, 8);
        assert_eq!(c.unique_pkts, 6);
    }

    #[test]
    fn a_receiver_is_one_cache_line_and_grows_its_bitmap_when_far_out_of_order() {
        assert!(std::mem::size_of::<TcpReceiver>() <= 64);
        let cfg = TcpConfig { max_window: 1000, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&cfg, 1);
        let mut c = FlowCounters::default();
        // segments 1..300 arrive before 0: the bitmap grows from one word to eight
        for s in 1..300 {
            r.on_data(&data(s), 0, &mut c, &cfg);
        }
        assert_eq!(r.cap(), 512);
        assert_eq!(r.rcv_nxt(), 0);
        r.on_data(&data(0), 0, &mut c, &cfg);
        assert_eq!(r.rcv_nxt(), 300);
        assert_eq!(c.unique_pkts, 300);
        // beyond the receive window's words nothing is held (and the bitmap does not grow)
        let small = TcpConfig { max_window: 64, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&small, 1);
        r.on_data(&data(100), 0, &mut c, &small);
        assert_eq!((r.cap(), r.rcv_nxt(), c.unique_pkts), (64, 0, 300));
    }

    #[test]
    fn receiver_echoes_ce_until_cwr() {
        let cfg = TcpConfig { ecn: true, ..TcpConfig::default() };
        let mut r = TcpReceiver::new(&cfg, 1);
        let mut c = FlowCounters::default();
        let mut d = data(0);
        d.flags = F_ECT | F_CE;
        r.on_data(&d, 0, &mut c, &cfg);
        assert!(r.ack(&cfg).flags & F_ECE != 0);
        r.on_data(&data(1), 0, &mut c, &cfg);
        assert!(r.ack(&cfg).flags & F_ECE != 0, "ECE stays until CWR");
        let mut w = data(2);
        w.flags = F_ECT | F_CWR;
        r.on_data(&w, 0, &mut c, &cfg);
        assert!(r.ack(&cfg).flags & F_ECE == 0);
        assert_eq!(c.ce_marks, 1);
    }
}
