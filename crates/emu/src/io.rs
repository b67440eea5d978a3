//! The forwarder's I/O loop: packets from file descriptors (TUN devices in a run; datagram
//! sockets in tests) into the [`Core`], departures back out, driven by the monotonic clock.
//!
//! One thread, one `ppoll` per wake-up. The loop sleeps until the earliest event the core has
//! due (with the thread's timer slack at 1 ns, so the kernel does not defer the wake-up by its
//! default 50 µs), or until a port becomes readable. Every packet is stamped with the clock when
//! it is read, and every event is processed at its exact virtual instant; the wall-clock delay
//! between an event's instant and the moment its packet is actually written is measured and
//! reported (`Timing`), which is the timing accuracy of the emulated links.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use aqm::Time;
use hdrhistogram::Histogram;

use crate::core::{Config, Core, Report};

/// How late the loop may wake up for events inside the emulated network (not for packet writes,
/// which are scheduled exactly): 200 us, capped by the core at the shortest last-hop delay.
pub const INTERNAL_SLACK: Time = 200_000;

/// The forwarder thread's nice value when the process may raise its priority (root).
pub const FORWARDER_NICE: libc::c_int = -10;

/// CLOCK_MONOTONIC in nanoseconds (the clock of Python's `time.monotonic_ns()`).
pub fn monotonic_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// Time the calling thread has spent runnable but waiting for a CPU (ns), from
/// `/proc/thread-self/schedstat`; 0 where the kernel does not keep it.
pub fn thread_runqueue_wait_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|x| x.parse().ok()))
        .unwrap_or(0)
}

/// CPU time of the calling thread in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How late the packets left, and what the loop cost.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Packets written, and the wall-clock lateness of their writes relative to the instant the
    /// emulated path delivered them (ns): mean, percentiles, maximum.
    pub writes: u64,
    pub late_mean_ns: f64,
    pub late_p50_ns: u64,
    pub late_p99_ns: u64,
    pub late_p999_ns: u64,
    pub late_max_ns: u64,
    /// Writes more than 1 ms late.
    pub late_over_1ms: u64,
    /// Writes the kernel refused (counted as sent by the core).
    pub write_errors: u64,
    /// Wake-ups of the loop, CPU time of the forwarder thread, wall time of the run.
    pub wakeups: u64,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// Packets read after the end of the run (not forwarded).
    pub after_end: u64,
    /// Time the forwarder was runnable but had no CPU (the machine was busy with other work).
    pub runqueue_wait_ns: u64,
    /// The forwarder thread ran at nice [`FORWARDER_NICE`].
    pub niced: bool,
}

/// Why a run stopped without a report.
#[derive(Debug)]
pub enum RunError {
    /// `stop` was set.
    Interrupted,
    /// An I/O error on a port.
    Io(String),
    /// An internal identity failed (a bug).
    Check(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Interrupted => write!(f, "interrupted"),
            RunError::Io(m) | RunError::Check(m) => write!(f, "{m}"),
        }
    }
}

/// Make `fd` non-blocking.
fn set_nonblocking(fd: RawFd) -> Result<(), RunError> {
    // SAFETY: fcntl on a descriptor the caller owns; failure is reported.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above: the flags just read, with O_NONBLOCK added; failure is reported.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
        return Err(RunError::Io(format!("port fd {fd}: {}", std::io::Error::last_os_error())));
    }
    Ok(())
}

/// Sleep until the monotonic clock reads `until` (or `stop` is set).
fn sleep_until(until: u64, stop: &AtomicBool) -> Result<(), RunError> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Interrupted);
        }
        let now = monotonic_ns();
        if now >= until {
            return Ok(());
        }
        let d = (until - now).min(20_000_000);
        let ts = libc::timespec { tv_sec: (d / 1_000_000_000) as _, tv_nsec: (d % 1_000_000_000) as _ };
        // SAFETY: a plain relative sleep.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }
}

/// Writes departing packets and measures how late they leave.
struct Writer<'a> {
    ports: &'a [RawFd],
    t0: u64,
    late: Histogram<u64>,
    sum: f64,
    writes: u64,
    over_1ms: u64,
    errors: u64,
}

impl Writer<'_> {
    #[inline]
    fn write(&mut self, port: u16, bytes: &[u8], at: Time) {
        let fd = self.ports[port as usize];
        // SAFETY: writing a slice we borrow to a descriptor we were given.
        let r = unsafe { libc::write(fd, bytes.as_ptr() as *const libc::c_void, bytes.len()) };
        if r < 0 {
            self.errors += 1;
        }
        let l = monotonic_ns().saturating_sub(self.t0).saturating_sub(at);
        self.writes += 1;
        self.sum += l as f64;
        if l > 1_000_000 {
            self.over_1ms += 1;
        }
        self.late.saturating_record(l.max(1));
    }
}

