//! A safe reader for Python pickles that holds data only (no code). Being written.
