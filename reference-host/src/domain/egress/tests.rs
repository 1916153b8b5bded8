use std::net::IpAddr;

use super::*;

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an address")
}

fn policy(entries: &[&str]) -> EgressPolicy {
    EgressPolicy::new(
        entries
            .iter()
            .map(|entry| AllowEntry::parse(entry).expect("a valid entry"))
            .collect(),
    )
}

#[test]
fn internal_ranges_are_denied_and_public_ones_are_not() {
    let denied = [
        ("0.0.0.0", DeniedRange::Unspecified),
        ("127.0.0.1", DeniedRange::Loopback),
        ("127.255.0.9", DeniedRange::Loopback),
        ("10.0.0.1", DeniedRange::Private),
        ("172.16.0.1", DeniedRange::Private),
        ("172.31.255.255", DeniedRange::Private),
        ("192.168.1.1", DeniedRange::Private),
        ("100.64.0.1", DeniedRange::SharedAddressSpace),
        ("100.100.100.200", DeniedRange::SharedAddressSpace),
        ("169.254.169.254", DeniedRange::LinkLocal),
        ("192.0.0.192", DeniedRange::Reserved),
        ("198.18.0.1", DeniedRange::Reserved),
        ("224.0.0.1", DeniedRange::Multicast),
        ("255.255.255.255", DeniedRange::Broadcast),
        ("240.0.0.1", DeniedRange::Reserved),
        ("::", DeniedRange::Unspecified),
        ("::1", DeniedRange::Loopback),
        ("fe80::1", DeniedRange::LinkLocal),
        ("fd00:ec2::254", DeniedRange::UniqueLocal),
        ("fc00::1", DeniedRange::UniqueLocal),
        ("ff02::1", DeniedRange::Multicast),
        ("::ffff:127.0.0.1", DeniedRange::Loopback),
        ("::ffff:169.254.169.254", DeniedRange::LinkLocal),
        ("::ffff:10.1.2.3", DeniedRange::Private),
        ("64:ff9b::a00:1", DeniedRange::Private),
        ("2002:7f00:1::", DeniedRange::Loopback),
        ("::10.0.0.1", DeniedRange::Private),
        ("::8.8.8.8", DeniedRange::Reserved),
        ("2001:db8::1", DeniedRange::Reserved),
        // Teredo, which tunnels to an IPv4 address of its own.
        (
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            DeniedRange::Reserved,
        ),
        ("2001::1", DeniedRange::Reserved),
        // The rest of the IETF's protocol block, 2001::/23 (benchmarking,
        // ORCHID and the like).
        ("2001:2::1", DeniedRange::Reserved),
        ("2001:10::1", DeniedRange::Reserved),
        ("2001:1ff::1", DeniedRange::Reserved),
        // Documentation (RFC 9637) and SRv6 segment ids.
        ("3fff::1", DeniedRange::Reserved),
        ("3fff:fff::1", DeniedRange::Reserved),
        ("5f00::1", DeniedRange::Reserved),
    ];
    for (text, range) in denied {
        assert_eq!(denied_range(ip(text)), Some(range), "{text}");
    }
    for public in [
        "8.8.8.8",
        "1.1.1.1",
        "172.32.0.1",
        "100.128.0.1",
        "169.253.1.1",
        "2606:4700::1111",
        "2001:200::1",
        "2001:4860:4860::8888",
        "3fff:1000::1",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
    ] {
        assert_eq!(denied_range(ip(public)), None, "{public}");
    }
}

#[test]
fn the_default_policy_refuses_every_denied_range() {
    let policy = EgressPolicy::default();
    assert!(policy.check_ip(ip("8.8.8.8"), Some(80)).is_ok());
    let error = policy
        .check_ip(ip("169.254.169.254"), Some(80))
        .expect_err("metadata");
    assert_eq!(
        error.to_string(),
        "169.254.169.254 is a link-local address, which this host does not call"
    );
}

