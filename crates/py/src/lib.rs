//! `aqmlab._core`: the native module behind the `aqmlab` Python package.
//!
//! Thin by design: it converts Python arguments, calls the `sim` crate with the GIL released, and
//! converts results back (summary as a JSON string, tables as `{column: list}` pairs). User-facing
//! classes live in pure Python (`python/aqmlab/`).

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use sim::{Column, Table};

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A mistake in a scenario; str(e) is '<key path>: <what is wrong>'."
);
create_exception!(_core, SimulationError, PyRuntimeError, "A run failed (e.g. a packet-conservation violation).");

fn scenario_err(e: sim::ScenarioError) -> PyErr {
    let err = ScenarioError::new_err(e.to_string());
    err
}

fn load(text: &str, overrides: &[String], name: &str) -> PyResult<sim::Scenario> {
    sim::load(text, overrides, name).map_err(scenario_err)
}

/// Validate a scenario; returns a short JSON description (name, flows, duration, AQM).
#[pyfunction]
#[pyo3(signature = (text, name, overrides=Vec::new()))]
fn validate(text: &str, name: &str, overrides: Vec<String>) -> PyResult<String> {
    let sc = load(text, &overrides, name)?;
    let d = serde_json::json!({
        "name": sc.name,
        "description": sc.description,
        "flows": sc.n_static_flows(),
        "hosts": sc.n_hosts(),
        "groups": sc.groups.iter().map(|g| serde_json::json!({"name": g.name, "count": g.count, "transport": g.transport_name(), "app": g.app_name()})).collect::<Vec<_>>(),
        "duration_s": sc.duration as f64 / 1e9,
        "warmup_s": sc.warmup as f64 / 1e9,
        "seed": sc.seed,
        "aqm": sc.bottleneck.aqm.name(),
        "bottleneck_rate_bps": sc.bottleneck.rate_bps,
    });
    Ok(d.to_string())
}

fn table_to_py<'py>(py: Python<'py>, t: &Table) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (name, col) in &t.columns {
        let values = match col {
            Column::F64(v) => PyList::new(py, v)?,
            Column::I64(v) => PyList::new(py, v)?,
            Column::Str(v) => PyList::new(py, v)?,
        };
        out.append((name.as_str(), values))?;
    }
    Ok(out)
}

/// Run a scenario. `progress(sim_seconds)` is called periodically; an exception it raises (or
/// Ctrl-C) stops the run. Returns a dict with `summary` (JSON text), `flows` and `timeseries`
/// (lists of `(column, values)`).
#[pyfunction]
#[pyo3(signature = (text, name, seed=None, overrides=Vec::new(), progress=None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    name: &str,
    seed: Option<u64>,
    overrides: Vec<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = load(text, &overrides, name)?;
    let sim = sim::Sim::new(sc, seed).map_err(|e| SimulationError::new_err(e.to_string()))?;
    let mut cb_err: Option<PyErr> = None;
    let res = py.detach(|| {
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
        sim.run(&mut cb)
    });
    let res = match res {
        Ok(r) => r,
        Err(sim::SimError::Interrupted) => {
            return Err(cb_err.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted")));
        }
        Err(e) => return Err(SimulationError::new_err(e.to_string())),
    };
    let d = PyDict::new(py);
    d.set_item("summary", res.summary.to_string())?;
    d.set_item("flows", table_to_py(py, &res.flows)?)?;
    d.set_item("timeseries", table_to_py(py, &res.timeseries)?)?;
    if let Some(snap) = &res.snapshots {
        d.set_item("snapshots", table_to_py(py, snap)?)?;
    }
    if let Some(fs) = &res.flow_series {
        d.set_item("flow_series", table_to_py(py, fs)?)?;
    }
    Ok(d)
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

/// TCP presets (name, description); with `details`, each ns-2 preset's values and their sources.
#[pyfunction]
fn tcp_presets(details: bool) -> Vec<(String, String)> {
    sim::tcp::presets::describe(details)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    m.add_function(wrap_pyfunction!(tcp_presets, m)?)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
