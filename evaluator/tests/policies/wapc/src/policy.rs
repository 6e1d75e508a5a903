use serde::Serialize;
use serde_json::{Map, Value};
use wapc_guest::{self as guest, CallResult};

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function("protocol_version", protocol_version);
}

/// The protocol version, as the SDK's `protocol_version_guest` answers it:
/// `ProtocolVersion::V1` serialised, the JSON string `"v1"`.
fn protocol_version(_payload: &[u8]) -> CallResult {
    Ok(br#""v1""#.to_vec())
}

struct Settings {
    annotation: String,
    value: String,
    deny_label: Option<String>,
    /// `canI: {verb, resource}`: the request's sender must be allowed to.
    can_i: Option<(String, String)>,
}

/// Reads the settings, or names what is wrong with them.
fn parse_settings(settings: &Value) -> Result<Settings, String> {
    let Some(settings) = settings.as_object() else {
        return Err("settings must be a JSON object".to_string());
    };
    let annotation = match settings.get("annotation") {
        None | Some(Value::Null) => return Err("annotation is required".to_string()),
        Some(Value::String(s)) if s.is_empty() => {
            return Err("annotation must not be empty".to_string());
        }
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("annotation must be a string".to_string()),
    };
    let value = match settings.get("value") {
        None | Some(Value::Null) => "yes".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("value must be a string".to_string()),
    };
    let deny_label = match settings.get("denyLabel") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => {
            return Err("denyLabel must not be empty".to_string());
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("denyLabel must be a string".to_string()),
    };
    let can_i = match settings.get("canI") {
        None | Some(Value::Null) => None,
        Some(can_i) => {
            let field = |name: &str| {
                non_empty_str(can_i.get(name))
                    .map(str::to_string)
                    .ok_or_else(|| format!("canI.{name} must be a non-empty string"))
            };
            Some((field("verb")?, field("resource")?))
        }
    };
    Ok(Settings {
        annotation,
        value,
        deny_label,
        can_i,
    })
}

#[derive(Serialize)]
struct SettingsValidationResponse {
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

fn validate_settings(payload: &[u8]) -> CallResult {
    let settings: Value =
        serde_json::from_slice(payload).map_err(|e| format!("cannot parse the settings: {e}"))?;
    // Asked for: a guest error, so that the runner's handling of a failing
    // `validate_settings` call can be tested.
    if settings.get("fail") == Some(&Value::Bool(true)) {
        return Err("settings validation failed on request (\"fail\": true)".into());
    }
    let answer = match parse_settings(&settings) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(message) => SettingsValidationResponse {
            valid: false,
            message: Some(message),
        },
    };
    Ok(serde_json::to_vec(&answer)?)
}

#[derive(Serialize)]
struct ValidationResponse {
    accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mutated_object: Option<Value>,
}

impl ValidationResponse {
    fn accept() -> Self {
        Self {
            accepted: true,
            message: None,
            code: None,
            mutated_object: None,
        }
    }

    fn mutate(object: Value) -> Self {
        Self {
            mutated_object: Some(object),
            ..Self::accept()
        }
    }

    fn reject(message: String) -> Self {
        Self {
            accepted: false,
            message: Some(message),
            ..Self::accept()
        }
    }
}

fn validate(payload: &[u8]) -> CallResult {
    let payload: Value = serde_json::from_slice(payload)
        .map_err(|e| format!("cannot parse the validation request: {e}"))?;
    let settings = parse_settings(payload.get("settings").unwrap_or(&Value::Null))
        .map_err(|e| format!("invalid settings: {e}"))?;
    let request = payload.get("request").unwrap_or(&Value::Null);
    let answer = decide(&settings, request);
    Ok(serde_json::to_vec(&answer)?)
}

fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn decide(settings: &Settings, request: &Value) -> ValidationResponse {
    let object = match request.get("object") {
        None | Some(Value::Null) => return ValidationResponse::accept(),
        Some(object) => object,
    };
    let metadata = object.get("metadata");

    if let Some(deny_label) = &settings.deny_label {
        let namespace = non_empty_str(metadata.and_then(|m| m.get("namespace")))
            .or_else(|| non_empty_str(request.get("namespace")));
        if let Some(namespace) = namespace {
            let labelled = match namespace_label(namespace, deny_label) {
                Ok(labelled) => labelled,
                Err(e) => {
                    return ValidationResponse::reject(format!(
                        "cannot look up Namespace {namespace}: {e}"
                    ));
                }
            };
            if labelled {
                return ValidationResponse::reject(format!(
                    "Namespace {namespace} is labelled {deny_label}=true"
                ));
            }
        }
    }

    if let Some((verb, resource)) = &settings.can_i {
        let namespace = non_empty_str(metadata.and_then(|m| m.get("namespace")))
            .or_else(|| non_empty_str(request.get("namespace")));
        let user = request.get("userInfo");
        let username = non_empty_str(user.and_then(|u| u.get("username"))).unwrap_or("");
        let groups = user.and_then(|u| u.get("groups")).cloned();
        match can_i(username, groups, namespace, verb, resource) {
            Err(e) => {
                return ValidationResponse::reject(format!(
                    "cannot ask whether {username} may {verb} {resource}: {e}"
                ));
            }
            Ok(false) => {
                return ValidationResponse::reject(format!(
                    "{username} may not {verb} {resource} in {}",
                    namespace.unwrap_or("the cluster")
                ));
            }
            Ok(true) => {}
        }
    }

    let annotations = metadata.and_then(|m| m.get("annotations"));
    if annotations
        .and_then(|a| a.get(&settings.annotation))
        .is_some()
    {
        return ValidationResponse::accept();
    }

    let mut mutated = object.clone();
    let Some(object) = mutated.as_object_mut() else {
        return ValidationResponse::reject("the object is not a JSON object".to_string());
    };
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(Map::new());
    }
    let Some(metadata) = metadata.as_object_mut() else {
        return ValidationResponse::reject("metadata is not a JSON object".to_string());
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Map::new());
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return ValidationResponse::reject("metadata.annotations is not a JSON object".to_string());
    };
    annotations.insert(
        settings.annotation.clone(),
        Value::String(settings.value.clone()),
    );
    ValidationResponse::mutate(mutated)
}

