//! The attention rules, checked on goals built in memory.
