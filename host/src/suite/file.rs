//! A test file: which policies, which manifests, and what each policy must
//! decide of which objects. Read strictly, as the policy reads its
//! settings: an unknown field, a missing one, an absolute path or an
//! expectation that cannot be checked is an error that names it, so that a
//! test cannot pass without testing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The `apiVersion` of a test file.
pub const API_VERSION: &str = "test.annotations-policy.github.io/v1alpha1";
/// The file name `test` looks for in directories, unless told another.
pub const FILE_NAME: &str = "policy-test.yaml";

/// The top-level fields, as the reader takes them (the JSON Schema is held
/// to this list by a test).
pub const FIELDS: [&str; 7] = [
    "apiVersion",
    "kind",
    "metadata",
    "policies",
    "modules",
    "resources",
    "results",
];
/// The fields of a result.
pub const RESULT_FIELDS: [&str; 10] = [
    "policy",
    "kind",
    "resources",
    "result",
    "message",
    "operation",
    "oldResource",
    "userInfo",
    "audit",
    "patchedResource",
];

/// A test file, its paths resolved against its directory.
#[derive(Debug, Clone)]
pub struct TestFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// `metadata.name`, or else the file's path.
    pub name: String,
    pub policies: Vec<PathBuf>,
    /// Each policy's `spec.module` (as written in the manifest) to a local
    /// module file.
    pub modules: BTreeMap<String, PathBuf>,
    pub resources: Vec<PathBuf>,
    pub results: Vec<Expected>,
}

/// What a policy must decide of some objects.
#[derive(Debug, Clone)]
pub struct Expected {
    /// A policy's or group's `metadata.name`, or `group/member`.
    pub policy: String,
    pub kind: String,
    /// `name` or `namespace/name` each.
    pub resources: Vec<String>,
    pub result: Verdict,
    /// What the rejection must match.
    pub message: Option<regex::Regex>,
    pub operation: Operation,
    /// An UPDATE's objects before it, by name.
    pub old_resource: Option<PathBuf>,
    pub user_info: Option<UserInfo>,
    /// Sent as Kubewarden's audit scanner sends a stored object.
    pub audit: bool,
    /// Each object as the mutating policies must leave it, by name: once
    /// the policy has judged it, as `kyverno test` names it.
    pub patched_resource: Option<PathBuf>,
}

