//! Leaving slow start before the buffer overflows: HyStart as Linux's CUBIC runs it, and RFC 9406's
//! HyStart++. Both watch the round trip time within each round of slow start and end slow start
//! (`ssthresh = cwnd`) when it has risen by a clamped eighth of its minimum, the sign that a queue
//! is building; CUBIC ([`super::cubic`]) calls [`HyStart::on_ack`] on every ACK while
//! `cwnd < ssthresh`.
//!
//! * **Linux** (`net/ipv4/tcp_cubic.c`, `hystart_update`, Linux 6.x; the algorithm of Ha & Rhee,
//!   "Taming the elephants: New TCP slow start", Computer Networks 55(9), 2011). Linux 6.x does
//!   *not* implement HyStart++: its CUBIC still runs the original HyStart with two tests, from
//!   a window of 16 segments (`hystart_low_window`). *ACK train*: ACKs arriving within 2 ms of
//!   each other (`hystart_ack_delta_us`) that stretch more than half the minimum delay (plus an
//!   allowance of up to 1 ms, `hystart_ack_delay`) past the start of the round. *Delay*: once a
//!   round has 8 samples (`HYSTART_MIN_SAMPLES`), its smallest RTT above the connection's minimum
//!   plus `clamp(min/8, 4 ms, 16 ms)`. Either ends slow start at once (`ssthresh = cwnd`). A round
//!   ends when the ACK passes `snd_nxt` of its start.
//! * **HyStart++** (RFC 9406 §4): the delay test against the *previous round's* minimum RTT
//!   (`lastRoundMinRTT + clamp(lastRoundMinRTT/8, 4 ms, 16 ms)`, 8 samples per round), which
//!   starts Conservative Slow Start (CSS): growth divided by 4 (`CSS_GROWTH_DIVISOR`) for up to 5
//!   rounds (`CSS_ROUNDS`), back to slow start if the round's minimum falls below the baseline
//!   (a spurious exit), and to congestion avoidance (`ssthresh = cwnd`) after the fifth.
//!   RFC 9406 applies it to the initial slow start only (a loss or timeout ends it for the
//!   connection); Linux's HyStart starts afresh after a timeout (CUBIC's `on_enter_loss`).

use super::config::Hystart;
use aqm::Time;

const MS: Time = 1_000_000;
/// Linux `hystart_low_window`: no test below this window (segments).
pub const LOW_WINDOW: f64 = 16.0;
/// Samples a round needs before the delay test (Linux `HYSTART_MIN_SAMPLES`, RFC 9406 `N_RTT_SAMPLE`).
pub const MIN_SAMPLES: u32 = 8;
/// Linux `hystart_ack_delta_us`: ACKs closer than this form a train.
const ACK_DELTA: Time = 2 * MS;
/// RFC 9406 `CSS_GROWTH_DIVISOR` and `CSS_ROUNDS`.
pub const CSS_GROWTH_DIVISOR: f64 = 4.0;
pub const CSS_ROUNDS: u32 = 5;

/// The delay threshold of both: an eighth of the base delay, at least 4 ms and at most 16 ms
/// (Linux `HYSTART_DELAY_THRESH`, RFC 9406 `MIN_RTT_THRESH`, `MAX_RTT_THRESH`, `MIN_RTT_DIVISOR`).
#[inline]
pub fn delay_thresh(base: Time) -> Time {
    (base / 8).clamp(4 * MS, 16 * MS)
}

/// What an ACK means for slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Slow start goes on (in CSS with HyStart++: with its growth divided by 4).
    Continue,
    /// Leave slow start: `ssthresh = cwnd`.
    Exit,
}

/// One connection's HyStart state.
#[derive(Debug, Clone)]
pub struct HyStart {
    mode: Hystart,
    /// The current round: it ends when an ACK passes `end_seq`; started at `round_start`.
    end_seq: u32,
    round_start: Time,
    /// Linux: the last ACK of the current ACK train.
    last_ack: Time,
    /// The smallest RTT of the current round, and its samples.
    curr_rtt: Time,
    samples: u32,
    /// Linux: the connection's smallest RTT (`delay_min`). HyStart++: the previous round's
    /// (`lastRoundMinRTT`).
    base_rtt: Time,
    /// HyStart++: in CSS since the round whose minimum was `css_baseline`, for `css_rounds`.
    css_baseline: Time,
    css_rounds: u32,
    /// Slow start is over for this connection.
    done: bool,
}

