//! Files that are a tool's input, not manifests: everything under a
//! directory that holds a `Chart.yaml` is a Helm chart's (its templates may
//! parse, and would be judged literally: `name: {{ .Release.Name }}-web`),
//! and the files a `kustomization.yaml` names as patches, generators,
//! transformers or their data are the kustomization's (a patch is a
//! fragment of an object, which the API server would refuse alone). Neither
//! is judged; each is noted with the command that renders it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Input, Learn, Note, file_source};

/// The names kustomize reads a kustomization from.
pub const KUSTOMIZATIONS: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Whose input a file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// A Helm chart's: the directory that holds its `Chart.yaml`.
    Chart(PathBuf),
    /// A kustomization's: the kustomization file, and the field that names
    /// the file.
    Kustomization(PathBuf, &'static str),
}

/// What is known of directories so far, each looked at once.
#[derive(Debug, Default)]
pub struct Claims {
    charts: HashMap<PathBuf, bool>,
    /// Directories whose kustomization (if any) has been read.
    kustomized: HashSet<PathBuf>,
    /// Every file a kustomization read so far names, by its real path.
    named: HashMap<PathBuf, (PathBuf, &'static str)>,
    /// Charts already noted.
    noted: HashSet<PathBuf>,
}

impl Claims {
    /// Whose input `file` is: a chart's, when a directory it is in holds a
    /// `Chart.yaml`; a kustomization's, when one in a directory it is in
    /// (or one read before, `learn`) names it.
    pub fn of(&mut self, file: &Path) -> Option<Claim> {
        let real = std::fs::canonicalize(file).ok()?;
        for dir in real.ancestors().skip(1) {
            let chart = *self
                .charts
                .entry(dir.to_path_buf())
                .or_insert_with(|| dir.join("Chart.yaml").is_file());
            if chart {
                return Some(Claim::Chart(dir.to_path_buf()));
            }
            if self.kustomized.insert(dir.to_path_buf())
                && let Some(kustomization) = KUSTOMIZATIONS
                    .iter()
                    .map(|name| dir.join(name))
                    .find(|path| path.is_file())
            {
                self.learn(&kustomization);
            }
        }
        let (kustomization, field) = self.named.get(&real)?;
        Some(Claim::Kustomization(kustomization.clone(), field))
    }

    /// Whether `chart` is noted for the first time.
    pub fn first_note(&mut self, chart: &Path) -> bool {
        self.noted.insert(chart.to_path_buf())
    }

    /// Reads the kustomization at `path` and learns the files it names;
    /// returns them, sorted. A kustomization that cannot be read names
    /// nothing (its own note says to render it).
    pub fn learn(&mut self, path: &Path) -> BTreeSet<PathBuf> {
        let Ok(real) = std::fs::canonicalize(path) else {
            return BTreeSet::new();
        };
        let dir = real.parent().unwrap_or(Path::new("/")).to_path_buf();
        self.kustomized.insert(dir.clone());
        let text = std::fs::read_to_string(&real).unwrap_or_default();
        let Ok(kustomization) = yaml_serde::from_str::<Value>(&text) else {
            return BTreeSet::new();
        };
        let mut files = BTreeSet::new();
        for (field, named) in named_files(&kustomization) {
            if let Ok(file) = std::fs::canonicalize(dir.join(named))
                && file.is_file()
            {
                self.named
                    .entry(file.clone())
                    .or_insert_with(|| (real.clone(), field));
                files.insert(file);
            }
        }
        files
    }
}

pub(super) fn is_kustomization(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| KUSTOMIZATIONS.iter().any(|k| name == *k))
}

/// The kustomizations read with the files at hand, by their real paths
/// (a claim names its kustomization so), each resolved once.
#[derive(Debug, Default)]
pub struct Kustomized(HashSet<PathBuf>);

impl Kustomized {
    pub fn insert(&mut self, path: &Path) {
        if let Ok(real) = std::fs::canonicalize(path) {
            self.0.insert(real);
        }
    }
}

