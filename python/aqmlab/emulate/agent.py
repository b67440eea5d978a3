"""The traffic agent of `aqmlab emulate`: real sockets inside one network namespace.

Run by the emulator as ``ip netns exec NS python agent.py`` (this file, by path, so that it needs
nothing but the standard library and starts fast). Protocol on stdin/stdout, one JSON document
per line:

1. the emulator writes the configuration; the agent opens its sockets and prints ``ready``;
2. the emulator writes ``{"t0_ns": T}``: time 0 of the run on CLOCK_MONOTONIC (shared by every
   namespace);
3. at ``T + duration`` the agent prints its results and exits.

A *sender* agent runs the flows of one flow group: bulk TCP transfers (the congestion control set
with TCP_CONGESTION, the DiffServ codepoint with IP_TOS) and UDP CBR or ON/OFF sources on the
simulator's exact packet schedule. It samples each TCP socket's ``tcp_info`` every 100 ms (RTT),
at the end of the warm-up and at the end of the run, and, when the configuration has
``series_ns`` (the scenario's ``simulation.flow_series_interval``), every ``series_ns`` for the
per-flow series (``SERIES_FIELDS``: congestion window, pacing rate, smoothed RTT, retransmissions,
delivery rate, bytes acknowledged and sent). The *receiver* agent runs the sinks: one TCP
listener and one UDP socket on the same port (9, discard), counting the bytes every connection
and every UDP source delivers to the application, at the end of the warm-up and at the end.

The agent dies with the emulator (PR_SET_PDEATHSIG), so a killed run leaves no traffic behind.
"""

from __future__ import annotations

import ctypes
import errno
import heapq
import json
import os
import select
import signal
import socket
import struct
import sys
import time

NS = 1_000_000_000
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
UDP_HEADER = struct.Struct("!IQ")  # flow id, sequence number
CHUNK = memoryview(b"\x00" * 65536)

# struct tcp_info (include/uapi/linux/tcp.h): byte offset, format, name
TCP_INFO_FIELDS = [
    (1, "B", "ca_state"),
    (16, "I", "snd_mss"),
    (24, "I", "unacked"),
    (68, "I", "rtt_us"),
    (80, "I", "snd_cwnd"),
    (100, "I", "total_retrans"),
    (104, "Q", "pacing_rate"),
    (120, "Q", "bytes_acked"),
    (144, "I", "notsent_bytes"),
    (148, "I", "min_rtt_us"),
    (156, "I", "data_segs_out"),
    (160, "Q", "delivery_rate"),
    (196, "I", "delivered_ce"),
    (200, "Q", "bytes_sent"),
    (208, "Q", "bytes_retrans"),
    (240, "H", "total_rto"),
    (242, "H", "total_rto_recoveries"),
    (244, "I", "total_rto_time"),
]


#: the per-flow series: one row [t_ns, these fields...] per TCP flow per sample
SERIES_FIELDS = ("snd_cwnd", "pacing_rate", "rtt_us", "total_retrans", "delivery_rate", "bytes_acked", "bytes_sent",
                 "data_segs_out")


def now_ns() -> int:
    return time.monotonic_ns()


def tcp_info(sock) -> dict:
    """The fields of TCP_INFO this kernel provides (older kernels return a shorter struct)."""
    try:
        b = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 256)
    except OSError:
        return {}
    out = {}
    for off, fmt, name in TCP_INFO_FIELDS:
        size = struct.calcsize(fmt)
        if off + size <= len(b):
            out[name] = struct.unpack_from("=" + fmt, b, off)[0]
    return out


def die_with_parent():
    """Receive SIGKILL when the emulator dies (even by SIGKILL)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        libc.prctl(29, 1000)  # PR_SET_TIMERSLACK: 1 us, for the UDP schedule
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        sys.exit(1)


def read_line() -> dict:
    line = sys.stdin.readline()
    if not line:
        sys.exit(1)
    return json.loads(line)


class Timers:
    """A heap of (time, callback)."""

    def __init__(self):
        self.heap = []
        self.n = 0

    def add(self, t: int, fn):
        self.n += 1
        heapq.heappush(self.heap, (t, self.n, fn))

    def next(self) -> int:
        return self.heap[0][0] if self.heap else 1 << 62

    def run_due(self, t: int):
        while self.heap and self.heap[0][0] <= t:
            _, _, fn = heapq.heappop(self.heap)
            fn()


# ---------------------------------------------------------------------------------------- sender


def _identity(flow) -> dict:
    """What identifies a sender's flow in the results: its id, source port and start (s)."""
    sport = None
    if flow.sock is not None:
        try:
            sport = flow.sock.getsockname()[1]
        except OSError:
            pass
    return {"flow_id": flow.f["flow_id"], "sport": sport,
            "start_s": None if flow.start_ns is None else flow.start_ns / NS}



