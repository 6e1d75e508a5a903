//! Whether a Pod's AppArmor annotation says what its own field says.
//!
//! From 1.30 a Pod's AppArmor profile is a field (`appArmorProfile` in the
//! container's security context, else the Pod's), and the older annotation
//! `container.apparmor.security.beta.kubernetes.io/<container>` restates it:
//! 1.30 to 1.33 copy each container's field into its annotation before any
//! webhook sees the Pod (`pkg/registry/core/pod/strategy.go`,
//! `applyAppArmorVersionSkew`), and the API server refuses a Pod whose
//! annotation and field disagree. An annotation that restates the field
//! tells nothing the spec does not, and counts as Kubernetes' own; one that
//! no field restates stays the user's. Read only for a Pod that carries such
//! a key unlisted, so that other requests never pay for it.

use std::borrow::Cow;

use crate::json::visit::{elements, members, string};
use crate::json::{self, Reader};

pub const PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// An `appArmorProfile`: its `type`, and `localhostProfile`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Profile<'a> {
    kind: Option<Cow<'a, str>>,
    localhost: Option<Cow<'a, str>>,
}

impl Profile<'_> {
    /// Whether `value` is the annotation the API server writes for this
    /// profile (`appArmorAnnotationForField`); it writes none for a
    /// Localhost profile without its name, or a type it does not know.
    fn restated_as(&self, value: &str) -> bool {
        match (self.kind.as_deref(), self.localhost.as_deref()) {
            (Some("RuntimeDefault"), _) => value == "runtime/default",
            (Some("Unconfined"), _) => value == "unconfined",
            (Some("Localhost"), Some(name)) => value.strip_prefix("localhost/") == Some(name),
            _ => false,
        }
    }
}

/// What the Pod says of one container: the annotation's value, the Pod's
/// profile, and the container's, once it is found.
#[derive(Default)]
struct Found<'a> {
    annotation: Option<Cow<'a, str>>,
    pod: Option<Profile<'a>>,
    container: Option<Option<Profile<'a>>>,
}

/// Whether the Pod `object` (its JSON text) holds the annotation `key` with
/// the value its container's field, or else its own, gives. Text that
/// cannot be read restates nothing.
pub fn restates_field(object: &[u8], key: &str) -> bool {
    let Some(container) = key.strip_prefix(PREFIX) else {
        return false;
    };
    let mut found = Found::default();
    if read_pod(&mut Reader::new(object), key, container, &mut found).is_err() {
        return false;
    }
    let profile = match found.container {
        Some(Some(profile)) => profile,
        Some(None) => match found.pod {
            Some(profile) => profile,
            None => return false,
        },
        None => return false,
    };
    found
        .annotation
        .is_some_and(|value| profile.restated_as(&value))
}

fn read_pod<'a>(
    r: &mut Reader<'a>,
    key: &str,
    container: &str,
    found: &mut Found<'a>,
) -> json::Result<()> {
    members(r, &mut |r, field| {
        if field == "metadata" {
            members(r, &mut |r, field| match field == "annotations" {
                true => members(r, &mut |r, name| match name == key {
                    true => string(r).map(|value| found.annotation = value),
                    false => r.skip_value(),
                }),
                false => r.skip_value(),
            })
        } else if field == "spec" {
            read_spec(r, container, found)
        } else {
            r.skip_value()
        }
    })
}

fn read_spec<'a>(r: &mut Reader<'a>, container: &str, found: &mut Found<'a>) -> json::Result<()> {
    members(r, &mut |r, field| {
        if field == "securityContext" {
            found.pod = security_context(r)?;
            Ok(())
        } else if field == "containers"
            || field == "initContainers"
            || field == "ephemeralContainers"
        {
            elements(r, &mut |r| {
                let (mut name, mut profile) = (None, None);
                members(r, &mut |r, field| {
                    if field == "name" {
                        name = string(r)?;
                    } else if field == "securityContext" {
                        profile = security_context(r)?;
                    } else {
                        r.skip_value()?;
                    }
                    Ok(())
                })?;
                if name.as_deref() == Some(container) && found.container.is_none() {
                    found.container = Some(profile);
                }
                Ok(())
            })
        } else {
            r.skip_value()
        }
    })
}

