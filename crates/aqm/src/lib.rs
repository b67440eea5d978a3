//! # aqm — active queue management disciplines
//!
//! One output queue, one algorithm, no simulator: every discipline in this crate is a plain value that
//! is handed packets (`enqueue`), asked for the next one to transmit (`dequeue`) and told about the
//! link (`on_link_idle`). Time is passed in (integer nanoseconds, [`Time`]), never read from a clock,
//! and every random draw comes from a [`rng::Rng`] stream owned by the caller, so a discipline is
//! deterministic given its inputs.
//!
//! The modules by layer, from the vocabulary up (the accounting wrapper holds the registry's enum,
//! [`AnyQdisc`]; the CHOKe family's shared pieces embed RED's stage from [`red`]):
//!
//! * **Vocabulary**: [`units`] (durations as scenario files write them), [`rng`] (seeded random
//!   streams), [`reason`] ([`DropReason`]: every drop carries exactly one), [`packet`] ([`Pkt`]:
//!   what a discipline may read of a packet; the simulator and the emulator own the type).
//! * **The contract and the accounting**, as Linux's `net/sched` and ns-3's traffic-control
//!   module split them: [`qdisc`] holds [`qdisc::Qdisc`], the one small trait every algorithm
//!   implements (the "ops table"), with [`Cx`], [`Limit`] and [`LinkInfo`]. An algorithm never
//!   counts its own statistics; it *reports* each drop with a [`DropReason`] into the caller's
//!   drop buffer. [`queue`] holds [`queue::Queue`], which wraps any discipline, owns the
//!   accounting (arrivals, enqueued, transmitted, drops by reason) and checks the identities of
//!   the specification (aqm.md §1.3).
//! * **Shared pieces**, written once: [`fifo`] (the plain FIFO of the FIFO disciplines);
//!   [`red_math`] (RED's average estimator, aqm.md §1.4, and the RED drop-probability stage used by
//!   RED, RIO and every CHOKe-family scheme); [`control`] (what the controller schemes BLUE,
//!   RAQM, PI and REM share: the unbiased early test on a controlled probability, timer periods,
//!   parameter checks); [`codel_law`] (CoDel's parameters, estimator and control law, in RFC
//!   8289's floating point and Linux's fixed point, used by CoDel, every FQ-CoDel bucket and CAKE's
//!   COBALT, as Linux's `codel_impl.h` serves `sch_codel` and `sch_fq_codel`); [`pi_law`] (PIE's
//!   controller: its parameters, the PI update with RFC 8033's auto-tuning, the burst allowance's
//!   and safeguard's conditions, de-randomisation; used by PIE, FQ-PIE and DualPI2's classic
//!   side); [`flow_queue`] (hashed flow queues served by DRR with new and old lists, for FQ-CoDel
//!   and FQ-PIE); [`buffer`] (the CHOKe family's leaky buffer: draws and removals of waiting
//!   packets) and [`family`] (the family's parameter block and matched-drop bookkeeping);
//!   [`defaults`] (every scheme's default parameter values, written once).
//! * **One algorithm per file**: [`droptail`], [`red`], [`rio`], [`blue`], [`raqm`], [`pi`],
//!   [`rem`], [`fred`], [`wfq`]; the CHOKe family [`choke`], [`gchoke`], [`perfect_choke`],
//!   [`chokew`], [`choked`], and [`ward`]; the modern baselines [`codel`], [`pie`], [`fq_codel`],
//!   and those of L4S and flow queueing: [`dualpi2`], [`cake`], [`fq_pie`];
//!   the fair schemes with a little state [`sfb`], [`afd`], [`csfq`], [`red_pd`], [`sred`],
//!   [`xchoke`], [`hhf`] and the per-flow fair queue [`drr`]. Every discipline reports the bytes
//!   of state it keeps ([`Qdisc::state_bytes`]).
//! * **The registry** (this file): [`AnyQdisc`], an enum over all disciplines, gives static
//!   dispatch on the hot path, and [`AqmConfig`] is the validated configuration that builds one;
//!   one line per scheme gives its configuration type, its arm and its `aqmlab list` text.
//! * **About the schemes, for people** ([`describe`]: `aqmlab list aqm NAME`, each parameter's unit,
//!   default and meaning, read from these sources' comments by `build.rs` and from serde's own
//!   defaults) and **settings that never act** ([`inert`]: a threshold above the buffer, a delay
//!   target longer than the full buffer's delay, refused as a DropTail in disguise; what a buffer
//!   leaves unused, noted), and **a hint for a simulator's memory** ([`hint`]: the packets a
//!   discipline will send next, apart from the contract).
//!
//! The specification these files implement is `shared/spec/aqm.md`; each file cites its sections.

