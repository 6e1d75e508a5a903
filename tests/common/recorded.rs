//! What a real control plane sent the policy's webhooks, as `cluster/run`
//! records it in `test_data/cluster/recorded/<release>/`: each review with
//! the verdicts its webhooks gave (`index.json`); and in the same form, in
//! `test_data/cluster/written/`, the requests written by hand for what no
//! cluster test can send, each with its reason and the verdicts it must get.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use super::root;

/// The README's recommended settings, each with the id of the webhook the
/// cluster tests register with them: the one list, which cluster/harness
/// embeds and e2e.bats reads too.
pub const RECOMMENDED: &str = "cluster/harness/recommended.json";

/// `RECOMMENDED`'s settings, in its order: (id, the settings as compact
/// JSON).
pub fn recommended() -> &'static [(String, String)] {
    static READ: OnceLock<Vec<(String, String)>> = OnceLock::new();
    READ.get_or_init(|| {
        let text = std::fs::read_to_string(root().join(RECOMMENDED)).expect(RECOMMENDED);
        let entries: Vec<Value> = serde_json::from_str(&text).expect(RECOMMENDED);
        entries
            .iter()
            .map(|entry| {
                let fields: Vec<&String> = entry.as_object().expect("an object").keys().collect();
                assert_eq!(fields, ["id", "settings"], "{RECOMMENDED}: {entry}");
                let id = entry["id"].as_str().expect("an id");
                assert!(entry["settings"].is_object(), "{RECOMMENDED}: {id}");
                (id.to_string(), entry["settings"].to_string())
            })
            .collect()
    })
}

/// The recommended settings of the webhook `id`.
pub fn recommended_settings(id: &str) -> &'static str {
    recommended()
        .iter()
        .find(|(i, _)| i == id)
        .map(|(_, settings)| settings.as_str())
        .unwrap_or_else(|| panic!("{RECOMMENDED} has no {id}"))
}

/// `settings` with `field` set to `value`: the variations the tests judge
/// beside the recommended settings.
pub fn with(settings: &str, field: &str, value: impl Into<Value>) -> String {
    let mut settings: Value = serde_json::from_str(settings).expect("settings");
    settings[field] = value.into();
    settings.to_string()
}

/// The user the harness acts as (kubeadm's administrator).
pub const ADMIN: &str = "kubernetes-admin";

/// The requests written by hand, in the form of a release's recordings.
pub const WRITTEN: &str = "test_data/cluster/written";

pub struct Recording {
    /// The release that sent it, or `written` for a request written by hand.
    pub release: String,
    pub file: String,
    pub request: Value,
    pub text: String,
    /// Its verdict under each of `settings`, by id.
    pub verdicts: Value,
    /// The settings of its index (id, compact JSON): the recommended ones,
    /// and for a request written by hand the README's allowlist for Helm.
    pub settings: Vec<(String, String)>,
}

impl Recording {
    pub fn user(&self) -> &str {
        self.request["userInfo"]["username"].as_str().unwrap()
    }

    pub fn name(&self) -> String {
        format!("{}/{}", self.release, self.file)
    }

    pub fn namespace(&self) -> String {
        self.request["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Whether Helm wrote its keys on the object.
    pub fn by_helm(&self) -> bool {
        self.request["object"]["metadata"]["annotations"]
            .as_object()
            .is_some_and(|keys| keys.keys().any(|k| k.starts_with("meta.helm.sh/")))
    }
}

pub fn releases() -> Vec<PathBuf> {
    let dir = root().join("test_data/cluster/recorded");
    let mut releases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("test_data/cluster/recorded")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    releases.sort();
    releases
}

/// A directory of recorded reviews (`index.json` and the files it names):
/// its index, and each review with its verdicts, in file order.
pub fn recorded_reviews(dir: &std::path::Path) -> (Value, Vec<(String, Value, Value)>) {
    let index: Value = serde_json::from_slice(
        &std::fs::read(dir.join("index.json"))
            .unwrap_or_else(|e| panic!("{}/index.json: {e}", dir.display())),
    )
    .expect("index.json is JSON");
    let verdicts = index["verdicts"].as_object().expect("verdicts");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|f| f != "index.json")
        .collect();
    files.sort();
    let indexed: Vec<String> = verdicts.keys().cloned().collect();
    assert_eq!(files, indexed, "{}: files and index differ", dir.display());
    let reviews = files
        .into_iter()
        .map(|file| {
            let review: Value = serde_json::from_slice(&std::fs::read(dir.join(&file)).unwrap())
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{file}");
            assert_eq!(review["kind"], "AdmissionReview", "{file}");
            let verdicts = verdicts[&file].clone();
            (file, review, verdicts)
        })
        .collect();
    (index, reviews)
}

/// Every review of `recorded/<release>/` and of `written/`.
pub fn recordings() -> Vec<Recording> {
    let mut all = Vec::new();
    for dir in releases().into_iter().chain([root().join(WRITTEN)]) {
        let release = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (index, reviews) = recorded_reviews(&dir);
        let settings: Vec<(String, String)> = index["settings"]
            .as_object()
            .expect("settings")
            .iter()
            .map(|(id, s)| (id.clone(), s.to_string()))
            .collect();
        for (id, text) in recommended() {
            let recorded = settings.iter().find(|(i, _)| i == id).expect(id);
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(recorded.1, parsed.to_string(), "{release}: {id}");
        }
        // The reviews of the cluster's admissions; its audit is in `audit/`,
        // the policy group's in `group/`.
        for (file, review, verdicts) in reviews {
            let request = review["request"].clone();
            all.push(Recording {
                release: release.clone(),
                text: request.to_string(),
                request,
                verdicts,
                file,
                settings: settings.clone(),
            });
        }
    }
    assert!(!all.is_empty());
    all
}
