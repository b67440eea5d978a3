//! CoDel's estimator and control law, written once (aqm.md §17.1; RFC 8289 §§3–5) and used by
//! CoDel over one FIFO ([`crate::codel`]), by FQ-CoDel once per flow queue ([`crate::fq_codel`])
//! and by CAKE's COBALT ([`crate::cake`]), the way Linux's `include/net/codel_impl.h` serves
//! `sch_codel.c` and `sch_fq_codel.c`: the parameters (`target`, `interval`) and their checks, the
//! drop spacing `interval / sqrt(count)` in RFC 8289's floating-point form ([`control_law`]) and in
//! Linux's fixed-point form that COBALT keeps ([`InvSqrt`]), and the dequeue of RFC 8289 §5.
//!
//! Reference: K. Nichols, V. Jacobson, A. McGregor, J. Iyengar, "Controlled Delay Active Queue
//! Management", RFC 8289, January 2018.
//!
//! The law sees its queue only through [`CodelQueue`] (pop the head, and the backlog left behind),
//! and reports the packets it drops through a callback, so the same code runs over a plain FIFO
//! and over one bucket of FQ-CoDel.
//!
//! Time is integer nanoseconds; CoDel and FQ-CoDel compute the drop spacing `interval /
//! sqrt(count)` in floating point, rounded to the nearest nanosecond (RFC 8289 §5.4
//! `control_law`); COBALT keeps Linux's Newton-iterated reciprocal square root ([`InvSqrt`]),
//! within 0.17 % of it.

use crate::control::{check_period, period_ns};
use crate::fifo::Fifo;
use crate::{ParamError, Pkt, Time};

/// Defines a parameter struct of a discipline that runs CoDel's law: the law's `target` and
/// `interval` (with the defaults of `crate::defaults::$d`) first, then the listed fields. Scenario
/// keys stay flat: `aqm = { type = "fq_codel", target = "5ms", flows = 256 }`. `build.rs` reads
/// the two fields' comments from here.
macro_rules! codel_law_params {
    (defaults = $d:ident; $(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty, )* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// `TARGET`: the acceptable standing queueing delay (RFC 8289 §4.4).
            #[serde(with = "crate::units::secs", default = "codel_law_defaults::target")]
            pub target: f64,
            /// `INTERVAL`: the window over which the minimum sojourn must stay above `target` before dropping starts, and the base of the drop spacing `interval / sqrt(count)` (RFC 8289 §4.5).
            #[serde(with = "crate::units::secs", default = "codel_law_defaults::interval")]
            pub interval: f64,
            $( $(#[$fm])* pub $f: $t, )*
        }
        impl Default for $name {
            fn default() -> Self {
                crate::defaults::of()
            }
        }
        mod codel_law_defaults {
            pub use crate::defaults::$d::{interval, target};
        }
    };
}
pub(crate) use codel_law_params;

/// Parameters of the law in engine units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LawParams {
    /// `TARGET`: acceptable standing queue delay (ns).
    pub target: Time,
    /// `INTERVAL`: the sliding window over which the minimum sojourn is judged (ns).
    pub interval: Time,
    /// `maxpacket`: a backlog of at most this many bytes never counts as "above target"
    /// (RFC 8289 §5.2; keeps at least one MTU queued on slow links).
    pub maxpacket: u64,
}

impl LawParams {
    /// `target` and `interval` in seconds and `maxpacket` in bytes as the law's parameters.
    pub fn from_secs(target: f64, interval: f64, maxpacket: u32) -> Self {
        LawParams { target: period_ns(target), interval: period_ns(interval), maxpacket: maxpacket as u64 }
    }

    /// `target` and `interval` (seconds) are usable times.
    pub fn check(target: f64, interval: f64) -> Result<(), ParamError> {
        check_period("target", target)?;
        check_period("interval", interval)
    }
}

/// What the law needs from the queue it controls.
pub trait CodelQueue<P> {
    /// Remove the head packet; returns it with its enqueue time.
    fn pop_head(&mut self) -> Option<(P, Time)>;
    /// Bytes still waiting after the last [`CodelQueue::pop_head`] (RFC 8289 `bytes()`): the FIFO's
    /// backlog for CoDel, the whole qdisc's backlog for FQ-CoDel (as Linux passes
    /// `sch->qstats.backlog`).
    fn backlog_bytes(&self) -> u64;
}

impl<P: Pkt> CodelQueue<P> for Fifo<P> {
    #[inline]
    fn pop_head(&mut self) -> Option<(P, Time)> {
        self.pop()
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        self.bytes()
    }
}