/// Whether `user` (in `groups`) may `verb` `resource` (of the core group)
/// in `namespace`, asked through the host (`kubernetes`/`can_i`, the SDK's
/// CanIRequest); the error is the host's message.
fn can_i(
    user: &str,
    groups: Option<Value>,
    namespace: Option<&str>,
    verb: &str,
    resource: &str,
) -> Result<bool, String> {
    let request = serde_json::json!({
        "subject_access_review": {
            "groups": groups,
            "resource_attributes": {
                "group": "",
                "namespace": namespace,
                "resource": resource,
                "verb": verb,
            },
            "user": user,
        },
        "disable_cache": true,
    });
    let request = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
    let response = guest::host_call("kubewarden", "kubernetes", "can_i", &request)
        .map_err(|e| host_message(&e.to_string()))?;
    let status: Value = serde_json::from_slice(&response)
        .map_err(|e| format!("cannot parse the host's answer: {e}"))?;
    Ok(status.get("allowed").and_then(Value::as_bool) == Some(true))
}

/// wapc-guest words a failed host call `Host error: <message>`: the
/// message alone is the host's.
fn host_message(text: &str) -> String {
    text.strip_prefix("Host error: ")
        .unwrap_or(text)
        .to_string()
}

/// The request of the SDK's `get_resource` (GetResourceRequest), for a
/// cluster-wide kind: no namespace, no field masks.
#[derive(Serialize)]
struct GetResourceRequest<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    disable_cache: bool,
}

/// Whether the Namespace `name` carries `label: "true"`, looked up through
/// the host; the error is the host's message.
fn namespace_label(name: &str, label: &str) -> Result<bool, String> {
    let request = serde_json::to_vec(&GetResourceRequest {
        api_version: "v1",
        kind: "Namespace",
        name,
        disable_cache: false,
    })
    .map_err(|e| e.to_string())?;
    let response = guest::host_call("kubewarden", "kubernetes", "get_resource", &request)
        .map_err(|e| host_message(&e.to_string()))?;
    let namespace: Value = serde_json::from_slice(&response)
        .map_err(|e| format!("cannot parse the host's answer: {e}"))?;
    Ok(namespace
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(label))
        .and_then(Value::as_str)
        == Some("true"))
}
