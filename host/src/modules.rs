//! Modules named as Kubewarden names them in a policy's `spec.module`,
//! found where kwctl keeps what it pulls, so that one `kwctl pull` serves
//! both tools.
//!
//! kwctl's store is kubewarden/kubewarden-controller 1.35's
//! `crates/policy-fetcher` (`store/mod.rs`): under the user's cache
//! directory for `io.kubewarden`/`kubewarden` (on Linux
//! `$XDG_CACHE_HOME/kubewarden/store`, else `~/.cache/kubewarden/store`),
//! a module is at `<scheme>/<host[:port]>/<path>`, its last segment with
//! its tag or digest (`registry/ghcr.io/kubewarden/policies/safe-labels:v1.0.0`);
//! on Windows each part after the scheme is base64 (URL-safe, unpadded),
//! since a name there cannot hold `:`. A reference without a scheme is a
//! registry's, as policy-server reads it (`parse_url`), unless it names a
//! file that exists, as kwctl reads it (`map_path_to_uri`).
//!
//! A module the store lacks is pulled into it, as `kwctl pull` would, with
//! oci-client (the OCI client policy-fetcher uses); `--offline` refuses.
//! No crate reads kwctl's store (policy-fetcher is not published on
//! crates.io): these few rules are written here.

use std::path::{Path, PathBuf};

/// Where modules named by reference are found.
#[derive(Debug, Clone, Default)]
pub struct Store {
    /// kwctl's store; `None`: where kwctl keeps it for this user.
    pub root: Option<PathBuf>,
    /// Refuse to fetch anything: a module not in the store is an error that
    /// names it.
    pub offline: bool,
}

/// A module reference, read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reference {
    /// A file on this machine.
    File(PathBuf),
    /// Something kwctl pulls: its scheme (`registry`, `https`, `http`) and
    /// the rest, the host first.
    Remote { scheme: String, rest: String },
}

impl Store {
    /// kwctl's store for this user.
    pub fn default_root() -> Option<PathBuf> {
        directories_next::ProjectDirs::from("io.kubewarden", "", "kubewarden")
            .map(|dirs| dirs.cache_dir().join("store"))
    }

    /// The module file `reference` names; `manifest` is the policy manifest
    /// that names it, against whose directory a relative path is read.
    pub fn resolve(&self, reference: &str, manifest: &Path) -> Result<PathBuf, String> {
        let base = manifest.parent().unwrap_or(Path::new("."));
        match read(reference, base)? {
            Reference::File(path) => match path.is_file() {
                true => Ok(path),
                false => Err(format!(
                    "module `{reference}`: no file at {}",
                    path.display()
                )),
            },
            Reference::Remote { scheme, rest } => {
                let root = match &self.root {
                    Some(root) => root.clone(),
                    None => Store::default_root().ok_or_else(|| {
                        format!(
                            "module `{reference}`: no home directory, so no kwctl store to find \
                             it in: give --store"
                        )
                    })?,
                };
                let path = in_store(&root, &scheme, &rest);
                let latest = scheme == "registry" && rest.ends_with(":latest");
                // kwctl pulls `:latest` again each time; offline, the copy
                // in the store is what there is.
                if path.is_file() && (!latest || self.offline) {
                    return Ok(path);
                }
                let pulled = format!("{scheme}://{rest}");
                if self.offline {
                    return Err(format!(
                        "module `{reference}` is not in kwctl's store ({}), and --offline \
                         fetches nothing: `kwctl pull {pulled}` puts it there",
                        path.display()
                    ));
                }
                let bytes = match scheme.as_str() {
                    "registry" => pull::registry(&rest),
                    _ => pull::https(&pulled),
                }
                .map_err(|e| format!("module `{reference}`: cannot pull {pulled}: {e}"))?;
                pull::keep(&path, &bytes).map_err(|e| {
                    format!(
                        "module `{reference}`: cannot keep it at {}: {e}",
                        path.display()
                    )
                })?;
                Ok(path)
            }
        }
    }
}

/// Modules fetched as kwctl fetches them, into its store.
mod pull {
    use std::path::Path;

