//! `aqmlab._core`: the native module behind the `aqmlab` Python package.
//!
//! Thin by design: it converts Python arguments, calls the `sim` crate with the GIL released, and
//! converts results back (summary as a JSON string, tables as `{column: list}` pairs). User-facing
//! classes live in pure Python (`python/aqmlab/`).
//!
//! Modules: this file (validation, runs, the bench, the resolved scenario, units and the lists:
//! the `sim` crate's side) and `emulate` (`aqmlab emulate`: the plan, TUN devices and the
//! forwarder, the `emu` crate's side).

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use sim::{Column, Table};

mod emulate;
mod oom;

/// A failed allocation ends the process with one `error:` line, not an abort (`oom.rs`).
#[global_allocator]
static ALLOCATOR: oom::OneLine = oom::OneLine;

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A mistake in a scenario; str(e) is '<key path>: <what is wrong>'."
);
create_exception!(_core, SimulationError, PyRuntimeError, "A run failed (e.g. a packet-conservation violation).");

fn scenario_err(e: sim::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// Run `f`, turning a panic (an engine bug) into a `SimulationError` rather than letting it reach
/// the user as a `PanicException`.
fn no_panic<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(p)))
}

fn panic_error(p: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    SimulationError::new_err(format!(
        "internal error (a bug in aqmlab; please report it with the scenario): {}",
        sim::diag::escape(&what)
    ))
}

/// How often a thread waiting for the engine checks for Ctrl-C.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run `f` (building a run, or computing its results: work that has no progress callback) on a
/// thread of its own named `name` (`aqmlab-build`, `aqmlab-results`: at most 15 bytes), while this one waits without the GIL and checks for Ctrl-C every
/// [`SIGNAL_POLL`]. On a signal its exception (`KeyboardInterrupt`) is returned at once; the
/// thread is left to finish alone and its result is dropped (in `aqmlab`, the process ends
/// first). A panic is a `SimulationError`, as with [`no_panic`].
fn interruptible<T: Send + 'static>(py: Python<'_>, name: &str, f: impl FnOnce() -> T + Send + 'static) -> PyResult<T> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(8 << 20)
        .spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        })
        .map_err(|e| SimulationError::new_err(format!("cannot start a thread for the engine: {e}")))?;
    let mut rx = rx;
    loop {
        // (the receiver travels into the detached closure and back: it is Send, not Sync)
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match got {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(p)) => return Err(panic_error(p)),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(SimulationError::new_err("internal error: the engine's thread ended without a result"))
            }
        }
    }
}

/// `max_memory`: bytes (int), a size string ("8GB", "512MiB"), or None for `$AQMLAB_MAX_MEMORY`
/// or else the default (half the machine's physical memory); either way no more than the process's
/// cgroup and address-space limits allow (`sim::budget::process_limit`).
fn memory_limit(max_memory: Option<&Bound<'_, PyAny>>) -> PyResult<sim::budget::Limit> {
    let given = given_limit(max_memory)?;
    Ok(sim::budget::process_limit(given))
}

fn given_limit(max_memory: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(v) = max_memory.filter(|v| !v.is_none()) else {
        // the environment's AQMLAB_MAX_MEMORY (set by `aqmlab --max-memory` for its workers too)
        return match std::env::var("AQMLAB_MAX_MEMORY") {
            Ok(s) if !s.trim().is_empty() => match sim::units::parse_size(s.trim()) {
                Ok(b) if b > 0 => Ok(Some(b)),
                _ => Err(PyValueError::new_err(format!(
                    "AQMLAB_MAX_MEMORY: expected a size such as \"8GB\" or a number of bytes >= 1, got \"{}\"",
                    sim::diag::escape(&s)
                ))),
            },
            _ => Ok(None),
        };
    };
    let bytes = if let Ok(s) = v.extract::<String>() {
        sim::units::parse_size(s.trim())
            .map_err(|e| PyValueError::new_err(format!("max_memory: {}", sim::diag::escape(&e))))?
    } else {
        v.extract::<u64>().map_err(|_| {
            PyValueError::new_err("max_memory: expected a number of bytes >= 1 or a size such as \"8GB\"")
        })?
    };
    if bytes == 0 {
        return Err(PyValueError::new_err("max_memory: must be at least 1 byte"));
    }
    Ok(Some(bytes))
}

