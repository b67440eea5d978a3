//! Golden snapshots: every example scenario (`examples/*.toml`) and the three `aqmlab bench`
//! scenarios (shortened) are run, and their `summary.json` is compared field for field, exactly,
//! with the copy checked in under `tests/golden/<name>/summary.json`; every column of the result
//! tables (flows, time series, queue snapshots, per-flow series, latency) is compared through a digest of
//! its exact values (`tables.json`). This is what "results bit-identical" rests on when the
//! engine is reorganised.
//!
//! To record snapshots for a new example, or after a deliberate change of results, run
//! `AQMLAB_UPDATE_GOLDEN=1 cargo test -p sim --test golden`. That mode only *adds* fields and
//! columns: it refuses to change a value already recorded (and says which), so a snapshot that
//! gains new metrics still proves the old ones unchanged. `AQMLAB_UPDATE_GOLDEN=force` rewrites
//! everything (for a deliberate change of results; say why in the commit).

use serde_json::{json, Map, Value};
use sim::{Column, Table};
use std::path::{Path, PathBuf};

mod common;
use common::root;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The scenarios under snapshot: (name, file, overrides).
fn cases() -> Vec<(String, PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for f in common::examples() {
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        let small = common::test_overrides(&f);
        out.push((stem, f, small));
    }
    // the benchmark points, shortened so that the debug-build test stays quick
    let bench = root().join("python/aqmlab/bench");
    for (point, duration) in [("paper", "100s"), ("medium", "4s"), ("large", "1s")] {
        out.push((
            format!("bench-{point}"),
            bench.join(format!("{point}.toml")),
            vec![format!("simulation.duration=\"{duration}\"")],
        ));
    }
    // the DropTail dumbbell of the htsim comparison and the scale curve (simple links, many flows)
    out.push((
        "bench-dumbbell-droptail".to_string(),
        bench.join("dumbbell-droptail.toml"),
        ["flows[0].count=300", "bottleneck.rate=\"30Mb/s\"", "bottleneck.limit=225", "simulation.duration=\"3s\""]
            .map(String::from)
            .to_vec(),
    ));
    // CHOKeD, which no example runs: its default draws (the in-line path of `Choked::region_phases`)
    // on the CHOKe bench dumbbell as `aqmlab bench --point choke` sets it, and on the RED example
    // every other way of drawing (`Choked::general_phases`): with replacement over the whole
    // buffer, lazy removal with doomed packets occupying the buffer, and the average queue as
    // Eq. 3.2's source in byte mode
    let choked = |extra: &str| format!("bottleneck.aqm={{type=\"choked\", t_min=40, t_max=80{extra}}}");
    out.push((
        "choked-bench".to_string(),
        bench.join("choke.toml"),
        vec![
            "bottleneck.aqm={type=\"choked\", t_min=100, t_max=300, w_q=0.002}".to_string(),
            "flows[0].count=400".to_string(),
            "simulation.duration=\"2s\"".to_string(),
        ],
    ));
    for (name, extra) in [
        ("choked-whole-buffer-with", ", region_draws=\"whole_buffer\", draw_replacement=\"with\""),
        ("choked-lazy", ", victim_removal=\"lazy\", doomed_occupy_buffer=true"),
        ("choked-average-bytes", ", d_source=\"average\", mean_pkt_size=1000"),
    ] {
        let mut o = vec![choked(extra)];
        if name.ends_with("bytes") {
            o.push("bottleneck.queue_unit=\"bytes\"".to_string());
            o.push("bottleneck.limit=100000".to_string());
        }
        out.push((name.to_string(), root().join("examples/dumbbell-red.toml"), o));
    }
    out
}

