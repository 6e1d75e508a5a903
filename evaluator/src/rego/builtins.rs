//! The Rego builtins a module may call: those Kubewarden's own Rego host
//! offers (burrego, kubewarden-controller 1.35, `builtins/mod.rs`), each
//! with whether this runner evaluates it (opa-wasm 0.3 with the features
//! `evaluator/Cargo.toml` names). OPA compiles most of Rego's builtins into
//! the module itself; a module calls out only for these.

/// (builtin, evaluated here). Kubewarden offers every one; `false` is one
/// opa-wasm leaves unimplemented or does not know by that name.
pub(crate) const BUILTINS: [(&str, bool); 23] = [
    ("base64url.encode_no_pad", true),
    ("date", false),
    ("glob.quote_meta", false),
    ("hex.decode", true),
    ("hex.encode", true),
    ("json.is_valid", false),
    ("json.patch", true),
    ("parse_rfc3339_ns", false),
    ("regex.find_n", false),
    ("regex.split", false),
    ("regex.template_match", false),
    ("semver.compare", true),
    ("semver.is_valid", true),
    ("sprintf", true),
    ("time.now_ns", true),
    ("trace", false),
    ("urlquery.decode", true),
    ("urlquery.decode_object", true),
    ("urlquery.encode", true),
    ("urlquery.encode_object", true),
    ("yaml.is_valid", true),
    ("yaml.marshal", true),
    ("yaml.unmarshal", true),
];

/// `Err` naming, sorted, the builtins a module calls that Kubewarden does
/// not offer (policy-server refuses such a module with burrego's words,
/// "Missing Rego builtins"), else those this runner cannot evaluate.
pub(crate) fn check<'a>(called: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut unevaluated = Vec::new();
    for name in called {
        match BUILTINS.iter().find(|(builtin, _)| *builtin == name) {
            None => missing.push(name),
            Some((_, false)) => unevaluated.push(name),
            Some((_, true)) => {}
        }
    }
    missing.sort_unstable();
    unevaluated.sort_unstable();
    if !missing.is_empty() {
        return Err(format!(
            "Missing Rego builtins: {} (Kubewarden offers no such builtin, so policy-server refuses this module too)",
            missing.join(", ")
        ));
    }
    if !unevaluated.is_empty() {
        return Err(format!(
            "the module calls the Rego builtins {}, which Kubewarden offers but policy-runner cannot evaluate (opa-wasm leaves them unimplemented)",
            unevaluated.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_names_each_builtin_once() {
        let names: Vec<&str> = BUILTINS.iter().map(|(name, _)| *name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(names, sorted);
    }

    #[test]
    fn what_cannot_run_is_named() {
        assert_eq!(check(["sprintf", "time.now_ns"].into_iter()), Ok(()));
        assert_eq!(
            check(["http.send", "sprintf", "crypto.sha256"].into_iter()),
            Err("Missing Rego builtins: crypto.sha256, http.send (Kubewarden offers no such builtin, so policy-server refuses this module too)".to_string())
        );
        let error = check(["regex.split", "trace"].into_iter()).unwrap_err();
        assert!(error.contains("regex.split, trace"), "{error}");
    }
}
