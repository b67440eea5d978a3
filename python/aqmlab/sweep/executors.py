"""Where a sweep's runs are made: in this process, in a local process pool, or on a Dask cluster.

The runs to make are cut into *batches* (a task of a pool is a batch, not one run: a 10 ms run
would otherwise cost more in scheduling than in simulation). Batch sizes adapt to the measured
time per run, aiming at :attr:`Pool.target_seconds` per batch, and shrink near the end so every
worker stays busy. A worker makes each run of its batch, turns it into the files of its cache entry
(:func:`aqmlab.sweep.cache.make_entry`) and returns them; this process writes them into the cache. So
the local pool and a cluster leave the same entries, and cluster workers need no shared disk.

Faults:

* a run that fails in the engine is reported (:class:`~aqmlab.base.errors.RunFailed`) after the other
  runs are stored; after :data:`MAX_FAILURES` failed runs nothing more is started;
* a worker process that dies (killed, out of memory) takes its batch with it: the local pool is
  restarted, a Dask scheduler reassigns the batch by itself; the runs it held are made again one by
  one, and a run that kills its worker :data:`MAX_ATTEMPTS` times is reported, not retried;
* Ctrl-C kills the local workers at once (a run in progress is lost, every stored run is kept) and
  cancels the batches queued on a cluster; local workers also die with this process.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import tempfile
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

from ..base.errors import CacheError, CacheWarning, CorruptEntry, EngineMismatch, RunFailed, SweepError
from ..base.version import __version__, engine_build_id
from .cache import Cache, Entry, make_entry

#: how often a run may kill its worker before it is reported instead of retried
MAX_ATTEMPTS = 3
#: after this many failed runs no new run is started
MAX_FAILURES = 10


@dataclass
class Failure:
    key: str
    message: str


# ----------------------------------------------------------------------------- worker side


def _meta(task) -> dict:
    meta = {"scenario_label": task.label, "name": task.name, "overrides": list(task.overrides), "seed": task.seed,
            "aqmlab": __version__, "engine": engine_build_id()}
    if task.engine != "aqmlab":  # another engine's run (aqmlab.sweep.engines) says which, and its build
        from .keys import engine_id

        meta.update(made_by=task.engine, made_by_build=engine_id(task.engine))
    return meta


def run_task(task, max_memory=None) -> Entry:
    """Make one run and return its cache entry (raises the engine's errors). ``max_memory``: the
    client's memory budget per run (``--max-memory``), else this process's default."""
    from ..run import api
    from ..run.source import Source

    src = Source(task.text, task.label, task.name)
    if task.engine == "ns2":  # ns-2.35 (aqmlab.sweep.engines); its memory is ns's own
        from ..ns2.engine import run as ns2_run

        res = ns2_run(src, seed=task.seed, overrides=list(task.overrides))
    else:
        res = api.run(src, seed=task.seed, overrides=list(task.overrides), max_memory=max_memory,
                      pcap_dir=False)  # sweeps keep tables, not packet traces
    return make_entry(task.key, res, _meta(task))


def _failure(task, e: BaseException) -> Failure:
    from ..base.errors import Ns2Error, ScenarioError, SimulationError

    if isinstance(e, Ns2Error):
        return Failure(task.key, f"ns-2.35: {e}")
    if isinstance(e, SimulationError):
        return Failure(task.key, f"simulation failed: {e}")
    if isinstance(e, ScenarioError):
        return Failure(task.key, str(e))
    if isinstance(e, MemoryError):
        return Failure(task.key, "out of memory: the run outgrew what its worker process could have; give it less "
                                 "to hold or more memory (docs/scenarios.md, \"Resources\")")
    return Failure(task.key, f"{type(e).__name__}: {e}")


def run_batch(tasks: Sequence, engine: str, markers: str | None = None, max_memory=None) -> dict:
    """Make the runs of one batch (in a worker). Returns ``{"entries", "failures", "seconds",
    "host"}``. ``engine``: the client's engine build, which must be this worker's. ``markers``: a
    directory where the run in progress is named (``<pid>`` holds its key), for the local pool to
    tell which run was being made by a worker that died. ``max_memory``: see :func:`run_task`."""
    import socket

    host = socket.gethostname()
    mine = engine_build_id()
    if engine != mine:
        raise EngineMismatch(f"worker {host} (pid {os.getpid()}) has aqmlab engine build {mine}, the client {engine}; "
                             "install the same aqmlab build on the client and every worker")
    marker = os.path.join(markers, str(os.getpid())) if markers else None
    t0 = time.perf_counter()
    entries, failures = [], []
    for t in tasks:
        if marker:
            with open(marker, "w") as f:
                f.write(t.key)
        try:
            entries.append(run_task(t, max_memory) if max_memory else run_task(t))
        except Exception as e:  # reported by the client with the run's description
            failures.append(_failure(t, e))
        if marker:
            os.unlink(marker)
    return {"entries": entries, "failures": failures, "seconds": time.perf_counter() - t0, "host": host}


def die_with_parent(parent_pid: int) -> None:
    """Make this process end when ``parent_pid`` does: PR_SET_PDEATHSIG on Linux, else a thread that
    watches the parent."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            armed = False
    if not armed:
        import threading

        def watch():
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True, name="aqmlab-parent-watch").start()
    if os.getppid() != parent_pid:  # the parent died before we were armed
        os._exit(1)


