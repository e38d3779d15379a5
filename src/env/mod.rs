//! Environments of a pipeline (`pipeline run --env NAME` writes each changed table's Iceberg
//! branch NAME; see `catalog::env`): which there are ([`list`]), publishing one to `main`
//! ([`publish`]) and dropping one ([`drop`]), both on one operation ([`operation`]).

mod diff;
mod diff_rows;
mod diff_scan;
mod drop;
mod list;
mod operation;
mod publish;
mod rebase;

pub use diff::{diff_env, TableDiff};
pub use drop::drop_env;
pub use list::{list_envs, EnvSummary};
pub use operation::EnvChange;
pub use publish::publish_env;
pub use rebase::{diverged, refuse_lost_edits};