    use oci_client::manifest::{WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
    use oci_client::secrets::RegistryAuth;
    use oci_client::{Client, Reference, client::ClientConfig, client::ClientProtocol};

    /// The module a registry holds at `reference` (`host/path:tag` or
    /// `host/path@sha256:…`): the one layer of a Wasm artifact, as
    /// `kwctl push` makes it, each blob's digest checked by the client and
    /// a pinned digest held to the manifest's. Anonymous; over HTTPS with
    /// the platform's roots, and, for a registry on loopback alone, over
    /// plain HTTP where HTTPS fails, as Docker reaches one.
    pub fn registry(reference: &str) -> Result<Vec<u8>, String> {
        let parsed: Reference = reference
            .parse()
            .map_err(|e| format!("not an OCI reference: {e}"))?;
        // The client builds its TLS configuration when it is made, before
        // any connection: reqwest panics without the provider.
        crate::tls::install_crypto_provider();
        let runtime = runtime()?;
        let pull = |protocol| {
            // Not `Client::new`: where the configuration cannot be built
            // (no root certificate at all) it falls back to reqwest's
            // default client, which panics on the same error.
            let client = Client::try_from(ClientConfig {
                protocol,
                ..ClientConfig::default()
            })
            .map_err(|e| causes(&e))?;
            runtime.block_on(async {
                client
                    .pull(
                        &parsed,
                        &RegistryAuth::Anonymous,
                        vec![WASM_LAYER_MEDIA_TYPE],
                    )
                    .await
                    .map_err(|e| causes(&e))
            })
        };
        let image = match pull(ClientProtocol::Https) {
            Ok(image) => image,
            Err(https) if loopback(parsed.registry()) => pull(ClientProtocol::Http)
                .map_err(|http| format!("over HTTPS: {https}; over plain HTTP: {http}"))?,
            Err(https) => return Err(https),
        };
        if let (Some(pinned), Some(pulled)) = (parsed.digest(), &image.digest)
            && pinned != pulled
        {
            return Err(format!(
                "the registry answered with manifest {pulled}, not the {pinned} the reference pins"
            ));
        }
        if image.config.media_type != WASM_CONFIG_MEDIA_TYPE {
            return Err(format!(
                "not a Kubewarden policy: its config is {}, not {WASM_CONFIG_MEDIA_TYPE}",
                image.config.media_type
            ));
        }
        let mut layers = image.layers.into_iter();
        match (layers.next(), layers.next()) {
            (Some(layer), None) => Ok(layer.data.to_vec()),
            _ => Err("not a Kubewarden policy: a policy is one Wasm layer".to_string()),
        }
    }

    /// The module at an `https://` (or `http://`) address.
    pub fn https(url: &str) -> Result<Vec<u8>, String> {
        crate::tls::install_crypto_provider();
        runtime()?.block_on(async {
            let response = reqwest::get(url).await.map_err(|e| causes(&e))?;
            let response = response.error_for_status().map_err(|e| causes(&e))?;
            let bytes = response.bytes().await.map_err(|e| causes(&e))?;
            Ok(bytes.to_vec())
        })
    }

    /// An error with each of its causes: reqwest says "error sending
    /// request" and keeps why (a certificate nothing trusts, a refused
    /// connection) in its sources.
    fn causes(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        text
    }

    /// Writes `bytes` to `path` whole or not at all, so that a store read
    /// at the same time never finds half a module.
    pub fn keep(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut file, bytes)?;
        file.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    fn runtime() -> Result<tokio::runtime::Runtime, String> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the pull: {e}"))
    }