def init_local_worker(parent_pid: int) -> None:
    """Local pool workers: Ctrl-C is the parent's to handle (it kills the pool); die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid)


# ----------------------------------------------------------------------------- pools


class Pool:
    """Runs batches somewhere. ``workers``: how many batches run at once."""

    kind = "pool"
    target_seconds = 0.25

    @property
    def workers(self) -> int:
        raise NotImplementedError

    def submit(self, batch, engine, max_memory=None):  # -> a future
        raise NotImplementedError

    def wait(self, futures, timeout: float):  # -> the finished ones
        raise NotImplementedError

    def died(self, exc: BaseException) -> bool:
        """Whether ``exc`` (raised by a future) means that its worker died."""
        return False

    def culprits(self) -> set | None:
        """After a worker died: the keys of the runs that were in progress in the dead worker(s)
        (``None``: unknown)."""
        return None

    def close(self, kill: bool = False) -> None:
        pass


class LocalPool(Pool):
    """Worker processes on this machine (``concurrent.futures``, spawned fresh)."""

    kind = "local"

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._ex = None
        self._procs: dict = {}
        self._markers = tempfile.mkdtemp(prefix="aqmlab-workers-")
        self.death: str | None = None  # how the last dead worker ended

    @property
    def workers(self) -> int:
        return self.jobs

    def _pool(self):
        if self._ex is None:
            from concurrent.futures import ProcessPoolExecutor

            from .workers import worker_context

            self._ex = ProcessPoolExecutor(max_workers=self.jobs, mp_context=worker_context(),
                                           initializer=init_local_worker, initargs=(os.getpid(),))
            self._procs = {}
        return self._ex

    def submit(self, batch, engine, max_memory=None):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool

        ex = self._pool()
        try:
            fut = ex.submit(run_batch, batch, engine, self._markers, max_memory)
        except BrokenProcessPool as e:
            # a worker died since the last look: this batch is lost with the pool's others, and is
            # retried with them (a future that fails as theirs do), never a traceback
            fut = Future()
            fut.set_exception(e)
            return fut
        try:
            self._procs.update(dict(ex._processes or {}))
        except (AttributeError, RuntimeError):
            pass
        return fut

    def wait(self, futures, timeout):
        from concurrent.futures import FIRST_COMPLETED, wait

        done, _ = wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)
        return done

    def died(self, exc):
        from concurrent.futures.process import BrokenProcessPool

        return isinstance(exc, BrokenProcessPool)

    def culprits(self):
        """Runs in progress in workers that did not end by the pool's own SIGTERM; the pool is then
        replaced by a new one at the next submit."""
        if self._ex is not None:
            self._ex.shutdown(wait=True, cancel_futures=True)
            self._ex = None
        dead = set()
        self.death = None
        for pid, p in self._procs.items():
            p.join(timeout=5)
            if p.exitcode not in (0, -signal.SIGTERM, None):
                dead.add(str(pid))
                code = p.exitcode
                self.death = (f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
                              else f"exit status {code}")
        keys = set()
        for name in os.listdir(self._markers):
            path = os.path.join(self._markers, name)
            try:
                with open(path) as f:
                    key = f.read().strip()
                os.unlink(path)
            except OSError:
                continue
            if name in dead:
                keys.add(key)
        self._procs = {}
        return keys or None  # a worker that died between runs (or at start) leaves no marker

    def close(self, kill=False):
        if self._ex is not None:
            if kill:
                for p in list(self._procs.values()):
                    if p.exitcode is None:
                        p.kill()
            self._ex.shutdown(wait=not kill, cancel_futures=True)
            if kill:
                for p in list(self._procs.values()):
                    p.join(timeout=5)
            self._ex = None
        import shutil

        shutil.rmtree(self._markers, ignore_errors=True)


class DaskPool(Pool):
    """Batches on a Dask cluster (``distributed``): a scheduler address or a ``Client``."""

    kind = "dask"
    target_seconds = 1.0

    def __init__(self, scheduler: str | None = None, client=None):
        self._own = client is None
        if client is None:
            if scheduler is None:
                raise SweepError("--executor dask: give --scheduler tcp://HOST:PORT (the address `dask scheduler` "
                                 "prints)")
            scheduler = check_scheduler(scheduler)
            client = _connect(_import_distributed(), scheduler)
        distributed = _import_distributed()
        self.client = client
        self._dist = distributed
        self._warned = 0.0
        self._asked = -1e9
        self._n = 1

    @property
    def workers(self):
        now = time.monotonic()
        if now - self._asked < 2.0:  # (a round trip to the scheduler: not at every batch)
            return self._n
        self._asked = now
        try:
            n = sum(self.client.nthreads().values())
        except Exception:
            n = 0
        self._n = max(1, n)
        if n == 0 and time.monotonic() - self._warned > 30:
            self._warned = time.monotonic()
            print(f"waiting for Dask workers to join the scheduler at {self.client.scheduler.address}",
                  file=sys.stderr)
        return max(1, n)

    def submit(self, batch, engine, max_memory=None):
        return self.client.submit(run_batch, list(batch), engine, None, max_memory, pure=False,
                                  key=f"aqmlab-runs-{batch[0].key[:10]}-{os.urandom(4).hex()}")

    def wait(self, futures, timeout):
        try:
            with self.client.as_current():
                done, _ = self._dist.wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set()
        return done

    def died(self, exc):
        from distributed.scheduler import KilledWorker

        return isinstance(exc, KilledWorker)

    def close(self, kill=False):
        if self._own:
            self.client.close()


#: seconds to wait for a TCP connection to the scheduler, and then for its answer
PROBE_TIMEOUT = 5.0
#: the address schemes a scheduler can be reached by from another process
REMOTE_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler(address) -> str:
    """``--scheduler``: the address of a Dask scheduler that answers, checked before anything else
    happens, as ``SCHEME://HOST:PORT``. Every fault is a one-line :class:`SweepError` within
    about 2 × :data:`PROBE_TIMEOUT` seconds: a malformed address, an unknown scheme, a host that
    does not resolve, nothing listening, something that is not a Dask scheduler (a worker, a web
    server). Without this a bad address left ``distributed.Client`` retrying for its whole
    timeout, then a traceback at exit from the half-made client's clean-up."""
    if not isinstance(address, str):
        raise SweepError(f"--scheduler: expected an address such as tcp://HOST:PORT, got {address!r}")
    shown = address if address.isprintable() else repr(address)
    if not address.strip():
        raise SweepError("--scheduler: empty; give the address `dask scheduler` prints, e.g. tcp://HOST:8786")
    if not address.isprintable() or address != address.strip():
        raise SweepError(f"--scheduler {shown}: an address has no spaces or control characters; expected "
                         "tcp://HOST:PORT")
    scheme, sep, loc = address.partition("://")
    if not sep:
        scheme, loc = "tcp", address  # as distributed reads it (its default scheme)
    scheme = scheme.lower()
    if scheme == "inproc":
        raise SweepError(f"--scheduler {shown}: an inproc:// scheduler exists only inside its own Python process; "
                         "give the tcp:// address `dask scheduler` prints")
    host, port = _host_port(loc)
    if host is None:
        raise SweepError(f"--scheduler {shown}: expected {scheme}://HOST:PORT with a port from 1 to 65535")
    _import_distributed()  # (the checks above need no Dask; the ones below do)
    known = _known_schemes()
    if scheme not in known:
        hint = (f"{scheme}:// needs its Dask communication package installed" if scheme in REMOTE_SCHEMES
                else f"unknown address scheme {scheme!r}")
        raise SweepError(f"--scheduler {shown}: {hint}; one of: {', '.join(known)}")
    address = f"{scheme}://{loc}"
    conn = _connection_args(scheme, shown)
    if scheme in ("tcp", "tls", "ws", "wss"):
        _probe_socket(host, port, shown)
    _probe_identity(address, conn, shown)
    return address


