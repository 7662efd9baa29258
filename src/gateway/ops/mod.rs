//! Operating the daemon: the admin endpoint (`admin`: health, readiness, metrics), the status
//! report behind it and `/status` (`status`), systemd notifications and the watchdog
//! (`notify`), housekeeping (`maintenance`) and configuration reload on `SIGHUP` (`reload`).

pub(crate) mod admin;
pub(crate) mod maintenance;
pub(crate) mod notify;
pub(crate) mod reload;
pub(crate) mod status;
