//! TUN devices created inside a network namespace.
//!
//! The forwarder stays in its own namespace and holds one descriptor per device. A device is
//! created from a short-lived thread that enters the target namespace (`setns` changes only the
//! calling thread's namespace), so it never exists anywhere else. The devices are not persistent:
//! the kernel removes each one when its descriptor is closed, including when the process dies.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// Create TUN device `name` (layer 3, no packet information header) in the network namespace
/// bound at `netns_path` (e.g. `/run/netns/<name>`); returns its descriptor, non-blocking and
/// close-on-exec.
pub fn open_in_netns(netns_path: &str, name: &str) -> io::Result<RawFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad interface name {name:?}")));
    }
    let path = CString::new(netns_path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let name = name.to_string();
    std::thread::spawn(move || -> io::Result<RawFd> {
        // SAFETY: plain system calls on descriptors owned by this thread; the namespace change
        // dies with the thread.
        unsafe {
            let ns = check(libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC), "open netns")?;
            let ns = OwnedFd::from_raw_fd(ns);
            check(libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET), "setns")?;
            let dev = c"/dev/net/tun";
            let fd = check(
                libc::open(dev.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC),
                "open /dev/net/tun",
            )?;
            let fd = OwnedFd::from_raw_fd(fd);
            let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
            req.name[..name.len()].copy_from_slice(name.as_bytes());
            check(libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req), "TUNSETIFF")?;
            Ok(fd.into_raw_fd())
        }
    })
    .join()
    .map_err(|_| io::Error::other("TUN thread panicked"))?
}
