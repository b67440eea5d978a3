//! A hint for a simulator's memory, kept apart from the disciplines' contract ([`crate::Qdisc`]):
//! which packet a discipline will likely send `k` places after its next one, when it can tell
//! without changing anything (a FIFO's packet `k` behind its head). A simulator at core-router
//! scale loads that packet's flow state ahead of its departure (`crates/sim/src/sim/prefetch.rs`).
//! The hint may be wrong and changes no result; a discipline that cannot tell says `None`.

/// The packet likely to leave `k` places after the next one (default: unknown).
pub trait Upcoming<P> {
    #[inline]
    fn upcoming(&self, _k: usize) -> Option<&P> {
        None
    }
}

/// `Upcoming` for a discipline that can tell, through one of its fields: `hint_from!(Codel,
/// fifo.get)` reads `self.fifo.get(k)`. Invoked in the discipline's own file (its fields are
/// private there).
macro_rules! hint_from {
    ($t:ident, $($path:tt)+) => {
        impl<P: crate::Pkt> crate::hint::Upcoming<P> for $t<P> {
            #[inline]
            fn upcoming(&self, k: usize) -> Option<&P> {
                self.$($path)+(k)
            }
        }
    };
}
pub(crate) use hint_from;

/// The disciplines whose order of service is not a queue's order (flow queueing, the dual queue,
/// per-flow round robins) or that do not say: no hint.
macro_rules! no_hint {
    ($($m:ident :: $t:ident),* $(,)?) => {
        $( impl<P: crate::Pkt> Upcoming<P> for crate::$m::$t<P> {} )*
    };
}

no_hint!(
    perfect_choke::PerfectChoke,
    chokew::Chokew,
    fred::Fred,
    wfq::Wfq,
    fq_codel::FqCodel,
    dualpi2::DualPi2,
    cake::Cake,
    fq_pie::FqPie,
    sfb::Sfb,
    xchoke::Xchoke,
    hhf::Hhf,
    drr::Drr,
);
