//! Every discipline's default parameter values, written once.
//!
//! One module per scheme, one function per parameter that has a default other than its type's
//! own (`false`, `0`, an enum's first choice): serde's `#[serde(default = "...")]` names these
//! functions, so a scenario that leaves a key out gets this value; `aqmlab list aqm NAME`
//! ([`crate::describe`]) reads the defaults back through serde, and a scheme's `Default` is
//! [`of`], serde's reading of an empty table. A value shared by meaning (RED's stage inside the
//! CHOKe family, CoDel's law inside FQ-CoDel and CAKE, PIE's controller inside FQ-PIE) is
//! defined once and named again by the others; where a paper or RFC gives the value, the
//! scheme's field comment says so.

use serde::de::DeserializeOwned;

/// A scheme's parameters with every default: serde's reading of an empty table, so `Default` and
/// a scenario that gives no keys cannot disagree. Panics for a type with a required parameter
/// (which has no `Default`).
pub fn of<T: DeserializeOwned>() -> T {
    with(&[])
}

/// A scheme's parameters with the given numbers (`("min_th", 20.0)`, ...) and every other default,
/// as serde reads a table holding only those keys. Panics if a required parameter is left out.
pub fn with<T: DeserializeOwned>(given: &[(&str, f64)]) -> T {
    let table = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(given.iter().copied());
    T::deserialize(table).unwrap_or_else(|e| panic!("{e}: a parameter without a default"))
}

/// The parameters whose default follows the link's buffer (`limit`), with the rule as `aqmlab list
/// aqm NAME` shows it: (scheme, parameter, default).
pub const FROM_BUFFER: &[(&str, &str, &str)] = &[
    ("chokew", "l_th", "limit × 100/500"),
    ("chokew", "l_minus", "limit × 125/500"),
    ("chokew", "l_plus", "limit × 175/500"),
    ("rio", "min_th_in", "limit × 110/500"),
    ("rio", "max_th_in", "limit × 210/500"),
    ("rio", "min_th_out", "limit × 100/500"),
    ("rio", "max_th_out", "limit × 200/500"),
    ("red_pd", "min_th", "limit / 4"),
    ("red_pd", "max_th", "3 × min_th"),
    ("xchoke", "min_th", "limit / 4"),
    ("xchoke", "max_th", "3 × min_th"),
];

/// `name: type = value;` for each default: a function serde can name.
macro_rules! defaults {
    ($( $name:ident : $t:ty = $v:expr; )*) => { $( pub fn $name() -> $t { $v } )* };
}

/// Values several schemes share by meaning.
pub mod common {
    defaults! {
        yes: bool = true;
        no: bool = false;
        // the papers' packet: the mean and largest packet size of RED's byte mode, the packet a
        // rate is converted with (bytes)
        pkt_size: u32 = 1000;
        // an Ethernet frame with its 14-byte header, Linux's `psched_mtu` (bytes)
        link_mtu: u32 = 1514;
        // hash buckets of the flow-queueing schemes (RFC 8290 §5.2.1, Linux `fq_pie`)
        flow_buckets: u32 = 1024;
    }
}

pub mod red {
    defaults! {
        max_p: f64 = 0.1;
        w_q: f64 = 0.002;
        max_pkt_size: u32 = super::common::pkt_size();
        mean_pkt_size: u32 = super::common::pkt_size();
        uniformise: bool = true;
    }
}

/// RIO's defaults are [CHOKeW]'s (§4), whose thresholds are for its 500-packet buffer: one left
/// out is the same fraction of the link's buffer ([`chokew::scaled`]).
pub mod rio {
    pub const MIN_TH_IN: f64 = 110.0;
    pub const MAX_TH_IN: f64 = 210.0;
    pub const MIN_TH_OUT: f64 = 100.0;
    pub const MAX_TH_OUT: f64 = 200.0;
    defaults! {
        max_p_in: f64 = 0.01;
        gentle_in: bool = true;
        max_p_out: f64 = 0.02;
        gentle_out: bool = true;
    }
    pub use super::red::{max_pkt_size, mean_pkt_size, uniformise, w_q};
}

