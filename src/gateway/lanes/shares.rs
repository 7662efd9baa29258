//! Fair shares: what one person may hold of the daemon at once. Each person gets a few turns in
//! flight across all their sessions (a flood of threads cannot take every global slot), a
//! message rate above which their messages still queue but no longer interrupt the running turn
//! (and they are told once to slow down), and a rate for commands that call the model.
//! Nothing is ever dropped: a message over a limit waits its turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use hermes_adapter::{Platform, UserId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One person, across platforms' sessions.
pub(crate) type Person = (Platform, UserId);

/// Commands that call the model one person may start per minute.
pub(crate) const MODEL_COMMANDS_PER_MINUTE: u32 = 4;

/// The window of every rate.
const MINUTE: Duration = Duration::from_secs(60);

/// Turn slots and message rates per person.
pub(crate) struct Shares {
    turns_per_person: usize,
    messages_per_minute: u32,
    slots: DashMap<Person, Arc<Semaphore>>,
    rates: DashMap<Person, Window>,
    /// Each person's commands that call the model (`/compress`) in the current minute.
    model_commands: DashMap<Person, Window>,
}

/// What one person did in the current minute, and whether they were told to slow down.
#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    count: u32,
    warned: bool,
}

impl Window {
    fn new(now: Instant) -> Window {
        Window {
            started: now,
            count: 0,
            warned: false,
        }
    }
}

/// What the router does with a message, by its sender's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Within the rate: handled as usual.
    Normal,
    /// Over the rate: queued, never interrupting; `true` the first time in this minute (tell them).
    Over { first: bool },
}

impl Shares {
    pub fn new(turns_per_person: usize, messages_per_minute: u32) -> Shares {
        Shares {
            turns_per_person: turns_per_person.max(1),
            messages_per_minute: messages_per_minute.max(1),
            slots: DashMap::new(),
            rates: DashMap::new(),
            model_commands: DashMap::new(),
        }
    }

    /// Whether `person` may start a command that calls the model now; otherwise how long until
    /// they may.
    pub fn model_command(&self, person: &Person, now: Instant) -> Result<(), Duration> {
        let mut w = self
            .model_commands
            .entry(person.clone())
            .or_insert(Window::new(now));
        if now.duration_since(w.started) >= MINUTE {
            *w = Window::new(now);
        }
        if w.count >= MODEL_COMMANDS_PER_MINUTE {
            return Err(MINUTE - now.duration_since(w.started));
        }
        w.count += 1;
        Ok(())
    }

    /// Wait for one of `person`'s turn slots.
    pub async fn turn_slot(&self, person: &Person) -> OwnedSemaphorePermit {
        let slots = self
            .slots
            .entry(person.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.turns_per_person)))
            .clone();
        slots
            .acquire_owned()
            .await
            .expect("the per-person semaphore is never closed")
    }

    /// Count a message of `person` against their rate.
    pub fn pace(&self, person: &Person, now: Instant) -> Pace {
        let mut w = self.rates.entry(person.clone()).or_insert(Window::new(now));
        if now.duration_since(w.started) >= MINUTE {
            *w = Window::new(now);
        }
        w.count += 1;
        if w.count <= self.messages_per_minute {
            return Pace::Normal;
        }
        let first = !w.warned;
        w.warned = true;
        Pace::Over { first }
    }

    /// Forget idle people: slot sets nobody holds and windows over a minute old.
    pub fn shrink(&self, now: Instant) {
        self.slots
            .retain(|_, s| s.available_permits() < self.turns_per_person);
        self.rates
            .retain(|_, w| now.duration_since(w.started) < MINUTE);
        self.model_commands
            .retain(|_, w| now.duration_since(w.started) < MINUTE);
        // Tables that held thousands of people give the room back.
        self.slots.shrink_to_fit();
        self.rates.shrink_to_fit();
        self.model_commands.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Person {
        (Platform::Telegram, "1".into())
    }

    #[tokio::test]
    async fn a_person_holds_at_most_their_turn_slots() {
        let shares = Shares::new(2, 20);
        let a = shares.turn_slot(&alice()).await;
        let _b = shares.turn_slot(&alice()).await;
        let who = alice();
        let third = tokio::time::timeout(Duration::from_millis(50), shares.turn_slot(&who));
        assert!(third.await.is_err(), "a third turn waits");
        let bob: Person = (Platform::Telegram, "2".into());
        let _c = shares.turn_slot(&bob).await;
        drop(a);
        let _d = shares.turn_slot(&alice()).await;
    }

    #[test]
    fn over_the_rate_is_told_once_a_minute() {
        let shares = Shares::new(2, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(shares.pace(&alice(), t0), Pace::Normal);
        }
        assert_eq!(shares.pace(&alice(), t0), Pace::Over { first: true });
        assert_eq!(shares.pace(&alice(), t0), Pace::Over { first: false });
        let later = t0 + Duration::from_secs(61);
        assert_eq!(shares.pace(&alice(), later), Pace::Normal);
        shares.shrink(later + Duration::from_secs(61));
        assert!(shares.rates.is_empty() && shares.slots.is_empty());
    }

    #[test]
    fn model_commands_are_limited_per_person_and_minute() {
        let shares = Shares::new(2, 20);
        let t0 = Instant::now();
        for _ in 0..MODEL_COMMANDS_PER_MINUTE {
            assert!(shares.model_command(&alice(), t0).is_ok());
        }
        let wait = shares
            .model_command(&alice(), t0 + Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(wait, Duration::from_secs(50));
        let bob: Person = (Platform::Telegram, "2".into());
        assert!(shares.model_command(&bob, t0).is_ok());
        assert!(shares.model_command(&alice(), t0 + MINUTE).is_ok());
    }
}
