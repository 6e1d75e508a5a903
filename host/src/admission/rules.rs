//! A webhook's rules: which operations of which resources the API server
//! sends a policy, from its manifest's `spec.rules` or, without a manifest,
//! from the module's Kubewarden metadata (`kwctl annotate` writes them in
//! the custom section `io.kubewarden.metadata`); and which of them the audit
//! scanner keeps.

use serde_json::Value;

/// One rule of a webhook: the objects it sends to the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
}

impl Rule {
    pub(super) fn from_json(rule: &Value) -> Result<Rule, String> {
        let list = |field: &str| -> Result<Vec<String>, String> {
            match &rule[field] {
                Value::Array(items) => items
                    .iter()
                    .map(|item| {
                        item.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| format!("`{field}` holds {item} where a string belongs"))
                    })
                    .collect(),
                Value::Null => Ok(Vec::new()),
                other => Err(format!("`{field}` is {other} where a list belongs")),
            }
        };
        Ok(Rule {
            api_groups: list("apiGroups")?,
            api_versions: list("apiVersions")?,
            resources: list("resources")?,
            operations: list("operations")?,
        })
    }

    /// Whether the audit scanner keeps the rule: no `*` in its groups,
    /// versions or resources, and `CREATE` among its operations.
    pub(super) fn audited(&self) -> bool {
        let star = |list: &[String]| list.iter().any(|v| v == "*");
        !star(&self.api_groups)
            && !star(&self.api_versions)
            && !star(&self.resources)
            && self.operations.iter().any(|o| o == "CREATE")
    }

    /// Whether the rule sends an `operation` (`CREATE`, `UPDATE`,
    /// `DELETE`) of a `resource` in `group` and `version`, the object itself
    /// and not a subresource.
    pub fn covers(&self, operation: &str, group: &str, version: &str, resource: &str) -> bool {
        let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        any(&self.api_groups, group)
            && any(&self.api_versions, version)
            && self
                .resources
                .iter()
                .any(|r| r == "*" || r == "*/*" || r == resource)
            && any(&self.operations, operation)
    }
}

/// The rules in a module's Kubewarden metadata, if `kwctl annotate` wrote
/// them (`None` for a module without metadata).
pub fn module_rules(
    metadata: Option<&policy_evaluator::metadata::Metadata>,
) -> Result<Option<Vec<Rule>>, String> {
    let Some(metadata) = metadata else {
        return Ok(None);
    };
    let rules = metadata
        .rules
        .iter()
        .map(Rule::from_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("its Kubewarden metadata: a rule: {e}"))?;
    Ok(Some(rules))
}