/// Whether a tool claims `file`, which is then not read: a chart is noted
/// once, a kustomization with what it names; a file a kustomization names
/// is noted on its own only when that kustomization is not in `kustomized`
/// (the files read with it), which notes it.
pub(super) fn claimed<F: Learn>(
    file: &Path,
    claims: &mut Claims,
    kustomized: &Kustomized,
    found: &mut dyn FnMut(Input<F>),
) -> bool {
    let name = file.display().to_string();
    let note = |text: String| {
        Input::Note(Note {
            source: file_source(&name, 1),
            text,
            unrendered: true,
        })
    };
    match claims.of(file) {
        Some(Claim::Chart(chart)) => {
            if claims.first_note(&chart) {
                let chart = shown_as(file, &chart);
                found(Input::Note(Note {
                    source: file_source(&chart.join("Chart.yaml").display().to_string(), 1),
                    text: format!(
                        "a Helm chart: its files are not judged as they stand; check what it \
                         renders with `helm template RELEASE {} | policy-runner check … -`",
                        chart.display()
                    ),
                    unrendered: true,
                }));
            }
        }
        Some(Claim::Kustomization(kustomization, field)) => {
            let in_input = kustomized.0.contains(&kustomization);
            if !in_input {
                let dir = shown_as(file, kustomization.parent().unwrap_or(Path::new("/")));
                found(note(format!(
                    "named under `{field}` by {}: the kustomization's input, not judged alone; \
                     check what `kubectl kustomize {} | policy-runner check … -` renders",
                    shown_as(file, &kustomization).display(),
                    dir.display()
                )));
            }
        }
        None if is_kustomization(file) => {
            let dir = file.parent().map_or_else(|| ".".into(), Path::to_path_buf);
            let dir = match dir.as_os_str().is_empty() {
                true => PathBuf::from("."),
                false => dir,
            };
            let named = claims.learn(file).len();
            let with = match named {
                0 => String::new(),
                1 => " (with the 1 file it names as its input)".to_string(),
                n => format!(" (with the {n} files it names as its input)"),
            };
            found(note(format!(
                "a Kustomization{with}: check what it renders with `kubectl kustomize {} | \
                 policy-runner check … -`",
                dir.display()
            )));
        }
        None => return false,
    }
    true
}

/// `dir` (a real path) as the user named the way to it: relative to the
/// current directory when `file` was given so, for notes a user can paste.
fn shown_as(file: &Path, dir: &Path) -> PathBuf {
    if file.is_absolute() {
        return dir.to_path_buf();
    }
    std::env::current_dir()
        .ok()
        .and_then(|cwd| std::fs::canonicalize(cwd).ok())
        .and_then(|cwd| dir.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .map(|dir| match dir.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => dir,
        })
        .unwrap_or_else(|| dir.to_path_buf())
}