/// `drop_next` after a drop at `t` with `count` drops so far in this dropping state:
/// `t + interval / sqrt(count)` (RFC 8289 §5.4).
#[inline]
pub fn control_law(t: Time, interval: Time, count: u32) -> Time {
    t + (interval as f64 / (count.max(1) as f64).sqrt()).round() as Time
}

/// `1/sqrt(count)` as Linux keeps it (`codel_impl.h`'s `rec_inv_sqrt`, COBALT's too): a Q0.32
/// fraction moved by one Newton step at each change of `count`, the first 16 values cached (four
/// steps each from the previous, as `cobalt_cache_init`). The drop spacing is then
/// `interval · rec_inv_sqrt >> 32` ([`InvSqrt::control`]): the fixed-point form of
/// [`control_law`], within 0.17 % of it while `count` moves by one at a time (the largest
/// difference is at 16, the first count past the cache, after one Newton step).
pub struct InvSqrt;

impl InvSqrt {
    /// One Newton step of the inverse square root of `count` from `invsqrt` (Linux
    /// `cobalt_newton_step`).
    pub fn newton_step(count: u32, invsqrt: u32) -> u32 {
        let invsqrt2 = (invsqrt as u64 * invsqrt as u64) >> 32;
        let mut val = (3u64 << 32).wrapping_sub(count as u64 * invsqrt2);
        val >>= 2;
        ((val * invsqrt as u64) >> (32 - 2 + 1)) as u32
    }

    /// Linux's cache of the first 16 inverse square roots.
    pub fn cache() -> &'static [u32; 16] {
        static CACHE: std::sync::OnceLock<[u32; 16]> = std::sync::OnceLock::new();
        CACHE.get_or_init(|| {
            let mut c = [0u32; 16];
            let mut v = u32::MAX;
            c[0] = v;
            for (count, e) in c.iter_mut().enumerate().skip(1) {
                for _ in 0..4 {
                    v = Self::newton_step(count as u32, v);
                }
                *e = v;
            }
            c
        })
    }

    /// `1/sqrt(count)` after `count` changed, from the previous value `prev` (Linux
    /// `cobalt_invsqrt`: the cache below 16, a Newton step above).
    #[inline]
    pub fn next(count: u32, prev: u32) -> u32 {
        if count < 16 {
            Self::cache()[count as usize]
        } else {
            Self::newton_step(count, prev)
        }
    }

    /// `t + interval / sqrt(count)` with `rec_inv_sqrt` = `1/sqrt(count)` in Q0.32 (Linux
    /// `cobalt_control`, `reciprocal_scale`).
    #[inline]
    pub fn control(t: Time, interval: Time, rec_inv_sqrt: u32) -> Time {
        t + ((interval as u128 * rec_inv_sqrt as u128) >> 32) as Time
    }
}

/// The state variables of RFC 8289 §5 (one set per controlled queue).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CodelVars {
    /// Time at which the sojourn will have been above target for a whole interval; 0 when the
    /// sojourn is below target (or the backlog at most `maxpacket`).
    pub first_above_time: Time,
    /// Time of the next scheduled drop while in the dropping state.
    pub drop_next: Time,
    /// Drops since entering the dropping state (sets the drop rate).
    pub count: u32,
    /// `count` when the last dropping state was entered.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// Sojourn time of the last packet examined (ns; 0 after the queue was found empty).
    pub last_sojourn: Time,
}

impl CodelVars {
    /// `dodequeue` (RFC 8289 §5.3): pop the head and decide whether it is "ok to drop", i.e. the
    /// sojourn time has stayed at or above `target` (with more than `maxpacket` bytes left) for at
    /// least `interval`.
    #[inline]
    fn dodequeue<P, Q: CodelQueue<P>>(&mut self, lp: &LawParams, now: Time, q: &mut Q) -> (Option<(P, Time)>, bool) {
        let Some((p, enq)) = q.pop_head() else {
            // queue empty: we cannot be above target
            self.first_above_time = 0;
            self.last_sojourn = 0;
            return (None, false);
        };
        let sojourn = now.saturating_sub(enq);
        self.last_sojourn = sojourn;
        if sojourn < lp.target || q.backlog_bytes() <= lp.maxpacket {
            // went below: stay below for at least an interval
            self.first_above_time = 0;
            return (Some((p, enq)), false);
        }
        if self.first_above_time == 0 {
            // just went above from below; if still above at first_above_time, ok to drop
            self.first_above_time = now + lp.interval;
            return (Some((p, enq)), false);
        }
        (Some((p, enq)), now >= self.first_above_time)
    }