/// The `appArmorProfile` of a security context, if it sets one.
fn security_context<'a>(r: &mut Reader<'a>) -> json::Result<Option<Profile<'a>>> {
    let mut profile = None;
    members(r, &mut |r, field| match field == "appArmorProfile" {
        true if r.peek() == Some(b'{') => {
            let mut read = Profile::default();
            members(r, &mut |r, field| {
                if field == "type" {
                    read.kind = string(r)?;
                } else if field == "localhostProfile" {
                    read.localhost = string(r)?;
                } else {
                    r.skip_value()?;
                }
                Ok(())
            })?;
            profile = Some(read);
            Ok(())
        }
        _ => r.skip_value(),
    })?;
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: &str, spec: &str) -> String {
        format!(
            r#"{{"kind":"Pod","metadata":{{"name":"p","annotations":{annotations}}},"spec":{spec}}}"#
        )
    }

    const WEB: &str = "container.apparmor.security.beta.kubernetes.io/web";

    #[test]
    fn the_containers_field_and_else_the_pods_are_restated() {
        let runtime = r#"{"type":"RuntimeDefault"}"#;
        let cases = [
            // The container's own field.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}"#,
                format!(
                    r#"{{"containers":[{{"name":"web","securityContext":{{"appArmorProfile":{runtime}}}}}]}}"#
                ),
                true,
            ),
            // The Pod's, for a container that sets none.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"unconfined"}"#,
                r#"{"securityContext":{"appArmorProfile":{"type":"Unconfined"}},"containers":[{"name":"web"}]}"#.to_string(),
                true,
            ),
            // A Localhost profile, in an init container.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"localhost/k8s-web"}"#,
                r#"{"initContainers":[{"name":"web","securityContext":{"appArmorProfile":{"type":"Localhost","localhostProfile":"k8s-web"}}}],"containers":[{"name":"app"}]}"#.to_string(),
                true,
            ),
            // An ephemeral container, under the Pod's profile.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}"#,
                format!(
                    r#"{{"ephemeralContainers":[{{"name":"web"}}],"securityContext":{{"appArmorProfile":{runtime}}}}}"#
                ),
                true,
            ),
            // The container's field wins over the Pod's.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"unconfined"}"#,
                format!(
                    r#"{{"securityContext":{{"appArmorProfile":{{"type":"Unconfined"}}}},"containers":[{{"name":"web","securityContext":{{"appArmorProfile":{runtime}}}}}]}}"#
                ),
                false,
            ),
            // No field at all: the annotation is the user's.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}"#,
                r#"{"containers":[{"name":"web"}]}"#.to_string(),
                false,
            ),
            // A field that says otherwise.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"unconfined"}"#,
                format!(
                    r#"{{"containers":[{{"name":"web","securityContext":{{"appArmorProfile":{runtime}}}}}]}}"#
                ),
                false,
            ),
            // No container of that name.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}"#,
                format!(
                    r#"{{"securityContext":{{"appArmorProfile":{runtime}}},"containers":[{{"name":"app"}}]}}"#
                ),
                false,
            ),
            // Localhost without its profile's name is written as nothing.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":"localhost/"}"#,
                r#"{"containers":[{"name":"web","securityContext":{"appArmorProfile":{"type":"Localhost"}}}]}"#.to_string(),
                false,
            ),
            // A value that is not a string.
            (
                r#"{"container.apparmor.security.beta.kubernetes.io/web":null}"#,
                format!(
                    r#"{{"containers":[{{"name":"web","securityContext":{{"appArmorProfile":{runtime}}}}}]}}"#
                ),
                false,
            ),
        ];
        for (annotations, spec, restated) in cases {
            let text = pod(annotations, &spec);
            assert_eq!(restates_field(text.as_bytes(), WEB), restated, "{text}");
        }
    }

    #[test]
    fn other_keys_and_unreadable_text_restate_nothing() {
        let spec = r#"{"containers":[{"name":"web","securityContext":{"appArmorProfile":{"type":"RuntimeDefault"}}}]}"#;
        let text = pod(
            r#"{"container.apparmor.security.beta.kubernetes.io/web":"runtime/default"}"#,
            spec,
        );
        assert!(restates_field(text.as_bytes(), WEB));
        assert!(!restates_field(
            text.as_bytes(),
            "seccomp.security.alpha.kubernetes.io/pod"
        ));
        assert!(!restates_field(&text.as_bytes()[..text.len() - 3], WEB));
        assert!(!restates_field(b"[]", WEB));
        assert!(!restates_field(b"", WEB));
    }
}