pub mod fred {
    defaults! {
        max_p: f64 = 0.02;
        min_q: f64 = 4.0;
    }
    pub use super::red::{mean_pkt_size, w_q};
}

pub mod blue {
    defaults! {
        d1: f64 = 0.0025;
        d2: f64 = 0.00025;
        freeze_time: f64 = 0.1;
    }
}

/// The CHOKe family: RED's stage keeps RED's defaults.
pub mod family {
    pub use super::red::{max_p, max_pkt_size, mean_pkt_size, uniformise, w_q};
    defaults! {
        choke_draw_above_hard: bool = true;
    }
}

pub mod choke {
    pub use super::family::choke_draw_above_hard;
    defaults! {
        n_cand: u32 = 1;
    }
}

pub mod gchoke {
    pub use super::family::choke_draw_above_hard;
    defaults! {
        maxcomp: u32 = 10;
    }
}

pub mod perfect_choke {
    defaults! {
        red_stage: bool = true;
    }
}

/// CHOKeW's thresholds are [CHOKeW] §4's for its 500-packet buffer (`L_th` 100, `L-` 125, `L+`
/// 175 packets): a threshold left out is the same fraction of the link's buffer ([`scaled`]), so
/// the paper's buffer gets the paper's values and any other buffer thresholds it can reach.
pub mod chokew {
    /// The buffer of [CHOKeW] §4 (packets).
    pub const PAPER_BUFFER: f64 = 500.0;
    pub const L_TH: f64 = 100.0;
    pub const L_MINUS: f64 = 125.0;
    pub const L_PLUS: f64 = 175.0;

    /// A threshold of the paper's buffer, `paper` packets of [`PAPER_BUFFER`], on a buffer of
    /// `buffer` packets (exactly the paper's value on a 500-packet buffer).
    pub fn scaled(paper: f64, buffer: f64) -> f64 {
        buffer * paper / PAPER_BUFFER
    }

    defaults! {
        p_plus: f64 = 0.002;
        p_minus: f64 = 0.001;
        weights: Vec<f64> = vec![1.0];
        mean_pkt_size: u32 = super::common::pkt_size();
    }
}

pub mod choked {
    defaults! {
        t_min: f64 = 40.0;
        t_max: f64 = 80.0;
        w_q: f64 = 0.02;
        max_p: f64 = 0.1;
        red_after_unmatched: bool = true;
        mean_pkt_size: u32 = super::common::pkt_size();
    }
}

pub mod raqm {
    defaults! {
        t: f64 = 1.0;
        f_prime: f64 = 0.1;
        q0: f64 = 50.0;
        epsilon: f64 = 0.9;
        m_static: f64 = 2.0;
        c_max: f64 = 20.0;
        p_init: f64 = 0.0002;
        p_floor: f64 = 1e-6;
    }
}

pub mod pi {
    defaults! {
        a: f64 = 0.00001822;
        b: f64 = 0.00001816;
        w: f64 = 170.0;
        q_ref: f64 = 50.0;
        mean_pkt_size: u32 = super::common::pkt_size();
    }
}

pub mod rem {
    defaults! {
        gamma: f64 = 0.001;
        alpha: f64 = 0.1;
        phi: f64 = 1.001;
        t_upd: f64 = 0.002;
        b0: f64 = 20.0;
        inw: f64 = 1.0;
        mean_pkt_size: u32 = 500;
    }
}

pub mod codel {
    defaults! {
        target: f64 = 0.005;
        interval: f64 = 0.1;
        maxpacket: u32 = super::common::pkt_size();
    }
}

pub mod fq_codel {
    pub use super::codel::{interval, maxpacket, target};
    pub use super::common::flow_buckets as flows;
    pub use super::common::link_mtu as quantum;
}

pub mod cake {
    pub use super::codel::{interval, target};
    pub use super::common::link_mtu as mtu;
    defaults! {
        shaped: bool = true;
        hash: crate::flow_queue::FlowHash = crate::flow_queue::FlowHash::Mix;
    }
}

