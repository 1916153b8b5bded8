//! Headless Chromium, as the browser tests drive it: the page must finish
//! within a deadline (polled, never slept out), and what it prints is the
//! answer. `GOALPOST_CHROMIUM` names another binary.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium must finish a page within this.
const DEADLINE: Duration = Duration::from_secs(90);

fn chromium() -> String {
    std::env::var("GOALPOST_CHROMIUM").unwrap_or_else(|_| "chromium".to_string())
}

pub fn file_url(path: &Path, fragment: &str) -> String {
    format!("file://{}{fragment}", path.display())
}

/// Runs headless Chromium with `extra` arguments on `url` and returns its
/// stdout. Fails the test if it does not end within [`DEADLINE`].
fn headless(extra: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().expect("profile folder");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start `{}`: {e} (apt-get install chromium)",
                chromium()
            )
        });
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let started = Instant::now();
    loop {
        match child.try_wait().expect("wait for chromium") {
            Some(status) => {
                assert!(status.success(), "chromium exited with {status}");
                break;
            }
            None if started.elapsed() > DEADLINE => {
                let _ = child.kill();
                panic!("chromium did not finish {url} within {DEADLINE:?}");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    reader
        .join()
        .expect("reader thread")
        .expect("chromium's stdout is text")
}

pub fn dump_dom(page: &Path, fragment: &str) -> String {
    headless(&["--dump-dom"], &file_url(page, fragment))
}

pub fn screenshot(page: &Path, fragment: &str, to: &Path) {
    headless(
        &[
            &format!("--screenshot={}", to.display()),
            "--window-size=1280,2000",
        ],
        &file_url(page, fragment),
    );
    let bytes =
        std::fs::read(to).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", to.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
}
