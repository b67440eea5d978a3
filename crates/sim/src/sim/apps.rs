//! The hosts' side of the simulation: flows start and stop, UDP sources send, TCP senders and
//! receivers get their packets and timers, short connections arrive and web sessions ask for pages.

use super::Sim;
use crate::event::{EventQueue, Kind};
use crate::hosts::{
    start_time, tcp_app, App, Flow, TimerKey, DELACK_SLOT, NO_SESSION, NO_TIMER, RTO_SLOT, TIMER_SLOTS,
};
use crate::measure::FlowCounters;
use crate::net::{Network, Route};
use crate::packet::{Packet, PktKind, F_ECHO, F_IN_PROFILE, F_RETX};
use crate::scenario::{Scenario, StartSpec, TcpApp, Transport};
use crate::tcp::{Ack, Cx, TcpConfig};
use crate::traffic::onoff::UdpSource;
use crate::traffic::short::ShortGen;
use crate::traffic::web::Session;
use crate::traffic::{bulk, web::WebSpec};
use aqm::rng::Rng;
use aqm::Time;
use std::sync::Arc;

/// The flows, generators and sessions of a scenario at t = 0, with their first events scheduled.
pub(super) struct Traffic {
    pub flows: Vec<Flow>,
    pub routes: Vec<Route>,
    pub shorts: Vec<(u32, ShortGen, u32)>,
    pub sessions: Vec<Session>,
    /// Each TCP group's options, shared by its senders (`None` for UDP groups).
    pub tcp_cfgs: Vec<Option<Arc<TcpConfig>>>,
}

impl Traffic {
    pub fn new(sc: &Scenario, seed: u64, net: &Network, ev: &mut EventQueue) -> Traffic {
        let n = sc.n_static_flows();
        let mut flows = crate::mem::huge_vec(n);
        let mut routes = crate::mem::huge_vec(n);
        let mut shorts = Vec::new();
        let mut sessions = Vec::new();
        let mut next_host = 0u32;
        let tcp_cfgs: Vec<Option<Arc<TcpConfig>>> = sc
            .groups
            .iter()
            .map(|g| match &g.transport {
                Transport::Tcp { cfg, .. } => Some(Arc::new(*cfg)),
                _ => None,
            })
            .collect();
        for (gi, g) in sc.groups.iter().enumerate() {
            let first_host = next_host;
            next_host += g.count;
            let stop = g.stop.unwrap_or(Time::MAX);
            let mut flags = if g.in_profile { F_IN_PROFILE } else { 0 };
            if let Transport::Udp { probe: Some(p), .. } = &g.transport {
                if p.echo {
                    flags |= F_ECHO;
                }
            }
            match &g.transport {
                Transport::Tcp { app: TcpApp::Short(spec), .. } => {
                    // arrivals from the group's start (the first after one inter-arrival time)
                    let rng = Rng::stream(seed, &format!("arrivals:{}", g.name), 0);
                    let mut gen = ShortGen::new(*spec, g.count, rng);
                    let from = match g.start {
                        StartSpec::At(t) => t,
                        StartSpec::Uniform(lo, _) => lo,
                    };
                    let t = from.saturating_add(gen.gap());
                    if t < sc.duration && t < stop {
                        ev.push(t, Kind::Arrive, shorts.len() as u32);
                    }
                    shorts.push((gi as u32, gen, first_host));
                }
                Transport::Tcp { app: TcpApp::Web(_), .. } => {
                    for i in 0..g.count {
                        let mut rng = Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
                        let start = start_time(g.start, &mut rng);
                        if start < sc.duration && start < stop {
                            ev.push(start, Kind::Session, sessions.len() as u32);
                        }
                        sessions.push(Session::new(first_host + i, gi as u32, rng));
                    }
                }
                _ => {
                    for i in 0..g.count {
                        let fid = flows.len() as u32;
                        let mut rng = Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
                        let start = start_time(g.start, &mut rng);
                        let app = match &g.transport {
                            Transport::Tcp { cfg, app: TcpApp::Bulk { size } } => {
                                let limit = bulk::segments(*size, cfg.mss);
                                let cfg = tcp_cfgs[gi].as_ref().expect("a TCP group");
                                tcp_app(cfg, g.priority, limit)
                            }
                            Transport::Udp { cbr, onoff, .. } => {
                                let onoff =
                                    onoff.map(|o| (o, Rng::stream(seed, &format!("onoff:{}", g.name), i as u64)));
                                let mut src = UdpSource::new(*cbr, onoff);
                                src.set_horizon(stop.min(sc.duration));
                                App::Udp(src)
                            }
                            Transport::Tcp { .. } => unreachable!("dynamic TCP apps handled above"),
                        };
                        if start < sc.duration {
                            ev.push(start, Kind::Start, fid);
                            if stop < sc.duration {
                                ev.push(stop, Kind::Stop, fid);
                            }
                        }
                        let host = first_host + i;
                        routes.push(net.host_routes[host as usize]);
                        flows.push(Flow {
                            group: gi as u32,
                            host,
                            start,
                            stop,
                            prio: g.priority,
                            flags,
                            session: NO_SESSION,
                            awaiting_request: false,
                            app,
                        });
                    }
                }
            }
        }
        Traffic { flows, routes, shorts, sessions, tcp_cfgs }
    }
}

