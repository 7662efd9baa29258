//! Server-Sent Events for streamed answers: both providers read their response body as a
//! sequence of `event:`/`data:` records and stop at their own end marker (`data: [DONE]`,
//! `message_stop`).
//!
//! Framing is done by the `eventsource-stream` crate rather than a parser of our own: it follows
//! the WHATWG grammar (`\n`, `\r\n` and lone `\r` line ends, multi-line `data:` joined with
//! `\n`, comments, a leading BOM), buffers lines and UTF-8 sequences split across network
//! chunks, is small (nom and pin-project-lite, no runtime), is what the wider Rust SSE client
//! ecosystem builds on, and builds here with resolver 3 on Rust 1.95. The tests below pin the
//! behaviour we rely on, so a regression in the crate shows up here.
//!
//! What this module adds: a stream that ends before the provider's end marker is an error,
//! never a short answer; transport, UTF-8 and framing failures become `LlmError`s without
//! echoing the body.

use std::pin::pin;

use eventsource_stream::{EventStream, EventStreamError};
use futures_util::{Stream, StreamExt};

use super::LlmError;

/// One dispatched event. `event` is `message` when the server named none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SseEvent {
    pub event: String,
    pub data: String,
}

/// What the event handler wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    More,
    Done,
}

/// Feeds each event of `body` to `on_event` until it answers [`Flow::Done`] (or fails).
///
/// A body that ends first, or breaks off, is `Unavailable` (retryable): the answer is
/// incomplete. `transport` turns the body's own read errors into an `LlmError`.
pub(super) async fn read_events<S, B, E>(
    body: S,
    transport: impl Fn(E) -> LlmError,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, LlmError>,
) -> Result<(), LlmError>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let mut events = pin!(EventStream::new(body));
    while let Some(item) = events.next().await {
        let event = match item {
            Ok(e) => e,
            Err(EventStreamError::Transport(e)) => return Err(transport(e)),
            Err(EventStreamError::Utf8(_)) => {
                return Err(LlmError::Malformed("the answer stream is not UTF-8".into()));
            }
            Err(EventStreamError::Parser(_)) => {
                return Err(LlmError::Malformed(
                    "the answer stream is not valid server-sent events".into(),
                ));
            }
        };
        let event = SseEvent {
            event: event.event,
            data: event.data,
        };
        if on_event(event)? == Flow::Done {
            return Ok(());
        }
    }
    Err(LlmError::Unavailable(
        "the answer stream ended before the answer was complete".into(),
    ))
}

#[cfg(test)]
mod tests {
    use futures_util::stream;

    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    /// Events of `chunks` up to and including one whose data is `[DONE]`.
    async fn collect(chunks: Vec<Vec<u8>>) -> Result<Vec<SseEvent>, LlmError> {
        let body = stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        let mut out = Vec::new();
        let transport = |e: std::io::Error| LlmError::Unavailable(e.to_string());
        read_events(body, transport, |e| {
            let done = e.data == "[DONE]";
            out.push(e);
            Ok(if done { Flow::Done } else { Flow::More })
        })
        .await
        .map(|()| out)
    }

    const WIRE: &str = ": keepalive\r\n\r\n\
        event: message_start\r\ndata: {\"a\":1}\r\n\r\n\
        data: first line\ndata: second line\n\n\
        :comment between fields\ndata:no space\nid: 7\nretry: 100\nunknown: field\n\n\
        data: caf\u{e9} \u{1F600}\r\rdata: [DONE]\n\n";

    fn expected() -> Vec<SseEvent> {
        vec![
            ev("message_start", "{\"a\":1}"),
            ev("message", "first line\nsecond line"),
            ev("message", "no space"),
            ev("message", "caf\u{e9} \u{1F600}"),
            ev("message", "[DONE]"),
        ]
    }

    #[tokio::test]
    async fn whole_body_parses_into_events() {
        assert_eq!(collect(vec![WIRE.into()]).await.unwrap(), expected());
    }

    #[tokio::test]
    async fn any_split_into_two_chunks_parses_the_same() {
        let bytes = WIRE.as_bytes();
        for at in 0..=bytes.len() {
            let chunks = vec![bytes[..at].to_vec(), bytes[at..].to_vec()];
            assert_eq!(collect(chunks).await.unwrap(), expected(), "split at {at}");
        }
    }

    #[tokio::test]
    async fn one_byte_chunks_parse_the_same() {
        let chunks = WIRE.bytes().map(|b| vec![b]).collect();
        assert_eq!(collect(chunks).await.unwrap(), expected());
    }

    #[tokio::test]
    async fn crlf_split_between_chunks_is_one_line_end() {
        let chunks = vec![
            b"data: a\r".to_vec(),
            b"\ndata: b\r".to_vec(),
            b"\n\r".to_vec(),
            b"\ndata: [DONE]\r\n\r\n".to_vec(),
        ];
        let got = collect(chunks).await.unwrap();
        assert_eq!(got, vec![ev("message", "a\nb"), ev("message", "[DONE]")]);
    }

    #[tokio::test]
    async fn stream_ending_before_the_end_marker_is_unavailable() {
        let cut = collect(vec![b"data: {\"partial\": true}\n\ndata: [DO".to_vec()]).await;
        assert!(matches!(cut, Err(LlmError::Unavailable(_))), "{cut:?}");
        // A last event without its blank line is not dispatched either.
        let unterminated = collect(vec![b"data: [DONE]\n".to_vec()]).await;
        assert!(matches!(unterminated, Err(LlmError::Unavailable(_))));
    }

    #[tokio::test]
    async fn invalid_utf8_is_malformed() {
        let chunks = vec![b"data: ok\n\ndata: \xff\xfe\n\ndata: [DONE]\n\n".to_vec()];
        let body = stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        let mut seen = Vec::new();
        let got = read_events(
            body,
            |_| unreachable!(),
            |e| {
                seen.push(e);
                Ok(Flow::More)
            },
        )
        .await;
        assert!(matches!(got, Err(LlmError::Malformed(_))), "{got:?}");
        assert_eq!(seen, vec![ev("message", "ok")]);
    }

    #[tokio::test]
    async fn transport_errors_and_handler_errors_stop_reading() {
        let body = stream::iter(vec![
            Ok(b"data: one\n\n".to_vec()),
            Err(std::io::Error::other("reset")),
        ]);
        let got = read_events(
            body,
            |e| LlmError::Unavailable(e.to_string()),
            |_| Ok(Flow::More),
        )
        .await;
        assert_eq!(got, Err(LlmError::Unavailable("reset".into())));

        let body = stream::iter(vec![Ok::<_, std::io::Error>(
            b"data: one\n\ndata: two\n\n".to_vec(),
        )]);
        let mut calls = 0;
        let got = read_events(
            body,
            |_| unreachable!(),
            |_| {
                calls += 1;
                Err(LlmError::Malformed("bad".into()))
            },
        )
        .await;
        assert_eq!(got, Err(LlmError::Malformed("bad".into())));
        assert_eq!(calls, 1);
    }
}