#[test]
fn allowlist_entries_parse() {
    let network = |text: &str| AllowTarget::Network(Cidr::parse(text).expect("cidr"));
    let cases = [
        ("10.0.0.0/8", network("10.0.0.0/8"), None),
        ("127.0.0.1", network("127.0.0.1/32"), None),
        ("127.0.0.1:9000", network("127.0.0.1/32"), Some(9000)),
        ("[::1]:9000", network("::1/128"), Some(9000)),
        ("fd00::/8", network("fd00::/8"), None),
        (
            "Hooks.Internal.",
            AllowTarget::Name("hooks.internal".into()),
            None,
        ),
        (
            "hooks.internal:8443",
            AllowTarget::Name("hooks.internal".into()),
            Some(8443),
        ),
    ];
    for (text, target, port) in cases {
        assert_eq!(
            AllowEntry::parse(text),
            Ok(AllowEntry { target, port }),
            "{text}"
        );
    }
    for bad in [
        "",
        "10.0.0.0/33",
        "10.0.0.0/",
        "host:port",
        "a b",
        "x:99999",
        "/8",
    ] {
        assert!(AllowEntry::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn cidrs_contain_what_they_should() {
    let block = Cidr::parse("10.1.0.0/16").expect("cidr");
    assert!(block.contains(ip("10.1.200.3")));
    assert!(block.contains(ip("::ffff:10.1.0.1")));
    assert!(!block.contains(ip("10.2.0.1")));
    assert!(!block.contains(ip("::1")));
    let all = Cidr::parse("0.0.0.0/0").expect("cidr");
    assert!(all.contains(ip("127.0.0.1")));
}

#[test]
fn allowed_entries_open_only_what_they_name() {
    let policy = policy(&["10.0.0.0/8", "127.0.0.1:9000"]);
    assert!(policy.check_ip(ip("10.9.9.9"), Some(22)).is_ok());
    assert!(policy.check_ip(ip("127.0.0.1"), Some(9000)).is_ok());
    assert!(policy.check_ip(ip("127.0.0.1"), Some(22)).is_err());
    // The port is unknown while a name resolves: a port entry does not apply.
    assert!(policy.check_ip(ip("127.0.0.1"), None).is_err());
    assert!(policy.check_ip(ip("169.254.169.254"), Some(80)).is_err());
}

#[test]
fn urls_are_judged_by_their_literal_or_later_by_what_they_resolve_to() {
    let url = |text: &str| url::Url::parse(text).expect("url");
    let open = EgressPolicy::default();
    for refused in [
        "http://127.0.0.1:22/x",
        "http://10.0.0.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://0x7f.1/x",
        "http://2130706433/x",
    ] {
        assert!(open.check_url(&url(refused)).is_err(), "{refused}");
    }
    assert!(open.check_url(&url("http://hooks.example/x")).is_ok());
    assert!(open.check_url(&url("http://8.8.8.8/x")).is_ok());

    let named = policy(&["hooks.internal:8080"]);
    assert!(named
        .check_url(&url("http://hooks.internal:8080/x"))
        .is_ok());
    assert!(named
        .check_url(&url("http://HOOKS.internal.:22/x"))
        .is_err());
}

#[test]
fn resolved_addresses_are_filtered_unless_the_name_is_trusted() {
    let open = EgressPolicy::default();
    assert_eq!(
        open.filter_resolved("localhost", vec![ip("127.0.0.1"), ip("::1")]),
        Err(EgressDenied::Resolved {
            name: "localhost".into()
        })
    );
    // A rebinding answer mixing a public and an internal address keeps
    // only the public one.
    assert_eq!(
        open.filter_resolved("evil.example", vec![ip("127.0.0.1"), ip("8.8.8.8")]),
        Ok(vec![ip("8.8.8.8")])
    );
    let trusted = policy(&["hooks.internal"]);
    assert_eq!(
        trusted.filter_resolved("hooks.internal", vec![ip("10.0.0.5")]),
        Ok(vec![ip("10.0.0.5")])
    );
    assert!(trusted
        .filter_resolved("other.internal", vec![ip("10.0.0.5")])
        .is_err());
}
