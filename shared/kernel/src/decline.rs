//! Where a lane stopped when it declined a message: the reason the normalizer's metrics give.
//!
//! A lane declines with `None` or `Err(())` at several hundred points; naming each would make
//! every `?` a `.ok_or(Reason)?`. Instead a lane marks the part of the message it is reading as
//! it goes (a thread-local cell: one store, no allocation), and a decline is reported as the part
//! reached last. Lanes run on the normalizer's one event-loop thread, so the cell read right after
//! `parse` returned `None` belongs to that message.

use std::cell::Cell;

/// The parts of a message a lane reads, in the order most lanes read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The bytes as JSON or Avro: a spelling the lane's reader does not take (or not JSON/Avro at all).
    Read,
    /// The envelope: a field missing, mistyped or spelled in a way the lane does not take.
    Envelope,
    /// The operation: not a row change the lane reads (DDL, a control message, another op).
    Operation,
    /// The column types: no type map, or one the planner does not encode exactly.
    Types,
    /// A column value outside the forms the lane converts exactly.
    Values,
    /// The record key: a primary-key column missing or not usable as a key.
    Keys,
}

impl Stage {
    pub const ALL: [Stage; 6] = [Stage::Read, Stage::Envelope, Stage::Operation, Stage::Types, Stage::Values, Stage::Keys];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Read => "read",
            Stage::Envelope => "envelope",
            Stage::Operation => "operation",
            Stage::Types => "types",
            Stage::Values => "values",
            Stage::Keys => "keys",
        }
    }
}

thread_local! {
    static STAGE: Cell<Stage> = const { Cell::new(Stage::Read) };
}

/// The lane is now reading `stage` of its message.
#[inline]
pub fn at(stage: Stage) {
    STAGE.with(|s| s.set(stage));
}

/// The part of its message the last lane on this thread reached.
pub fn last() -> Stage {
    STAGE.with(|s| s.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_mark_is_the_reason() {
        at(Stage::Read);
        assert_eq!(last(), Stage::Read);
        at(Stage::Values);
        assert_eq!(last().name(), "values");
    }

    #[test]
    fn names_are_distinct() {
        let names: std::collections::HashSet<_> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), Stage::ALL.len());
    }
}