pub mod pie {
    defaults! {
        mark_ecn_th: f64 = 0.1;
        target: f64 = 0.015;
        t_update: f64 = 0.015;
        alpha: f64 = 0.125;
        beta: f64 = 1.25;
        max_burst: f64 = 0.150;
        mean_pkt_size: u32 = super::common::pkt_size();
        dq_threshold: u32 = 1 << 14;
    }
}

/// Linux's `fq_pie` runs PIE's controller with RFC 8033's values.
pub mod fq_pie {
    pub use super::common::flow_buckets as flows;
    pub use super::common::link_mtu as quantum;
    pub use super::common::link_mtu as mtu;
    pub use super::pie::mark_ecn_th as ecn_prob;
    pub use super::pie::{alpha, beta, max_burst, t_update, target};
}

pub mod dualpi2 {
    pub use super::common::link_mtu as mtu;
    pub use super::pie::target;
    defaults! {
        t_update: f64 = 0.016;
        alpha: f64 = 41.0 / 256.0;
        beta: f64 = 819.0 / 256.0;
        coupling: f64 = 2.0;
        step_thresh: f64 = 0.001;
        c_protection: u32 = 10;
        drop_overload: bool = true;
    }
}

pub mod sfb {
    defaults! {
        levels: u32 = 2;
        bins: u32 = 23;
        increment: f64 = 0.005;
        decrement: f64 = 0.001;
        freeze_time: f64 = 0.01;
        penalty_rate: f64 = 10.0;
        penalty_burst: f64 = 20.0;
    }
}

pub mod afd {
    defaults! {
        shadow_size: u32 = 1000;
        sample: f64 = 1.0;
        alpha: f64 = 1.7;
        beta: f64 = 1.8;
        update_rate: f64 = 160.0;
        gains_at: f64 = 1e6;
        mean_pkt_size: u32 = super::common::pkt_size();
    }
}

pub mod csfq {
    defaults! {
        k: f64 = 0.1;
        k_alpha: f64 = 0.2;
        k_c: f64 = 0.2;
        relabel: bool = true;
        overflow_decrease: f64 = 0.01;
        max_decreases: u32 = 29;
    }
}

pub mod red_pd {
    pub use super::red::{max_p, mean_pkt_size, w_q};
    defaults! {
        gentle: bool = true;
        target_rtt: f64 = 0.04;
        rtt_with_queue: bool = true;
        lists: u32 = 5;
        identify: u32 = 3;
        max_p_change: f64 = 0.1;
    }
}

pub mod sred {
    defaults! {
        zombies: u32 = 1000;
        p_overwrite: f64 = 0.25;
        p_max: f64 = 0.15;
        n_full: f64 = 256.0;
    }
}

pub mod xchoke {
    pub use super::red::{max_p, mean_pkt_size, w_q};
    defaults! {
        gentle: bool = true;
        table_size: u32 = 32;
        hit_max: u32 = 32;
        decay_every: u32 = 32;
    }
}

pub mod hhf {
    pub use super::common::link_mtu as quantum;
    defaults! {
        non_hh_weight: u32 = 2;
        admit_share: f64 = 0.1;
        evict_timeout: f64 = 1.0;
        hh_flows_limit: u32 = 2048;
        filter_arrays: u32 = 4;
        filter_len: u32 = 1024;
    }
}

pub mod drr {
    defaults! {
        quantum: u32 = 1500;
    }
}

#[cfg(test)]
mod tests {
    use crate::{AQM_NAMES, AQM_PARAMS};

    /// Every scheme whose parameters all have defaults builds them from an empty table, and
    /// `Default` is that reading (one source for both).
    #[test]
    fn every_scheme_has_one_source_of_defaults() {
        assert_eq!(AQM_NAMES.len(), AQM_PARAMS.len());
        let pie: crate::pie::PieParams = super::of();
        assert_eq!(pie, crate::pie::PieParams::default());
        assert_eq!(pie.target, super::pie::target());
        let fq: crate::fq_pie::FqPieParams = super::of();
        assert_eq!((fq.alpha, fq.beta, fq.mtu), (pie.alpha, pie.beta, super::common::link_mtu()));
    }
}
