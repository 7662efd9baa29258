//! A TCP proxy on 127.0.0.1 in front of a real server (Dovecot, Synapse), for the one failure a
//! real server will not produce on demand: a connection that stays open but goes deaf. After
//! [`SilentProxy::go_silent`] the connections open at that moment forward nothing more, either
//! way, and stay open; connections opened afterwards work normally.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The proxy; it runs for the rest of the test process.
#[derive(Clone)]
pub struct SilentProxy {
    pub port: u16,
    /// Connections numbered below this are deaf.
    deaf_below: Arc<AtomicU64>,
    opened: Arc<AtomicU64>,
}

impl SilentProxy {
    /// Forward 127.0.0.1:<new port> to 127.0.0.1:`target`.
    pub async fn start(target: u16) -> SilentProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let proxy = SilentProxy {
            port,
            deaf_below: Arc::default(),
            opened: Arc::default(),
        };
        let p = proxy.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let number = p.opened.fetch_add(1, Ordering::SeqCst);
                let p = p.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await {
                        p.pipe(number, client, server).await;
                    }
                });
            }
        });
        proxy
    }

    /// Every connection open now goes deaf (open, silent both ways).
    pub fn go_silent(&self) {
        self.deaf_below
            .store(self.opened.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    fn deaf(&self, number: u64) -> bool {
        number < self.deaf_below.load(Ordering::SeqCst)
    }

    async fn pipe(&self, number: u64, client: TcpStream, server: TcpStream) {
        let (mut cr, mut cw) = client.into_split();
        let (mut sr, mut sw) = server.into_split();
        let up = {
            let p = self.clone();
            async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match cr.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if p.deaf(number) {
                        continue;
                    }
                    if sw.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        };
        let down = {
            let p = self.clone();
            async move {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match sr.read(&mut buf).await {
                        // A deaf connection stays open to the client whatever the server does.
                        Ok(0) | Err(_) if p.deaf(number) => std::future::pending().await,
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if p.deaf(number) {
                        continue;
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        };
        // Either side closing ends both (a deaf connection's server side never ends it).
        tokio::select! {
            _ = up => {}
            _ = down => {}
        }
    }
}
