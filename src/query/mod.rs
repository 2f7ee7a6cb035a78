//! Declarative queries (in progress).
