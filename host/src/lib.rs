//! The commands of `policy-runner` (`run`, `check`, `test`, `serve`;
//! `manifest` lives in the binary) and what decides whether and how a
//! request reaches a policy (`admission`). Policies run through
//! `policy_evaluator`, as policy-server runs them.

pub mod admission;
pub mod check;
pub mod modules;
pub mod run;
pub mod serve;
pub mod suite;
pub mod tls;