class TcpFlow:
    def __init__(self, f: dict, port: int, lowat: int):
        self.f = f
        self.port = port
        self.lowat = lowat
        self.sock = None
        self.connected = False
        self.stopped = False
        self.written = 0
        self.size = f.get("size")
        self.start_ns = None
        self.connected_ns = None
        self.done_writing_ns = None
        self.completion_ns = None
        self.error = None
        self.rtt_sum = 0.0
        self.rtt_n = 0
        self.info_warmup = None
        self.info_end = None
        self.series = []

    def open(self, ep, t0):
        f = self.f
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, f["cc"].encode())
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f["tos"])
            s.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, self.lowat)
            s.bind((f["src"], 0))
        except OSError as e:
            self.error = f"socket setup: {e}"
            s.close()
            return
        s.setblocking(False)
        self.sock = s
        self.start_ns = now_ns() - t0
        err = s.connect_ex((f["dst"], self.port))
        if err not in (0, errno.EINPROGRESS):
            self.error = f"connect: {os.strerror(err)}"
            return
        ep.register(s.fileno(), select.EPOLLOUT)

    def writable(self, ep, t0):
        s = self.sock
        if not self.connected:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.error = f"connect: {os.strerror(err)}"
                ep.unregister(s.fileno())
                return
            self.connected = True
            self.connected_ns = now_ns() - t0
        while not self.stopped:
            n = len(CHUNK)
            if self.size is not None:
                n = min(n, self.size - self.written)
                if n <= 0:
                    self.done_writing_ns = now_ns() - t0
                    ep.unregister(s.fileno())
                    return
            try:
                self.written += s.send(CHUNK[:n])
            except BlockingIOError:
                return
            except OSError as e:
                self.error = f"send: {e}"
                ep.unregister(s.fileno())
                return

    def stop(self, ep):
        """The application stops offering data (the group's `stop`)."""
        if self.sock is not None and not self.stopped:
            self.stopped = True
            if self.connected and self.done_writing_ns is None:
                try:
                    ep.unregister(self.sock.fileno())
                except (OSError, ValueError):
                    pass

    def sample(self):
        """An RTT sample (the kernel's smoothed RTT), every 100 ms."""
        if self.sock is None or not self.connected:
            return
        info = tcp_info(self.sock)
        if info.get("rtt_us"):
            self.rtt_sum += info["rtt_us"] / 1e6
            self.rtt_n += 1

    def series_sample(self, t: int):
        """A row of the per-flow series (time since t0, then SERIES_FIELDS)."""
        if self.sock is None or not self.connected or self.error is not None:
            return
        info = tcp_info(self.sock)
        if info:
            self.series.append([t] + [info.get(k) for k in SERIES_FIELDS])

    def waiting_for_completion(self) -> bool:
        return self.done_writing_ns is not None and self.completion_ns is None and self.error is None

    def check_completion(self, t0):
        """A sized transfer is complete when every byte written has been acknowledged."""
        info = tcp_info(self.sock)
        if info.get("unacked", 1) == 0 and info.get("notsent_bytes", 1) == 0:
            self.completion_ns = now_ns() - t0

    def result(self) -> dict:
        return {
            **_identity(self),
            "connected_s": None if self.connected_ns is None else self.connected_ns / NS,
            "completion_s": None if self.completion_ns is None else self.completion_ns / NS,
            "written_bytes": self.written,
            "rtt_mean_s": self.rtt_sum / self.rtt_n if self.rtt_n else None,
            "info_warmup": self.info_warmup,
            "info_end": self.info_end,
            "series": self.series,
            "error": self.error,
        }


