//! Result tables: named columns, handed to Python as-is (one DataFrame per table).

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    F64(Vec<f64>),
    I64(Vec<i64>),
    Str(Vec<String>),
}

/// A tidy table: one row per observation, one named column per variable.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn push(&mut self, name: &str, col: Column) {
        self.columns.push((name.to_string(), col));
    }
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
    /// A float column by name (panics if absent or not float: for tests and internal use).
    pub fn f64s(&self, name: &str) -> &[f64] {
        match self.get(name) {
            Some(Column::F64(v)) => v,
            _ => panic!("no float column {name}"),
        }
    }
}

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct Results {
    /// Run summary (deterministic: no wall-clock values), written as summary.json.
    pub summary: serde_json::Value,
    /// One row per flow.
    pub flows: Table,
    /// One row per sample of the bottleneck.
    pub timeseries: Table,
    /// With `simulation.queue_snapshots`: one row per waiting packet per snapshot (M10).
    pub snapshots: Option<Table>,
    /// With `simulation.flow_series_interval`: one row per active flow per sample.
    pub flow_series: Option<Table>,
}
