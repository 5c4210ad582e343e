//! End-to-end tests of the `vramscope` binary.