pub mod afd;
pub mod blue;
pub mod buffer;
pub mod cake;
pub mod choke;
pub mod choked;
pub mod chokew;
pub mod codel;
pub mod codel_law;
pub mod control;
pub mod csfq;
pub mod defaults;
pub mod describe;
pub mod droptail;
pub mod drr;
pub mod dualpi2;
pub mod family;
pub mod fifo;
pub mod flow_queue;
pub mod fq_codel;
pub mod fq_pie;
pub mod fred;
pub mod gchoke;
pub mod hhf;
pub mod hint;
pub mod inert;
pub mod packet;
pub mod perfect_choke;
pub mod pi;
pub mod pi_law;
pub mod pie;
pub mod qdisc;
pub mod queue;
pub mod raqm;
pub mod reason;
pub mod red;
pub mod red_math;
pub mod red_pd;
pub mod rem;
pub mod rio;
pub mod rng;
pub mod sfb;
pub mod sred;
pub mod units;
pub mod ward;
pub mod wfq;
pub mod xchoke;

pub use packet::Pkt;
pub use qdisc::{Cx, Dropped, Limit, LinkInfo, Qdisc, QueueUnit};
pub use queue::{Queue, QueueStats};
pub use reason::DropReason;

/// Simulation time in integer nanoseconds.
pub type Time = u64;

/// Nanoseconds per second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// An error in a discipline's parameters: which parameter, and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    /// Name of the offending parameter as it appears in a scenario file.
    pub field: &'static str,
    /// What is wrong and what is allowed.
    pub msg: String,
}

impl ParamError {
    pub fn new(field: &'static str, msg: impl Into<String>) -> Self {
        ParamError { field, msg: msg.into() }
    }
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.msg)
    }
}

/// Parameters of a discipline: validated after deserialisation.
pub trait Params {
    /// Check every parameter; the error names the parameter and what is allowed.
    fn validate(&self) -> Result<(), ParamError> {
        Ok(())
    }
}

/// Where a discipline's parameters come from: the scenario loader implements this with serde and
/// its own error type (which carries the key path), so this crate stays format-agnostic.
pub trait ParamSource {
    type Error;
    fn get<T: serde::de::DeserializeOwned>(self) -> Result<T, Self::Error>;
}

/// A discipline that can be built from its parameters.
pub trait Scheme<P: Pkt>: Qdisc<P> + Sized {
    type Params: Params + Clone;
    fn new(params: &Self::Params, link: LinkInfo, limit: Limit) -> Self;
}

