//! Permission policy: a level per session (`safe`, `auto`, `full-access`) and a category per tool
//! (`read`, `write`, `system`, `finance`) decide through a matrix whether a call runs at once
//! (`auto`), waits for the user's confirmation in the chat (`confirm`), or is refused (`deny`).
//!
//! | level \ category | read | write | system | finance |
//! |---|---|---|---|---|
//! | safe | confirm | confirm | confirm | confirm |
//! | auto | auto | auto | confirm | confirm |
//! | full-access | auto | auto | auto | auto |
//!
//! Configuration can override any cell and any single tool (including `deny`). A call the tool
//! itself flags as dangerous (a recursive delete, `curl | sh`…) needs confirmation below
//! `full-access` whatever the matrix says, and grants ("allow for this session", "always") never
//! cover it. An unanswered confirmation is a denial.

mod approvals;
mod category;
mod matrix;
mod role;

pub use approvals::{Answer, ApprovalBook, Book, Pending, Rejection, Resolved};
pub use category::Category;
pub use matrix::{Decision, Level, PolicyMatrix};
pub use role::{OPERATORS_ONLY, Role};
