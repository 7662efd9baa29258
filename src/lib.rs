//! hermes
