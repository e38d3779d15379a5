//! `pipeline erase PIPELINE --where COND --reason TEXT`: one subject's rows removed from every
//! table that holds them, in one audited, recorded, undoable publish ([`erase`], see
//! `command.rs`). Which tables hold the subject ([`subject`]), the quarantined raw lines that
//! match ([`raw`]), the landing files rewritten without the subject (`--rewrite-sources`,
//! [`sources`]) and the older snapshots expired with their files (`--purge`, [`purge`]).
//!
//! Guarantee: the erase publishes every rewritten table, the tables recomputed from them and
//! its receipt together, or nothing; a landing file is replaced only after that publish.

mod command;
mod purge;
mod raw;
mod request;
mod search;
mod sources;
pub mod subject;

pub use command::{erase, EraseReport};
pub use request::EraseRequest;
pub use subject::{recomputed_by_erase, subject_tables, SubjectTable};
