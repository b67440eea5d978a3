//! Measurement events: the start of the window, the periodic samples of every measured link
//! (time series and queue snapshots), the per-flow samples, and the close of the window.

use super::Sim;
use crate::event::Kind;
use crate::hosts::App;
use crate::measure::FlowCounters;
use crate::net::NO_MONITOR;
use aqm::rng::Rng;
use aqm::{Time, NS_PER_SEC};

impl Sim {
    /// Bring every measured link up to `t` (transmissions starting at `t` or earlier).
    fn advance_monitored(&mut self, t: Time) {
        for m in 0..self.monitors.len() {
            let l = self.monitors[m].link as usize;
            self.advance(l, t);
        }
    }

    pub(super) fn on_warmup(&mut self) {
        // transmissions starting at `warmup` or later belong to the window
        self.advance_monitored(self.now - 1);
        for c in &mut self.ctr {
            c.close_rto(self.now);
        }
        self.base = Some((self.ctr.clone(), self.hop_drops.clone()));
        self.set_horizon();
        for m in &mut self.monitors {
            let q = &self.net.aqm(m.link as usize).expect("measured link").queue;
            m.start_window(q.stats, q.len());
        }
    }

    /// End of the run: transmissions starting before `end` belong to the window.
    pub(super) fn finish_window(&mut self, end: Time) {
        self.advance_monitored(end - 1);
        for c in &mut self.ctr {
            c.close_rto(end);
        }
        for m in &mut self.monitors {
            m.queue.finish(end);
        }
    }

    pub(super) fn on_sample(&mut self) {
        let now = self.now;
        self.advance_monitored(now);
        for m in &mut self.monitors {
            let link = self.net.class(m.link as usize);
            let q = &link.aqm.as_ref().expect("measured link").queue;
            m.series.sample(now, q, link.rate_bps);
        }
        if self.sc.queue_snapshots && !self.sc.snapshot_poisson && now >= self.sc.warmup {
            self.snapshot();
        }
        let next = now.saturating_add(self.sc.sample_interval);
        if next < self.sc.duration {
            self.ev.push(next, Kind::Sample, 0);
        }
    }

    /// Every measured queue's composition by position, counted from the tail (M10).
    fn snapshot(&mut self) {
        for m in &self.monitors {
            let q = &self.net.aqm(m.link as usize).expect("measured link").queue;
            self.snaps.record(self.now, m.link, q);
        }
        self.snaps.count += 1;
    }

    /// A snapshot at a Poisson instant (PASTA: the snapshots see time averages, and cannot lock
    /// in phase with a periodic source as fixed steps can); then the next instant.
    pub(super) fn on_snapshot(&mut self) {
        let now = self.now;
        self.advance_monitored(now);
        self.snapshot();
        let next = now.saturating_add(exp_gap(&mut self.snap_rng, self.sc.sample_interval));
        if next < self.sc.duration {
            self.ev.push(next, Kind::Snapshot, 0);
        }
    }

    /// Per-flow sample: throughput at the flow's measured link and goodput over the last
    /// interval, and the congestion window now, for every flow that has started and is not
    /// finished (or moved data in the interval).
    pub(super) fn on_flow_sample(&mut self) {
        let now = self.now;
        self.advance_monitored(now);
        let fs = &mut self.fseries;
        let dt = (now - fs.last_t) as f64 / NS_PER_SEC as f64;
        let n = self.flows.len();
        fs.last.resize(n, (0, 0));
        fs.visit.extend(fs.enrolled as u32..n as u32);
        fs.enrolled = n;
        let t = now as f64 / NS_PER_SEC as f64;
        let mut kept = 0;
        for j in 0..fs.visit.len() {
            let i = fs.visit[j] as usize;
            let f = &self.flows[i];
            if f.start <= now {
                let m = self.net.hosts[f.host as usize].measured;
                let tx = if m == NO_MONITOR { 0 } else { self.monitors[m as usize].flows[i].tx_bytes };
                let good = FlowCounters::bytes(self.ctr[i].unique_pkts, f.packet_size());
                let (ltx, lgood) = fs.last[i];
                let (cwnd, pacing, srtt, finished) = match &f.app {
                    App::Tcp { tx, .. } => {
                        let p = tx.pacing_rate();
                        (
                            tx.cwnd(),
                            if p > 0.0 { p * 8.0 } else { f64::NAN },
                            tx.srtt().map_or(f64::NAN, |r| r / NS_PER_SEC as f64),
                            tx.completed_at().is_some_and(|c| c < fs.last_t),
                        )
                    }
                    App::Udp(_) => (f64::NAN, f64::NAN, f64::NAN, f.stop < fs.last_t),
                };
                if finished && tx == ltx && good == lgood {
                    let c = &self.ctr[i];
                    if c.sent_pkts as u64 == c.delivered_pkts as u64 + c.total_drops() {
                        continue; // retired: nothing of it can move again
                    }
                } else {
                    fs.time.push(t);
                    fs.flow.push(i as i64);
                    fs.thr.push(if m == NO_MONITOR { f64::NAN } else { (tx - ltx) as f64 * 8.0 / dt });
                    fs.good.push((good - lgood) as f64 * 8.0 / dt);
                    fs.cwnd.push(cwnd);
                    fs.pacing.push(pacing);
                    fs.srtt.push(srtt);
                    fs.retx.push(if cwnd.is_nan() { f64::NAN } else { self.ctr[i].retx_pkts as f64 });
                    fs.last[i] = (tx, good);
                }
            }
            fs.visit[kept] = i as u32;
            kept += 1;
        }
        fs.visit.truncate(kept);
        fs.last_t = now;
        self.next_flow_sample = Time::MAX;
        if let Some(iv) = self.sc.flow_series_interval {
            if now.saturating_add(iv) < self.sc.duration {
                self.ev.push(now + iv, Kind::FlowSample, 0);
                self.next_flow_sample = now + iv;
            }
        }
        self.set_horizon();
    }
}

/// An exponential gap with mean `mean` (at least 1 ns): the next instant of a Poisson process.
pub(super) fn exp_gap(rng: &mut Rng, mean: Time) -> Time {
    ((-libm::log(1.0 - rng.uniform()) * mean as f64).round() as Time).max(1)
}
