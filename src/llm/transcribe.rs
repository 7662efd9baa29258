//! Speech to text through an OpenAI-compatible `POST {base}/audio/transcriptions` (multipart:
//! `file`, `model`, `response_format=json`), for voice messages.

use std::time::Duration;

use crate::config::TranscriptionEndpoint;

/// Longest a transcription may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A configured transcription endpoint.
#[derive(Clone)]
pub struct Transcriber {
    endpoint: TranscriptionEndpoint,
    http: reqwest::Client,
}

impl Transcriber {
    pub fn new(endpoint: TranscriptionEndpoint) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("hermes/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Transcriber { endpoint, http })
    }

    /// Recordings larger than this are not sent.
    pub fn max_bytes(&self) -> u64 {
        self.endpoint.max_bytes
    }

    /// The text spoken in `audio` (named `name`, of type `mime`).
    pub async fn transcribe(
        &self,
        audio: Vec<u8>,
        name: &str,
        mime: &str,
    ) -> Result<String, String> {
        let part = reqwest::multipart::Part::bytes(audio)
            .file_name(name.to_owned())
            .mime_str(mime)
            .map_err(|e| format!("bad media type {mime}: {e}"))?;
        let form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", self.endpoint.model.clone())
            .text("response_format", "json");
        let mut req = self
            .http
            .post(format!("{}/audio/transcriptions", self.endpoint.base_url))
            .multipart(form);
        if !self.endpoint.api_key.is_empty() {
            req = req.bearer_auth(self.endpoint.api_key.expose());
        }
        // reqwest errors name the URL, never the key; keep only their kind.
        let response = req.send().await.map_err(|e| {
            if e.is_timeout() {
                "the transcription service did not answer in time".to_owned()
            } else {
                "the transcription service is unreachable".to_owned()
            }
        })?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|_| "the transcription answer was cut off".to_owned())?;
        if !status.is_success() {
            let why = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_default();
            return Err(format!("the transcription service answered {status} {why}")
                .trim()
                .to_owned());
        }
        let text = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["text"].as_str().map(str::to_owned))
            .ok_or("the transcription answer has no text")?;
        Ok(text.trim().to_owned())
    }
}