class UdpFlow:
    """CBR, or ON/OFF given as bursts [first packet time, packets] (the simulator's schedule)."""

    def __init__(self, f: dict, port: int):
        self.f = f
        self.port = port
        self.sock = None
        self.seq = 0
        self.sent_warmup = None
        self.error = None
        self.start_ns = None
        size = f["packet_size"]
        self.payload = max(size - 28, UDP_HEADER.size)
        self.pad = b"\x00" * (self.payload - UDP_HEADER.size)
        self.rate = f["rate_bps"]
        self.size = size
        bursts = f.get("bursts")
        self.bursts = [tuple(b) for b in bursts] if bursts is not None else [(f["start_ns"], None)]
        self.bi = 0
        self.k = 0
        end = f["duration_ns"] if f.get("stop_ns") is None else min(f["duration_ns"], f["stop_ns"])
        self.end = end

    def open(self):
        f = self.f
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f["tos"])
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
            s.bind((f["src"], 0))
            s.connect((f["dst"], self.port))
        except OSError as e:
            self.error = f"socket setup: {e}"
            s.close()
            return
        s.setblocking(False)
        self.sock = s

    def next_time(self) -> int:
        """Run time of the next packet (ns), or a huge value when the source is done."""
        if self.sock is None or self.bi >= len(self.bursts):
            return 1 << 62
        start, n = self.bursts[self.bi]
        t = start + (self.k * self.size * 8 * NS) // self.rate
        return t if t < self.end else 1 << 62

    def send_due(self, t_run: int):
        while True:
            nt = self.next_time()
            if nt > t_run:
                return
            if self.start_ns is None:
                self.start_ns = nt
            try:
                self.sock.send(UDP_HEADER.pack(self.f["flow_id"], self.seq) + self.pad)
            except BlockingIOError:
                pass  # the device queue is full: the packet is lost in the sending host
            except OSError as e:
                self.error = f"send: {e}"
                self.bi = len(self.bursts)
                return
            self.seq += 1
            self.k += 1
            n = self.bursts[self.bi][1]
            if n is not None and self.k >= n:
                self.bi += 1
                self.k = 0

    def result(self) -> dict:
        return {
            **_identity(self),
            "sent_pkts": self.seq,
            "sent_pkts_warmup": self.sent_warmup,
            "error": self.error,
        }


def run_sender(cfg: dict):
    port = cfg["port"]
    tcp = [TcpFlow(f, port, cfg.get("lowat", 32768)) for f in cfg["flows"] if f["kind"] == "tcp"]
    udp = [UdpFlow(dict(f, duration_ns=cfg["duration_ns"]), port) for f in cfg["flows"] if f["kind"] == "udp"]
    for u in udp:
        u.open()
    print("ready", flush=True)
    t0 = read_line()["t0_ns"]
    duration, warmup = cfg["duration_ns"], cfg["warmup_ns"]
    ep = select.epoll()
    by_fd = {}
    timers = Timers()

    def start(fl):
        def go():
            fl.open(ep, t0)
            if fl.sock is not None and fl.error is None:
                by_fd[fl.sock.fileno()] = fl
        return go

    for fl in tcp:
        if fl.f["start_ns"] < duration:
            timers.add(fl.f["start_ns"], start(fl))
            if fl.f.get("stop_ns") is not None and fl.f["stop_ns"] < duration:
                timers.add(fl.f["stop_ns"], lambda fl=fl: fl.stop(ep))

    def sample(t=0):
        for fl in tcp:
            fl.sample()
        timers.add(t + cfg["rtt_sample_ns"], lambda: sample(t + cfg["rtt_sample_ns"]))

    timers.add(0, sample)
    series_ns = cfg.get("series_ns")
    if series_ns:
        def series(k=1):
            t = now_ns() - t0
            for fl in tcp:
                fl.series_sample(t)
            if (k + 1) * series_ns < duration:
                timers.add((k + 1) * series_ns, lambda: series(k + 1))

        timers.add(series_ns, series)
    if warmup > 0:
        def at_warmup():
            for fl in tcp:
                fl.info_warmup = tcp_info(fl.sock) if fl.connected else None
            for u in udp:
                u.sent_warmup = u.seq
        timers.add(warmup, at_warmup)
    while True:
        t = now_ns() - t0
        if t >= duration:
            break
        timers.run_due(t)
        for u in udp:
            u.send_due(t)
        watch = [fl for fl in tcp if fl.waiting_for_completion()]
        for fl in watch:
            fl.check_completion(t0)
        nxt = min([timers.next(), duration] + [u.next_time() for u in udp] + ([t + 1_000_000] if watch else []))
        wait = nxt - (now_ns() - t0)
        if wait > 2_000_000 or not udp:
            events = ep.poll(max(wait, 0) / NS if wait < 10 * NS else 10.0)
        else:
            events = ep.poll(0)
            if wait > 0 and not events:
                time.sleep(wait / NS)
        for fd, _ in events:
            fl = by_fd.get(fd)
            if fl is not None:
                fl.writable(ep, t0)
    for fl in tcp:
        fl.info_end = tcp_info(fl.sock) if fl.connected else None
    out = {"tcp": [fl.result() for fl in tcp], "udp": [u.result() for u in udp]}
    print(json.dumps(out), flush=True)
    for fl in tcp:
        if fl.sock is not None:
            fl.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            fl.sock.close()


