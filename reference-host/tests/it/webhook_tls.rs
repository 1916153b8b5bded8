//! `https` webhook refs: the client speaks TLS, trusts the system's roots
//! and the authorities of `--webhook-ca`, and an untrusted certificate is
//! an environmental failure with nothing sent in clear. The receivers are
//! on loopback with certificates made here (rcgen), the egress policy
//! allowing exactly their port.

use crate::support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::routing::post;
use axum::Router;
use goalpost_host::domain::egress::{AllowEntry, EgressPolicy};
use goalpost_host::engine::EngineSettings;
use goalpost_host::storage::DbLocation;
use goalpost_host::webhook::{
    Caller, SharedEgress, Signing, WebhookCa, WebhookClient, WebhookError, WebhookSecret,
};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use support::{id_of, Harness, BASE};

/// A certificate authority made for one test, and a server certificate
/// for 127.0.0.1 it issued.
struct Pki {
    ca_pem: String,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: Vec<u8>,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("a CA key");
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).expect("a CA certificate");
    let server_key = KeyPair::generate().expect("a server key");
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("server params")
        .signed_by(&server_key, &ca)
        .expect("a server certificate");
    Pki {
        ca_pem: ca.pem(),
        server_chain: vec![server.der().clone()],
        server_key: server_key.serialize_der(),
    }
}

/// Bodies the receiver decrypted and read.
type Seen = Arc<Mutex<Vec<Value>>>;

/// How the receiver answers a POST to a path.
type Script = fn(&str) -> Value;

/// An https receiver on 127.0.0.1:0 answering every POST with
/// `answer(path)`.
async fn https_receiver(pki: &Pki, answer: Script) -> (SocketAddr, Seen) {
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            pki.server_chain.clone(),
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.server_key.clone())),
        )
        .expect("a server config");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let seen: Seen = Arc::default();
    let router = Router::new()
        .fallback(post(
            |State((seen, answer)): State<(Seen, Script)>, uri: Uri, body: Bytes| async move {
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(body);
                axum::Json(answer(uri.path()))
            },
        ))
        .with_state((Arc::clone(&seen), answer));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let router = router.clone();
            tokio::spawn(async move {
                // A client that does not trust the certificate ends the
                // handshake here.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(router);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (addr, seen)
}

fn client(addr: SocketAddr, ca: &WebhookCa) -> WebhookClient {
    let egress = SharedEgress::new(EgressPolicy::new(vec![AllowEntry::parse(
        &addr.to_string(),
    )
    .expect("entry")]));
    WebhookClient::with_ca(
        Some(Signing::new(WebhookSecret::generate())),
        egress,
        Duration::from_secs(3),
        ca,
    )
}

const CALLER: Caller<'static> = Caller {
    tenant: "acme",
    goal: "g-tls",
};

fn verdict() -> Value {
    json!({ "satisfied": true, "confidence": 0.8 })
}

/// An arm's answer on `/arm`, a satisfied verdict elsewhere.
fn arm_or_verdict(path: &str) -> Value {
    if path == "/arm" {
        json!({ "output": { "done": true } })
    } else {
        verdict()
    }
}

#[tokio::test]
async fn an_https_ref_is_called_over_tls_when_its_ca_is_trusted() {
    let pki = pki();
    let (addr, seen) = https_receiver(&pki, arm_or_verdict).await;
    let ca = WebhookCa::from_pem(pki.ca_pem.as_bytes()).expect("the CA parses");
    let answer = client(addr, &ca)
        .call(
            &format!("https://{addr}/verifier"),
            &json!({ "canary": "sent-over-tls" }),
            "webhook-verifier-response",
            CALLER,
        )
        .await
        .expect("the call succeeds over TLS");
    assert_eq!(answer, verdict());
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(seen, vec![json!({ "canary": "sent-over-tls" })]);
}

#[tokio::test]
async fn an_untrusted_certificate_fails_and_the_request_is_never_read() {
    let pki = pki();
    let (addr, seen) = https_receiver(&pki, arm_or_verdict).await;
    // The system's roots alone: the test CA is not among them.
    let error = client(addr, &WebhookCa::none())
        .call(
            &format!("https://{addr}/verifier"),
            &json!({ "canary": "never-read" }),
            "webhook-verifier-response",
            CALLER,
        )
        .await
        .expect_err("an untrusted certificate");
    assert!(matches!(error, WebhookError::Transport(_)), "{error}");
    assert!(
        error.to_string().to_lowercase().contains("certificate"),
        "{error}"
    );
    assert!(seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_empty());
}