def _known_schemes() -> list:
    """The schemes distributed can reach another process by (its registered backends that load)."""
    from distributed.comm import registry

    out = []
    for s in REMOTE_SCHEMES:
        try:
            registry.get_backend(s).get_connector()
        except Exception:  # noqa: BLE001 - a backend that cannot load (ucx without ucx-py) is not offered
            continue
        out.append(s)
    return out


def _host_port(loc: str):
    """``HOST:PORT`` or ``[IPV6]:PORT`` (nothing after it): (host, port), else (None, None)."""
    if loc.startswith("["):
        host, sep, tail = loc[1:].partition("]")
        if not sep or not tail.startswith(":"):
            return None, None
        port = tail[1:]
    else:
        host, sep, port = loc.rpartition(":")
        if not sep or ":" in host:
            return None, None
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        return None, None
    return host, int(port)


def _connection_args(scheme: str, shown: str) -> dict:
    """distributed's client-side connection arguments (TLS settings from Dask's configuration)."""
    from distributed.security import Security

    try:
        args = Security().get_connection_args("client")
    except Exception as e:  # noqa: BLE001 - a broken TLS configuration
        raise SweepError(f"--scheduler {shown}: Dask's TLS configuration is unusable ({_reason(e)})") from None
    if scheme in ("tls", "wss") and args.get("ssl_context") is None:
        raise SweepError(f"--scheduler {shown}: {scheme}:// needs TLS certificates in Dask's configuration "
                         "(distributed.comm.tls.ca-file, .client.cert, .client.key); or give a tcp:// address")
    return args