/// Load and validate, then check the resource estimate against `limit` (`sim::budget`).
fn load(
    text: &str,
    overrides: &[String],
    name: &str,
    limit: sim::budget::Limit,
) -> PyResult<(sim::Scenario, sim::budget::Estimate)> {
    no_panic(|| {
        let sc = sim::load(text, overrides, name).map_err(scenario_err)?;
        let est = sim::budget::check(&sc, limit).map_err(scenario_err)?;
        Ok((sc, est))
    })
}

/// Validate a scenario; returns a short JSON description (name, flows, duration, topology, the
/// bottleneck's AQM for a dumbbell, the measured links, and the resource estimate). `max_memory`
/// as for `run`.
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new(), max_memory=None))]
fn validate(text: &str, name: &str, overrides: Vec<String>, max_memory: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let limit = memory_limit(max_memory)?;
    let (sc, est) = load(text, &overrides, name, limit)?;
    let d = serde_json::json!({
        "memory_estimate_bytes": est.total,
        "memory_limit_bytes": limit.bytes,
        "memory_limit_source": match limit.source {
            sim::budget::LimitSource::Given => "given",
            sim::budget::LimitSource::Default => "default",
            sim::budget::LimitSource::Cgroup => "cgroup",
            sim::budget::LimitSource::AddressSpace => "address-space",
        },
        "notes": sc.notes(),
        "events_estimate": est.events,
        "flow_series_rows_estimate": sc.flow_series_interval.map(|_| est.flow_series_rows),
        "name": sc.name,
        "description": sc.description,
        "flows": sc.n_static_flows(),
        "hosts": sc.n_hosts(),
        "groups": sc.groups.iter().map(|g| serde_json::json!({"name": g.name, "count": g.count, "transport": g.transport_name(), "app": g.app_name()})).collect::<Vec<_>>(),
        "duration_s": sc.duration as f64 / 1e9,
        "warmup_s": sc.warmup as f64 / 1e9,
        "seed": sc.seed,
        "aqm": sc.bottleneck().map(|b| b.aqm.name()),
        "bottleneck_rate_bps": sc.bottleneck().map(|b| b.rate_bps),
        "topology": sc.topology.shape.name(),
        "nodes": sc.topology.nodes.len(),
        "links": sc.topology.links.len(),
        "captures": sc.captures.iter().map(|c| sc.topology.links[c.link as usize].name.clone()).collect::<Vec<_>>(),
        "monitored": sc.topology.links.iter().filter(|l| l.monitor).map(|l| serde_json::json!({"name": l.name, "aqm": l.spec.aqm.name(), "rate_bps": l.spec.rate_bps})).collect::<Vec<_>>(),
    });
    Ok(d.to_string())
}

/// Values converted to Python objects between two checks for Ctrl-C (a few milliseconds of work).
const CONVERT_CHUNK: usize = 1 << 18;

/// A list of `n` values, made `CONVERT_CHUNK` at a time by `chunk(start, end)`, checking for
/// Ctrl-C between chunks (a table of tens of millions of values takes seconds to convert).
fn chunked_list<'py>(
    py: Python<'py>,
    n: usize,
    chunk: impl Fn(usize, usize) -> PyResult<Bound<'py, PyList>>,
) -> PyResult<Bound<'py, PyList>> {
    if n <= CONVERT_CHUNK {
        return chunk(0, n);
    }
    let out = chunk(0, CONVERT_CHUNK)?;
    let mut start = CONVERT_CHUNK;
    while start < n {
        py.check_signals()?;
        let end = (start + CONVERT_CHUNK).min(n);
        out.call_method1("extend", (chunk(start, end)?,))?;
        start = end;
    }
    Ok(out)
}

