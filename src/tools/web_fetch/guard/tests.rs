//! The address policy: every address class, IPv4 embedded in IPv6, names, and vetting of URLs
//! through an injected resolver (no DNS needed).

use super::AddressClass::*;
use super::*;

fn class(ip: &str) -> Option<AddressClass> {
    classify(ip.parse().unwrap())
}

#[test]
fn every_ipv4_class_is_recognised() {
    for (ip, expected) in [
        ("0.0.0.0", Unspecified),
        ("0.1.2.3", Unspecified),
        ("127.0.0.1", Loopback),
        ("127.255.0.9", Loopback),
        ("10.0.0.1", Private),
        ("172.16.0.1", Private),
        ("172.31.255.255", Private),
        ("192.168.1.1", Private),
        ("169.254.169.254", LinkLocal),
        ("100.64.0.1", SharedCgnat),
        ("100.127.255.254", SharedCgnat),
        ("192.0.2.1", Documentation),
        ("198.51.100.7", Documentation),
        ("203.0.113.9", Documentation),
        ("198.18.0.1", Benchmarking),
        ("192.0.0.8", Reserved),
        ("255.255.255.255", Broadcast),
        ("224.0.0.1", Multicast),
        ("239.255.255.250", Multicast),
        ("240.0.0.1", Reserved),
    ] {
        assert_eq!(class(ip), Some(expected), "{ip}");
    }
    for ip in [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.215.14",
        "172.15.255.255",
        "172.32.0.1",
        "100.63.255.255",
        "100.128.0.1",
        "192.169.0.1",
        "169.253.0.1",
        "223.255.255.255",
    ] {
        assert_eq!(class(ip), None, "{ip} is public");
    }
}

#[test]
fn every_ipv6_class_is_recognised() {
    for (ip, expected) in [
        ("::", Unspecified),
        ("::1", Loopback),
        ("fe80::1", LinkLocal),
        ("febf::1", LinkLocal),
        ("fec0::1", Private),
        ("fc00::1", UniqueLocal),
        ("fd12:3456::1", UniqueLocal),
        ("ff02::1", Multicast),
        ("2001:db8::1", Documentation),
        ("3fff::1", Documentation),
        ("2001::1", Reserved),
        ("100::1", Reserved),
        ("::1.2.3.4", Reserved),
        ("4000::1", Reserved),
    ] {
        assert_eq!(class(ip), Some(expected), "{ip}");
    }
    for ip in [
        "2606:4700:4700::1111",
        "2001:4860:4860::8888",
        "2a00:1450::1",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ] {
        assert_eq!(class(ip), None, "{ip} is public");
    }
}

#[test]
fn ipv4_embedded_in_ipv6_is_judged_by_the_ipv4_address() {
    for (ip, expected) in [
        ("::ffff:127.0.0.1", Some(Loopback)),
        ("::ffff:10.1.2.3", Some(Private)),
        ("::ffff:169.254.169.254", Some(LinkLocal)),
        ("::ffff:100.64.0.1", Some(SharedCgnat)),
        ("64:ff9b::7f00:1", Some(Loopback)),
        ("2002:c0a8:101::1", Some(Private)),
        ("::ffff:8.8.8.8", None),
    ] {
        assert_eq!(class(ip), expected, "{ip}");
    }
}

fn fake_dns(host: &str, port: u16) -> Vec<SocketAddr> {
    let ips: &[&str] = match host {
        "public.example" => &["93.184.215.14"],
        "mixed.example" => &["93.184.215.14", "10.0.0.5"],
        "rebind.example" => &["::ffff:127.0.0.1"],
        "localhost" => &["127.0.0.1"],
        _ => &[],
    };
    ips.iter()
        .map(|ip| SocketAddr::new(ip.parse().unwrap(), port))
        .collect()
}

fn guard(allow_private: bool) -> Guard {
    Guard::new(allow_private, Arc::new(fake_dns))
}

async fn vet(guard: &Guard, url: &str) -> Result<Vetted, Refused> {
    guard.vet(&Url::parse(url).unwrap()).await
}

#[tokio::test]
async fn private_and_local_urls_are_refused() {
    let guard = guard(false);
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://LOCALHOST./x",
        "http://app.localhost/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://10.0.0.1",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[fe80::1]/",
        "http://0.0.0.0:80/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://mixed.example/",
        "http://rebind.example/",
    ] {
        let refused = vet(&guard, url).await.unwrap_err();
        assert!(
            matches!(refused, Refused::Name(_) | Refused::Address { .. }),
            "{url}: {refused}"
        );
        assert!(
            refused
                .to_string()
                .contains("the configuration can allow private addresses"),
            "{refused}"
        );
    }
    let message = vet(&guard, "http://169.254.169.254/latest/meta-data")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("169.254.169.254 is a link-local address"),
        "{message}"
    );
    let message = vet(&guard, "http://mixed.example/")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("10.0.0.5 is a private network address"),
        "{message}"
    );
}

#[tokio::test]
async fn public_hosts_are_pinned_to_their_vetted_addresses() {
    let guard = guard(false);
    assert_eq!(
        vet(&guard, "https://public.example/a").await.unwrap(),
        Vetted {
            host: Some("public.example".into()),
            addrs: vec!["93.184.215.14:443".parse().unwrap()],
        }
    );
    assert_eq!(
        vet(&guard, "http://8.8.8.8:8080/").await.unwrap(),
        Vetted {
            host: None,
            addrs: vec!["8.8.8.8:8080".parse().unwrap()],
        }
    );
}

#[tokio::test]
async fn allow_private_skips_the_address_check() {
    let guard = guard(true);
    assert!(vet(&guard, "http://127.0.0.1:9/").await.is_ok());
    assert!(vet(&guard, "http://localhost/").await.is_ok());
    assert!(vet(&guard, "http://[::1]/").await.is_ok());
}

#[tokio::test]
async fn other_schemes_and_unknown_hosts_are_refused() {
    let guard = guard(true);
    assert_eq!(
        vet(&guard, "ftp://public.example/").await.unwrap_err(),
        Refused::Scheme("ftp".into())
    );
    assert!(matches!(
        vet(&guard, "file:///etc/passwd").await.unwrap_err(),
        Refused::Scheme(_)
    ));
    assert!(matches!(
        vet(&guard, "http://nowhere.example/").await.unwrap_err(),
        Refused::Unresolvable { .. }
    ));
}
