//! Bulk transfer (FTP): a TCP connection whose application always has data, either without limit
//! or for `size` bytes (experiments.md §1.4, "FTP (long-lived TCP)"). The connection opens at the
//! flow's start time and sends whenever its window allows; a sized transfer completes when its last
//! segment is acknowledged (the flow's completion time). At `stop`, the application stops offering
//! new data: segments already sent are still delivered and retransmitted if lost.

/// Segments needed for `bytes` of data with `mss`-byte segments (at least one); `None` (unlimited)
/// is `u32::MAX`.
pub fn segments(bytes: Option<u64>, mss: u16) -> u32 {
    match bytes {
        None => u32::MAX,
        Some(b) => b.div_ceil(mss as u64).clamp(1, u32::MAX as u64 - 1) as u32,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn segments_round_up() {
        assert_eq!(super::segments(Some(1), 1000), 1);
        assert_eq!(super::segments(Some(1000), 1000), 1);
        assert_eq!(super::segments(Some(1001), 1000), 2);
        assert_eq!(super::segments(Some(0), 1000), 1);
        assert_eq!(super::segments(None, 1000), u32::MAX);
    }
}
