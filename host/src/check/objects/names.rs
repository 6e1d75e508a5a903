//! Names as the controllers and the API server form them (the names it
//! refuses are the reader's: `policy_manifests::refusals`).

use serde_json::Value;

/// The end the check gives a name made from a `generateName`, where the
/// API server appends five random characters of its own.
pub const ILLUSTRATIVE_SUFFIX: &str = "x7k2p";

/// The longest `generateName` base the API server keeps: a name is at most
/// 63 characters, 5 of them random (`names.SimpleNameGenerator`, apiserver
/// pkg/storage/names).
const MAX_GENERATED_BASE: usize = 58;

/// The name the API server makes from `base`, with the illustrative suffix.
pub fn generated_name(base: &str) -> String {
    let mut end = base.len().min(MAX_GENERATED_BASE);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ILLUSTRATIVE_SUFFIX}", &base[..end])
}

/// An Indexed Job's Pods are named `<job>-<index>-<random>`, the Job's
/// name cut so that the index stays (`podGenerateNameWithIndex`,
/// pkg/controller/job/indexed_job_utils.go).
pub(super) fn indexed_pod_base(job: &str, index: &str) -> String {
    let tail = format!("-{index}-");
    let mut end = job.len().min(MAX_GENERATED_BASE.saturating_sub(tail.len()));
    while !job.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{tail}", &job[..end])
}

/// A `pod-template-hash` in the controller's alphabet: FNV-1a of the
/// template's text, its decimal digits mapped as Kubernetes'
/// `rand.SafeEncodeString` maps them. (The controller hashes its own dump of
/// the template, so the value differs; its shape does not.)
pub(super) fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let text = serde_json::to_string(template).unwrap_or_default();
    let hash = text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn generated_names_are_cut_as_the_api_server_cuts_them() {
        assert_eq!(generated_name("web-5d8f-"), "web-5d8f-x7k2p");
        let long = format!("{}-", "d".repeat(70));
        let name = generated_name(&long);
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("ddx7k2p"));
        assert_eq!(indexed_pod_base("render", "0"), "render-0-");
        let base = indexed_pod_base(&"j".repeat(70), "0");
        assert_eq!(base.len(), 58);
        assert!(base.ends_with("j-0-"));
    }

    #[test]
    fn hashes_use_the_controllers_alphabet() {
        let hash = template_hash(&json!({"spec": {}}));
        assert!(!hash.is_empty() && hash.len() <= 10, "{hash}");
        assert!(
            hash.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