/// An `https` ref never falls back to plain HTTP: a listener that speaks
/// no TLS receives a TLS handshake and nothing of the request.
#[tokio::test]
async fn an_https_ref_is_never_sent_in_clear() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let received = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.expect("a connection");
        let mut bytes = vec![0; 4096];
        let read = tcp.read(&mut bytes).await.expect("reads");
        bytes.truncate(read);
        // Dropped without an answer: the client's handshake fails.
        bytes
    });
    let error = client(addr, &WebhookCa::none())
        .call(
            &format!("https://{addr}/verifier"),
            &json!({ "canary": "clear-text-canary" }),
            "webhook-verifier-response",
            CALLER,
        )
        .await
        .expect_err("no TLS server");
    assert!(matches!(error, WebhookError::Transport(_)), "{error}");
    let bytes = received.await.expect("the listener ends");
    assert_eq!(bytes.first(), Some(&0x16), "a TLS handshake record first");
    let text = String::from_utf8_lossy(&bytes);
    for clear in ["POST", "clear-text-canary", "x-goalpost"] {
        assert!(
            !text.to_lowercase().contains(&clear.to_lowercase()),
            "{clear} in clear"
        );
    }
}

/// TLS changes nothing of where a call may go: an https ref to a loopback
/// port the policy does not allow is denied before any connection.
#[tokio::test]
async fn the_egress_policy_still_decides_for_https() {
    let pki = pki();
    let (addr, seen) = https_receiver(&pki, arm_or_verdict).await;
    let ca = WebhookCa::from_pem(pki.ca_pem.as_bytes()).expect("the CA parses");
    let elsewhere = SocketAddr::new(addr.ip(), addr.port().wrapping_add(1).max(1));
    let error = client(elsewhere, &ca)
        .call(
            &format!("https://{addr}/verifier"),
            &Value::Null,
            "webhook-verifier-response",
            CALLER,
        )
        .await
        .expect_err("denied");
    assert!(matches!(error, WebhookError::Denied(_)), "{error}");
    assert!(seen
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_empty());
}

/// End to end through the host: a goal whose arm and verifier are https
/// refs runs when `--webhook-ca` names their CA, and without it each
/// iteration is an environmental failure.
#[tokio::test]
async fn a_goal_with_https_refs_runs_with_the_ca_and_fails_environmentally_without() {
    let pki = pki();
    let (addr, _) = https_receiver(&pki, arm_or_verdict).await;
    for trusted in [true, false] {
        let settings = EngineSettings {
            conformance_seams: true,
            egress: EgressPolicy::new(vec![AllowEntry::parse(&addr.to_string()).expect("entry")]),
            webhook_ca: if trusted {
                WebhookCa::from_pem(pki.ca_pem.as_bytes()).expect("the CA parses")
            } else {
                WebhookCa::none()
            },
            ..EngineSettings::default()
        };
        let host = Harness::with_settings(
            &DbLocation::Memory,
            settings,
            Arc::new(goalpost_host::clock::ManualClock::fixed()),
        );
        let goal = host
            .create(json!({
                "objective": "ship it over TLS",
                "completion": { "check": "verifier", "verifierRef": format!("https://{addr}/verifier") },
                "continuation": { "mode": "manual", "armRef": format!("https://{addr}/arm") },
                "bounds": { "maxLoopIterations": 2 },
            }))
            .await;
        let id = id_of(&goal);
        let reply = host.post(&format!("{BASE}/{id}/continue"), None).await;
        let evaluation = &reply.expect(StatusCode::OK, "continue-response")["evaluation"];
        if trusted {
            assert_eq!(evaluation["satisfied"], true, "{evaluation}");
        } else {
            assert_eq!(evaluation["satisfied"], false, "{evaluation}");
            assert_eq!(evaluation["failureClass"], "environmental", "{evaluation}");
        }
    }
}
