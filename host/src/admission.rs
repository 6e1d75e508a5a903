//! Whether and how a request reaches a policy, as the API server and the
//! audit scanner decide it: a policy's rules, selectors and
//! `matchConditions` (`policies`, `rules`, `selectors`, `conditions`), how a
//! request names an object's kind (`kinds`), and the AdmissionRequest a
//! user, a controller (`request`) or the audit scanner (`audit`) sends.
//! `check`, `test` and `serve` all read it; it reads none of them.

pub mod audit;
pub mod conditions;
pub mod policies;
pub mod request;
pub mod rules;
pub mod selectors;

pub use policies::{Declared, Judge, Policy, Scope, manifest_name};
pub use rules::{Rule, module_rules};
pub use selectors::{Namespaces, namespace, namespaces_of};
