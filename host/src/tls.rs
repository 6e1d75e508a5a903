//! The process's one rustls crypto provider. reqwest (under oci-client),
//! axum-server and rustls itself are built without a provider of their own,
//! so that only ring is compiled in; each of them then asks rustls for the
//! process's default, and reqwest panics when there is none. Installing it
//! once, before anything builds a TLS client or server, is the only way to
//! give them one.

use std::sync::Once;

/// Installs ring as the process's provider; every call after the first
/// does nothing. Called by `main` and by each place that builds a TLS
/// client or server, so that the library is safe without `main` too.
pub fn install_crypto_provider() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // Err only when a provider is already installed, which serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