/// The registry of disciplines: one line per scheme, giving its enum variant, its type, its
/// parameter type, the `type = "..."` name and a one-line description. From it come
/// [`AqmConfig`] (validated configuration), [`AnyQdisc`] (the enum that dispatches statically on
/// the per-packet path) and [`AQM_NAMES`] (what `aqmlab list aqm` prints).
macro_rules! registry {
    ($( $variant:ident => $ty:ident ( $params:ty ), $name:literal, $desc:literal; )*) => {
        /// Validated configuration of a discipline: what a scenario's `aqm = { type = ... }` becomes.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AqmConfig { $( $variant($params), )* }

        /// Names accepted by `type = "..."`, with a one-line description.
        pub const AQM_NAMES: &[(&str, &str)] = &[ $( ($name, $desc), )* ];

        /// Each `type = "..."` name with its parameter type's name (for [`describe`]).
        pub const AQM_PARAMS: &[(&str, &str)] = &[ $( ($name, stringify!($params)), )* ];

        /// Every discipline behind one enum: static dispatch, no boxing on the per-packet path.
        pub enum AnyQdisc<P: Pkt> { $( $variant($ty<P>), )* }

        impl AqmConfig {
            /// The `type` name of this configuration.
            pub fn name(&self) -> &'static str {
                match self { $( AqmConfig::$variant(_) => $name, )* }
            }
            /// Check the parameters.
            pub fn validate(&self) -> Result<(), ParamError> {
                match self { $( AqmConfig::$variant(p) => p.validate(), )* }
            }
            /// Read the parameters of scheme `kind` from `src`; `Ok(None)` for an unknown name.
            pub fn parse<S: ParamSource>(kind: &str, src: S) -> Result<Option<AqmConfig>, S::Error> {
                match kind {
                    $( $name => Ok(Some(AqmConfig::$variant(src.get::<$params>()?))), )*
                    _ => Ok(None),
                }
            }
            /// Build the discipline for a link of the given rate with buffer limit `limit`.
            pub fn build<P: Pkt>(&self, link: LinkInfo, limit: Limit) -> AnyQdisc<P> {
                match self { $( AqmConfig::$variant(p) => AnyQdisc::$variant(<$ty<P> as Scheme<P>>::new(p, link, limit)), )* }
            }
        }

        /// The parameters alone (without `type`), as a scenario file writes them: what the resolved
        /// scenario (`sim::resolved`) records of a discipline, every default filled in.
        impl serde::Serialize for AqmConfig {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self { $( AqmConfig::$variant(p) => serde::Serialize::serialize(p, s), )* }
            }
        }

        impl<P: Pkt> hint::Upcoming<P> for AnyQdisc<P> {
            #[inline]
            fn upcoming(&self, k: usize) -> Option<&P> {
                match self { $( AnyQdisc::$variant(q) => hint::Upcoming::upcoming(q, k), )* }
            }
        }

        impl<P: Pkt> Qdisc<P> for AnyQdisc<P> {
            // DropTail, the default queue, is inlined; every other discipline is called out of
            // line (see `out_of_line`).
            #[inline]
            #[allow(unreachable_patterns)]
            fn enqueue(&mut self, pkt: P, cx: &mut Cx<'_, P>) -> bool {
                match self {
                    AnyQdisc::DropTail(q) => q.enqueue(pkt, cx),
                    $( AnyQdisc::$variant(q) => out_of_line::enqueue(q, pkt, cx), )*
                }
            }
            #[inline]
            #[allow(unreachable_patterns)]
            fn dequeue(&mut self, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
                match self {
                    AnyQdisc::DropTail(q) => q.dequeue(cx),
                    $( AnyQdisc::$variant(q) => out_of_line::dequeue(q, cx), )*
                }
            }
            #[inline]
            fn len(&self) -> usize {
                match self { $( AnyQdisc::$variant(q) => q.len(), )* }
            }
            #[inline]
            fn bytes(&self) -> u64 {
                match self { $( AnyQdisc::$variant(q) => q.bytes(), )* }
            }
            #[inline]
            fn on_link_idle(&mut self, now: Time) {
                match self { $( AnyQdisc::$variant(q) => q.on_link_idle(now), )* }
            }
            fn timer_period(&self) -> Option<Time> {
                match self { $( AnyQdisc::$variant(q) => q.timer_period(), )* }
            }
            fn on_timer(&mut self, cx: &mut Cx<'_, P>) {
                match self { $( AnyQdisc::$variant(q) => q.on_timer(cx), )* }
            }
            fn for_each_waiting(&self, f: &mut dyn FnMut(&P, Time)) {
                match self { $( AnyQdisc::$variant(q) => q.for_each_waiting(f), )* }
            }
            fn state_names(&self) -> &'static [&'static str] {
                match self { $( AnyQdisc::$variant(q) => q.state_names(), )* }
            }
            fn state(&self, out: &mut [f64]) {
                match self { $( AnyQdisc::$variant(q) => q.state(out), )* }
            }
            fn wants_hosts(&self) -> bool {
                match self { $( AnyQdisc::$variant(q) => q.wants_hosts(), )* }
            }
            fn flow_hosts(&mut self, flow: u32, src: u32, dst: u32) {
                match self { $( AnyQdisc::$variant(q) => q.flow_hosts(flow, src, dst), )* }
            }
            fn state_bytes(&self) -> u64 {
                match self { $( AnyQdisc::$variant(q) => q.state_bytes(), )* }
            }
        }
    };
}

/// Calls of a discipline's `enqueue`/`dequeue` that are never inlined into [`AnyQdisc`]'s
/// dispatch. With every discipline inlined, the dispatch became one function of some 25 kB whose
/// prologue saved six registers and set up a 500-byte frame on every call, which cost a DropTail
/// packet more than DropTail's own work (about 67 instructions per enqueue, callgrind). Out of
/// line, each arm is a jump to a function with its own frame, and the dispatch of the short
/// DropTail path inlines into the caller.
mod out_of_line {
    use crate::{Cx, Pkt, Qdisc, Time};

    #[inline(never)]
    pub fn enqueue<P: Pkt, Q: Qdisc<P>>(q: &mut Q, pkt: P, cx: &mut Cx<'_, P>) -> bool {
        q.enqueue(pkt, cx)
    }