/// A numeric column as a Python `array.array` of `typecode` ('d' or 'q'): 8 bytes a value where a
/// list of floats takes 32 (a pointer and a float object), so that a ten-million-flow table fits;
/// it indexes, iterates and pickles like a list, and pandas and the writers read its buffer.
fn numeric_array<'py, T: Copy>(
    py: Python<'py>,
    typecode: &str,
    v: &[T],
    bytes: impl Fn(T) -> [u8; 8],
) -> PyResult<Bound<'py, PyAny>> {
    let a = py.import("array")?.call_method1("array", (typecode,))?;
    let mut buf = Vec::with_capacity(8 * v.len().min(CONVERT_CHUNK));
    for chunk in v.chunks(CONVERT_CHUNK) {
        py.check_signals()?;
        buf.clear();
        buf.extend(chunk.iter().flat_map(|&x| bytes(x)));
        a.call_method1("frombytes", (PyBytes::new(py, &buf),))?;
    }
    Ok(a)
}

/// A table as a list of `(name, values)` pairs. It takes the table so that each Rust column is
/// freed as soon as it is converted: the peak holds one column twice, not the whole table.
fn table_to_py<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, col) in t.columns {
        py.check_signals()?;
        let values = match &col {
            Column::F64(v) => numeric_array(py, "d", v, f64::to_ne_bytes)?,
            Column::I64(v) => numeric_array(py, "q", v, i64::to_ne_bytes)?,
            Column::Str(v) => chunked_list(py, v.len(), |a, b| PyList::new(py, &v[a..b]))?.into_any(),
            // one string object per level, shared by every row that has it
            Column::Cat { codes, levels } => {
                let levels: Vec<Bound<'py, pyo3::types::PyString>> =
                    levels.iter().map(|l| pyo3::types::PyString::new(py, l)).collect();
                chunked_list(py, codes.len(), |a, b| {
                    PyList::new(py, codes[a..b].iter().map(|&c| levels[c as usize].clone()))
                })?
                .into_any()
            }
        };
        out.append((name.as_str(), values))?;
    }
    Ok(out)
}

/// Run a scenario. `progress(sim_seconds)` is called periodically; an exception it raises (or
/// Ctrl-C) stops the run. A scenario whose resource estimate exceeds `max_memory` (bytes or a
/// size string; default half the physical memory) is refused with a `ScenarioError` before any
/// work. With `pcap_dir`, the scenario's `[[pcap]]` traces are written there. Returns a dict with
/// `summary` (JSON text), `flows` and `timeseries` (lists of `(column, values)`) and `pcap` (the
/// trace files written).
#[pyfunction]
#[pyo3(signature = (text, name, seed=None, overrides=Vec::new(), progress=None, max_memory=None, pcap_dir=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    name: &str,
    seed: Option<u64>,
    overrides: Vec<String>,
    progress: Option<Py<PyAny>>,
    max_memory: Option<&Bound<'py, PyAny>>,
    pcap_dir: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let limit = memory_limit(max_memory)?;
    let (sc, est) = load(text, &overrides, name, limit)?;
    oom::note_run(est.total, limit.bytes);
    let sim_err = |e: sim::SimError| SimulationError::new_err(e.to_string());
    // building, the event loop and the results each stop at Ctrl-C within a fraction of a second:
    // building and the results on a thread of their own (`interruptible`), the event loop through
    // its progress callback
    let mut sim = interruptible(py, "aqmlab-build", move || sim::Sim::new(sc, seed))?.map_err(sim_err)?;
    // the scenario's [[pcap]] traces are written only when the caller says where
    let pcap = match &pcap_dir {
        Some(dir) => sim.capture_to(dir).map_err(sim_err)?,
        None => Vec::new(),
    };
    let mut cb_err: Option<PyErr> = None;
    let ran = no_panic(|| {
        Ok(py.detach(|| {
            let mut cb = |t: f64| -> bool {
                Python::attach(|py| {
                    if let Err(e) = py.check_signals() {
                        cb_err = Some(e);
                        return false;
                    }
                    if let Some(p) = &progress {
                        if let Err(e) = p.call1(py, (t,)) {
                            cb_err = Some(e);
                            return false;
                        }
                    }
                    true
                })
            };
            sim.run_events(&mut cb)
        }))
    })?;
    match ran {
        Ok(()) => {}
        Err(sim::SimError::Interrupted) => {
            return Err(cb_err.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted")));
        }
        Err(e) => return Err(sim_err(e)),
    }
    let res = interruptible(py, "aqmlab-results", move || sim.finish())?.map_err(sim_err)?;
    let d = PyDict::new(py);
    d.set_item("summary", res.summary.to_string())?;
    d.set_item("pcap", pcap.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>())?;
    d.set_item("flows", table_to_py(py, res.flows)?)?;
    d.set_item("timeseries", table_to_py(py, res.timeseries)?)?;
    if let Some(snap) = res.snapshots {
        d.set_item("snapshots", table_to_py(py, snap)?)?;
    }
    if let Some(fs) = res.flow_series {
        d.set_item("flow_series", table_to_py(py, fs)?)?;
    }
    if let Some(l) = res.latency {
        d.set_item("latency", table_to_py(py, l)?)?;
    }
    Ok(d)
}

