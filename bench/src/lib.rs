//! The benchmarks of the policy and of `policy-runner`, apart from what
//! users run (`host/`): `policy-bench` (the module, call by call, `make
//! bench`), `check-bench` (`check` on a cluster dump), `test-bench`
//! (`policy-runner test` on a large suite) and `peer-bench` (`check` beside
//! its peers, `make bench-peers`). docs/performance.md has their method and
//! figures.

pub mod dump;
