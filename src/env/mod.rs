//! Environments of a pipeline (`pipeline run --env NAME` writes each changed table's Iceberg
//! branch NAME; see `catalog::env`): which there are ([`list`]) and dropping one ([`drop`]).

mod drop;
mod list;

pub use drop::{drop_env, DroppedEnv};
pub use list::{list_envs, EnvSummary};
