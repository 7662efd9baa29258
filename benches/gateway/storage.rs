//! Store write throughput through the library API the gateway uses: `inbox_insert` (one
//! transaction per message, as each inbound message is stored before it is acknowledged) and
//! `outbox_enqueue` (one reply per transaction), sequentially and from many tasks at once, on a
//! database file in a temporary directory (WAL, the daemon's settings).

use std::time::Instant;

use hermes::store::Store;
use hermes_adapter::{Chat, ChatKind, Message, Outbound, Platform, Sender, Trigger};

/// Writes per second.
#[derive(Debug, Clone, Default)]
pub struct Writes {
    pub n: usize,
    pub inbox_seq: f64,
    pub inbox_concurrent: f64,
    pub outbox_seq: f64,
    pub outbox_concurrent: f64,
    pub tasks: usize,
}

fn message(chat: usize, id: usize) -> Message {
    Message {
        platform: Platform::Telegram,
        id: id.to_string().as_str().into(),
        chat: Chat {
            id: chat.to_string().as_str().into(),
            kind: ChatKind::Direct,
            title: None,
        },
        thread: None,
        sender: Sender {
            id: chat.to_string().as_str().into(),
            display_name: "User".into(),
            handle: None,
            is_bot: false,
        },
        text: format!("message number {id}: what is the weather like in Lisbon tomorrow?"),
        attachments: vec![],
        reply_to: None,
        sent_at: 0,
        subject: None,
        topic: None,
        trigger: Trigger::Direct,
    }
}

fn reply(chat: usize, id: usize) -> (Platform, Outbound) {
    let out = Outbound::text(
        chat.to_string().as_str().into(),
        format!("echo: message number {id}: what is the weather like in Lisbon tomorrow?"),
        format!("bench:{chat}:{id}"),
    );
    (Platform::Telegram, out)
}

async fn timed<F, Fut>(n: usize, tasks: usize, f: F) -> f64
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let t = Instant::now();
    let mut handles = Vec::new();
    for task in 0..tasks {
        let f = f.clone();
        handles.push(tokio::spawn(async move {
            let mut i = task;
            while i < n {
                f(i).await;
                i += tasks;
            }
        }));
    }
    for h in handles {
        h.await.expect("writer task");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

pub async fn writes(n: usize, tasks: usize) -> Writes {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("state.db")).expect("open store");
    let mut w = Writes {
        n,
        tasks,
        ..Writes::default()
    };
    let s = store.clone();
    w.inbox_seq = timed(n, 1, move |i| {
        let s = s.clone();
        async move {
            s.inbox_insert(&message(i % 500, i)).await.expect("insert");
        }
    })
    .await;
    let s = store.clone();
    w.inbox_concurrent = timed(n, tasks, move |i| {
        let s = s.clone();
        async move {
            s.inbox_insert(&message(i % 500, n + i))
                .await
                .expect("insert");
        }
    })
    .await;
    let s = store.clone();
    w.outbox_seq = timed(n, 1, move |i| {
        let s = s.clone();
        async move {
            s.outbox_enqueue(vec![reply(i % 500, i)])
                .await
                .expect("enqueue");
        }
    })
    .await;
    let s = store.clone();
    w.outbox_concurrent = timed(n, tasks, move |i| {
        let s = s.clone();
        async move {
            s.outbox_enqueue(vec![reply(i % 500, n + i)])
                .await
                .expect("enqueue");
        }
    })
    .await;
    w
}
