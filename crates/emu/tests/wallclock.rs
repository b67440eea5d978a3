//! The forwarder's rate limiter and delay line against the wall clock.
//!
//! The forwarder runs its real I/O loop on a thread, with two packet-oriented socket pairs as its
//! ports instead of TUN devices (no privileges needed). The test writes IPv4 packets into the
//! sender port and timestamps them with the monotonic clock when they come out of the receiver
//! port.
//!
//! Tolerances. The schedule is exact in virtual time; what the wall clock sees on top of it is the
//! wake-up latency of the forwarder thread and of the test's reader thread, which on a loaded
//! 2-core machine is usually tens of microseconds and occasionally several milliseconds. So the
//! tests check
//! * the rate limiter: over a 250-packet burst the mean spacing of departures equals the
//!   serialisation time within 2 %, and the median departure is within 1 ms of the ideal
//!   schedule (90 % within 5 ms);
//! * the delay line: no packet ever arrives early (latency ≥ the configured delay, exactly), the
//!   median latency exceeds the delay by less than 1 ms, and 90 % of packets by less than 5 ms.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::thread;

use aqm::{AqmConfig, Limit};
use emu::packet::{build, PROTO_UDP};
use emu::{monotonic_ns, Config, LinkConfig, PairConfig};

const S: u32 = 0x0a01_0000;
const R: u32 = 0x0a02_0000;

fn pair() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills the array we own.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

fn config(rate: f64, delay_ms: u64, duration_s: u64) -> Config {
    let link = |rate: f64, delay: u64, limit: u64| LinkConfig {
        rate_bps: rate,
        delay,
        limit: Limit::packets(limit),
        aqm: AqmConfig::DropTail(Default::default()),
        loss_rate: 0.0,
    };
    Config {
        bottleneck: link(rate, delay_ms * 1_000_000, 10_000),
        reverse: link(rate, delay_ms * 1_000_000, 10_000),
        access_limit: 10_000,
        pairs: vec![PairConfig {
            port: 0,
            sender_rate_bps: 1e10,
            sender_delay: 0,
            receiver_rate_bps: 1e10,
            receiver_delay: 0,
        }],
        sender_base: S,
        receiver_base: R,
        receiver_port: 1,
        duration: duration_s * 1_000_000_000,
        warmup: 0,
        sample_interval: 100_000_000,
        queue_snapshots: false,
        seed: 1,
        max_packet: 1500,
    }
}

/// Run the forwarder with `cfg`; `send(fd)` writes packets into the sender port; returns the
/// arrival times (monotonic ns) of the packets read from the receiver port, and the run's t0.
fn run(cfg: Config, send: impl FnOnce(RawFd, u64) + Send + 'static, expect: usize) -> (Vec<u64>, emu::Timing) {
    let (fwd_s, test_s) = pair();
    let (fwd_r, test_r) = pair();
    let t0 = monotonic_ns() + 50_000_000;
    let stop = Arc::new(AtomicBool::new(false));
    let now = Arc::new(AtomicU64::new(0));
    let fw = {
        let (stop, now) = (stop.clone(), now.clone());
        thread::spawn(move || emu::run(cfg, &[fwd_s, fwd_r], t0, &stop, &now))
    };
    let reader = thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 2048];
        while out.len() < expect {
            // SAFETY: blocking read into our buffer.
            let n = unsafe { libc::read(test_r, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            assert!(n > 0, "read: {}", std::io::Error::last_os_error());
            out.push(monotonic_ns());
        }
        out
    });
    send(test_s, t0);
    let arrivals = reader.join().unwrap();
    let (report, timing) = fw.join().unwrap().expect("forwarder run");
    assert_eq!(report.counts.written as usize, expect);
    for fd in [fwd_s, test_s, fwd_r, test_r] {
        // SAFETY: closing descriptors we created.
        unsafe { libc::close(fd) };
    }
    (arrivals, timing)
}

fn write_pkt(fd: RawFd, p: &[u8]) {
    // SAFETY: writing our buffer to our socket (blocking).
    let n = unsafe { libc::write(fd, p.as_ptr() as *const libc::c_void, p.len()) };
    assert_eq!(n as usize, p.len(), "write: {}", std::io::Error::last_os_error());
}

fn sleep_until(t: u64) {
    let now = monotonic_ns();
    if t > now {
        thread::sleep(std::time::Duration::from_nanos(t - now));
    }
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn rate_limiter_spaces_a_burst_at_the_link_rate() {
    // 10 Mb/s, 1000-byte packets: one every 800 us
    let n = 250;
    let tx = 800_000f64;
    let (arr, timing) = run(
        config(10e6, 0, 2),
        move |fd, t0| {
            sleep_until(t0 + 100_000_000);
            let p = build(PROTO_UDP, S + 1, R + 1, 4000, 9, 1000, 0, 0, 0);
            for _ in 0..n {
                write_pkt(fd, &p);
            }
        },
        n,
    );
    let spacing = (arr[n - 1] - arr[0]) as f64 / (n - 1) as f64;
    assert!((spacing / tx - 1.0).abs() < 0.02, "mean spacing {spacing} ns, expected {tx} ns");
    // distance from the ideal schedule anchored on the least late packet
    let anchor = (0..n).map(|k| arr[k] as f64 - k as f64 * tx).fold(f64::INFINITY, f64::min);
    let mut late: Vec<f64> = (0..n).map(|k| arr[k] as f64 - k as f64 * tx - anchor).collect();
    let med = quantile(&mut late, 0.5);
    let p90 = quantile(&mut late, 0.9);
    eprintln!(
        "rate limiter: mean spacing {spacing:.0} ns (ideal {tx}), behind schedule median {med:.0} ns, p90 {p90:.0} ns"
    );
    assert!(med < 1e6, "median {med} ns behind the schedule");
    assert!(p90 < 5e6, "90th percentile {p90} ns behind the schedule");
    assert_eq!(timing.writes, n as u64);
}

#[test]
fn delay_line_holds_each_packet_for_the_delay() {
    let delay_ms = 50;
    let n = 20;
    let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = sent.clone();
    let (arr, _) = run(
        config(1e9, delay_ms, 2),
        move |fd, t0| {
            let p = build(PROTO_UDP, S + 1, R + 1, 4000, 9, 1000, 0, 0, 0);
            for k in 0..n {
                sleep_until(t0 + 50_000_000 + k * 20_000_000);
                log.lock().unwrap().push(monotonic_ns());
                write_pkt(fd, &p);
            }
        },
        n as usize,
    );
    let sent = sent.lock().unwrap();
    // plus serialisation: 8 us at 1 Gb/s on the bottleneck, 0.8 us on each 10 Gb/s access link
    let d = (delay_ms * 1_000_000) as f64 + 9_600.0;
    let mut extra: Vec<f64> = arr.iter().zip(sent.iter()).map(|(a, s)| *a as f64 - *s as f64 - d).collect();
    let min = extra.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(min >= 0.0, "a packet arrived {} ns early", -min);
    let med = quantile(&mut extra, 0.5);
    let p90 = quantile(&mut extra, 0.9);
    eprintln!("delay line: latency over the delay min {min:.0} ns, median {med:.0} ns, p90 {p90:.0} ns");
    assert!(med < 1e6, "median latency {} ms over the delay", med / 1e6);
    assert!(p90 < 5e6, "90th percentile {} ms over the delay", p90 / 1e6);
}
