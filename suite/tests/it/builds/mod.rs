//! The whole suite against the reference host's other builds
//! (`goalpost-host-builds`): its mutants, which it must fail for the
//! requirements each one breaks (`kill_matrix`, and `cluster_matrix` for
//! the PostgreSQL store's mutants on several replicas), and its conforming
//! variants, which it must certify (`variant_matrix`).
//!
//! These are the longest tests of the binary: libtest starts tests in name
//! order, so as `builds::…` they start first and the shorter tests, most of
//! which wait on a host, run beside them rather than after them.

mod cluster_matrix;
mod kill_matrix;
mod variant_matrix;