    /// `dequeue` (RFC 8289 §5.5; aqm.md §17.1 `on_dequeue`): the next packet to transmit at `now`,
    /// after dropping (through `drop`, reason `early` at the caller) the packets the control law
    /// removes.
    /// `signal` receives each packet the law decides against: it drops it (returning `None`) or,
    /// with ECN, marks it and hands it back (`Some`), and then that packet is the one delivered
    /// (RFC 8289 §5.5 / Linux `codel_impl.h`: a mark replaces the drop and ends the drop run).
    pub fn dequeue<P, Q: CodelQueue<P>>(
        &mut self,
        lp: &LawParams,
        now: Time,
        q: &mut Q,
        signal: &mut impl FnMut(P) -> Option<P>,
    ) -> Option<(P, Time)> {
        let (mut r, mut ok) = self.dodequeue(lp, now, q);
        if self.dropping {
            if !ok {
                // sojourn below target: leave the dropping state
                self.dropping = false;
            }
            // Time for the next drop(s): drop the current packet and dequeue the next. A large
            // backlog can make the next drop due at once, hence the loop.
            while self.dropping && now >= self.drop_next {
                let (p, t) = r.expect("ok_to_drop implies a packet");
                self.count += 1;
                if let Some(marked) = signal(p) {
                    r = Some((marked, t));
                    self.drop_next = control_law(self.drop_next, lp.interval, self.count);
                    break;
                }
                (r, ok) = self.dodequeue(lp, now, q);
                if !ok {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, lp.interval, self.count);
                }
            }
        } else if ok {
            // above target for an interval: drop (or mark) and enter the dropping state
            let (p, t) = r.expect("ok_to_drop implies a packet");
            r = match signal(p) {
                Some(marked) => Some((marked, t)),
                None => self.dodequeue(lp, now, q).0,
            };
            self.dropping = true;
            // If we were dropping recently, resume at the drop rate that controlled the queue
            // last time (the Linux form quoted in RFC 8289 §5.5). `drop_next` can lie in the
            // future, so the difference is signed.
            let delta = self.count.saturating_sub(self.lastcount);
            let since = now as i128 - self.drop_next as i128;
            self.count = if delta > 1 && since < 16 * lp.interval as i128 { delta } else { 1 };
            self.drop_next = control_law(now, lp.interval, self.count);
            self.lastcount = self.count;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::P;

    const MS: Time = 1_000_000;

    fn lp() -> LawParams {
        LawParams { target: 5 * MS, interval: 100 * MS, maxpacket: 1000 }
    }

    /// A queue that always holds a packet enqueued long ago (sojourn far above target) and a
    /// large backlog: every dodequeue is "above target".
    struct Standing {
        popped: u32,
    }
    impl CodelQueue<P> for Standing {
        fn pop_head(&mut self) -> Option<(P, Time)> {
            self.popped += 1;
            Some((P::new(self.popped, 1000), 0))
        }
        fn backlog_bytes(&self) -> u64 {
            1_000_000
        }
    }

    #[test]
    fn control_law_spacing_is_interval_over_sqrt_count() {
        assert_eq!(control_law(0, 100 * MS, 1), 100 * MS);
        assert_eq!(control_law(0, 100 * MS, 4), 50 * MS);
        assert_eq!(control_law(7, 100 * MS, 2), 7 + 70_710_678);
        assert_eq!(control_law(0, 100 * MS, 100), 10 * MS);
    }

    #[test]
    fn the_fixed_point_form_follows_the_floating_point_law() {
        let c = InvSqrt::cache();
        assert_eq!(c[0], u32::MAX);
        let mut inv = c[15];
        for n in 2..200u32 {
            if n >= 16 {
                inv = InvSqrt::next(n, inv);
            } else {
                inv = InvSqrt::next(n, 0);
            }
            let exact = 1.0 / (n as f64).sqrt();
            assert!((inv as f64 / 4_294_967_296.0 - exact).abs() / exact < 1.7e-3, "count {n}");
            let fixed = InvSqrt::control(0, 100 * MS, inv) as f64;
            let float = control_law(0, 100 * MS, n) as f64;
            assert!((fixed - float).abs() / float < 1.7e-3, "count {n}: {fixed} vs {float}");
        }
    }

    #[test]
    fn drops_follow_the_control_law_under_a_standing_queue() {
        // Dequeue every millisecond from a queue whose sojourn stays far above target: the first
        // dequeue arms first_above_time (t + interval), the first drop comes one interval later,
        // and the k-th drop after that comes interval / sqrt(k) after the previous one.
        let lp = lp();
        let mut v = CodelVars::default();
        let mut q = Standing { popped: 0 };
        let start = 1_000 * MS;
        let mut drop_times = Vec::new();
        let mut t = start;
        while t < start + 2_000 * MS {
            let mut n = 0;
            let out = v.dequeue(&lp, t, &mut q, &mut |_p| {
                n += 1;
                None
            });
            assert!(out.is_some());
            for _ in 0..n {
                drop_times.push(t);
            }
            t += MS;
        }
        assert_eq!(v.first_above_time, start + 100 * MS);
        assert_eq!(drop_times[0], start + 100 * MS, "first drop one interval after going above");
        // gaps: the k-th gap is interval/sqrt(k), rounded up to the 1 ms dequeue grid
        for k in 1..drop_times.len() {
            let gap = drop_times[k] - drop_times[k - 1];
            let law = (100.0 * MS as f64 / (k as f64).sqrt()).round() as Time;
            assert!(gap + MS > law && gap <= law + MS, "gap {k}: {gap} vs law {law}");
        }
        assert!(v.dropping);
        assert_eq!(v.count as usize, drop_times.len());
        // drop_next is exactly the law iterated from the first drop (independent of the grid)
        let mut want = start + 100 * MS;
        for k in 1..=v.count {
            want = control_law(want, lp.interval, k);
        }
        assert_eq!(v.drop_next, want);
    }

    #[test]
    fn below_target_or_small_backlog_resets_and_leaves_dropping() {
        let lp = lp();
        let mut f: Fifo<P> = Fifo::default();
        let mut v = CodelVars::default();
        // sojourn 10 ms >= target but only one packet left: backlog after pop 0 <= maxpacket
        f.push(P::new(1, 1000), 0);
        let out = v.dequeue(&lp, 10 * MS, &mut f, &mut |_| panic!("no drop"));
        assert!(out.is_some());
        assert_eq!(v.first_above_time, 0);
        // two packets with sojourn 10 ms: after the pop 1000 bytes remain (= maxpacket): below
        f.push(P::new(1, 1000), 10 * MS);
        f.push(P::new(1, 1000), 10 * MS);
        v.dequeue(&lp, 20 * MS, &mut f, &mut |_| panic!("no drop"));
        assert_eq!(v.first_above_time, 0);
        // three packets: 2000 bytes remain -> above, armed
        f.push(P::new(1, 1000), 10 * MS);
        f.push(P::new(1, 1000), 10 * MS);
        v.dequeue(&lp, 20 * MS, &mut f, &mut |_| panic!("no drop"));
        assert_eq!(v.first_above_time, 120 * MS);
        // an empty queue resets first_above_time and the dropping state
        while f.pop().is_some() {}
        v.dropping = true;
        assert!(v.dequeue(&lp, 200 * MS, &mut f, &mut |_| panic!("no drop")).is_none());
        assert_eq!(v.first_above_time, 0);
        assert!(!v.dropping);
    }

    #[test]
    fn reentering_soon_resumes_the_previous_drop_rate() {
        // RFC 8289 §5.5: if the dropping state is re-entered within 16 intervals of drop_next
        // and more than one drop happened since the last entry, count restarts at the difference.
        let lp = lp();
        let mut v =
            CodelVars { count: 10, lastcount: 2, drop_next: 0, first_above_time: 50 * MS, ..Default::default() };
        let mut q = Standing { popped: 0 };
        let mut n = 0;
        v.dequeue(&lp, 100 * MS, &mut q, &mut |_| {
            n += 1;
            None
        });
        assert_eq!(n, 1);
        assert!(v.dropping);
        assert_eq!(v.count, 8);
        assert_eq!(v.lastcount, 8);
        assert_eq!(v.drop_next, 100 * MS + control_law(0, lp.interval, 8));
        // long after the last drop: back to count = 1
        let mut v =
            CodelVars { count: 10, lastcount: 2, drop_next: 0, first_above_time: 50 * MS, ..Default::default() };
        v.dequeue(&lp, 2_000 * MS, &mut q, &mut |_| None);
        assert_eq!(v.count, 1);
        assert_eq!(v.drop_next, 2_100 * MS);
    }
}