    fn loopback(registry: &str) -> bool {
        let host = match registry.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => registry,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    #[cfg(test)]
    #[test]
    fn only_loopback_is_reached_over_plain_http() {
        for (registry, plain) in [
            ("localhost:5000", true),
            ("127.0.0.1:41234", true),
            ("[::1]:5000", true),
            ("ghcr.io", false),
            ("registry.test:5000", false),
            ("127.0.0.1.example.com", false),
        ] {
            assert_eq!(loopback(registry), plain, "{registry}");
        }
    }
}

/// What `reference` names, as policy-server and kwctl read it.
fn read(reference: &str, base: &Path) -> Result<Reference, String> {
    if reference.is_empty() {
        return Err("the policy names no module (`spec.module`)".to_string());
    }
    if let Some((scheme, rest)) = reference.split_once("://") {
        return match scheme {
            "file" => Ok(Reference::File(PathBuf::from(rest))),
            "registry" | "https" | "http" => Ok(Reference::Remote {
                scheme: scheme.to_string(),
                rest: match scheme {
                    "registry" => tagged(rest),
                    _ => rest.to_string(),
                },
            }),
            other => Err(format!(
                "module `{reference}`: unknown scheme `{other}://`; Kubewarden reads \
                 registry://, https://, http:// and file://"
            )),
        };
    }
    let path = base.join(reference);
    if path.is_file() {
        return Ok(Reference::File(path));
    }
    Ok(Reference::Remote {
        scheme: "registry".to_string(),
        rest: tagged(reference),
    })
}

/// A registry reference with its tag: `latest` when it names neither a tag
/// nor a digest, as kwctl normalises it.
fn tagged(rest: &str) -> String {
    let last = rest.rsplit('/').next().unwrap_or(rest);
    match last.contains(':') || last.contains('@') || !rest.contains('/') {
        true => rest.to_string(),
        false => format!("{rest}:latest"),
    }
}

/// Where kwctl's store keeps what `scheme://rest` names.
fn in_store(root: &Path, scheme: &str, rest: &str) -> PathBuf {
    let mut path = root.join(scheme);
    for part in rest.split('/').filter(|part| !part.is_empty()) {
        path.push(encoded(part));
    }
    path
}

#[cfg(not(windows))]
fn encoded(part: &str) -> String {
    part.to_string()
}

#[cfg(windows)]
fn encoded(part: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(scheme: &str, rest: &str) -> Reference {
        Reference::Remote {
            scheme: scheme.to_string(),
            rest: rest.to_string(),
        }
    }

    #[test]
    fn references_read_as_kubewarden_reads_them() {
        let base = Path::new("/nowhere");
        let cases = [
            (
                "registry://ghcr.io/kubewarden/policies/safe-labels:v1.0.0",
                remote("registry", "ghcr.io/kubewarden/policies/safe-labels:v1.0.0"),
            ),
            (
                "ghcr.io/kubewarden/policies/safe-labels",
                remote("registry", "ghcr.io/kubewarden/policies/safe-labels:latest"),
            ),
            (
                "localhost:5000/x/y@sha256:ab",
                remote("registry", "localhost:5000/x/y@sha256:ab"),
            ),
            (
                "https://example.com/x/policy.wasm",
                remote("https", "example.com/x/policy.wasm"),
            ),
            (
                "file:///srv/policy.wasm",
                Reference::File(PathBuf::from("/srv/policy.wasm")),
            ),
        ];
        for (reference, read_as) in cases {
            assert_eq!(read(reference, base), Ok(read_as), "{reference}");
        }
        assert!(
            read("oci://x/y", base)
                .unwrap_err()
                .contains("unknown scheme")
        );
        assert!(read("", base).unwrap_err().contains("names no module"));
    }

    #[cfg(not(windows))]
    #[test]
    fn the_store_lays_modules_out_as_kwctl_does() {
        let root = Path::new("/store");
        assert_eq!(
            in_store(root, "registry", "localhost:5000/foo/bar:v1"),
            Path::new("/store/registry/localhost:5000/foo/bar:v1")
        );
        assert_eq!(
            in_store(root, "https", "example.com/x/policy.wasm"),
            Path::new("/store/https/example.com/x/policy.wasm")
        );
    }

    #[test]
    fn a_missing_module_names_the_pull_that_brings_it() {
        let root = tempfile::tempdir().unwrap();
        let store = Store {
            root: Some(root.path().to_path_buf()),
            offline: true,
        };
        let error = store
            .resolve("ghcr.io/x/y:v1", Path::new("policies/p.yaml"))
            .unwrap_err();
        assert!(error.contains("and --offline fetches nothing"), "{error}");
        assert!(
            error.contains("kwctl pull registry://ghcr.io/x/y:v1"),
            "{error}"
        );
        let file = root.path().join("registry/ghcr.io/x/y:v1");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"\0asm").unwrap();
        assert_eq!(
            store.resolve("registry://ghcr.io/x/y:v1", Path::new("p.yaml")),
            Ok(file)
        );
    }
}
