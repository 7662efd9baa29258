//! HTTP plumbing shared by the fake servers: an axum listener whose connections a handler can
//! kill (closed without a response, as a dropped connection looks to the client) or pace (SSE
//! events written one at a time with a delay, optionally cut off after N events), request
//! parameter decoding (query, form-urlencoded, multipart), and free ports for servers tests
//! start.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// Binds 127.0.0.1:0, serves `app` in a spawned task and returns the port. Handlers can take
/// `ConnectInfo<ConnCtl>` to control their connection.
pub async fn serve(app: Router, name: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    let service = app.into_make_service_with_connect_info::<ConnCtl>();
    tokio::spawn(async move {
        if let Err(e) = axum::serve(CtlListener(listener), service).await {
            panic!("{name}: server stopped: {e}");
        }
    });
    port
}

/// A port on 127.0.0.1 that was free a moment ago, for a server that binds it itself (the
/// daemon's Events API listener, a private Dovecot or Synapse).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Control over one accepted connection (the handler's `ConnectInfo`).
#[derive(Clone, Debug, Default)]
pub struct ConnCtl(Arc<Mutex<CtlState>>);

#[derive(Debug, Default)]
struct CtlState {
    killed: bool,
    pace: Option<Duration>,
    cut_after: Option<usize>,
}

impl ConnCtl {
    fn state(&self) -> std::sync::MutexGuard<'_, CtlState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Every later read/write fails, so hyper closes the socket without sending anything more.
    pub fn kill(&self) {
        self.state().killed = true;
    }
    /// The response is written one SSE event (`\n\n`-terminated) at a time, sleeping `delay`
    /// after each; after `cut_after` events the connection is killed. Send `Connection: close`
    /// with such a response, since the setting stays on the connection.
    pub fn pace(&self, delay: Duration, cut_after: Option<usize>) {
        let mut st = self.state();
        st.pace = Some(delay);
        st.cut_after = cut_after;
    }
}

struct CtlListener(TcpListener);

pub struct CtlIo {
    io: TcpStream,
    ctl: ConnCtl,
    out: Vec<u8>,
    sleep: Option<Pin<Box<Sleep>>>,
    events: usize,
}

impl Listener for CtlListener {
    type Io = CtlIo;
    type Addr = ConnCtl;
    async fn accept(&mut self) -> (CtlIo, ConnCtl) {
        loop {
            if let Ok((io, _)) = self.0.accept().await {
                let _ = io.set_nodelay(true);
                let ctl = ConnCtl::default();
                let (out, sleep, events) = (Vec::new(), None, 0);
                return (
                    CtlIo {
                        io,
                        ctl: ctl.clone(),
                        out,
                        sleep,
                        events,
                    },
                    ctl,
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    fn local_addr(&self) -> io::Result<ConnCtl> {
        Ok(ConnCtl::default())
    }
}

impl Connected<IncomingStream<'_, CtlListener>> for ConnCtl {
    fn connect_info(stream: IncomingStream<'_, CtlListener>) -> Self {
        stream.remote_addr().clone()
    }
}

fn killed_err() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "fake server: connection dropped on purpose",
    )
}

impl AsyncRead for CtlIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.ctl.state().killed {
            return Poll::Ready(Err(killed_err()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for CtlIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let (killed, paced) = {
            let st = self.ctl.state();
            (st.killed, st.pace.is_some())
        };
        if killed {
            return Poll::Ready(Err(killed_err()));
        }
        if !paced && self.out.is_empty() {
            return Pin::new(&mut self.io).poll_write(cx, buf);
        }
        self.out.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            let (killed, pace, cut_after) = {
                let st = this.ctl.state();
                (st.killed, st.pace, st.cut_after)
            };
            if killed {
                return Poll::Ready(Err(killed_err()));
            }
            if let Some(sleep) = this.sleep.as_mut() {
                ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
            if this.out.is_empty() {
                return Pin::new(&mut this.io).poll_flush(cx);
            }
            let boundary = pace.and_then(|_| find(&this.out, b"\n\n").map(|p| p + 2));
            let end = boundary.unwrap_or(this.out.len());
            let n = ready!(Pin::new(&mut this.io).poll_write(cx, &this.out[..end]))?;
            this.out.drain(..n);
            if let (Some(delay), Some(_)) = (pace, boundary.filter(|&b| b == n)) {
                this.events += 1;
                if cut_after.is_some_and(|c| this.events >= c) {
                    this.ctl.kill();
                    return Poll::Ready(Err(killed_err()));
                }
                this.sleep = Some(Box::pin(tokio::time::sleep(delay)));
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.ctl.state().killed {
            ready!(self.as_mut().poll_flush(cx))?;
        }
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Percent-decodes `s` (`+` as space when `plus_is_space`, as in form bodies).
pub fn pct_decode(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = || u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok();
        match b[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if hex().is_some() => {
                out.push(hex().unwrap_or(0));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A form/query/multipart field: JSON if it looks like a JSON object or array, else a string.
fn form_value(s: String) -> Value {
    let t = s.trim_start();
    if (t.starts_with('{') || t.starts_with('['))
        && let Ok(v) = serde_json::from_str(t)
    {
        return v;
    }
    Value::String(s)
}

/// Adds the pairs of a query string or form-urlencoded body.
pub fn parse_pairs(s: &str, into: &mut Map<String, Value>) {
    for pair in s.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        into.insert(pct_decode(k, true), form_value(pct_decode(v, true)));
    }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Adds the fields of a multipart/form-data body; a file part becomes
/// `{"file_name": …, "size": bytes}`.
pub fn parse_multipart(content_type: &str, body: &[u8], into: &mut Map<String, Value>) {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="));
    let Some(boundary) = boundary else {
        return;
    };
    let delim = format!("--{}", boundary.trim_matches('"'));
    let mut rest = body;
    while let Some(start) = find(rest, delim.as_bytes()) {
        rest = &rest[start + delim.len()..];
        let end = find(rest, delim.as_bytes()).unwrap_or(rest.len());
        let part = rest[..end].strip_prefix(b"\r\n").unwrap_or(&rest[..end]);
        let Some(h) = find(part, b"\r\n\r\n") else {
            continue;
        };
        let headers = String::from_utf8_lossy(&part[..h]).into_owned();
        let content = &part[h + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        let param = |key: &str| {
            let pre = format!("{key}=\"");
            let mut fields = headers.split(';').map(str::trim);
            fields.find_map(|s| Some(s.strip_prefix(&pre)?.split('"').next()?.to_string()))
        };
        let Some(name) = param("name") else {
            continue;
        };
        let value = match param("filename") {
            Some(f) => json!({"file_name": f, "size": content.len()}),
            None => form_value(String::from_utf8_lossy(content).into_owned()),
        };
        into.insert(name, value);
    }
}
