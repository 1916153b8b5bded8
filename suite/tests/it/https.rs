//! The suite certifies a host served over https with its own TLS (rustls on
//! ring, the system's roots or the bundle `SSL_CERT_FILE` names): the
//! reference host behind a TLS terminator made for the test, with a
//! certificate for 127.0.0.1 that a certificate authority made here issued.
//! `goalpost run --host https://…` trusting that authority certifies every
//! profile, its requests reaching the host through the terminator; trusting
//! another authority, the run cannot start and nothing is certified.

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use goalpost::bundled::{DEFAULT_TOKEN_A, DEFAULT_TOKEN_B};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

const SECRET: &str = "goalpost-https-secret";

/// A certificate authority made here.
fn authority() -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("a CA key"))
        .expect("a CA certificate")
}

/// The TLS side of the host: a server certificate for 127.0.0.1 issued by
/// `ca`.
fn acceptor(ca: &CertifiedIssuer<'static, KeyPair>) -> TlsAcceptor {
    let key = KeyPair::generate().expect("a server key");
    let certificate = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("server params")
        .signed_by(&key, ca)
        .expect("a server certificate");
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![certificate.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .expect("a server config");
    TlsAcceptor::from(Arc::new(config))
}

/// The reference host (seams on, both tenants, allowed to call the suite's
/// callback) behind a TLS terminator on 127.0.0.1: its https base URL and
/// the count of completed handshakes. Serves while `runtime` lives.
fn https_host(
    runtime: &tokio::runtime::Runtime,
    ca: &CertifiedIssuer<'static, KeyPair>,
    callback: SocketAddr,
) -> (String, Arc<AtomicUsize>, goalpost_host::RunningHost) {
    let config = common::host_config(SECRET, callback).expect("a host config");
    let host = runtime
        .block_on(goalpost_host::RunningHost::start(config))
        .expect("the reference host starts");
    let upstream = host
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let acceptor = acceptor(ca);
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind the terminator");
    let address = listener.local_addr().expect("the terminator's address");
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&handshakes);
    runtime.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let upstream = upstream.clone();
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                // A client that does not trust the certificate ends here.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let Ok(mut plain) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (format!("https://{address}"), handshakes, host)
}

/// `goalpost run` against `url`, trusting only the authority in `ca_file`.
fn run(url: &str, ca_file: &Path, callback: SocketAddr, reports: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goalpost"))
        .args(["run", "--quiet", "--host", url])
        .args(["--token", DEFAULT_TOKEN_A, "--token-b", DEFAULT_TOKEN_B])
        .args(["--webhook-secret", SECRET])
        .arg("--callback-listen")
        .arg(callback.to_string())
        .arg("--report-dir")
        .arg(reports)
        .env("SSL_CERT_FILE", ca_file)
        .env_remove("SSL_CERT_DIR")
        .env_remove("GOALPOST_HOST")
        .env_remove("GOALPOST_TOKEN")
        .env_remove("GOALPOST_TOKEN_B")
        .output()
        .expect("goalpost runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn an_https_host_is_certified_when_its_authority_is_trusted() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("https-host")
        .build()
        .expect("a runtime");
    let ca = authority();
    let callback = common::callback_listen().expect("a callback port");
    let (url, handshakes, host) = https_host(&runtime, &ca, callback);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("write the CA");
    let reports = dir.path().join("reports");

    let output = run(&url, &ca_file, callback, &reports);
    runtime.block_on(host.shutdown());
    assert!(output.status.success(), "{}", text(&output));
    let report: Value =
        serde_json::from_slice(&std::fs::read(reports.join("report.json")).expect("report.json"))
            .expect("report.json is JSON");
    assert_eq!(report["host"]["url"], url.as_str());
    for profile in ["core", "behavior", "observed", "hardening"] {
        assert_eq!(
            report["profiles"][profile]["certified"], true,
            "{profile} over https: {}",
            report["profiles"][profile]
        );
    }
    // Every connection of the run is a handshake here; a whole run opens
    // several (pooled connections, the parallel scenarios).
    assert!(
        handshakes.load(Ordering::SeqCst) > 1,
        "the run reached the host through the terminator"
    );
}

#[test]
fn an_https_host_whose_certificate_is_not_trusted_is_never_certified() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("https-host")
        .build()
        .expect("a runtime");
    let callback = common::callback_listen().expect("a callback port");
    let (url, handshakes, host) = https_host(&runtime, &authority(), callback);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let stranger = dir.path().join("stranger.pem");
    std::fs::write(&stranger, authority().pem()).expect("write another CA");
    let reports = dir.path().join("reports");

    let output = run(&url, &stranger, callback, &reports);
    runtime.block_on(host.shutdown());
    // Discovery cannot be read over a connection the suite refused: the
    // run cannot start (exit 2), and says why.
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("discovery"), "{}", text(&output));
    assert_eq!(
        handshakes.load(Ordering::SeqCst),
        0,
        "no handshake completed"
    );
    assert!(
        !reports.join("report.json").exists(),
        "nothing is certified"
    );
}
