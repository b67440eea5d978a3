//! A discipline plus its accounting (the ns-3 `QueueDisc` base-class pattern).
//!
//! The wrapper calls the discipline and counts what happened, so no algorithm counts its own
//! statistics. Identities (aqm.md §1.3), checked by [`QueueStats::check`]:
//! `arrivals = enqueued + dropped_on_arrival` and
//! `enqueued = transmitted + dropped_queued + queued`, where `dropped_queued` counts the packets
//! dropped after they had been enqueued: CHOKe-family victims, CoDel's drops at dequeue
//! (`early`, aqm.md §17.1) and FQ-CoDel's drops from the fattest queue (`overflow`, §17.3).
//! For schemes that drop only arrivals and victims, `dropped_queued` is the number of victims,
//! which is the form the specification states. The wrapper tells the two kinds apart by the
//! [`Qdisc`] contract: an `enqueue` that returns `false` has reported the arrival among its drops,
//! every other reported packet (and every packet reported by `dequeue` or `on_timer`) was queued.

use crate::qdisc::Dropped;
use crate::rng::Rng;
use crate::{AnyQdisc, Cx, DropReason, Pkt, Qdisc, Time};

/// Counters of one queue, in packets and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub arrivals: u64,
    pub arrival_bytes: u64,
    pub enqueued: u64,
    pub transmitted: u64,
    pub transmitted_bytes: u64,
    /// Drops by reason (index [`DropReason::index`]).
    pub drops: [u64; DropReason::COUNT],
    pub drop_bytes: [u64; DropReason::COUNT],
    /// Packets dropped after they had been enqueued (victims, drops at dequeue, drops from the
    /// queue on overflow): a subset of `drops`.
    pub dropped_queued: u64,
}

impl QueueStats {
    /// Drops of arriving packets: all drops but those of packets that were already queued.
    pub fn dropped_on_arrival(&self) -> u64 {
        self.drops.iter().sum::<u64>() - self.dropped_queued
    }
    /// The counts since `base`, an earlier copy of these statistics (for a measurement window).
    pub fn since(&self, base: &QueueStats) -> QueueStats {
        let mut d = *self;
        d.arrivals -= base.arrivals;
        d.arrival_bytes -= base.arrival_bytes;
        d.enqueued -= base.enqueued;
        d.transmitted -= base.transmitted;
        d.transmitted_bytes -= base.transmitted_bytes;
        d.dropped_queued -= base.dropped_queued;
        for i in 0..DropReason::COUNT {
            d.drops[i] -= base.drops[i];
            d.drop_bytes[i] -= base.drop_bytes[i];
        }
        d
    }

    /// Check the accounting identities given the number of packets still queued.
    pub fn check(&self, queued: u64) -> Result<(), String> {
        if self.arrivals != self.enqueued + self.dropped_on_arrival() {
            return Err(format!(
                "arrivals {} != enqueued {} + dropped on arrival {}",
                self.arrivals,
                self.enqueued,
                self.dropped_on_arrival()
            ));
        }
        if self.enqueued != self.transmitted + self.dropped_queued + queued {
            return Err(format!(
                "enqueued {} != transmitted {} + dropped after enqueue {} + queued {}",
                self.enqueued, self.transmitted, self.dropped_queued, queued
            ));
        }
        Ok(())
    }
}

/// A discipline with its statistics, random stream and drop buffer.
pub struct Queue<P: Pkt> {
    pub disc: AnyQdisc<P>,
    pub stats: QueueStats,
    rng: Rng,
    drops: Vec<Dropped<P>>,
}

impl<P: Pkt> Queue<P> {
    pub fn new(disc: AnyQdisc<P>, rng: Rng) -> Self {
        Queue { disc, stats: QueueStats::default(), rng, drops: Vec::with_capacity(8) }
    }

    /// Offer a packet at `now`. Returns whether it was enqueued; the packets dropped by this call
    /// (the arrival and/or victims) are then available from [`Queue::drops`] until the next call.
    #[inline]
    pub fn enqueue(&mut self, pkt: P, now: Time) -> bool {
        self.drops.clear();
        self.stats.arrivals += 1;
        self.stats.arrival_bytes += pkt.size() as u64;
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        let ok = self.disc.enqueue(pkt, &mut cx);
        if ok {
            self.stats.enqueued += 1;
        }
        // every reported packet but the arrival itself (when refused) was already queued
        self.stats.dropped_queued += self.drops.len() as u64 - u64::from(!ok && !self.drops.is_empty());
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
        ok
    }

