//! Photos reach vision models, through the real binary: the Telegram photo is downloaded and
//! sent to the model as an image part of the user's message; without vision the model is told it
//! cannot see it.

use crate::support;

use serde_json::json;
use support::WAIT;
use support::daemon::{ALICE, World};
use support::llm::{PNG, PNG_DATA_URL};

fn photo_update(w: &World, caption: &str) {
    w.tg.add_file("photo-1", PNG.to_vec());
    w.tg.push_update(json!({"message": {
        "message_id": 77, "date": 1_700_000_000,
        "chat": {"id": ALICE, "type": "private", "first_name": "Alice"},
        "from": {"id": ALICE, "is_bot": false, "first_name": "Alice"},
        "caption": caption,
        "photo": [{"file_id": "photo-1", "file_unique_id": "u1", "width": 64, "height": 48, "file_size": PNG.len()}]
    }}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_reaches_a_vision_model_as_an_image() {
    let mut w = World::new("[llm]\nvision = true\n").await;
    let _daemon = w.start().await;
    photo_update(&w, "what is in this picture?");
    w.tg.wait_sent(1, WAIT).await;
    let req = w.llm.requests().pop().unwrap();
    let parts = req.last_user_parts();
    let text = parts.iter().find(|p| p["type"] == "text").unwrap();
    assert!(
        text["text"]
            .as_str()
            .unwrap()
            .starts_with("what is in this picture?")
    );
    assert_eq!(req.image_url().expect("an image part"), PNG_DATA_URL);

    // The next turn's request carries only text: images go with the turn that received them.
    w.tg.private_text(ALICE, "Alice", "thanks");
    w.tg.wait_sent(2, WAIT).await;
    let next = w.llm.requests().pop().unwrap();
    assert!(next.messages().iter().all(|m| !m["content"].is_array()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_vision_the_model_is_told_it_cannot_see_the_photo() {
    let mut w = World::new("").await;
    let _daemon = w.start().await;
    photo_update(&w, "look");
    w.tg.wait_sent(1, WAIT).await;
    let text = w.llm.requests()[0].last_user_text().unwrap();
    assert!(text.contains("[attached Image file"), "{text}");
    assert!(text.contains("You cannot open attachments here"), "{text}");
}
