//! The per-flow arrays of a large run (links, flows, routes, counters, timer slots) on transparent
//! huge pages where Linux offers them on request (`madvise` mode, the common default).
//!
//! At 100 000 flows and more every packet touches several per-flow places that are far apart in
//! hundreds of MiB, so most touches miss the TLB as well as the cache; with 2 MiB pages the page
//! walk mostly disappears. The arrays are reserved with their final capacity, advised before the
//! first write (so the kernel backs them with huge pages from the start), then filled. Elsewhere,
//! or for arrays under a few MiB, these are plain vectors. Nothing here changes any result.

/// Arrays smaller than this stay on normal pages.
const MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `cap` elements, on huge pages if it is large.
pub fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v = Vec::with_capacity(cap);
    advise(v.as_ptr() as usize, cap.saturating_mul(std::mem::size_of::<T>()));
    v
}

/// `n` copies of `x`, on huge pages if large.
pub fn huge_filled<T: Clone>(n: usize, x: T) -> Vec<T> {
    let mut v = huge_vec(n);
    v.resize(n, x);
    v
}

/// Advise a vector's whole capacity onto huge pages if it is large (after it grew; pages already
/// written keep their contents).
pub fn advise_spare<T>(v: &Vec<T>) {
    advise(v.as_ptr() as usize, v.capacity().saturating_mul(std::mem::size_of::<T>()));
}

#[cfg(target_os = "linux")]
fn advise(start: usize, bytes: usize) {
    if bytes < MIN_BYTES {
        return;
    }
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if hi > lo {
        // SAFETY: [lo, hi) lies inside the vector's own allocation; MADV_HUGEPAGE only changes
        // how the kernel backs those pages, never their contents. Failure (e.g. THP disabled) is
        // harmless and ignored.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: usize, _bytes: usize) {}

/// Keep the allocator's threshold for serving an allocation by its own mapping at glibc's initial
/// 128 KiB. glibc raises that threshold each time such a block is freed (up to 32 MiB), after which
/// blocks of that size come from its heap and, once freed, stay resident: the engine frees large
/// arrays as a run ends, and the tables read next then landed on top of them (at 100 000 flows the
/// flows table read in Python peaked 40 MB higher after the event set's buckets changed size, with
/// nothing more alive). With the threshold fixed, a freed large array is unmapped at once. This is
/// process-wide and changes only where the allocator places blocks, never a result; elsewhere it
/// does nothing.
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; 128 KiB is glibc's own default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Return the memory freed so far to the operating system. The event set's chunks and the pipes'
/// rings are small allocations (kilobytes), which the allocator keeps in its heap when they are
/// freed rather than unmapping them, so what the event loop held stayed resident while the results
/// were built (measured at a million flows: the results phase peaked at 1 060 MiB without a trim
/// after the event loop, 1 050 with it, the event loop's own peak; at 100 000 flows a trim after
/// the results leaves the process 7 MiB smaller when the run returns). glibc's `malloc_trim`
/// releases every whole free page; elsewhere this does nothing.
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's own heap to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Ask the CPU to start loading the cache line holding `x` (nothing else happens; a no-op where
/// there is no prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch(x as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Start loading every cache line of `x` into the cache (a hint, as [`prefetch`]).
#[inline(always)]
pub fn prefetch_all<T>(x: &T) {
    let p = x as *const T as *const u8;
    let n = std::mem::size_of::<T>();
    let mut off = 0;
    while off < n {
        // SAFETY: `off < n`: an address inside `x`, only prefetched
        prefetch(unsafe { &*p.add(off) });
        off += 64;
    }
    if n > 1 && (p as usize + n - 1) / 64 != (p as usize + off - 64) / 64 {
        // its last line, when `x` does not start a line
        // SAFETY: `n - 1` is the offset of `x`'s last byte, inside `x`; it is only prefetched
        prefetch(unsafe { &*p.add(n - 1) });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn vectors_are_ordinary() {
        let v = super::huge_filled(3 << 20, 7u32);
        assert_eq!((v.len(), v[0], v[v.len() - 1]), (3 << 20, 7, 7));
        let mut w = super::huge_vec::<u64>(10);
        w.push(1);
        assert_eq!(w, vec![1]);
    }
}