    /// Take the next packet to transmit at `now` (the packets a discipline drops at dequeue are in
    /// [`Queue::drops`] afterwards).
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<(P, Time)> {
        self.drops.clear();
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        let out = self.disc.dequeue(&mut cx);
        self.stats.dropped_queued += self.drops.len() as u64;
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
        if let Some((p, _)) = &out {
            self.stats.transmitted += 1;
            self.stats.transmitted_bytes += p.size() as u64;
        }
        out
    }

    /// Packets dropped by the last `enqueue`/`dequeue` call.
    #[inline]
    pub fn drops(&self) -> &[Dropped<P>] {
        &self.drops
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.disc.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.disc.len() == 0
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.disc.bytes()
    }
    #[inline]
    pub fn on_link_idle(&mut self, now: Time) {
        self.disc.on_link_idle(now)
    }

    /// The bytes of state the discipline has kept, at most, so far ([`Qdisc::state_bytes`]).
    pub fn state_bytes(&self) -> u64 {
        self.disc.state_bytes()
    }

    /// Run the discipline's periodic timer at `now` (drops it reports are counted and available
    /// from [`Queue::drops`]).
    pub fn on_timer(&mut self, now: Time) {
        self.drops.clear();
        let mut cx = Cx { now, rng: &mut self.rng, drops: &mut self.drops };
        self.disc.on_timer(&mut cx);
        self.stats.dropped_queued += self.drops.len() as u64;
        for d in &self.drops {
            self.stats.drops[d.reason.index()] += 1;
            self.stats.drop_bytes[d.reason.index()] += d.pkt.size() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::red::RedParams;
    use crate::rng::Rng;
    use crate::test_util::{config, P};
    use crate::{AqmConfig, Limit, LinkInfo};
    use proptest::prelude::{any, prop_assert, proptest};

    fn configs() -> Vec<AqmConfig> {
        let mut gentle = RedParams::with_thresholds(3.0, 8.0, 0.3);
        gentle.gentle = true;
        gentle.w_q = 0.2;
        let mut ns2 = gentle.clone();
        ns2.variant = crate::red::RedVariant::Ns2;
        let mut v = vec![
            AqmConfig::DropTail(Default::default()),
            AqmConfig::Red(RedParams::with_thresholds(2.0, 6.0, 0.5)),
            AqmConfig::Red(gentle),
            AqmConfig::Red(ns2),
        ];
        // the CHOKe family, with small thresholds so that matched drops happen, in both victim modes
        let red = r#""min_th": 1, "max_th": 6, "w_q": 0.5, "max_p": 0.3"#;
        for lazy in [
            "",
            r#", "victim_removal": "lazy""#,
            r#", "victim_removal": "lazy", "draw_population": "physical", "doomed_draw": "can_match""#,
        ] {
            v.push(config("choke", &format!("{{{red}{lazy}}}")));
            v.push(config("choke", &format!(r#"{{{red}, "n_cand": 3{lazy}}}"#)));
            v.push(config("gchoke", &format!(r#"{{{red}, "maxcomp": 4{lazy}}}"#)));
            v.push(config("chokew", &format!(r#"{{"l_th": 1, "l_minus": 2, "l_plus": 3, "p_plus": 0.4, "p_minus": 0.1, "weights": [1, 2]{lazy}}}"#)));
            if !lazy.contains("physical") {
                v.push(config("choked", &format!(r#"{{"t_min": 1, "t_max": 8, "w_q": 0.5{lazy}}}"#)));
            }
            v.push(config("ward", &format!("{{\"weight_rule\": \"exact\"{lazy}}}")));
        }
        v.push(config("choke", &format!(r#"{{{red}, "region": "rear"}}"#)));
        v.push(config("chokew", r#"{"l_th": 1, "l_minus": 2, "l_plus": 3, "p_plus": 0.4, "id_buffer": true, "parallel": true, "w_avg": 0.3, "red": {"min_th": 2, "max_th": 6, "max_p": 0.2}}"#));
        v.push(config("perfect_choke", &format!("{{{red}}}")));
        // RIO (in-profile = flows 2 and 3 below), BLUE and the timer-driven controllers, with
        // small thresholds and short periods so that every branch is reached in a few hundred ops
        v.push(config("rio", r#"{"min_th_in": 2, "max_th_in": 6, "max_p_in": 0.3, "min_th_out": 1, "max_th_out": 4, "max_p_out": 0.5, "w_q": 0.5}"#));
        v.push(config("rio", r#"{"min_th_in": 2, "max_th_in": 6, "max_p_in": 0.3, "min_th_out": 1, "max_th_out": 4, "gentle_in": false, "gentle_out": false, "w_q": 0.5, "variant": "ns2", "rio_ns2_compat": true}"#));
        v.push(config("blue", r#"{"d1": 0.2, "d2": 0.05, "freeze_time": "2us", "L_blue": 6}"#));
        v.push(config("pi", r#"{"a": 0.3, "b": 0.1, "w": 250000, "q_ref": 3}"#));
        v.push(config("pi", r#"{"a": 0.3, "b": 0.1, "w": 250000, "q_ref": 3, "mode": "byte", "mean_pkt_size": 700}"#));
        v.push(config("rem", r#"{"gamma": 0.05, "phi": 2, "t_upd": "5us", "b0": 2}"#));
        v.push(config("raqm", r#"{"T": "5us", "q0": 3, "p_init": 0.05, "r0": 2e8}"#));
        v.push(config(
            "raqm",
            r#"{"T": "5us", "p_init": 0.05, "r0": 2e8, "mode": "queue_independent", "raqm_alpha_lag": true}"#,
        ));
        v.push(config(
            "raqm",
            r#"{"T": "5us", "q0": 3, "p_init": 0.05, "r0": 2e8, "alpha_mode": "static", "m_static": 3}"#,
        ));
        // FRED, aggregate WFQ and the modern baselines (times of a few microseconds, as the ops
        // below are 1 us apart, so that CoDel's and PIE's control laws act)
        v.push(config("fred", r#"{"min_th": 2, "max_th": 6, "max_p": 0.3, "w_q": 0.5, "min_q": 1}"#));
        v.push(config(
            "fred",
            r#"{"min_th": 1, "max_th": 4, "max_p": 0.5, "w_q": 0.3, "min_q": 2, "fred_avg_on_arrival": "always"}"#,
        ));
        v.push(config("wfq", r#"{"weights": [1, 3]}"#));
        v.push(config("wfq", r#"{"weights": [1, 2], "buffers": [4, 20], "wfq_vtime": "scfq"}"#));
        v.push(config("codel", r#"{"target": "2us", "interval": "20us", "maxpacket": 500}"#));
        v.push(config(
            "pie",
            r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "20us"}"#,
        ));
        v.push(config("pie", r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "0s", "derandomize": true, "qdelay_estimator": "departure", "boost_above_250ms": true}"#));
        v.push(config("pie", r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "0s", "qdelay_estimator": "rate", "dq_threshold": 3000, "mean_pkt_size": 300}"#));
        v.push(config(
            "fq_codel",
            r#"{"flows": 4, "quantum": 300, "target": "2us", "interval": "20us", "maxpacket": 500}"#,
        ));
        v.push(config(
            "fq_codel",
            r#"{"flows": 2, "quantum": 1514, "target": "2us", "interval": "20us", "hash": "mix"}"#,
        ));
        // DualPI2 (flow 3 carries ECT(1) below, so both of its queues fill), CAKE and FQ-PIE
        v.push(config(
            "dualpi2",
            r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "step_thresh": "2us", "mtu": 300}"#,
        ));
        v.push(config("dualpi2", r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "step_thresh": "2us", "mtu": 300, "drop_early": true, "drop_overload": false, "c_protection": 50}"#));
        v.push(config("cake", r#"{"target": "2us", "interval": "20us"}"#));
        v.push(config(
            "cake",
            r#"{"target": "2us", "interval": "20us", "flow_mode": "flows", "shaped": false, "hash": "mod"}"#,
        ));
        v.push(config("cake", r#"{"target": "2us", "interval": "20us", "flow_mode": "dual_dsthost"}"#));
        v.push(config(
            "fq_pie",
            r#"{"flows": 4, "quantum": 300, "target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "0s", "mtu": 300}"#,
        ));
        v.push(config("fq_pie", r#"{"flows": 2, "target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "10us", "mtu": 300, "bytemode": true, "hash": "mix"}"#));
        // the fair family (issue 24), with small bins, tables and periods so that every mechanism
        // acts within a few hundred operations 1 us apart
        v.push(config("sfb", r#"{"levels": 2, "bins": 3, "bin_size": 2, "increment": 0.2, "decrement": 0.05, "freeze_time": "2us", "penalty_rate": 1e5, "penalty_burst": 2}"#));
        v.push(config("sfb", r#"{"levels": 1, "bins": 2, "bin_size": 3, "increment": 0.5, "freeze_time": "0s", "penalty_rate": 0, "bin_drop": "all", "rehash": "50us", "warmup": "20us", "ecn": true}"#));
        v.push(config("afd", r#"{"shadow_size": 8, "q_target": 3, "update_rate": 2e5}"#));
        v.push(config("afd", r#"{"shadow_size": 5, "sample": 0.5, "replacement": "fifo", "q_target": 2, "alpha": 0.5, "beta": 0.6, "update_rate": 5e5}"#));
        v.push(config("csfq", r#"{"labels": "local", "k": "5us", "k_alpha": "10us", "k_c": "10us"}"#));
        v.push(config("csfq", r#"{"k": "5us", "k_alpha": "10us", "k_c": "20us", "relabel": false}"#));
        v.push(config("red_pd", r#"{"min_th": 1, "max_th": 6, "w_q": 0.5, "max_p": 0.3, "target_rtt": "2us", "lists": 3, "identify": 2, "max_p_change": 0.5}"#));
        v.push(config("red_pd", r#"{"min_th": 1, "max_th": 4, "w_q": 0.5, "target_rtt": "1us", "rtt_with_queue": false, "lists": 2, "identify": 1, "ecn": true}"#));
        v.push(config("sred", r#"{"zombies": 3, "p_max": 0.5, "n_full": 1}"#));
        v.push(config("sred", r#"{"zombies": 2, "p_overwrite": 1, "alpha": 0.3, "variant": "simple", "ecn": true}"#));
        v.push(config(
            "xchoke",
            r#"{"min_th": 1, "max_th": 6, "w_q": 0.5, "max_p": 0.3, "table_size": 2, "hit_max": 2, "decay_every": 3}"#,
        ));
        v.push(config("hhf", r#"{"admit_bytes": 2000, "reset_timeout": "20us", "evict_timeout": "10us", "hh_flows_limit": 2, "filter_arrays": 2, "filter_len": 4, "quantum": 700}"#));
        v.push(config("hhf", r#"{"admit_share": 0.5, "non_hh_weight": 1}"#));
        v.push(config("drr", r#"{"quantum": 700}"#));
        v.push(config("drr", r#"{"quantum": 1500, "overflow_drop": "longest_tail"}"#));
        v.push(config("drr", r#"{"quantum": 1, "overflow_drop": "arrival"}"#));
        v
    }

    /// Disciplines that transmit in arrival order overall (the others only per flow).
    fn single_fifo(cfg: &AqmConfig) -> bool {
        !matches!(cfg.name(), "fq_codel" | "wfq" | "hhf" | "drr" | "dualpi2" | "cake" | "fq_pie")
    }

    /// State variables that are probabilities: named `p`, ending in `_p` or starting with `p_`
    /// (RIO `p_in`/`p_out`, BLUE `p_m`, RAQM `p_k`).
    fn is_probability(name: &str) -> bool {
        name == "p" || name.ends_with("_p") || name.starts_with("p_")
    }

    /// With `ecn = true` and ECN-capable packets, every scheme that defines early drops marks
    /// instead: no `early` drop occurs and marked packets come out; without ECT the same load does
    /// produce early drops (so the test exercises the mechanism).
    #[test]
    fn with_ecn_early_drops_become_marks() {
        let red = r#""min_th": 1, "max_th": 30, "w_q": 0.5, "max_p": 0.3, "ecn": true"#;
        let cases: Vec<(&str, String)> = vec![
            ("red", format!("{{{red}}}")),
            ("rio", r#"{"min_th_in": 2, "max_th_in": 30, "max_p_in": 0.3, "min_th_out": 1, "max_th_out": 30, "max_p_out": 0.5, "w_q": 0.5, "ecn": true}"#.into()),
            ("blue", r#"{"d1": 0.2, "d2": 0.05, "freeze_time": "2us", "ecn": true}"#.into()),
            ("pi", r#"{"a": 0.3, "b": 0.1, "w": 250000, "q_ref": 3, "ecn": true}"#.into()),
            ("rem", r#"{"gamma": 0.05, "phi": 2, "t_upd": "5us", "b0": 2, "ecn": true}"#.into()),
            ("raqm", r#"{"T": "5us", "q0": 3, "p_init": 0.05, "r0": 2e8, "ecn": true}"#.into()),
            ("pie", r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "0s", "ecn": true, "mark_ecn_th": 1.0}"#.into()),
            ("codel", r#"{"target": "2us", "interval": "20us", "maxpacket": 500, "ecn": true}"#.into()),
            ("fq_codel", r#"{"flows": 4, "quantum": 300, "target": "2us", "interval": "20us", "maxpacket": 500, "ecn": true}"#.into()),
            ("fq_pie", r#"{"flows": 4, "quantum": 300, "target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "max_burst": "0s", "mtu": 300, "ecn": true, "ecn_prob": 1.0}"#.into()),
            ("choke", format!("{{{red}}}")),
            ("gchoke", format!("{{{red}}}")),
            ("perfect_choke", format!("{{{red}}}")),
            ("choked", r#"{"t_min": 1, "t_max": 30, "w_q": 0.5, "max_p": 0.5, "ecn": true}"#.into()),
            ("chokew", r#"{"l_th": 100, "l_minus": 200, "l_plus": 300, "red": {"min_th": 1, "max_th": 30, "w_q": 0.5, "max_p": 0.3, "ecn": true}}"#.into()),
            ("sfb", r#"{"levels": 1, "bins": 1, "bin_size": 30, "increment": 0.01, "freeze_time": "0s", "penalty_rate": 1e9, "ecn": true}"#.into()),
            ("sred", r#"{"zombies": 4, "n_full": 1, "ecn": true}"#.into()),
            ("red_pd", format!("{{{red}}}")),
            ("xchoke", format!("{{{red}}}")),
        ];
        for (kind, json) in cases {
            let mut counts = [(0u64, 0u64); 2]; // (early drops, marked departures) without/with ECT
            for (k, ect) in [false, true].into_iter().enumerate() {
                let cfg = config(kind, &json);
                let mut q = Queue::new(
                    cfg.build::<P>(LinkInfo { rate_bps: 1e7 }, Limit::packets(40)),
                    Rng::stream(5, "ecn", 0),
                );
                let period = q.disc.timer_period();
                let mut next_timer = period.unwrap_or(u64::MAX);
                let mut t = 0u64;
                for step in 0..4000u32 {
                    t += 1000;
                    while next_timer <= t {
                        q.on_timer(next_timer);
                        next_timer += period.unwrap();
                    }
                    let mut p = P::new(step % 7, 500);
                    p.ect = ect;
                    q.enqueue(p, t);
                    counts[k].0 += q.drops().iter().filter(|d| d.reason == DropReason::Early).count() as u64;
                    // departures at 2/3 of the arrival rate: a standing, growing queue
                    if step % 3 != 0 {
                        if let Some((p, _)) = q.dequeue(t) {
                            counts[k].1 += p.ce as u64;
                        }
                        counts[k].0 += q.drops().iter().filter(|d| d.reason == DropReason::Early).count() as u64;
                    }
                }
            }
            assert!(counts[0].0 > 0, "{kind}: the load produces no early drop without ECT");
            assert_eq!(counts[1].0, 0, "{kind}: early drops of ECN-capable packets");
            assert!(counts[1].1 > 0, "{kind}: no CE-marked packet left the queue");
            assert_eq!(counts[0].1, 0, "{kind}: marked a packet that is not ECN-capable");
        }
    }

    /// The schemes that mark whatever is ECN-capable, without an `ecn` switch: CAKE's COBALT
    /// (its CoDel half; its BLUE half drops regardless, but only once a bucket overflowed, which a
    /// buffer this large prevents) and DualPI2 for L4S packets (ECT(1); with `drop_overload =
    /// false`, so that an overloaded AQM marks them too). Packets that are not ECN-capable are
    /// dropped by the same load.
    #[test]
    fn cake_and_dualpi2_mark_ecn_capable_packets() {
        let cases = [
            ("cake", r#"{"target": "2us", "interval": "20us", "flow_mode": "flows", "shaped": false}"#),
            (
                "dualpi2",
                r#"{"target": "3us", "t_update": "5us", "alpha": 2000, "beta": 20000, "step_thresh": "2us", "mtu": 300, "drop_overload": false}"#,
            ),
        ];
        for (kind, json) in cases {
            let mut counts = [(0u64, 0u64); 2];
            for (k, ect) in [false, true].into_iter().enumerate() {
                let mut q = Queue::new(
                    config(kind, json).build::<P>(LinkInfo { rate_bps: 1e7 }, Limit::packets(100_000)),
                    Rng::stream(5, "ecn", 0),
                );
                let period = q.disc.timer_period();
                let mut next_timer = period.unwrap_or(u64::MAX);
                let mut t = 0u64;
                for step in 0..4000u32 {
                    t += 1000;
                    while next_timer <= t {
                        q.on_timer(next_timer);
                        next_timer += period.unwrap();
                    }
                    let mut p = P::new(step % 7, 500);
                    (p.ect, p.ect1) = (ect, ect);
                    q.enqueue(p, t);
                    counts[k].0 += q.drops().len() as u64;
                    if step % 3 != 0 {
                        if let Some((p, _)) = q.dequeue(t) {
                            counts[k].1 += p.ce as u64;
                        }
                        counts[k].0 += q.drops().len() as u64;
                    }
                }
            }
            assert!(counts[0].0 > 0, "{kind}: the load produces no drop without ECT");
            assert_eq!(counts[1].0, 0, "{kind}: drops of ECN-capable packets");
            assert!(counts[1].1 > 0, "{kind}: no CE-marked packet left the queue");
            assert_eq!(counts[0].1, 0, "{kind}: marked a packet that is not ECN-capable");
        }
    }

    proptest! {
        /// Conservation, FIFO order of survivors, limit never exceeded, probability in [0, 1],
        /// for every discipline under any interleaving of arrivals and departures.
        #[test]
        fn invariants_hold(ops in proptest::collection::vec((any::<bool>(), 0u32..4, 1u32..1500), 1..400), seed in 0u64..1000) {
            for cfg in configs() {
                for limit in [Limit::packets(12), Limit::bytes(9000)] {
                    let disc = cfg.build::<P>(LinkInfo { rate_bps: 1e7 }, limit);
                    let mut q = Queue::new(disc, Rng::stream(seed, "prop", 0));
                    let mut seq = 0u32;
                    let mut last_out: Option<u32> = None;
                    let mut last_of_flow = [None::<u32>; 4];
                    let mut t = 0;
                    let names = q.disc.state_names();
                    let mut values = vec![0.0f64; names.len()];
                    let period = q.disc.timer_period();
                    let mut next_timer = period.unwrap_or(u64::MAX);
                    let mut state_bytes = q.state_bytes();
                    prop_assert!(state_bytes >= 8, "{}", cfg.name());
                    for (arrive, f, size) in &ops {
                        t += 1000;
                        // periodic controllers (PI, REM, RAQM): fire every timer due by now
                        while next_timer <= t {
                            q.on_timer(next_timer);
                            next_timer += period.expect("timer");
                        }
                        if *arrive {
                            let mut p = P::new(*f, *size);
                            p.seq = seq;
                            p.prio = 1 + (*f % 2) as u8;
                            p.in_profile = *f >= 2;
                            p.ect1 = *f == 3;
                            p.ect = p.ect1;
                            seq += 1;
                            q.enqueue(p, t);
                        } else if let Some((p, enq)) = q.dequeue(t) {
                            prop_assert!(enq <= t);
                            if single_fifo(&cfg) {
                                if let Some(l) = last_out { prop_assert!(p.seq > l, "FIFO order of survivors ({})", cfg.name()); }
                                last_out = Some(p.seq);
                            }
                            // HHF may reorder a flow when it changes bucket (as Linux's does)
                            let lf = &mut last_of_flow[p.flow as usize];
                            if let (Some(l), true) = (*lf, cfg.name() != "hhf") { prop_assert!(p.seq > l, "per-flow order ({})", cfg.name()); }
                            *lf = Some(p.seq);
                            if q.is_empty() { q.on_link_idle(t); }
                        }
                        prop_assert!(limit.qlen(q.len(), q.bytes()) <= limit.value, "limit ({})", cfg.name());
                        // state bytes: a maximum over the run, never below the discipline's own value
                        let sb = q.state_bytes();
                        prop_assert!(sb >= state_bytes, "state bytes fell ({})", cfg.name());
                        state_bytes = sb;
                        q.disc.state(&mut values);
                        for (n, v) in names.iter().zip(&values) {
                            if is_probability(n) { prop_assert!((0.0..=1.0).contains(v), "{} {} = {}", cfg.name(), n, v); }
                        }
                    }
                    prop_assert!(q.stats.check(q.len() as u64).is_ok(), "{}: {:?}", cfg.name(), q.stats.check(q.len() as u64));
                }
            }
        }
    }
}