impl Sim {
    /// A packet reached the end of its path: its receiver (data, UDP, a web request) or its
    /// sender (an ACK).
    pub(super) fn deliver(&mut self, pkt: Packet) {
        let fi = pkt.flow as usize;
        let now = self.now;
        match pkt.kind {
            PktKind::Data => {
                if let Some(l) = self.lat.as_deref_mut() {
                    l.one_way(fi, self.flows[fi].group, pkt.sent, now);
                }
                let c = &mut self.ctr[fi];
                if pkt.flags & F_RETX != 0 {
                    c.retransmission_received();
                }
                let App::Tcp { tx, rx } = &mut self.flows[fi].app else { return };
                if rx.on_data(&pkt, now, c, tx.cfg()) {
                    let mut ack = rx.ack(tx.cfg());
                    ack.flow = pkt.flow;
                    c.ack_sent();
                    self.inject(ack);
                }
                self.sync_timer(fi, DELACK_SLOT);
            }
            PktKind::Ack => {
                let start = self.scratch.len();
                let App::Tcp { tx, rx } = &mut self.flows[fi].app else { return };
                let blocks = rx.sack_blocks(pkt.aux);
                let blocks = blocks.as_ref().map_or(&[][..], |b| b.as_slice());
                let was = tx.completed_at().is_some();
                let ack = Ack { seq: pkt.seq, flags: pkt.flags, echo: pkt.sent, blocks };
                let samples = self.ctr[fi].rtt_samples;
                tx.on_ack(&ack, &mut Cx::new(now, &mut self.scratch, &mut self.ctr[fi]));
                let completed = !was && tx.completed_at().is_some();
                if let Some(l) = self.lat.as_deref_mut() {
                    let c = &self.ctr[fi];
                    if c.rtt_samples != samples {
                        l.round_trip(fi, self.flows[fi].group, c.rtt_last_ns as u64, now);
                    }
                }
                self.inject_sent(fi, start);
                self.sync_timer(fi, RTO_SLOT);
                if completed {
                    self.on_completed(fi);
                }
            }
            PktKind::Request => {
                // the web request reached the server: the response connection opens
                let f = &mut self.flows[fi];
                if f.awaiting_request {
                    f.awaiting_request = false;
                    self.open_tcp(fi);
                }
            }
            PktKind::Udp => {
                if let Some(l) = self.lat.as_deref_mut() {
                    l.one_way(fi, self.flows[fi].group, pkt.sent, now);
                }
                let c = &mut self.ctr[fi];
                c.packet_received(false);
                c.new_packet_received(pkt.seq);
                if pkt.flags & F_ECHO != 0 {
                    // a probe's receiver sends it back at once, as a ping's would
                    c.ack_sent();
                    let echo = Packet { kind: PktKind::Echo, hop: 0, flags: 0, ..pkt };
                    self.inject(echo);
                }
            }
            PktKind::Echo => {
                // a probe's echo is back: one round trip
                let rtt = now.saturating_sub(pkt.sent);
                crate::tcp::TcpMeter::rtt_sample(&mut self.ctr[fi], rtt as f64);
                if let Some(l) = self.lat.as_deref_mut() {
                    l.round_trip(fi, self.flows[fi].group, rtt, now);
                }
            }
        }
    }

