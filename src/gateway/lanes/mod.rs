//! Lanes, the middle stage: one lane per active session runs its queued messages one turn at a
//! time (`pool` creates and retires lanes under the global turn cap, `lane` is the loop, `turn`
//! prepares, runs and commits one turn). Around a turn: what the model sees of the messages
//! (`prompt_input`, `documents`, `skills_chat`), the person it can ask (`chat_interaction`), the answer
//! streamed into the chat (`stream_view`), automatic resets (`resets`) and the background
//! reviews after it (`reviews`).

pub(crate) mod chat_interaction;
pub(crate) mod documents;
pub(crate) mod lane;
pub(crate) mod pool;
pub(crate) mod prompt_input;
pub(crate) mod resets;
pub(crate) mod reviews;
pub(crate) mod shares;
pub(crate) mod skills_chat;
pub(crate) mod stream_view;
pub(crate) mod turn;
