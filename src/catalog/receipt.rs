//! Who ran a command, why, and how to undo what it did: the part of a run record that
//! describes the invocation rather than the tables.

use serde::{Deserialize, Serialize};

/// The invocation behind a run, backfill or rollback.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Invocation {
    /// The operating-system user (`$USER`, `$LOGNAME`), or `unknown`.
    #[serde(default)]
    pub user: String,
    /// The machine's host name, or `unknown`.
    #[serde(default)]
    pub host: String,
    /// `--reason`: why the command was run (a ticket, an incident, "late February files").
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// The command line, as typed (secrets the process read are redacted).
    #[serde(default)]
    pub command: Vec<String>,
    /// `--catalog NAME` when the command used a `[catalogs.NAME]` of its spec.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub catalog: Option<String>,
    /// The MCP client that asked for it (`name version` from its handshake), when an agent
    /// did through `pipeline mcp`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub client: Option<String>,
}

impl Invocation {
    /// This process: its user, host and command line, with `reason` and `catalog`.
    pub fn current(reason: Option<String>, catalog: Option<String>) -> Invocation {
        let user = ["USER", "LOGNAME", "USERNAME"]
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| "unknown".into());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
            .unwrap_or_else(|| "unknown".into());
        let command = std::env::args()
            .enumerate()
            .map(|(i, a)| {
                if i == 0 {
                    "pipeline".to_string()
                } else {
                    crate::secrets::redact(&a).into_owned()
                }
            })
            .collect();
        Invocation {
            user,
            host,
            reason,
            command,
            catalog,
            client: None,
        }
    }

    /// The command that rolls back run `run_id` of `pipeline` in the same catalog.
    pub fn undo_command(&self, run_id: &str, pipeline: &str) -> String {
        let mut undo = format!("pipeline rollback {run_id} --pipeline {pipeline}");
        if let Some(c) = &self.catalog {
            undo.push_str(&format!(" --catalog {c}"));
        }
        undo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_undo_command_names_the_pipeline_and_catalog() {
        let mut i = Invocation::current(Some("late files".into()), None);
        assert_eq!(
            i.undo_command("r1", "retail"),
            "pipeline rollback r1 --pipeline retail"
        );
        i.catalog = Some("prod".into());
        assert_eq!(
            i.undo_command("r1", "retail"),
            "pipeline rollback r1 --pipeline retail --catalog prod"
        );
        assert!(!i.user.is_empty() && !i.host.is_empty());
    }
}