/// The files a kustomization names as its own input, with the field that
/// names each: patches, the configurations of generators, transformers and
/// validators, the data of generated ConfigMaps and Secrets, Helm values,
/// replacements, OpenAPI schemas. (`resources`, `components` and `bases`
/// name objects and kustomizations, which are read as such.)
fn named_files(kustomization: &Value) -> Vec<(&'static str, String)> {
    let mut files = Vec::new();
    let mut add = |field: &'static str, value: &Value| {
        // A path, not an inline patch (which spans lines).
        if let Some(path) = value.as_str().filter(|p| !p.contains('\n')) {
            files.push((field, path.to_string()));
        }
    };
    let list = |field: &str| {
        kustomization
            .get(field)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    for field in ["patches", "patchesJson6902", "replacements"] {
        for entry in list(field) {
            add(field, &entry["path"]);
        }
    }
    for field in [
        "patchesStrategicMerge",
        "generators",
        "transformers",
        "validators",
        "configurations",
    ] {
        for entry in list(field) {
            add(field, entry);
        }
    }
    for field in ["configMapGenerator", "secretGenerator"] {
        for generator in list(field) {
            for data in ["files", "envs"] {
                for entry in generator[data].as_array().into_iter().flatten() {
                    // `key=path` names the key the data is kept under.
                    let path = entry.as_str().map(|e| e.rsplit('=').next().unwrap_or(e));
                    add(field, &path.map_or(Value::Null, Value::from));
                }
            }
            add(field, &generator["env"]);
        }
    }
    for chart in list("helmCharts") {
        add("helmCharts", &chart["valuesFile"]);
    }
    add("openapi", &kustomization["openapi"]["path"]);
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "claims-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        for (path, text) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    #[test]
    fn a_chart_claims_everything_under_it() {
        let root = tree(&[
            ("chart/Chart.yaml", "name: c\n"),
            ("chart/templates/deploy.yaml", "kind: Deployment\n"),
            ("chart/charts/sub/templates/x.yaml", "kind: Pod\n"),
            ("plain/pod.yaml", "kind: Pod\n"),
        ]);
        let mut claims = Claims::default();
        let chart = std::fs::canonicalize(root.join("chart")).unwrap();
        for file in [
            "chart/Chart.yaml",
            "chart/templates/deploy.yaml",
            "chart/charts/sub/templates/x.yaml",
        ] {
            assert_eq!(
                claims.of(&root.join(file)),
                Some(Claim::Chart(chart.clone())),
                "{file}"
            );
        }
        assert_eq!(claims.of(&root.join("plain/pod.yaml")), None);
        assert!(claims.first_note(&chart));
        assert!(!claims.first_note(&chart));
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_kustomization_claims_the_files_it_names_as_its_input() {
        let root = tree(&[
            (
                "overlay/kustomization.yaml",
                "resources: [../base, service.yaml]\npatches:\n- path: patch.yaml\n- patch: |-\n    - op: add\npatchesStrategicMerge: [more/smp.yaml]\nconfigMapGenerator:\n- name: c\n  files: [settings=config.json]\n  envs: [app.env]\n",
            ),
            ("overlay/patch.yaml", "kind: Deployment\n"),
            ("overlay/more/smp.yaml", "kind: Deployment\n"),
            ("overlay/config.json", "{}"),
            ("overlay/service.yaml", "kind: Service\n"),
            ("base/deploy.yaml", "kind: Deployment\n"),
        ]);
        let mut claims = Claims::default();
        let kustomization = std::fs::canonicalize(root.join("overlay/kustomization.yaml")).unwrap();
        let claim = |field| Some(Claim::Kustomization(kustomization.clone(), field));
        assert_eq!(
            claims.of(&root.join("overlay/patch.yaml")),
            claim("patches")
        );
        assert_eq!(
            claims.of(&root.join("overlay/more/smp.yaml")),
            claim("patchesStrategicMerge")
        );
        assert_eq!(
            claims.of(&root.join("overlay/config.json")),
            claim("configMapGenerator")
        );
        // Resources are objects, read as such; the base is its own.
        assert_eq!(claims.of(&root.join("overlay/service.yaml")), None);
        assert_eq!(claims.of(&root.join("base/deploy.yaml")), None);
        // A kustomization learnt first claims files outside its directory.
        let elsewhere = tree(&[
            (
                "k/kustomization.yaml",
                "patches:\n- path: ../p/patch.yaml\n",
            ),
            ("p/patch.yaml", "kind: Deployment\n"),
        ]);
        let mut claims = Claims::default();
        assert_eq!(claims.of(&elsewhere.join("p/patch.yaml")), None);
        let learnt = claims.learn(&elsewhere.join("k/kustomization.yaml"));
        assert_eq!(learnt.len(), 1);
        assert!(matches!(
            claims.of(&elsewhere.join("p/patch.yaml")),
            Some(Claim::Kustomization(_, "patches"))
        ));
        std::fs::remove_dir_all(root).unwrap();
        std::fs::remove_dir_all(elsewhere).unwrap();
    }

    /// A kustomization read with its patch notes it, however its path was
    /// given: a relative one too.
    #[test]
    fn a_kustomization_in_the_input_notes_its_patch_by_any_path() {
        let root = tree(&[
            ("kustomization.yaml", "patches:\n- path: patch.yaml\n"),
            ("patch.yaml", "kind: Deployment\n"),
        ]);
        let relative = |file: &str| {
            let cwd = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
            let real = std::fs::canonicalize(root.join(file)).unwrap();
            let mut up = PathBuf::new();
            for _ in cwd.components().skip(1) {
                up.push("..");
            }
            up.join(real.strip_prefix("/").unwrap())
        };
        for path in [
            root.join("kustomization.yaml"),
            relative("kustomization.yaml"),
        ] {
            let mut claims = Claims::default();
            let mut kustomized = Kustomized::default();
            kustomized.insert(&path);
            claims.learn(&path);
            let patch = path.with_file_name("patch.yaml");
            let mut notes = Vec::new();
            let claimed = claimed(&patch, &mut claims, &kustomized, &mut |input: Input| {
                notes.push(input)
            });
            assert!(claimed, "{}", path.display());
            assert!(notes.is_empty(), "{}: {notes:?}", path.display());
        }
        std::fs::remove_dir_all(root).unwrap();
    }
}
