//! What a module says of itself: the Kubewarden metadata `kwctl annotate`
//! writes into its custom section `io.kubewarden.metadata`, and whether it
//! was built from Rego (its exports). From them, and from what the user
//! asks for (`-e`), the execution mode it runs in, settled as kwctl settles
//! it (kwctl 1.35, `command/run/policy_execution_mode.rs`).

use std::collections::BTreeSet;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

/// The custom section that holds a module's metadata.
pub const SECTION: &str = "io.kubewarden.metadata";

/// How a module is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum ExecutionMode {
    /// waPC (`validate`, `validate_settings`, `protocol_version`): Rust and
    /// TinyGo policies.
    #[serde(rename = "kubewarden-wapc")]
    Wapc,
    /// A WASI program: the operation in its arguments, the input on its
    /// standard input, the answer on its standard output.
    #[serde(rename = "wasi")]
    Wasi,
    /// Rego compiled to WebAssembly, called as Open Policy Agent's
    /// Kubernetes admission controller calls a policy.
    #[serde(rename = "opa")]
    Opa,
    /// Rego compiled to WebAssembly, called as Gatekeeper calls a
    /// ConstraintTemplate's `violation` rules.
    #[serde(rename = "gatekeeper")]
    Gatekeeper,
}

impl ExecutionMode {
    /// Every mode, in the order `-e` lists them.
    pub const ALL: [ExecutionMode; 4] = [
        ExecutionMode::Wapc,
        ExecutionMode::Wasi,
        ExecutionMode::Opa,
        ExecutionMode::Gatekeeper,
    ];

    /// The name metadata gives it.
    pub fn name(self) -> &'static str {
        match self {
            ExecutionMode::Wapc => "kubewarden-wapc",
            ExecutionMode::Wasi => "wasi",
            ExecutionMode::Opa => "opa",
            ExecutionMode::Gatekeeper => "gatekeeper",
        }
    }

    /// A mode as `-e` takes it: kwctl's `kubewarden` for waPC, or the
    /// metadata's name of any mode.
    pub fn parse(name: &str) -> Result<ExecutionMode, String> {
        if name == "kubewarden" {
            return Ok(ExecutionMode::Wapc);
        }
        ExecutionMode::ALL
            .into_iter()
            .find(|mode| mode.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown execution mode {name:?}: expected kubewarden (or kubewarden-wapc), wasi, opa or gatekeeper"
                )
            })
    }

    pub fn rego(self) -> bool {
        match self {
            ExecutionMode::Opa | ExecutionMode::Gatekeeper => true,
            ExecutionMode::Wapc | ExecutionMode::Wasi => false,
        }
    }
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kind a context-aware policy may read, as its metadata and a
/// ClusterAdmissionPolicy's `contextAwareResources` name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub api_version: String,
    pub kind: String,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}

/// What the runner reads of a module's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    pub execution_mode: ExecutionMode,
    /// Whether the policy may answer with a changed object.
    pub mutating: bool,
    pub context_aware_resources: BTreeSet<Resource>,
    /// `policyType: raw`: it judges any JSON, not an AdmissionRequest.
    pub raw: bool,
    /// The rules, as written, for the admission room to read.
    pub rules: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Written {
    #[serde(default)]
    execution_mode: Option<ExecutionMode>,
    mutating: Option<bool>,
    #[serde(default)]
    context_aware_resources: Vec<Resource>,
    #[serde(default)]
    policy_type: Option<String>,
    /// Required, as kwctl and policy-server require it.
    rules: Vec<Value>,
}

impl Metadata {
    /// The module's metadata, `None` when it is not annotated; `Err` when
    /// it is no WebAssembly module or its metadata cannot be read.
    pub fn of(module: &[u8]) -> Result<Option<Metadata>, String> {
        use wasmparser::{Parser, Payload};
        for payload in Parser::new(0).parse_all(module) {
            let payload = payload.map_err(|e| format!("not a WebAssembly module: {e}"))?;
            if let Payload::CustomSection(section) = payload
                && section.name() == SECTION
            {
                return Metadata::from_json(section.data()).map(Some);
            }
        }
        Ok(None)
    }

    pub fn from_json(text: &[u8]) -> Result<Metadata, String> {
        let written: Written = serde_json::from_slice(text)
            .map_err(|e| format!("its Kubewarden metadata cannot be read: {e}"))?;
        let raw = match written.policy_type.as_deref() {
            None | Some("kubernetes") => false,
            Some("raw") => true,
            Some(other) => {
                return Err(format!(
                    "its Kubewarden metadata names policyType {other:?}: expected kubernetes or raw"
                ));
            }
        };
        Ok(Metadata {
            execution_mode: written.execution_mode.unwrap_or(ExecutionMode::Wapc),
            mutating: written
                .mutating
                .ok_or("its Kubewarden metadata does not say whether it is `mutating`")?,
            context_aware_resources: written.context_aware_resources.into_iter().collect(),
            raw,
            rules: written.rules,
        })
    }
}