/// What a policy decided of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Accepted.
    Pass,
    /// Rejected by a policy in protect mode.
    Fail,
    /// Not sent to the policy: its rules, selectors or conditions leave the
    /// object out.
    Skip,
    /// Rejected by a policy in monitor mode: policy-server logs it and
    /// lets the request through.
    Warn,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skip => "skip",
            Verdict::Warn => "warn",
        }
    }

    /// Whether the verdict is a rejection, which has a message.
    pub fn rejects(self) -> bool {
        match self {
            Verdict::Fail | Verdict::Warn => true,
            Verdict::Pass | Verdict::Skip => false,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    #[default]
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// Who sends the request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct UserInfo {
    pub username: String,
    #[serde(default)]
    pub groups: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Raw {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Metadata,
    policies: Vec<String>,
    #[serde(default)]
    modules: BTreeMap<String, String>,
    resources: Vec<String>,
    results: Vec<Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Metadata {
    #[serde(default, deserialize_with = "given")]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawResult {
    policy: String,
    kind: String,
    resources: Vec<String>,
    result: Verdict,
    #[serde(default, deserialize_with = "given")]
    message: Option<String>,
    #[serde(default)]
    operation: Operation,
    #[serde(default, deserialize_with = "given")]
    old_resource: Option<String>,
    #[serde(default, deserialize_with = "given")]
    user_info: Option<UserInfo>,
    #[serde(default)]
    audit: bool,
    #[serde(default, deserialize_with = "given")]
    patched_resource: Option<String>,
}

/// An optional field that, when written, holds a value: YAML's `message:`
/// with nothing after it is null, which would read as no message at all.
fn given<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

impl TestFile {
    /// Reads the test file at `path` (one YAML or JSON document).
    pub fn read(path: &Path) -> Result<TestFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
        let mut documents = Vec::new();
        for (line, document) in policy_manifests::documents(&text) {
            match document {
                Ok(Value::Null) => {}
                Ok(value) => documents.push(value),
                Err(reason) => return Err(format!("line {line}: {reason}")),
            }
        }
        match documents.len() {
            1 => TestFile::from_value(path, documents.remove(0)),
            0 => Err("it holds no document".to_string()),
            n => Err(format!(
                "it holds {n} documents: a test file is one `kind: Test`"
            )),
        }
    }

    /// The test `value` read from `path`, its paths resolved against
    /// `path`'s directory.
    pub fn from_value(path: &Path, value: Value) -> Result<TestFile, String> {
        let raw: Raw = serde_json::from_value(value).map_err(|e| e.to_string())?;
        if raw.api_version != API_VERSION {
            return Err(format!(
                "`apiVersion` is `{}`: a test file's is `{API_VERSION}`",
                raw.api_version
            ));
        }
        if raw.kind != "Test" {
            return Err(format!("`kind` is `{}`: a test file's is `Test`", raw.kind));
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let resolve = |field: &str, relative: &str| -> Result<PathBuf, String> {
            if relative.is_empty() {
                return Err(format!("`{field}` holds an empty path"));
            }
            match Path::new(relative).is_absolute() {
                true => Err(format!(
                    "`{field}` gives the absolute path `{relative}`: give it relative to the test \
                     file, so that the suite runs wherever it is checked out"
                )),
                false => Ok(dir.join(relative)),
            }
        };
        let paths = |field: &str, list: &[String]| -> Result<Vec<PathBuf>, String> {
            if list.is_empty() {
                return Err(format!("`{field}` is empty"));
            }
            list.iter().map(|p| resolve(field, p)).collect()
        };
        let policies = paths("policies", &raw.policies)?;
        let resources = paths("resources", &raw.resources)?;
        let modules = raw
            .modules
            .iter()
            .map(|(module, file)| Ok((module.clone(), resolve("modules", file)?)))
            .collect::<Result<_, String>>()?;
        if raw.results.is_empty() {
            return Err("`results` is empty: a test must say what to expect".to_string());
        }
        if raw.metadata.name.as_deref() == Some("") {
            return Err(
                "`metadata.name` is empty: name the test, or leave the name out".to_string(),
            );
        }
        let results = raw
            .results
            .into_iter()
            .enumerate()
            .map(|(i, result)| {
                expected(result, &resolve).map_err(|e| format!("`results[{i}]`: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(TestFile {
            name: raw
                .metadata
                .name
                .unwrap_or_else(|| path.display().to_string()),
            path: path.to_path_buf(),
            policies,
            modules,
            resources,
            results,
        })
    }
}

fn expected(
    value: Value,
    resolve: &dyn Fn(&str, &str) -> Result<PathBuf, String>,
) -> Result<Expected, String> {
    let raw: RawResult = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if raw.resources.is_empty() {
        return Err("`resources` is empty: name the objects the result is about".to_string());
    }
    if raw.resources.iter().any(String::is_empty) {
        return Err("`resources` holds an empty name".to_string());
    }
    if raw
        .user_info
        .as_ref()
        .is_some_and(|u| u.username.is_empty())
    {
        return Err("`userInfo.username` is empty: name the sender".to_string());
    }
    if let Some(empty) = [&raw.policy, &raw.kind].into_iter().find(|v| v.is_empty()) {
        return Err(format!(
            "an empty `{}`",
            if empty == &raw.policy {
                "policy"
            } else {
                "kind"
            }
        ));
    }
    let message = match (&raw.message, raw.result.rejects()) {
        (None, _) => None,
        (Some(text), true) => Some(
            regex::Regex::new(text)
                .map_err(|e| format!("`message` is not a regular expression: {e}"))?,
        ),
        (Some(_), false) => {
            return Err(format!(
                "`message` with `result: {}`: only a rejection (fail, warn) has a message",
                raw.result.as_str()
            ));
        }
    };
    if raw.old_resource.is_some() && raw.operation != Operation::Update {
        return Err(format!(
            "`oldResource` with `operation: {}`: only an UPDATE has an old object",
            raw.operation.as_str()
        ));
    }
    if raw.patched_resource.is_some() {
        let conflict = [
            (
                raw.audit,
                "`audit: true`: the audit scanner changes nothing",
            ),
            (
                raw.operation == Operation::Delete,
                "`operation: DELETE`: a deletion leaves no object",
            ),
            (
                raw.result == Verdict::Fail || raw.result == Verdict::Skip,
                "a `fail` or `skip` result: only an object let through is stored",
            ),
        ]
        .into_iter()
        .find_map(|(set, why)| set.then_some(why));
        if let Some(why) = conflict {
            return Err(format!("`patchedResource` with {why}"));
        }
    }
    if raw.audit {
        let conflict = [
            (raw.operation != Operation::Create, "operation"),
            (raw.user_info.is_some(), "userInfo"),
            (raw.old_resource.is_some(), "oldResource"),
        ]
        .into_iter()
        .find_map(|(set, field)| set.then_some(field));
        if let Some(field) = conflict {
            return Err(format!(
                "`audit: true` with `{field}`: the audit scanner sends each stored object as a \
                 CREATE with no sender and no old object"
            ));
        }
    }
    Ok(Expected {
        policy: raw.policy,
        kind: raw.kind,
        resources: raw.resources,
        result: raw.result,
        message,
        operation: raw.operation,
        old_resource: raw
            .old_resource
            .map(|p| resolve("oldResource", &p))
            .transpose()?,
        user_info: raw.user_info,
        audit: raw.audit,
        patched_resource: raw
            .patched_resource
            .map(|p| resolve("patchedResource", &p))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<TestFile, String> {
        TestFile::from_value(Path::new("suite/policy-test.yaml"), value)
    }

    fn file(results: Value) -> Value {
        json!({
            "apiVersion": API_VERSION, "kind": "Test",
            "policies": ["policy.yaml"], "resources": ["app.yaml"],
            "modules": {"registry://ghcr.io/x/annotations:v1": "../policy.wasm"},
            "results": results,
        })
    }

    fn result(extra: Value) -> Value {
        let mut result =
            json!({"policy": "p", "kind": "Pod", "resources": ["a"], "result": "pass"});
        result
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        result
    }

    #[test]
    fn a_test_file_reads_with_its_paths_beside_it() {
        let read = read(file(json!([result(json!({
            "result": "fail", "message": "owner", "operation": "UPDATE",
            "oldResource": "old.yaml", "userInfo": {"username": "alice"},
        }))])))
        .unwrap();
        assert_eq!(read.name, "suite/policy-test.yaml");
        assert_eq!(read.policies, [PathBuf::from("suite/policy.yaml")]);
        assert_eq!(
            read.modules.values().next(),
            Some(&PathBuf::from("suite/../policy.wasm"))
        );
        let expected = &read.results[0];
        assert_eq!(expected.operation, Operation::Update);
        assert_eq!(expected.old_resource, Some(PathBuf::from("suite/old.yaml")));
        assert!(expected.message.as_ref().unwrap().is_match("lacks owner"));
        assert_eq!(
            expected.user_info.as_ref().unwrap().groups,
            Vec::<String>::new()
        );
    }

    /// Each way of writing a test that would test nothing, or something
    /// else than it says, is refused with what is wrong.
    #[test]
    fn what_cannot_be_checked_is_refused_by_name() {
        let cases = [
            (
                json!({"apiVersion": "cli.kyverno.io/v1alpha1", "kind": "Test", "policies": [], "resources": [], "results": []}),
                "`apiVersion` is `cli.kyverno.io/v1alpha1`",
            ),
            (file(json!([])), "`results` is empty"),
            (
                file(json!([result(json!({"rule": "r"}))])),
                "`results[0]`: unknown field `rule`",
            ),
            (
                file(json!([result(json!({"result": "pass", "message": "x"}))])),
                "only a rejection",
            ),
            (
                file(json!([result(json!({"result": "fail", "message": "("}))])),
                "not a regular expression",
            ),
            (
                file(json!([result(json!({"resources": []}))])),
                "`resources` is empty",
            ),
            (
                file(json!([result(json!({"oldResource": "old.yaml"}))])),
                "only an UPDATE",
            ),
            (
                file(json!([result(
                    json!({"audit": true, "operation": "UPDATE"})
                )])),
                "`audit: true` with `operation`",
            ),
            (
                file(json!([result(
                    json!({"audit": true, "userInfo": {"username": "u"}})
                )])),
                "`audit: true` with `userInfo`",
            ),
            (
                file(json!([result(json!({"result": "passed"}))])),
                "unknown variant `passed`",
            ),
            (
                file(json!([result(json!({"operation": "CONNECT"}))])),
                "unknown variant `CONNECT`",
            ),
            (
                file(json!([result(json!({"policy": ""}))])),
                "an empty `policy`",
            ),
        ];
        for (value, wanted) in cases {
            let error = read(value).unwrap_err();
            assert!(error.contains(wanted), "{error} (wanted {wanted})");
        }
        let mut unknown = file(json!([result(json!({}))]));
        unknown["userinfo"] = json!("alice.yaml");
        let error = read(unknown).unwrap_err();
        assert!(error.contains("unknown field `userinfo`"), "{error}");
        let mut absolute = file(json!([result(json!({}))]));
        absolute["resources"] = json!(["/etc/app.yaml"]);
        assert!(
            read(absolute)
                .unwrap_err()
                .contains("absolute path `/etc/app.yaml`")
        );
    }

    /// The test file's JSON Schema (docs/policy-test.schema.json), which
    /// editors and `make workflows` use, is held to this reader: the same
    /// fields, the same required ones, the same apiVersion, exactly the
    /// verdicts and operations the reader accepts, and no object left
    /// open to a field the reader refuses.
    #[test]
    fn the_json_schema_describes_what_the_reader_reads() {
        use std::collections::BTreeSet;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/policy-test.schema.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        fn resolved<'a>(schema: &'a Value, node: &'a Value) -> &'a Value {
            match node["$ref"].as_str() {
                Some(reference) => schema
                    .pointer(reference.strip_prefix('#').expect("a local $ref"))
                    .unwrap_or_else(|| panic!("{reference} is not in the schema")),
                None => node,
            }
        }
        fn strings(list: &Value, what: &str) -> BTreeSet<String> {
            list.as_array()
                .unwrap_or_else(|| panic!("{what} is not a list"))
                .iter()
                .map(|v| v.as_str().expect(what).to_string())
                .collect()
        }
        let keys = |node: &Value| -> BTreeSet<String> {
            node["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .cloned()
                .collect()
        };
        let set =
            |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| n.to_string()).collect() };

        assert_eq!(keys(&schema), set(&FIELDS), "the top-level fields");
        let item = resolved(&schema, &schema["properties"]["results"]["items"]);
        assert_eq!(keys(item), set(&RESULT_FIELDS), "a result's fields");
        assert_eq!(schema["properties"]["apiVersion"]["const"], API_VERSION);
        assert_eq!(schema["properties"]["kind"]["const"], "Test");

        // The enums list exactly what serde takes: each value the schema
        // lists, each the reader writes, and near misses, fed to both.
        fn accepted<T: serde::de::DeserializeOwned>(
            listed: &BTreeSet<String>,
            written: &[&str],
            near_misses: &[&str],
        ) -> BTreeSet<String> {
            listed
                .iter()
                .map(String::as_str)
                .chain(written.iter().copied())
                .chain(near_misses.iter().copied())
                .filter(|v| serde_json::from_value::<T>(json!(v)).is_ok())
                .map(str::to_string)
                .collect()
        }
        let verdicts = [Verdict::Pass, Verdict::Fail, Verdict::Skip, Verdict::Warn];
        let operations = [Operation::Create, Operation::Update, Operation::Delete];
        // A new variant stops the build here until it is listed above.
        for verdict in verdicts {
            match verdict {
                Verdict::Pass | Verdict::Fail | Verdict::Skip | Verdict::Warn => {}
            }
        }
        for operation in operations {
            match operation {
                Operation::Create | Operation::Update | Operation::Delete => {}
            }
        }
        let listed = strings(&item["properties"]["result"]["enum"], "result's enum");
        let misses = [
            "passed", "Pass", "PASS", "failed", "warning", "skipped", "error", "",
        ];
        assert_eq!(
            listed,
            accepted::<Verdict>(&listed, &verdicts.map(Verdict::as_str), &misses),
            "the results the schema lists and the ones the reader accepts"
        );
        assert!(!listed.contains("passed"));
        assert!(serde_json::from_value::<Verdict>(json!("passed")).is_err());
        let listed = strings(&item["properties"]["operation"]["enum"], "operation's enum");
        let misses = ["create", "Update", "CONNECT", "PATCH", ""];
        assert_eq!(
            listed,
            accepted::<Operation>(&listed, &operations.map(Operation::as_str), &misses),
            "the operations the schema lists and the ones the reader accepts"
        );
        assert!(!listed.contains("CONNECT"));
        assert!(serde_json::from_value::<Operation>(json!("CONNECT")).is_err());

        // `required` is what the reader needs: a file with only the
        // required fields reads, and without any one of them it does not.
        let top_required = strings(&schema["required"], "required");
        let result_required = strings(&item["required"], "a result's required");
        let only = |value: Value, keep: &BTreeSet<String>| -> Value {
            let object = value.as_object().unwrap();
            Value::Object(
                object
                    .iter()
                    .filter(|(k, _)| keep.contains(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        };
        let minimal_result = only(result(json!({})), &result_required);
        let minimal = only(file(json!([minimal_result.clone()])), &top_required);
        if let Err(error) = read(minimal.clone()) {
            panic!("a file with only the schema's required fields is refused: {error}");
        }
        for field in &top_required {
            let mut without = minimal.clone();
            without.as_object_mut().unwrap().remove(field);
            assert!(
                read(without).is_err(),
                "the reader reads a file without `{field}`"
            );
        }
        for field in &result_required {
            let mut without = minimal_result.clone();
            without.as_object_mut().unwrap().remove(field);
            let mut value = minimal.clone();
            value["results"] = json!([without]);
            assert!(
                read(value).is_err(),
                "the reader reads a result without `{field}`"
            );
        }

        // Every object with fields is closed, as the reader is.
        fn closed(node: &Value, at: &str) {
            match node {
                Value::Object(object) => {
                    if object.contains_key("properties")
                        && object.get("type") == Some(&json!("object"))
                    {
                        assert_eq!(
                            object.get("additionalProperties"),
                            Some(&json!(false)),
                            "{at} is open"
                        );
                    }
                    for (key, value) in object {
                        closed(value, &format!("{at}/{key}"));
                    }
                }
                Value::Array(list) => {
                    for (i, value) in list.iter().enumerate() {
                        closed(value, &format!("{at}/{i}"));
                    }
                }
                _ => {}
            }
        }
        closed(&schema, "#");
    }
}
