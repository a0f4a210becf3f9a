//! The tool definitions the turns offer the model, replaceable whole: read once at start-up and
//! replaced once when an MCP server that was down at start-up joins, never per turn.

use std::sync::{Arc, RwLock};

use crate::base::model::ToolSpec;

/// The tool list every turn sends, sorted by name. A turn takes the list as it is when the turn
/// is assembled; a join replaces it whole, so a turn sees the list before the join or after it,
/// never half of it.
#[derive(Debug, Clone)]
pub struct LiveToolSpecs(Arc<RwLock<Arc<[ToolSpec]>>>);

impl LiveToolSpecs {
    /// A live list starting as `specs`, sorted here.
    pub fn new(mut specs: Vec<ToolSpec>) -> LiveToolSpecs {
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        LiveToolSpecs(Arc::new(RwLock::new(specs.into())))
    }

    /// The list as it is now: shared, never copied per turn.
    pub fn current(&self) -> Arc<[ToolSpec]> {
        match self.0.read() {
            Ok(current) => current.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the list with `specs`, sorted here; later turns offer it.
    pub fn replace(&self, specs: Vec<ToolSpec>) {
        let next = LiveToolSpecs::new(specs).current();
        match self.0.write() {
            Ok(mut current) => *current = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    #[test]
    fn a_reader_keeps_the_list_it_took_and_later_readers_get_the_replacement_sorted() {
        let live = LiveToolSpecs::new(vec![spec("b"), spec("a")]);
        let before = live.current();
        live.replace(vec![spec("c"), spec("a"), spec("b")]);
        let names = |specs: &[ToolSpec]| specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&before), ["a", "b"]);
        assert_eq!(names(&live.current()), ["a", "b", "c"]);
    }
}