    #[inline(never)]
    pub fn dequeue<P: Pkt, Q: Qdisc<P>>(q: &mut Q, cx: &mut Cx<'_, P>) -> Option<(P, Time)> {
        q.dequeue(cx)
    }
}

use afd::{Afd, AfdParams};
use blue::{Blue, BlueParams};
use choke::{Choke, ChokeParams};
use choked::{Choked, ChokedParams};
use chokew::{Chokew, ChokewParams};
use droptail::{DropTail, DropTailParams};
use drr::{Drr, DrrParams};
use gchoke::{GChoke, GChokeParams};
use hhf::{Hhf, HhfParams};
use perfect_choke::{PerfectChoke, PerfectChokeParams};
use pi::{Pi, PiParams};
use raqm::{Raqm, RaqmParams};
use red::{Red, RedParams};
use red_pd::{RedPd, RedPdParams};
use rem::{Rem, RemParams};
use rio::{Rio, RioParams};
use ward::{Ward, WardParams};

use cake::{Cake, CakeParams};
use codel::{Codel, CodelParams};
use csfq::{Csfq, CsfqParams};
use dualpi2::{DualPi2, DualPi2Params};
use fq_codel::{FqCodel, FqCodelParams};
use fq_pie::{FqPie, FqPieParams};
use fred::{Fred, FredParams};
use pie::{Pie, PieParams};
use sfb::{Sfb, SfbParams};
use sred::{Sred, SredParams};
use wfq::{Wfq, WfqParams};
use xchoke::{Xchoke, XchokeParams};

// One line per scheme. Keep the order: it is the order of `aqmlab list aqm`.
registry! {
    DropTail => DropTail(DropTailParams), "droptail", "tail drop when the buffer is full";
    Red => Red(RedParams), "red", "Random Early Detection (Floyd & Jacobson 1993): gentle, byte mode, ns-2 variant";
    Rio => Rio(RioParams), "rio", "RED with In/Out (Clark & Fang 1998): two RED parameter sets over one FIFO";
    Blue => Blue(BlueParams), "blue", "BLUE (Feng et al. 2002): p_m raised on overflow, lowered on link idle";
    Choke => Choke(ChokeParams), "choke", "CHOKe (Pan, Prabhakar, Psounis 2000): matched drops before RED; n_cand candidates; rear-region variant";
    PerfectChoke => PerfectChoke(PerfectChokeParams), "perfect_choke", "Perfect CHOKe ([TWL] §IV): oracle drop with probability 2 b_i / Q, no victims";
    GChoke => GChoke(GChokeParams), "gchoke", "geometric CHOKe (Eshete & Jiang 2013): draw again while the draws match";
    Chokew => Chokew(ChokewParams), "chokew", "CHOKeW (Wen, Fang, Sun 2008): priority-weighted matched drops; -RED, -avg, ID buffer, parallel draw";
    Choked => Choked(ChokedParams), "choked", "CHOKeD (Manzoor 2015): queue-dependent draws from the rear then the front half";
    Ward => Ward(WardParams), "ward", "WARD (Ho, Chan, Chen 2007): position-weighted two-packet comparison in DropTail";
    Raqm => Raqm(RaqmParams), "raqm", "rate-based AQM (Wang et al.): drop probability driven by the measured input rate; Eq. 3 on the base or the last applied probability";
    Pi => Pi(PiParams), "pi", "PI controller (Hollot et al. 2002) of the queue length, sampled at w Hz";
    Rem => Rem(RemParams), "rem", "Random Exponential Marking (Athuraliya et al. 2001): price-based drops";
    Fred => Fred(FredParams), "fred", "Flow RED (Lin & Morris 1997): per-active-flow limits and strikes, random drops for robust flows";
    Wfq => Wfq(WfqParams), "wfq", "WFQ over one DropTail queue per priority level, GPS or self-clocked virtual time";
    Codel => Codel(CodelParams), "codel", "CoDel (RFC 8289), modern baseline: drops at dequeue when the sojourn stays above target";
    Pie => Pie(PieParams), "pie", "PIE (RFC 8033), modern baseline: delay-driven PI drop probability with auto-tuning and burst allowance";
    FqCodel => FqCodel(FqCodelParams), "fq_codel", "FQ-CoDel (RFC 8290), modern baseline: DRR over hashed flow queues, CoDel per queue";
    DualPi2 => DualPi2(DualPi2Params), "dualpi2", "DualPI2 (RFC 9332, Linux defaults): coupled L4S and classic queues, p_C = p'^2, p_L = 2p', 1 ms step";
    Cake => Cake(CakeParams), "cake", "CAKE's core (Hoeiland-Joergensen et al. 2018): COBALT per flow, 8-way set-associative hashing, host isolation";
    FqPie => FqPie(FqPieParams), "fq_pie", "FQ-PIE (Linux fq_pie): DRR over hashed flow queues, PIE per queue";
    Sfb => Sfb(SfbParams), "sfb", "Stochastic Fair Blue (Feng et al. 2001): BLUE per hashed bin, L levels x N bins, penalty box for non-responsive flows";
    Afd => Afd(AfdParams), "afd", "Approximate Fair Dropping (Pan et al. 2003): shadow buffer of recent arrivals, drop (1 - m_fair/m_i)+";
    Csfq => Csfq(CsfqParams), "csfq", "Core-Stateless Fair Queueing (Stoica et al. 1998): edges label rates, the core drops max(0, 1 - alpha/label)";
    RedPd => RedPd(RedPdParams), "red_pd", "RED with Preferential Dropping (Mahajan et al. 2001): RED's drop history identifies fast flows, a pre-filter limits them";
    Sred => Sred(SredParams), "sred", "Stabilized RED (Ott et al. 1999): zombie list estimates the number of flows, drops scaled by it (full SRED: hits dropped harder)";
    Xchoke => Xchoke(XchokeParams), "xchoke", "xCHOKe (Chhabra et al. 2002): CHOKe plus a table of the flows that hit, dropped in proportion to their hits";
    Hhf => Hhf(HhfParams), "hhf", "Heavy-Hitter Filter (Linux sch_hhf, after Estan & Varghese 2002): multistage filter, heavy hitters served at weight 1 of 3";
    Drr => Drr(DrrParams), "drr", "per-flow Deficit Round Robin (Shreedhar & Varghese 1995): one queue per flow, push-out from the longest";
}

