//! The limits against raw TCP clients on 127.0.0.1.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::{Limits, serve};

fn tight() -> Limits {
    Limits {
        max_connections: 3,
        header_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(600),
        max_body_bytes: 1024,
        connection_lifetime: Duration::from_secs(20),
    }
}

async fn start(limits: Limits) -> (String, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let app = Router::new().route(
        "/",
        post(|body: Bytes| async move { format!("got {}", body.len()) }),
    );
    let stop = CancellationToken::new();
    tokio::spawn(serve(listener, app, limits, stop.clone(), "test"));
    (addr, stop)
}

/// Everything the server sends until it closes the connection (or 5 s pass).
async fn read_all(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

async fn post_body(addr: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    read_all(&mut s).await
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let (addr, _stop) = start(tight()).await;
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let began = Instant::now();
    let answer = read_all(&mut slow).await;
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "closed after {:?}: {answer}",
        began.elapsed()
    );
    assert!(!answer.contains("got"), "{answer}");
    assert!(post_body(&addr, "hi").await.contains("got 2"));
}

#[tokio::test]
async fn a_body_that_trickles_in_gets_408_and_its_slot_back() {
    let (addr, _stop) = start(tight()).await;
    let mut slow = TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
        .await
        .unwrap();
    let answer = read_all(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_from_its_length_alone() {
    let (addr, _stop) = start(tight()).await;
    let mut s = TcpStream::connect(&addr).await.unwrap();
    // Announce 10 MB and send none of it: the answer must not wait for the body.
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n")
        .await
        .unwrap();
    let answer = read_all(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        post_body(&addr, &"x".repeat(1024))
            .await
            .contains("got 1024")
    );
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_and_the_slots_come_back() {
    let (addr, _stop) = start(tight()).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"POST / HTTP/1.1\r\n").await.unwrap();
        held.push(s);
    }
    // Give the server a moment to accept all three.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut extra = TcpStream::connect(&addr).await.unwrap();
    let _ = extra.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    let began = Instant::now();
    let answer = read_all(&mut extra).await;
    assert!(
        answer.is_empty(),
        "a fourth connection is closed unanswered: {answer}"
    );
    assert!(
        began.elapsed() < Duration::from_millis(250),
        "closed at once"
    );
    // The held ones time out on their headers; then the port serves again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(post_body(&addr, "ok").await.contains("got 2"));
}