def _reason(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return text or type(e).__name__


def _probe_socket(host: str, port: int, shown: str) -> None:
    """Fail fast (one line) when nothing listens there, instead of retrying for the client's whole
    connection timeout."""
    import socket

    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT).close()
    except socket.gaierror as e:
        raise SweepError(f"--scheduler {shown}: cannot resolve host {host!r} ({e.strerror or e})") from None
    except (OSError, ValueError, UnicodeError) as e:
        why = "no answer within %g s" % PROBE_TIMEOUT if isinstance(e, TimeoutError) else (
            getattr(e, "strerror", None) or _reason(e))
        raise SweepError(f"--scheduler {shown}: cannot reach a Dask scheduler there ({why})") from None


def _probe_identity(address: str, conn: dict, shown: str) -> None:
    """Ask what answers at ``address`` (distributed's ``identity`` message), on a thread of its own
    with its own event loop, so it works from inside a running loop (Jupyter) too, and is given up
    after :data:`PROBE_TIMEOUT` seconds."""
    import asyncio
    import threading

    out: dict = {}

    async def ask():
        from distributed.comm import connect

        comm = await connect(address, timeout=PROBE_TIMEOUT, **conn)
        out["connected"] = True
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    def main():
        try:
            out["answer"] = asyncio.run(asyncio.wait_for(ask(), PROBE_TIMEOUT))
        except BaseException as e:  # noqa: BLE001 - reported below
            out["error"] = e

    t = threading.Thread(target=main, daemon=True, name="aqmlab-scheduler-probe")
    t.start()
    t.join(PROBE_TIMEOUT + 2)
    answer, e = out.get("answer"), out.get("error")
    if t.is_alive() or isinstance(e, (TimeoutError, asyncio.TimeoutError)):
        raise SweepError(f"--scheduler {shown}: something listens there, but no Dask scheduler answered within "
                         f"{PROBE_TIMEOUT:g} s (the address `dask scheduler` prints, not its dashboard's)")
    garbled = e is not None and (out.get("connected") or not isinstance(e, OSError)
                                 or type(e).__name__ == "CommClosedError")
    if garbled:  # e.g. a web server's answer read as a message
        raise SweepError(f"--scheduler {shown}: something answers there, but not as a Dask scheduler does (the "
                         "address `dask scheduler` prints, not its dashboard's)")
    if e is not None:
        raise SweepError(f"--scheduler {shown}: cannot reach a Dask scheduler there ({_reason(e)})")
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        what = f"a Dask {kind.lower()}" if isinstance(kind, str) and kind.isprintable() else "not a Dask scheduler"
        raise SweepError(f"--scheduler {shown}: {what} answers there, not a scheduler; give the address "
                         "`dask scheduler` prints")