#[cfg(test)]
pub(crate) mod test_util {
    /// A minimal packet for unit tests.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct P {
        pub flow: u32,
        pub size: u32,
        pub prio: u8,
        pub in_profile: bool,
        /// Arrival order, for order checks (not visible to disciplines).
        pub seq: u32,
        /// ECN-capable transport, and the Congestion Experienced mark.
        pub ect: bool,
        pub ce: bool,
        /// The ECT(1) codepoint (with `ect`): the L4S identifier.
        pub ect1: bool,
        /// CSFQ's rate label (bits per second).
        pub label: Option<f64>,
    }
    impl P {
        pub fn new(flow: u32, size: u32) -> Self {
            P { flow, size, prio: 1, in_profile: false, seq: 0, ect: false, ce: false, ect1: false, label: None }
        }
    }

    /// Fire a discipline's timer once, at t = 0 (tests of the controller schemes).
    pub fn tick<Q: crate::Qdisc<P>>(q: &mut Q, rng: &mut crate::rng::Rng) {
        let mut drops = Vec::new();
        q.on_timer(&mut crate::Cx { now: 0, rng, drops: &mut drops });
    }

    /// Parameters from JSON, for tests: `config("choke", r#"{"min_th": 1, "max_th": 5}"#)`.
    pub fn config(kind: &str, json: &str) -> crate::AqmConfig {
        struct J(serde_json::Value);
        impl crate::ParamSource for J {
            type Error = String;
            fn get<T: serde::de::DeserializeOwned>(self) -> Result<T, String> {
                serde_json::from_value(self.0).map_err(|e| e.to_string())
            }
        }
        let cfg = crate::AqmConfig::parse(kind, J(serde_json::from_str(json).unwrap())).unwrap().expect("known scheme");
        cfg.validate().unwrap();
        cfg
    }
    impl crate::Pkt for P {
        fn flow(&self) -> u32 {
            self.flow
        }
        fn size(&self) -> u32 {
            self.size
        }
        fn prio(&self) -> u8 {
            self.prio
        }
        fn in_profile(&self) -> bool {
            self.in_profile
        }
        fn ecn_capable(&self) -> bool {
            self.ect
        }
        fn mark_ce(&mut self) {
            self.ce = true;
        }
        fn l4s(&self) -> bool {
            self.ect1 || self.ce
        }
        fn rate_label(&self) -> Option<f64> {
            self.label
        }
        fn set_rate_label(&mut self, rate_bps: f64) {
            self.label = Some(rate_bps);
        }
    }
}