/// FNV-1a over a column's exact values (f64 by bit pattern, so NaN payloads and -0.0 count).
fn digest(col: &Column) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let n = match col {
        Column::F64(v) => {
            v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes()));
            v.len()
        }
        Column::I64(v) => {
            v.iter().for_each(|x| eat(&x.to_le_bytes()));
            v.len()
        }
        // a categorical column digests as the strings it stands for
        Column::Str(_) | Column::Cat { .. } => {
            let v = col.strs().expect("strings");
            v.iter().for_each(|s| {
                eat(s.as_bytes());
                eat(&[0xff]);
            });
            v.len()
        }
    };
    format!("{n}:{h:016x}")
}

fn table_digests(t: &Table) -> Value {
    let mut m = Map::new();
    for (name, col) in &t.columns {
        m.insert(name.clone(), json!(digest(col)));
    }
    Value::Object(m)
}

/// Compare `want` (recorded) with `got`; list every difference as "path: want != got".
/// With `additions_ok`, fields of `got` absent from `want` are not differences.
fn diff(path: &str, want: &Value, got: &Value, additions_ok: bool, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => diff(&p, wv, gv, additions_ok, out),
                    None => out.push(format!("{p}: missing (recorded {wv})")),
                }
            }
            if !additions_ok {
                for k in g.keys().filter(|k| !w.contains_key(*k)) {
                    out.push(format!("{path}.{k}: not in the snapshot (got {})", g[k]));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(&format!("{path}[{i}]"), wv, gv, additions_ok, out);
            }
        }
        // numbers compare by exact value (serde_json reads them back bit for bit)
        _ if want != got => out.push(format!("{path}: recorded {want} != now {got}")),
        _ => {}
    }
}

/// Merge additions of `got` into `want` (only where `want` lacks a key).
fn add_missing(want: &mut Value, got: &Value) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, gv) in g {
                match w.get_mut(k) {
                    Some(wv) => add_missing(wv, gv),
                    None => {
                        w.insert(k.clone(), gv.clone());
                    }
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (wv, gv) in w.iter_mut().zip(g) {
                add_missing(wv, gv);
            }
        }
        _ => {}
    }
}

fn read_json(p: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(p).ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

fn write_json(p: &Path, v: &Value) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap() + "\n").unwrap();
}

#[test]
fn summaries_and_tables_match_the_golden_snapshots() {
    let update = std::env::var("AQMLAB_UPDATE_GOLDEN").ok();
    let force = update.as_deref() == Some("force");
    let mut failures = Vec::new();
    for (name, file, overrides) in cases() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let sc = sim::load(&text, &overrides, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let res = sim::Sim::new(sc, None).and_then(|s| s.run(&mut |_| true)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut tables = Map::new();
        tables.insert("flows".into(), table_digests(&res.flows));
        tables.insert("timeseries".into(), table_digests(&res.timeseries));
        if let Some(t) = &res.snapshots {
            tables.insert("queue_snapshots".into(), table_digests(t));
        }
        if let Some(t) = &res.flow_series {
            tables.insert("flow_series".into(), table_digests(t));
        }
        if let Some(t) = &res.latency {
            tables.insert("latency".into(), table_digests(t));
        }
        let got = [("summary.json", res.summary.clone()), ("tables.json", Value::Object(tables))];
        let dir = golden_dir().join(&name);
        for (fname, got) in got {
            let p = dir.join(fname);
            let recorded = read_json(&p);
            let mut d = Vec::new();
            if let Some(want) = &recorded {
                diff(&name, want, &got, update.is_some(), &mut d);
            }
            match (&update, recorded) {
                (Some(_), None) => write_json(&p, &got),
                (Some(_), Some(mut want)) if force || d.is_empty() => {
                    if force {
                        want = got.clone();
                    } else {
                        add_missing(&mut want, &got);
                    }
                    write_json(&p, &want);
                }
                (None, None) => failures.push(format!(
                    "{name}/{fname}: no snapshot; record it with AQMLAB_UPDATE_GOLDEN=1 cargo test -p sim --test golden"
                )),
                _ => failures.extend(d.into_iter().map(|x| format!("{fname}: {x}"))),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} difference(s) from the golden snapshots:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
