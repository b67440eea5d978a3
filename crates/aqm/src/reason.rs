//! Drop reasons (aqm.md §1.3). Every drop carries exactly one.

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// Arriving packet dropped by a random test (RED/BLUE/PI/... early drop).
    Early = 0,
    /// Arriving packet dropped deterministically by the AQM although buffer space remains
    /// (e.g. RED average above the hard threshold).
    Forced = 1,
    /// Arriving packet dropped because a drawn queued packet matched its flow (CHOKe family).
    MatchedArrival = 2,
    /// Queued packet dropped by a matched-drop rule (the "victim").
    MatchedVictim = 3,
    /// Arriving packet dropped because the buffer is full.
    Overflow = 4,
    /// Not an AQM drop: random loss configured on a link (`loss_rate`), applied before the queue.
    LinkLoss = 5,
}

impl DropReason {
    /// Number of reasons (for per-reason counter arrays).
    pub const COUNT: usize = 6;
    /// All reasons in counter-index order.
    pub const ALL: [DropReason; 6] = [
        DropReason::Early,
        DropReason::Forced,
        DropReason::MatchedArrival,
        DropReason::MatchedVictim,
        DropReason::Overflow,
        DropReason::LinkLoss,
    ];

    /// Counter index.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name used in result tables (`drops_early`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Early => "early",
            DropReason::Forced => "forced",
            DropReason::MatchedArrival => "matched_arrival",
            DropReason::MatchedVictim => "matched_victim",
            DropReason::Overflow => "overflow",
            DropReason::LinkLoss => "link_loss",
        }
    }

    /// True for drops of the arriving packet (everything except victims).
    pub fn is_arrival_drop(self) -> bool {
        self != DropReason::MatchedVictim
    }
}
