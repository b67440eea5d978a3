//! An allocation that fails ends the process with one line, not Rust's abort.
//!
//! The memory estimate (`sim::budget`) refuses a run that would not fit before it starts, against
//! the smallest of the limit given, the cgroup's limit and the address space `RLIMIT_AS` leaves.
//! Should a run still outgrow what the process can get (the estimate is a close guess for the
//! engine's state, not a bound), Rust's default reaction is `memory allocation of N bytes failed`
//! and `abort()`: a core dump, no hint. This allocator is the system's, except that a null answer
//! prints `error: out of memory: ...` (the run's estimate and limit, what to do) and exits with
//! status 2, like every other refusal. It allocates nothing itself and uses only `write(2)` and
//! `_exit(2)`, which are safe wherever the failing allocation was made. Python's own allocations
//! (the result tables as Python lists) fail as a `MemoryError`, which `aqmlab` turns into the same
//! kind of line.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The estimate and limit of the run in progress (bytes; 0: none), for the message.
static ESTIMATE: AtomicU64 = AtomicU64::new(0);
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Remember the estimate and limit of the run about to start, for the message.
pub fn note_run(estimate: u64, limit: u64) {
    ESTIMATE.store(estimate, Ordering::Relaxed);
    LIMIT.store(limit, Ordering::Relaxed);
}

pub struct OneLine;

// SAFETY: every call is passed to the system allocator unchanged; only a null result is acted on,
// and then the process ends without returning.
unsafe impl GlobalAlloc for OneLine {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on unchanged (GlobalAlloc's contract is the caller's)
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on unchanged
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's block, layout and size, passed on unchanged
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's block and layout, passed on unchanged
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// A fixed buffer that `write!` fills without allocating (what does not fit is cut).
struct Line {
    buf: [u8; 512],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// `b` bytes as "1.2 GB", into `w`.
fn human(w: &mut Line, b: u64) {
    use std::fmt::Write;
    let b = b as f64;
    let (v, u) = match b {
        x if x >= 1e9 => (x / 1e9, "GB"),
        x if x >= 1e6 => (x / 1e6, "MB"),
        x if x >= 1e3 => (x / 1e3, "kB"),
        x => (x, "B"),
    };
    let _ = write!(w, "{v:.1} {u}");
}

fn out_of_memory(size: usize) -> ! {
    use std::fmt::Write;
    let mut w = Line { buf: [0; 512], len: 0 };
    let _ = w.write_str("error: out of memory: the engine could not get ");
    human(&mut w, size as u64);
    let _ = w.write_str(" more");
    let (est, limit) = (ESTIMATE.load(Ordering::Relaxed), LIMIT.load(Ordering::Relaxed));
    if limit > 0 {
        let _ = w.write_str(" (the run's estimate was ");
        human(&mut w, est);
        let _ = w.write_str(", within its limit of ");
        human(&mut w, limit);
        let _ = w.write_str(", but the process ran out first)");
    }
    let _ = w.write_str("; give the run less to hold (fewer flows, longer sample intervals) or more memory; see docs/scenarios.md, \"Resources\"\n");
    write_stderr(&w.buf[..w.len]);
    exit(2)
}

#[cfg(unix)]
fn write_stderr(mut b: &[u8]) {
    while !b.is_empty() {
        // SAFETY: write(2) on fd 2 from a valid buffer; it allocates nothing.
        let n = unsafe { libc_write(2, b.as_ptr(), b.len()) };
        if n <= 0 {
            return;
        }
        b = &b[n as usize..];
    }
}

#[cfg(unix)]
fn exit(code: i32) -> ! {
    // SAFETY: _exit(2) ends the process at once, running nothing that could allocate.
    unsafe { libc_exit(code) }
}

#[cfg(unix)]
unsafe extern "C" {
    #[link_name = "write"]
    fn libc_write(fd: i32, buf: *const u8, n: usize) -> isize;
    #[link_name = "_exit"]
    fn libc_exit(code: i32) -> !;
}

#[cfg(not(unix))]
fn write_stderr(b: &[u8]) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(b);
}

#[cfg(not(unix))]
fn exit(code: i32) -> ! {
    std::process::exit(code)
}