/// Whether the module was built from Rego: OPA's compiler exports its ABI
/// as functions named `opa_…` (kwctl's `rego_policy_detector`).
pub fn built_from_rego(module: &[u8]) -> Result<bool, String> {
    use wasmparser::{Parser, Payload};
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(|e| format!("not a WebAssembly module: {e}"))?;
        if let Payload::ExportSection(exports) = payload {
            for export in exports {
                let export = export.map_err(|e| format!("not a WebAssembly module: {e}"))?;
                if export.name.starts_with("opa_") {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The mode a module runs in: the metadata's, which `-e` must agree with;
/// without metadata, `-e`, or waPC for a module not built from Rego. A
/// Rego module must run in a Rego mode and no other, whatever says so.
pub fn execution_mode(
    metadata: Option<&Metadata>,
    asked: Option<ExecutionMode>,
    rego: bool,
) -> Result<ExecutionMode, String> {
    let mode = match (metadata, asked) {
        (Some(metadata), Some(asked)) if asked != metadata.execution_mode => {
            return Err(format!(
                "the execution mode given ({asked}) is not the one the module's metadata gives ({})",
                metadata.execution_mode
            ));
        }
        (Some(metadata), _) => metadata.execution_mode,
        (None, Some(asked)) => asked,
        (None, None) if rego => {
            return Err(
                "the module was built from Rego and carries no metadata: say which mode runs it, -e opa or -e gatekeeper"
                    .to_string(),
            );
        }
        (None, None) => ExecutionMode::Wapc,
    };
    match (mode.rego(), rego) {
        (true, false) => Err(format!(
            "the module was not built from Rego, so it cannot run in the {mode} mode"
        )),
        (false, true) => Err(format!(
            "the module was built from Rego, so it runs in the opa or gatekeeper mode, not {mode}"
        )),
        _ => Ok(mode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(mode: ExecutionMode) -> Metadata {
        Metadata {
            execution_mode: mode,
            mutating: false,
            context_aware_resources: BTreeSet::new(),
            raw: false,
            rules: Vec::new(),
        }
    }

    #[test]
    fn the_mode_is_settled_as_kwctl_settles_it() {
        use ExecutionMode::*;
        // (metadata, asked, built from Rego) → the mode, or an error.
        type Case = (
            Option<ExecutionMode>,
            Option<ExecutionMode>,
            bool,
            Option<ExecutionMode>,
        );
        let cases: [Case; 12] = [
            (Some(Opa), Some(Wapc), false, None),
            (Some(Opa), Some(Wapc), true, None),
            (Some(Wasi), Some(Wasi), false, Some(Wasi)),
            (Some(Wasi), Some(Wasi), true, None),
            (Some(Gatekeeper), Some(Gatekeeper), false, None),
            (Some(Opa), None, true, Some(Opa)),
            (None, Some(Opa), true, Some(Opa)),
            (None, Some(Wapc), false, Some(Wapc)),
            (None, Some(Wasi), true, None),
            (None, Some(Opa), false, None),
            (None, None, true, None),
            (None, None, false, Some(Wapc)),
        ];
        for (written, asked, rego, expected) in cases {
            let metadata = written.map(metadata);
            let settled = execution_mode(metadata.as_ref(), asked, rego);
            assert_eq!(
                settled.clone().ok(),
                expected,
                "{written:?} {asked:?} rego={rego}: {settled:?}"
            );
        }
    }

    #[test]
    fn modes_parse_as_the_command_line_names_them() {
        assert_eq!(ExecutionMode::parse("kubewarden"), Ok(ExecutionMode::Wapc));
        for mode in ExecutionMode::ALL {
            assert_eq!(ExecutionMode::parse(mode.name()), Ok(mode));
        }
        let error = ExecutionMode::parse("rego").unwrap_err();
        assert!(
            error.contains("\"rego\"") && error.contains("gatekeeper"),
            "{error}"
        );
    }

    #[test]
    fn metadata_reads_what_the_runner_needs() {
        let read = Metadata::from_json(
            br#"{"rules":[],"mutating":true,"executionMode":"wasi","policyType":"raw",
                 "contextAwareResources":[{"apiVersion":"v1","kind":"Namespace"}]}"#,
        )
        .unwrap();
        assert_eq!(read.execution_mode, ExecutionMode::Wasi);
        assert!(read.mutating && read.raw);
        assert_eq!(
            read.context_aware_resources
                .iter()
                .next()
                .map(Resource::to_string),
            Some("v1/Namespace".to_string())
        );
        // kwctl's metadata needs `mutating` and `rules`, a list; the mode
        // defaults to waPC.
        assert!(Metadata::from_json(br#"{"rules":[]}"#).is_err());
        assert!(Metadata::from_json(br#"{"mutating":false}"#).is_err());
        assert!(Metadata::from_json(br#"{"rules":null,"mutating":false}"#).is_err());
        let plain = Metadata::from_json(br#"{"rules":[],"mutating":false}"#).unwrap();
        assert_eq!(plain.execution_mode, ExecutionMode::Wapc);
        assert!(Metadata::from_json(br#"{"mutating":false,"executionMode":"rego"}"#).is_err());
    }
}