# -------------------------------------------------------------------------------------- receiver


def run_receiver(cfg: dict):
    port = cfg["port"]
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("0.0.0.0", port))
    lst.listen(4096)
    lst.setblocking(False)
    us = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    us.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 23)
    us.bind(("0.0.0.0", port))
    us.setblocking(False)
    print("ready", flush=True)
    t0 = read_line()["t0_ns"]
    duration, warmup = cfg["duration_ns"], cfg["warmup_ns"]
    ep = select.epoll()
    ep.register(lst.fileno(), select.EPOLLIN)
    ep.register(us.fileno(), select.EPOLLIN)
    conns = {}  # fd -> [sock, peer, local, bytes, bytes_at_warmup]
    closed = []
    udp = {}  # (addr, port) -> [bytes, pkts, max_seq, bytes_at_warmup, pkts_at_warmup]
    buf = bytearray(1 << 16)
    mv = memoryview(buf)
    warm_done = warmup == 0
    while True:
        t = now_ns() - t0
        if t >= duration:
            break
        if not warm_done and t >= warmup:
            for c in list(conns.values()) + closed:
                c[4] = c[3]
            for u in udp.values():
                u[3], u[4] = u[0], u[1]
            warm_done = True
        nxt = duration if warm_done else warmup
        events = ep.poll(max(nxt - t, 0) / NS + 0.0005)
        for fd, _ in events:
            if fd == lst.fileno():
                while True:
                    try:
                        c, peer = lst.accept()
                    except BlockingIOError:
                        break
                    c.setblocking(False)
                    conns[c.fileno()] = [c, list(peer), list(c.getsockname()), 0, 0]
                    ep.register(c.fileno(), select.EPOLLIN)
            elif fd == us.fileno():
                while True:
                    try:
                        n, peer = us.recvfrom_into(buf)
                    except BlockingIOError:
                        break
                    u = udp.setdefault(peer, [0, 0, -1, 0, 0])
                    u[0] += n
                    u[1] += 1
                    if n >= UDP_HEADER.size:
                        u[2] = max(u[2], UDP_HEADER.unpack_from(buf)[1])
            else:
                c = conns.get(fd)
                if c is None:
                    continue
                while True:
                    try:
                        n = c[0].recv_into(mv)
                    except BlockingIOError:
                        break
                    except OSError:
                        n = 0
                    if n == 0:
                        ep.unregister(fd)
                        c[0].close()
                        closed.append(conns.pop(fd))
                        break
                    c[3] += n
    tcp = [{"peer": c[1], "local": c[2], "bytes_total": c[3], "bytes_window": c[3] - c[4]}
           for c in list(conns.values()) + closed]
    udp_out = [{"peer": list(p), "bytes_total": u[0], "pkts_total": u[1], "max_seq": u[2],
                "bytes_window": u[0] - u[3], "pkts_window": u[1] - u[4]} for p, u in udp.items()]
    print(json.dumps({"tcp": tcp, "udp": udp_out}), flush=True)
    for c in conns.values():
        c[0].setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c[0].close()


def main():
    die_with_parent()
    cfg = read_line()
    if cfg["role"] == "sender":
        run_sender(cfg)
    else:
        run_receiver(cfg)


if __name__ == "__main__":
    main()