impl HyStart {
    pub fn new(mode: Hystart) -> Self {
        HyStart {
            mode,
            end_seq: 0,
            round_start: 0,
            last_ack: 0,
            curr_rtt: Time::MAX,
            samples: 0,
            base_rtt: Time::MAX,
            css_baseline: Time::MAX,
            css_rounds: 0,
            done: mode == Hystart::Off,
        }
    }

    pub fn mode(&self) -> Hystart {
        self.mode
    }

    /// In HyStart++'s Conservative Slow Start: slow start's growth is divided by this.
    #[inline]
    pub fn growth_divisor(&self) -> f64 {
        if self.css_baseline != Time::MAX {
            CSS_GROWTH_DIVISOR
        } else {
            1.0
        }
    }

    /// Slow start ended by a loss or a timeout: no more HyStart for this connection.
    pub fn end(&mut self) {
        self.done = true;
        self.css_baseline = Time::MAX;
    }

    /// An ACK in slow start at `now` with `rtt` (its RTT sample, if any), the window `cwnd`, the
    /// cumulative ACK `snd_una` and the next new segment `snd_nxt`.
    pub fn on_ack(&mut self, now: Time, rtt: Option<Time>, cwnd: f64, snd_una: u32, snd_nxt: u32) -> Verdict {
        if self.done {
            return Verdict::Continue;
        }
        let round_over = snd_una > self.end_seq;
        if round_over {
            if self.mode == Hystart::HystartPp {
                if let Some(v) = self.end_round_pp() {
                    return v;
                }
            }
            self.round_start = now;
            self.last_ack = now;
            self.end_seq = snd_nxt;
            self.curr_rtt = Time::MAX;
            self.samples = 0;
        }
        let Some(rtt) = rtt.map(|r| r.max(1)) else {
            return Verdict::Continue;
        };
        match self.mode {
            Hystart::Off => Verdict::Continue,
            Hystart::Linux => self.linux(now, rtt, cwnd),
            Hystart::HystartPp => self.pp(rtt, cwnd),
        }
    }

    /// Linux's `hystart_update` (with `cubictcp_acked`'s `delay_min`).
    fn linux(&mut self, now: Time, rtt: Time, cwnd: f64) -> Verdict {
        self.base_rtt = self.base_rtt.min(rtt);
        if cwnd < LOW_WINDOW {
            return Verdict::Continue;
        }
        if now.saturating_sub(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            // half the minimum delay (an unpaced sender's ACKs come back in a train of at most
            // that length) plus hystart_ack_delay's allowance, 1 ms at these rates
            let threshold = (self.base_rtt + MS) / 2;
            if now.saturating_sub(self.round_start) > threshold {
                return self.exit();
            }
        }
        self.curr_rtt = self.curr_rtt.min(rtt);
        if self.samples < MIN_SAMPLES {
            self.samples += 1;
        } else if self.curr_rtt > self.base_rtt + delay_thresh(self.base_rtt) {
            return self.exit();
        }
        Verdict::Continue
    }

    /// RFC 9406 §4.2, per ACK.
    fn pp(&mut self, rtt: Time, cwnd: f64) -> Verdict {
        self.curr_rtt = self.curr_rtt.min(rtt);
        self.samples += 1;
        if self.samples < MIN_SAMPLES || self.base_rtt == Time::MAX || self.curr_rtt == Time::MAX {
            return Verdict::Continue;
        }
        if self.css_baseline == Time::MAX {
            if cwnd >= LOW_WINDOW && self.curr_rtt >= self.base_rtt + delay_thresh(self.base_rtt) {
                // a queue is building: Conservative Slow Start
                self.css_baseline = self.curr_rtt;
                self.css_rounds = 0;
            }
        } else if self.curr_rtt < self.css_baseline {
            // the RTT fell back: the exit was spurious, slow start resumes
            self.css_baseline = Time::MAX;
        }
        Verdict::Continue
    }

    /// RFC 9406: a round of HyStart++ ends; after `CSS_ROUNDS` rounds of CSS, slow start is over.
    fn end_round_pp(&mut self) -> Option<Verdict> {
        if self.curr_rtt != Time::MAX {
            self.base_rtt = self.curr_rtt;
        }
        if self.css_baseline != Time::MAX {
            self.css_rounds += 1;
            if self.css_rounds >= CSS_ROUNDS {
                return Some(self.exit());
            }
        }
        None
    }