def _connect(distributed, scheduler: str):
    """A ``distributed.Client`` of ``scheduler``; a failure is one line, and leaves no half-made
    client behind (whose clean-up at exit would wait twice the timeout, then print a traceback)."""
    client = distributed.Client.__new__(distributed.Client)
    try:
        client.__init__(scheduler, timeout="20s", set_as_default=False)
    except Exception as e:  # noqa: BLE001 - any failure of the connection is the user's address
        with contextlib.suppress(Exception):
            client.status = "closed"  # Client.__del__ then has nothing to close
        raise SweepError(f"--scheduler {scheduler}: cannot reach a Dask scheduler there ({_reason(e)})") from None
    return client


def _import_distributed():
    try:
        import distributed
    except ImportError:
        raise SweepError('--executor dask needs the "distributed" package: pip install "aqmlab[dask]"') from None
    return distributed


def make_pool(executor=None, jobs: int | None = None, scheduler: str | None = None, client=None) -> Pool | None:
    """The pool for ``executor`` (``"local"``, ``"dask"`` or a :class:`Pool`); ``None`` means runs
    in this process (``jobs=1``). A ``client`` or a ``scheduler`` implies Dask."""
    if isinstance(executor, Pool):
        return executor
    if executor is None:
        executor = "dask" if (client is not None or scheduler is not None) else "local"
    if executor == "dask":
        return DaskPool(scheduler, client)
    if executor != "local":
        raise SweepError(f"--executor {executor}: unknown; one of: local, dask")
    if scheduler is not None:
        raise SweepError("--scheduler: only with --executor dask")
    jobs = check_jobs(jobs)
    n = jobs or os.cpu_count() or 1
    return None if n == 1 else LocalPool(n)


#: the most worker processes --jobs may ask for (a larger number is a typo, and past the C int
#: range one the process pool cannot even represent)
MAX_JOBS = 4096


def check_jobs(jobs):
    """``None`` (every core) or a positive integer up to :data:`MAX_JOBS`, as the CLI's --jobs."""
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise SweepError(f"--jobs: must be a positive integer, got {jobs!r}")
    if jobs > MAX_JOBS:
        raise SweepError(f"--jobs: at most {MAX_JOBS} worker processes, got {jobs}")
    return jobs


# ----------------------------------------------------------------------------- the driver


class _Batcher:
    """Batch sizes from the measured time per run (an exponential average)."""

    def __init__(self, target: float):
        self.target = target
        self.per_run: float | None = None

    def observe(self, runs: int, seconds: float):
        if runs <= 0:
            return
        x = max(seconds / runs, 1e-5)
        self.per_run = x if self.per_run is None else 0.7 * self.per_run + 0.3 * x

    def size(self, remaining: int, workers: int) -> int:
        if self.per_run is None:
            return 1
        tail = math.ceil(remaining / (2 * workers))  # the last batches spread over every worker
        return max(1, min(int(self.target / self.per_run), tail, 5000))


