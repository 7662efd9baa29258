//! Voice messages through the real binary: a Telegram voice note is transcribed by the
//! OpenAI-compatible speech-to-text endpoint and the model reads the words; a failed
//! transcription is said to the model instead of being dropped; without transcription the model
//! is told it cannot open the recording.

use crate::support;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, World};

/// An Ogg page header followed by filler: the fake does not decode audio.
const OGG: &[u8] = b"OggS\x00\x02fake opus voice note";

fn voice_update(w: &World, caption: Option<&str>) {
    w.tg.add_file("voice-1", OGG.to_vec());
    let mut message = json!({
        "message_id": 91, "date": 1_700_000_000,
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"},
        "from": {"id": ALICE, "is_bot": false, "first_name": "Alice"},
        "voice": {"file_id": "voice-1", "file_unique_id": "uv1", "duration": 3,
            "mime_type": "audio/ogg", "file_size": OGG.len()}
    });
    if let Some(c) = caption {
        message["caption"] = json!(c);
    }
    w.tg.push_update(json!({ "message": message }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_reaches_the_model_as_its_transcript() {
    let mut w = World::new("").await;
    w.llm.set_transcript(Ok("remind me to water the plants"));
    let _daemon = w.start().await;
    voice_update(&w, None);
    w.tg.wait_sent(1, WAIT).await;

    let calls = w.llm.transcriptions();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].model, "whisper-1");
    assert_eq!(calls[0].size, OGG.len());
    assert_eq!(
        calls[0].authorization.as_deref(),
        Some("Bearer sk-test-key")
    );
    let text = w.llm.requests()[0].last_user_text().unwrap();
    assert!(
        text.contains("transcribed: remind me to water the plants"),
        "{text}"
    );
    assert!(!text.contains("cannot open attachments"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_transcription_is_told_to_the_model() {
    let mut w = World::new("").await;
    w.llm.set_transcript(Err(503));
    let _daemon = w.start().await;
    voice_update(&w, Some("listen to this"));
    w.tg.wait_sent(1, WAIT).await;
    let text = w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.starts_with("listen to this"), "{text}");
    assert!(
        text.contains("could not be transcribed: the transcription service answered 503"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_transcription_the_model_knows_it_cannot_listen() {
    let mut w = World::new("[transcription]\nenabled = false\n").await;
    let _daemon = w.start().await;
    voice_update(&w, None);
    w.tg.wait_sent(1, WAIT).await;
    assert!(w.llm.transcriptions().is_empty());
    let text = w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.contains("cannot open attachments"), "{text}");
}