    fn exit(&mut self) -> Verdict {
        self.end();
        Verdict::Exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slow start over a path of base RTT `base` whose bottleneck takes `pkt` per segment (BDP
    /// `bdp` segments): the RTT of a round is `base` plus the queue of what is in flight beyond
    /// the BDP, and the ACKs come back `gap` apart (the bottleneck's spacing, or twice it with
    /// delayed ACKs). Drive `h` until it says to leave; returns the window then, or `None`.
    fn drive(h: &mut HyStart, base: Time, bdp: f64, pkt: Time, gap: Time, pp: bool) -> Option<f64> {
        let (mut cwnd, mut una, mut now) = (10.0f64, 0u32, 0);
        while cwnd < 5_000.0 {
            let n = cwnd as u32;
            let nxt = una + n;
            let rtt = base + ((cwnd - bdp).max(0.0) * pkt as f64) as Time;
            for i in 0..n {
                una += 1;
                let t = now + rtt + (rtt * i as Time / n as Time).max(gap * i as Time);
                if h.on_ack(t, Some(rtt), cwnd, una, nxt + i) == Verdict::Exit {
                    return Some(cwnd);
                }
                cwnd += if pp { 1.0 / h.growth_divisor() } else { 1.0 };
            }
            now += rtt;
        }
        None
    }

    const PKT: Time = 1_200_000; // 1500 B at 10 Mb/s

    #[test]
    fn linux_hystart_exits_slow_start_on_the_rtt_rise() {
        // 44 ms base RTT, BDP 37 segments; ACKs 2.4 ms apart (delayed ACKs at the bottleneck
        // rate), too far apart for an ACK train: the delay test decides
        let mut h = HyStart::new(Hystart::Linux);
        let w = drive(&mut h, 44 * MS, 37.0, PKT, 2 * PKT, false).expect("slow start ends by the delay test");
        // the threshold is 44 ms + 5.5 ms: more than 4.6 packets queued, a window above 41.6 at
        // the start of the round (the round after it doubles), and 8 samples into that round
        let (thresh_w, samples) = (37.0 + 5.5 / 1.2, MIN_SAMPLES as f64);
        assert!(w > thresh_w && w <= 2.0 * thresh_w + samples, "left at cwnd {w}");
        // without a queue (an unbounded pipe) it never fires
        let mut h = HyStart::new(Hystart::Linux);
        assert_eq!(drive(&mut h, 44 * MS, 1e9, PKT, 2 * PKT, false), None);
    }

    #[test]
    fn linux_hystart_ack_train_fires_when_a_round_of_acks_spans_half_the_delay() {
        // an ACK per segment, 1.2 ms apart: a round's train is longer than 22.5 ms once it holds
        // 19 ACKs, before any queue has built (delay test silent)
        let mut h = HyStart::new(Hystart::Linux);
        let w = drive(&mut h, 44 * MS, 1e9, PKT, PKT, false).expect("the ACK train ends slow start");
        assert!((LOW_WINDOW..=64.0).contains(&w), "left at cwnd {w}");
    }

    #[test]
    fn hystart_pp_exits_slow_start_on_the_rtt_rise_after_css() {
        let mut h = HyStart::new(Hystart::HystartPp);
        let w = drive(&mut h, 44 * MS, 37.0, PKT, PKT, true).expect("HyStart++ ends slow start");
        assert!(w > 37.0, "left at cwnd {w}");
        // CSS slowed the growth: the exit comes CSS_ROUNDS rounds after the RTT rise, with a
        // window below the one plain doubling would have reached by then
        assert!(w < 41.6 * 2f64.powi(CSS_ROUNDS as i32), "cwnd {w}");
        let mut h = HyStart::new(Hystart::HystartPp);
        assert_eq!(drive(&mut h, 44 * MS, 1e9, PKT, PKT, true), None);
    }

    #[test]
    fn off_never_exits_and_a_loss_ends_it() {
        let mut h = HyStart::new(Hystart::Off);
        assert_eq!(drive(&mut h, 44 * MS, 37.0, PKT, PKT, false), None);
        let mut h = HyStart::new(Hystart::Linux);
        h.end();
        assert_eq!(drive(&mut h, 44 * MS, 37.0, PKT, PKT, false), None);
    }

    #[test]
    fn the_threshold_is_an_eighth_clamped_to_4_and_16_ms() {
        assert_eq!(delay_thresh(10 * MS), 4 * MS);
        assert_eq!(delay_thresh(80 * MS), 10 * MS);
        assert_eq!(delay_thresh(400 * MS), 16 * MS);
    }
}