    /// Make sure timer `slot` (`RTO_SLOT` or `DELACK_SLOT`) of flow `fi` has an event no later than
    /// its deadline. Re-arming to a later deadline touches nothing: the earlier event, when it
    /// fires, finds the deadline moved and re-schedules itself.
    #[inline]
    fn sync_timer(&mut self, fi: usize, slot: usize) {
        let App::Tcp { tx, rx } = &self.flows[fi].app else { return };
        let deadline = if slot == RTO_SLOT { tx.timer_deadline() } else { rx.delack_deadline };
        let k = TimerKey::new(fi, slot).0;
        if deadline != 0 && deadline < self.timers[k] {
            self.timers[k] = deadline;
            self.ev.push(deadline, Kind::Timer, k as u32);
        }
    }

    pub(super) fn on_timer(&mut self, k: usize) {
        let now = self.now;
        if self.timers[k] != now {
            return; // superseded by an earlier event for the same timer
        }
        self.timers[k] = NO_TIMER;
        let (fi, slot) = (TimerKey(k).flow(), TimerKey(k).slot());
        let App::Tcp { tx, rx } = &mut self.flows[fi].app else { return };
        let deadline = if slot == RTO_SLOT { tx.timer_deadline() } else { rx.delack_deadline };
        if deadline == 0 {
            return;
        }
        if deadline > now {
            self.sync_timer(fi, slot);
            return;
        }
        if slot == 0 {
            let start = self.scratch.len();
            tx.on_timer(&mut Cx::new(now, &mut self.scratch, &mut self.ctr[fi]));
            self.inject_sent(fi, start);
        } else {
            let mut ack = rx.ack(tx.cfg());
            ack.flow = fi as u32;
            self.ctr[fi].ack_sent();
            self.inject(ack);
        }
        self.sync_timer(fi, slot);
    }

    /// A TCP connection's sender starts sending.
    fn open_tcp(&mut self, fi: usize) {
        let now = self.now;
        let App::Tcp { tx, .. } = &mut self.flows[fi].app else { return };
        let start = self.scratch.len();
        tx.start(&mut Cx::new(now, &mut self.scratch, &mut self.ctr[fi]));
        self.inject_sent(fi, start);
        self.sync_timer(fi, RTO_SLOT);
    }

    pub(super) fn on_start(&mut self, fi: usize) {
        let now = self.now;
        let (prio, group) = (self.flows[fi].prio, self.flows[fi].group);
        let f = &mut self.flows[fi];
        match &mut f.app {
            App::Tcp { .. } if f.session != NO_SESSION => {
                // a web response connection: the client sends its request first (again, if it
                // was lost)
                if !f.awaiting_request {
                    return;
                }
                let spec = self.web_spec(group);
                let req = Packet {
                    sent: now,
                    flow: fi as u32,
                    seq: 0,
                    size: spec.request_size,
                    kind: PktKind::Request,
                    hop: 0,
                    prio,
                    flags: 0,
                    aux: 0,
                };
                self.inject(req);
            }
            App::Tcp { .. } => self.open_tcp(fi),
            App::Udp(src) => {
                let t = src.start(now);
                if t == now {
                    self.on_udp_send(fi);
                } else if t < f.stop && t < self.sc.duration {
                    self.ev.push(t, Kind::Send, fi as u32);
                }
            }
        }
    }

    pub(super) fn on_stop(&mut self, fi: usize) {
        if let App::Tcp { tx, .. } = &mut self.flows[fi].app {
            if tx.stop_app(self.now) {
                // everything sent is acknowledged: the connection is done
                self.on_completed(fi);
            }
        }
    }

    /// Emit the next UDP packet and schedule the one after (CBR, or ON/OFF).
    pub(super) fn on_udp_send(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let (stop, prio, flags) = (f.stop, f.prio, f.flags);
        let App::Udp(src) = &mut f.app else { return };
        if src.searching() {
            // an ON/OFF source still looking for an ON period long enough for a packet
            let next = src.resume(now);
            if next < stop && next < self.sc.duration {
                self.ev.push(next, Kind::Send, fi as u32);
            }
            return;
        }
        let size = src.cbr.size;
        let pkt =
            Packet { sent: now, flow: fi as u32, seq: src.seq, size, kind: PktKind::Udp, hop: 0, prio, flags, aux: 0 };
        let next = src.advance();
        let c = &mut self.ctr[fi];
        c.packet_sent(false);
        self.inject(pkt);
        if next < stop && next < self.sc.duration {
            self.ev.push(next, Kind::Send, fi as u32);
        }
    }