/// Run the forwarder: `ports[i]` is the descriptor of port `i` (packet-oriented: one read, one
/// packet); time 0 of the run is `t0` on the monotonic clock; the run ends at `t0 + duration`.
/// `now` is kept at the run's current time (ns) for progress reports; setting `stop` ends the run
/// early with [`RunError::Interrupted`].
pub fn run(
    cfg: Config,
    ports: &[RawFd],
    t0: u64,
    stop: &AtomicBool,
    now: &AtomicU64,
) -> Result<(Report, Timing), RunError> {
    for &fd in ports {
        set_nonblocking(fd)?;
    }
    // SAFETY: prctl and setpriority on the calling thread; a failure only costs timer precision.
    // The forwarder is the emulation's clock: with root it runs at nice -10, so that the senders'
    // and receivers' own work (and other load on the machine) delays its wake-ups less.
    let niced = unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, FORWARDER_NICE) == 0
    };
    let end = cfg.duration;
    let mut core = Core::new(cfg);
    let mut w = Writer {
        ports,
        t0,
        late: Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("histogram bounds"),
        sum: 0.0,
        writes: 0,
        over_1ms: 0,
        errors: 0,
    };
    let mut wakeups = 0u64;
    let mut after_end = 0u64;
    let mut io_err: Option<String> = None;
    sleep_until(t0, stop)?;
    let cpu0 = clock(libc::CLOCK_THREAD_CPUTIME_ID);
    let wait0 = thread_runqueue_wait_ns();
    let mut pfds: Vec<libc::pollfd> =
        ports.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let report = {
        let mut emit = |port: u16, bytes: &[u8], at: Time| w.write(port, bytes, at);
        'outer: loop {
            if stop.load(Ordering::Relaxed) {
                return Err(RunError::Interrupted);
            }
            let t = monotonic_ns().saturating_sub(t0);
            now.store(t, Ordering::Relaxed);
            if t >= end {
                break;
            }
            core.run_due(t, &mut emit);
            let deadline = core.next_deadline(INTERNAL_SLACK).min(end);
            let t = monotonic_ns().saturating_sub(t0);
            let wait = deadline.saturating_sub(t).min(20_000_000);
            let ts = libc::timespec { tv_sec: (wait / 1_000_000_000) as _, tv_nsec: (wait % 1_000_000_000) as _ };
            // SAFETY: ppoll over our pollfd array with a relative timeout; no signal mask change.
            let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
            wakeups += 1;
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(RunError::Io(format!("ppoll: {e}")));
            }
            if r == 0 {
                continue;
            }
            for (i, pfd) in pfds.iter().enumerate() {
                let re = pfd.revents;
                if re == 0 {
                    continue;
                }
                if re & (libc::POLLERR | libc::POLLNVAL) != 0 {
                    io_err = Some(format!("port {i}: poll error {re:#x}"));
                    break 'outer;
                }
                // a bounded batch per port, so that due events are not held back by a flood
                for _ in 0..256 {
                    let (slot, buf) = core.buffer();
                    // SAFETY: reading into a pool buffer we hold exclusively.
                    let n = unsafe { libc::read(pfd.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
                    if n <= 0 {
                        core.release(slot);
                        if n < 0 {
                            let e = std::io::Error::last_os_error();
                            if e.kind() != std::io::ErrorKind::WouldBlock && e.kind() != std::io::ErrorKind::Interrupted
                            {
                                io_err = Some(format!("port {i}: read: {e}"));
                                break 'outer;
                            }
                        }
                        break;
                    }
                    let t = monotonic_ns().saturating_sub(t0);
                    if t >= end {
                        core.release(slot);
                        after_end += 1;
                        break;
                    }
                    core.run_due(t, &mut emit);
                    core.ingress(i as u16, slot, n as usize, t);
                }
            }
        }
        if let Some(e) = io_err {
            return Err(RunError::Io(e));
        }
        core.finish(&mut emit).map_err(RunError::Check)?
    };
    let mut timing = Timing {
        writes: w.writes,
        late_over_1ms: w.over_1ms,
        write_errors: w.errors,
        wakeups,
        after_end,
        niced,
        cpu_ns: clock(libc::CLOCK_THREAD_CPUTIME_ID) - cpu0,
        runqueue_wait_ns: thread_runqueue_wait_ns().saturating_sub(wait0),
        wall_ns: monotonic_ns().saturating_sub(t0),
        ..Default::default()
    };
    if w.writes > 0 {
        timing.late_mean_ns = w.sum / w.writes as f64;
        timing.late_p50_ns = w.late.value_at_quantile(0.5);
        timing.late_p99_ns = w.late.value_at_quantile(0.99);
        timing.late_p999_ns = w.late.value_at_quantile(0.999);
        timing.late_max_ns = w.late.max();
    }
    now.store(end, Ordering::Relaxed);
    Ok((report, timing))
}