/// `aqmlab bench`: run a scenario and time the engine's phases with `clock` (a Python callable
/// returning a tuple of floats, e.g. wall and thread CPU seconds), which is called before building,
/// after building, after the event loop and after the results are computed. Returns a dict with
/// `summary` (JSON text) and `marks` (the four clock readings). The tables are not converted to
/// Python objects, and no progress callback runs: what is timed is the engine alone.
#[pyfunction]
#[pyo3(name = "bench", signature = (text, name, overrides, clock))]
fn bench_engine<'py>(
    py: Python<'py>,
    text: &str,
    name: &str,
    overrides: Vec<String>,
    clock: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let sim_err = |e: sim::SimError| SimulationError::new_err(e.to_string());
    let m0 = clock.call0()?;
    let (sc, _) = load(text, &overrides, name, sim::budget::Limit::given(u64::MAX))?;
    let mut sim = no_panic(|| sim::Sim::new(sc, None).map_err(sim_err))?;
    let m1 = clock.call0()?;
    no_panic(|| sim.run_events(&mut |_| true).map_err(sim_err))?;
    let m2 = clock.call0()?;
    let res = no_panic(|| sim.finish().map_err(sim_err))?;
    let m3 = clock.call0()?;
    let d = PyDict::new(py);
    d.set_item("summary", res.summary.to_string())?;
    d.set_item("marks", (m0, m1, m2, m3))?;
    drop(res);
    Ok(d)
}

/// The resolved scenario: the scenario with `overrides` applied and `seed` (if given) set, written
/// back as TOML with every default filled in (`sim::resolved`); `header` lines become comments.
/// Loading the text gives the same scenario. Raises `ScenarioError` like `validate`.
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new(), seed=None, header=Vec::new()))]
fn resolve(text: &str, name: &str, overrides: Vec<String>, seed: Option<u64>, header: Vec<String>) -> PyResult<String> {
    no_panic(|| {
        let mut sc = sim::load(text, &overrides, name).map_err(scenario_err)?;
        if let Some(s) = seed {
            sc.seed = s;
        }
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        Ok(sim::resolved::to_toml(&sc, &header))
    })
}

/// Where and when a scenario's flows run, as this engine draws and routes them (JSON): for every
/// group, one entry per host pair `i` with the start time drawn from the flow's own stream
/// (`"flow:<group>"`, index `i`: a bulk, CBR or ON/OFF flow's start, a web session's first
/// request), the two nodes and the link names of the data and ACK routes (access links left out).
/// `aqmlab.ns2` runs the same flows at the same instants along the same routes in ns-2.35.
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new(), seed=None))]
fn flow_plan(text: &str, name: &str, overrides: Vec<String>, seed: Option<u64>) -> PyResult<String> {
    use serde_json::{json, Value};
    no_panic(|| {
        let sc = sim::load(text, &overrides, name).map_err(scenario_err)?;
        let seed = seed.unwrap_or(sc.seed);
        let t = &sc.topology;
        let route =
            |r: u32| -> Vec<&str> { t.routes[r as usize].iter().map(|&l| t.links[l as usize].name.as_str()).collect() };
        let node = |n: u32| t.nodes[n as usize].name.as_str();
        let groups: Vec<Value> = sc
            .groups
            .iter()
            .map(|g| {
                let pairs: Vec<Value> = (0..g.count as usize)
                    .map(|i| {
                        let mut rng = aqm::rng::Rng::stream(seed, &format!("flow:{}", g.name), i as u64);
                        let start = sim::hosts::start_time(g.start, &mut rng);
                        match g.endpoints.get(i % g.endpoints.len().max(1)) {
                            Some(e) => json!({"start_ns": start, "from": node(e.src), "to": node(e.dst),
                                              "path": route(e.fwd), "ack_path": route(e.rev)}),
                            None => json!({"start_ns": start}),
                        }
                    })
                    .collect();
                json!({"name": g.name, "pairs": pairs})
            })
            .collect();
        Ok(json!({"seed": seed, "groups": groups}).to_string())
    })
}

