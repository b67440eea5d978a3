//! Traffic models, one file each: [`bulk`] (FTP-like TCP transfers), [`cbr`] (UDP constant bit
//! rate; a probe, `app = "probe"`, is a CBR source given by its interval), [`onoff`] (UDP ON/OFF with exponential or Pareto periods), [`short`] (short TCP
//! connections arriving as a Poisson process) and [`web`] (request/response sessions with think
//! times), plus the distributions they draw from ([`dist`]). docs/traffic/*.md describe each.
//!
//! A model here owns its parameters and its random stream and answers "when is the next packet /
//! connection / request"; the simulator (`crate::sim`) turns the answers into events, packets and
//! TCP connections.

pub mod bulk;
pub mod cbr;
pub mod dist;
pub mod onoff;
pub mod short;
pub mod web;

/// Traffic models this build provides (`aqmlab list traffic`).
pub const TRAFFIC_NAMES: &[(&str, &str)] = &[
    ("bulk", "TCP bulk transfer (FTP-like), unlimited or of a given size (app = \"bulk\")"),
    ("cbr", "UDP constant bit rate (app = \"cbr\")"),
    ("onoff", "UDP ON/OFF: CBR at the peak rate while ON; exponential or Pareto ON and OFF periods (app = \"onoff\")"),
    ("probe", "UDP probe: a small packet every interval (a VoIP call, a ping), echoed back; its delays recorded (app = \"probe\")"),
    ("short", "short TCP connections arriving as a Poisson process, sized or timed by a distribution (app = \"short\")"),
    ("web", "web sessions: request, Pareto-sized response over a new TCP connection, exponential think time (app = \"web\")"),
];
