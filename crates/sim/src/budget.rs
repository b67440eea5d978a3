//! Resource estimate (placeholder).
use crate::scenario::{Scenario, ScenarioError};

pub fn check(_sc: &Scenario, _limit: u64) -> Result<(), ScenarioError> {
    Ok(())
}