    /// Add a TCP connection on `host` (a short connection or a web response): a new flow id.
    fn new_connection(&mut self, group: u32, host: u32, limit: u32, stop: Time, session: u32) -> Option<usize> {
        if TimerKey::new(self.flows.len(), TIMER_SLOTS - 1).0 > crate::event::MAX_INDEX as usize {
            // more connections than the event set can index: the run stops with an error
            self.too_many = true;
            return None;
        }
        let g = &self.sc.groups[group as usize];
        let Some(cfg) = &self.tcp_cfgs[group as usize] else { unreachable!("connections are TCP") };
        let fid = self.flows.len();
        let flags = if g.in_profile { F_IN_PROFILE } else { 0 };
        let app = tcp_app(cfg, g.priority, limit);
        self.flows.push(Flow {
            group,
            host,
            start: self.now,
            stop,
            prio: g.priority,
            flags,
            session,
            awaiting_request: session != NO_SESSION,
            app,
        });
        self.routes.push(self.net.host_routes[host as usize]);
        for m in &mut self.monitors {
            m.add_flow();
        }
        self.ctr.push(FlowCounters::default());
        self.timers.extend_from_slice(&[NO_TIMER; TIMER_SLOTS]);
        Some(fid)
    }

    /// A short-connection group's next arrival.
    pub(super) fn on_arrive(&mut self, k: usize) {
        let now = self.now;
        let (group, gen, first_host) = &mut self.shorts[k];
        let group = *group;
        let conn = gen.conn();
        let host = *first_host + conn.host;
        let gap = gen.gap();
        let gstop = self.sc.groups[group as usize].stop.unwrap_or(Time::MAX);
        let Transport::Tcp { cfg, .. } = &self.sc.groups[group as usize].transport else { return };
        let limit = bulk::segments(conn.bytes, cfg.mss);
        // a connection drawn with a zero duration stops 1 ns after it opens (its Stop event cannot
        // come before this Arrive event at the same instant)
        let stop = conn.duration.map_or(Time::MAX, |d| now.saturating_add(d.max(1)));
        let Some(fid) = self.new_connection(group, host, limit, stop, NO_SESSION) else { return };
        self.open_tcp(fid);
        if stop < self.sc.duration {
            self.ev.push(stop, Kind::Stop, fid as u32);
        }
        let next = now.saturating_add(gap);
        if next < self.sc.duration && next < gstop {
            self.ev.push(next, Kind::Arrive, k as u32);
        }
    }

    fn web_spec(&self, group: u32) -> WebSpec {
        match &self.sc.groups[group as usize].transport {
            Transport::Tcp { app: TcpApp::Web(w), .. } => *w,
            _ => unreachable!("a session belongs to a web group"),
        }
    }

    /// A web session sends its next request: a new response connection.
    pub(super) fn on_session(&mut self, k: usize) {
        let group = self.sessions[k].group;
        let spec = self.web_spec(group);
        let g = &self.sc.groups[group as usize];
        if self.now >= g.stop.unwrap_or(Time::MAX) {
            return;
        }
        let Transport::Tcp { cfg, .. } = &g.transport else { return };
        let mss = cfg.mss;
        let s = &mut self.sessions[k];
        let bytes = s.response(&spec);
        let host = s.host;
        let Some(fid) = self.new_connection(group, host, bulk::segments(Some(bytes), mss), Time::MAX, k as u32) else {
            return;
        };
        self.on_start(fid);
    }

    /// A finite connection's data are all acknowledged: its buffers are released, and a web
    /// session thinks, then asks again.
    fn on_completed(&mut self, fi: usize) {
        if let App::Tcp { tx, rx } = &mut self.flows[fi].app {
            tx.release_buffers();
            rx.release_buffers();
        }
        let k = self.flows[fi].session;
        if k == NO_SESSION {
            return;
        }
        let spec = self.web_spec(self.flows[fi].group);
        let think = self.sessions[k as usize].think(&spec);
        let t = self.now.saturating_add(think);
        if t < self.sc.duration {
            self.ev.push(t, Kind::Session, k);
        }
    }
}
