//! `[transcription]`: voice and audio messages turned into text before the agent sees them, by an
//! OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI's Whisper, Groq, a local
//! whisper.cpp or faster-whisper server).

use serde::{Deserialize, Serialize};

use super::{Config, ProviderKind, Secret};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// Off: voice messages reach the agent as attachments it cannot open.
    pub enabled: bool,
    /// Base URL up to `/v1`; empty: the main provider's, when it is OpenAI-compatible.
    pub base_url: String,
    /// Empty: the main provider's key when `base_url` is empty too.
    /// Env: `TRANSCRIPTION_API_KEY`.
    pub api_key: Secret,
    pub model: String,
    /// Longer recordings are not sent (OpenAI accepts 25 MB).
    pub max_mb: u64,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        TranscriptionConfig {
            enabled: true,
            base_url: String::new(),
            api_key: Secret::default(),
            model: "whisper-1".into(),
            max_mb: 25,
        }
    }
}

/// Where and how to transcribe, resolved against the main provider.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptionEndpoint {
    pub base_url: String,
    pub api_key: Secret,
    pub model: String,
    pub max_bytes: u64,
}

impl Config {
    /// The transcription endpoint in force, if any: off when disabled, or when no URL is set and
    /// the main provider is not OpenAI-compatible (Anthropic has no speech-to-text).
    pub fn transcription(&self) -> Option<TranscriptionEndpoint> {
        let t = &self.transcription;
        if !t.enabled {
            return None;
        }
        let (base_url, api_key) = if !t.base_url.trim().is_empty() {
            (t.base_url.trim().to_owned(), t.api_key.clone())
        } else if self.llm.provider == ProviderKind::Openai && self.llm.is_configured() {
            let key = if t.api_key.is_empty() {
                self.llm.api_key.clone()
            } else {
                t.api_key.clone()
            };
            (self.llm.base_url.clone(), key)
        } else {
            return None;
        };
        Some(TranscriptionEndpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: t.model.clone(),
            max_bytes: t.max_mb.saturating_mul(1024 * 1024),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_an_openai_compatible_provider_and_stays_off_for_anthropic() {
        let mut c = Config::default();
        c.llm.api_key = Secret::new("sk-main");
        let t = c.transcription().expect("on by default with an OpenAI key");
        assert_eq!(t.base_url, c.llm.base_url);
        assert_eq!(t.api_key.expose(), "sk-main");
        assert_eq!((t.model.as_str(), t.max_bytes), ("whisper-1", 25 << 20));

        c.llm.provider = ProviderKind::Anthropic;
        assert_eq!(c.transcription(), None);
        c.transcription.base_url = "http://127.0.0.1:9000/v1/".into();
        let t = c.transcription().expect("an explicit endpoint");
        assert_eq!(t.base_url, "http://127.0.0.1:9000/v1");
        assert!(t.api_key.is_empty(), "the main key is not sent elsewhere");

        c.transcription.enabled = false;
        assert_eq!(c.transcription(), None);
    }
}