def describe_task(t) -> str:
    ov = " ".join(f"--set '{o}'" for o in t.overrides)
    return f"{t.label} --seed {t.seed}" + (f" {ov}" if ov else "")


def pending_tasks(tasks: Sequence, cache: Cache, warn: Callable[[str], None] | None = None):
    """The distinct tasks (the first of each key) and those not whole in ``cache``. A damaged entry
    (truncated, corrupt, half-deleted) is reported through ``warn``, removed, and made again."""
    first: dict = {}
    for t in tasks:
        first.setdefault(t.key, t)
    todo = []
    for k, t in first.items():
        why = cache.check(k)
        if why is None:
            continue
        if why != "absent":
            _warn(warn, f"cache entry {k[:12]} ({describe_task(t)}) is damaged ({why}); making it again")
            cache.discard(k)
        todo.append(t)
    return first, todo


def _warn(warn, msg):
    if warn is not None:
        warn(msg)
    else:
        warnings.warn(msg, CacheWarning, stacklevel=3)


def execute(tasks: Sequence, cache: Cache, jobs: int | None = None, progress: bool | str = False,
            on_done: Callable | None = None, desc: str = "runs", *, executor=None, scheduler: str | None = None,
            client=None, rows: dict | None = None, warn: Callable[[str], None] | None = None,
            todo: Sequence | None = None) -> dict:
    """Make every task whose key is not (validly) in ``cache``, each key once, and store it.

    ``executor``: ``"local"`` (default: ``jobs`` processes, all cores by default; ``jobs=1`` runs
    in this process), ``"dask"`` (with ``scheduler`` an address or ``client`` a
    ``distributed.Client``) or a :class:`Pool`. ``on_done(task)`` is called here after each run is
    stored. ``rows``: filled with ``key -> metrics row`` of the runs made. Returns ``{"total",
    "cached", "computed"}`` over distinct keys. Failed runs raise :class:`RunFailed` at the end,
    after everything else is stored; an unusable cache raises :class:`CacheError` before any run.
    ``todo``: the tasks already found missing by :func:`pending_tasks` (else they are looked up here).
    ``progress``: a progress bar on stderr: ``True`` anywhere, ``"tty"`` only when stderr is a
    terminal (what the commands pass: a log file gets no frames).
    """
    check_jobs(jobs)
    if todo is None:
        first, todo = pending_tasks(tasks, cache, warn)
    else:
        first = {}
        for t in tasks:
            first.setdefault(t.key, t)
    stats = {"total": len(first), "cached": len(first) - len(todo), "computed": 0}
    if not todo:
        return stats
    cache.probe()
    cache.clean_tmp()
    pool = make_pool(executor, jobs, scheduler, client) if (len(todo) > 1 or executor == "dask" or client) else None
    bar = None
    if progress:
        from ..base.io import progress_bar

        # "tty" (the commands): only on a terminal; True (a caller of the API asked): anywhere
        bar = progress_bar(total=len(first), initial=stats["cached"], desc=desc, unit="run", always=progress != "tty",
                           dynamic_ncols=True, smoothing=0.05)
    failures: list = []
    by_key = {t.key: t for t in todo}

    def store(entry: Entry):
        try:
            cache.put(entry)
        except OSError as e:
            from ..base.io import os_reason

            raise CacheError(f"cache {cache.root}: cannot write: {os_reason(e)} ({stats['computed']} runs stored; "
                             "free space and run again to continue)") from None
        if rows is not None:
            rows[entry.key] = entry.row
        stats["computed"] += 1
        if bar is not None:
            bar.update(1)
        if on_done is not None:
            on_done(by_key[entry.key])

    try:
        if pool is None:
            for t in todo:
                if len(failures) >= MAX_FAILURES:
                    break
                try:
                    entry = run_task(t)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as e:
                    failures.append(_failure(t, e))
                    continue
                store(entry)
        else:
            _drive(pool, todo, store, failures)
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.close(kill=sys.exc_info()[0] is not None)
    if failures:
        raise _run_failed(failures, by_key)
    return stats