/// A size ("8GB", "512MiB", "1000000") in bytes, for `--max-memory`; ValueError if malformed.
#[pyfunction]
fn parse_size(s: &str) -> PyResult<u64> {
    match sim::units::parse_size(s.trim()) {
        Ok(b) if b > 0 => Ok(b),
        Ok(_) => Err(PyValueError::new_err("must be at least 1 byte")),
        Err(e) => Err(PyValueError::new_err(sim::diag::escape(&e))),
    }
}

/// A rate ("10Mb/s", "600 kbps", "1e6") in bits per second, as scenario files read it: the one unit
/// parser of aqmlab, also used by every command-line option that takes a rate. ValueError if
/// malformed or below 1 b/s (as the scenario loader).
#[pyfunction]
fn parse_rate(s: &str) -> PyResult<f64> {
    match sim::units::parse_rate(s.trim()) {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(v),
        Ok(_) => Err(PyValueError::new_err(format!(
            "a rate must be positive (at least 1 b/s), got \"{}\"",
            sim::diag::escape(s)
        ))),
        Err(e) => Err(PyValueError::new_err(sim::diag::escape(&e))),
    }
}

/// A duration ("100ms", "1.5s", "2min", "0.1") in seconds, as scenario files read it (rounded to
/// the simulator's nanosecond clock); ValueError if malformed or negative.
#[pyfunction]
fn parse_duration(s: &str) -> PyResult<f64> {
    sim::units::parse_duration(s.trim())
        .map(|ns| ns as f64 / aqm::NS_PER_SEC as f64)
        .map_err(|e| PyValueError::new_err(sim::diag::escape(&e)))
}

/// Available names with one-line descriptions: kind is "aqm", "tcp" or "traffic".
#[pyfunction]
fn names(kind: &str) -> PyResult<Vec<(String, String)>> {
    let list: &[(&str, &str)] = match kind {
        "aqm" => aqm::AQM_NAMES,
        "tcp" => sim::scenario::TCP_NAMES,
        "traffic" => sim::scenario::TRAFFIC_NAMES,
        other => return Err(PyValueError::new_err(format!("unknown kind \"{other}\"; one of: aqm, tcp, traffic"))),
    };
    Ok(list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect())
}

/// The flows table's columns, in order, and which of them hold strings: the schema of every
/// engine's flows table (`sim::results::flows::COLUMNS`).
#[pyfunction]
fn flow_columns() -> (Vec<&'static str>, Vec<&'static str>) {
    (sim::results::flows::COLUMNS.to_vec(), sim::results::flows::CATEGORICAL.to_vec())
}

/// A parameter as `aqm_describe` gives it to Python: (name, alias, unit, default or None when
/// required, description, [(choice, meaning)]).
type ParamRow = (String, Option<String>, String, Option<String>, String, Vec<(String, String)>);

/// A scheme's description (`aqmlab list aqm NAME`): summary, reference and, per parameter, (name,
/// alias, unit, default or None when required, description, [(choice, meaning)]); None for an
/// unknown name.
#[pyfunction]
fn aqm_describe(name: &str) -> Option<(String, String, Vec<ParamRow>)> {
    let d = aqm::describe::describe(name)?;
    let params = d.params.into_iter().map(|p| (p.name, p.alias, p.unit, p.default, p.doc, p.choices)).collect();
    Some((d.summary, d.reference, params))
}

/// TCP presets (name, description); with `details`, each ns-2 preset's values and their sources.
#[pyfunction]
fn tcp_presets(details: bool) -> Vec<(String, String)> {
    sim::tcp::presets::describe(details)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(bench_engine, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_presets, m)?)?;
    m.add_function(wrap_pyfunction!(aqm_describe, m)?)?;
    m.add_function(wrap_pyfunction!(flow_columns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(flow_plan, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    emulate::register(m)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