def _run_failed(failures, by_key) -> RunFailed:
    f = failures[0]
    more = f" (and {len(failures) - 1} more failed run(s); every other run is stored)" if len(failures) > 1 else ""
    return RunFailed(f"{describe_task(by_key[f.key])}: {f.message}{more}", failures)


def _drive(pool: Pool, todo: list, store: Callable, failures: list) -> None:
    """Hand out batches, collect entries, retry the runs of dead workers."""
    engine = engine_build_id()
    queue = deque(todo)
    singles: deque = deque()  # runs of a dead worker: one per batch
    attempts: dict = {}
    pending: dict = {}
    try:
        _loop(pool, engine, queue, singles, attempts, pending, store, failures)
    except BaseException:
        for fut in pending:  # queued batches are withdrawn (a cluster's running ones finish unseen)
            fut.cancel()
        raise


def _loop(pool, engine, queue, singles, attempts, pending, store, failures) -> None:
    batcher = _Batcher(pool.target_seconds)
    max_memory = os.environ.get("AQMLAB_MAX_MEMORY") or None  # the client's budget travels with each batch
    while queue or singles or pending:
        workers = pool.workers
        while (singles or queue) and len(pending) < 2 * workers and len(failures) < MAX_FAILURES:
            if singles:
                batch = [singles.popleft()]
            else:
                n = batcher.size(len(queue), workers)
                batch = [queue.popleft() for _ in range(min(n, len(queue)))]
            pending[pool.submit(batch, engine, max_memory)] = batch
        if not pending:
            break
        done = pool.wait(pending, timeout=0.5)
        if not done:
            continue
        died = []
        for fut in done:
            batch = pending.pop(fut)
            try:
                out = fut.result()
            except EngineMismatch as e:
                raise SweepError(str(e)) from None
            except BaseException as e:  # noqa: B036 - decide below
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                if pool.died(e):
                    died.append((batch, e))
                    continue
                if isinstance(pool, DaskPool):  # e.g. a worker without aqmlab installed
                    reason = str(e).splitlines()[0] if str(e) else ""
                    raise SweepError(f"a Dask worker could not make runs: {type(e).__name__}: {reason} (every worker "
                                     "needs the same aqmlab installed)") from None
                raise
            batcher.observe(len(batch), out["seconds"])
            for entry in out["entries"]:
                store(entry)
            failures += out["failures"]
        if died:
            _retry(pool, died, pending, singles, attempts, failures)


def _retry(pool, died, pending, singles, attempts, failures):
    """Runs of batches lost with a dead worker go back one per batch.

    Dask has already retried a lost batch on other workers (``distributed.scheduler.allowed-failures``
    times) before it reports it: a batch of one run is then reported, a larger one is split. The
    local pool loses all its batches when one worker dies; the runs that were in progress in the
    dead worker are charged an attempt (all lost runs, if it cannot tell), and a run charged
    :data:`MAX_ATTEMPTS` times is reported."""
    why = str(died[0][1]).splitlines()[0] if str(died[0][1]) else type(died[0][1]).__name__
    if not isinstance(pool, LocalPool):
        for batch, e in died:
            if len(batch) == 1:
                failures.append(Failure(batch[0].key, f"its worker died while making it, on every try ({why})"))
            else:
                singles.extend(batch)
        return
    lost = [t for batch, _ in died for t in batch]
    for fut, batch in list(pending.items()):
        lost += batch
        pending.pop(fut)
    culprits = pool.culprits()
    why = getattr(pool, "death", None) or why
    for t in lost:
        if culprits is None or t.key in culprits:
            attempts[t.key] = attempts.get(t.key, 0) + 1
        if attempts.get(t.key, 0) >= MAX_ATTEMPTS:
            failures.append(Failure(t.key, f"its worker process died {MAX_ATTEMPTS} times while making it ({why})"))
        else:
            singles.append(t)


__all__ = ["Pool", "LocalPool", "DaskPool", "make_pool", "execute", "run_batch", "run_task", "MAX_ATTEMPTS",
           "MAX_FAILURES", "CacheWarning", "check_jobs", "describe_task", "pending_tasks", "CorruptEntry",
           "init_local_worker", "die_with_parent", "check_scheduler"]
