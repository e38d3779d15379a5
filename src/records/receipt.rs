//! Who ran a command, why, and how to undo what it did: the part of a run record that
//! describes the invocation rather than the tables.

use serde::{Deserialize, Serialize};

/// The invocation behind a run, backfill or rollback.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Invocation {
    /// The operating-system user: the name the user database gives the process's effective
    /// uid, else `$USER` / `$LOGNAME`, else `uid N` (a container's uid with no name).
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
        let user = current_user();
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

/// Who this process runs as: the user database's name for its effective uid (cron and
/// containers often set no `$USER`), then `$USER` / `$LOGNAME`, then `uid N`.
fn current_user() -> String {
    #[cfg(unix)]
    {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        user_name(uid)
            .or_else(user_from_environment)
            .unwrap_or_else(|| format!("uid {uid}"))
    }
    #[cfg(not(unix))]
    {
        user_from_environment().unwrap_or_else(|| "unknown".into())
    }
}

fn user_from_environment() -> Option<String> {
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.trim().is_empty()))
}

/// The user database's name for `uid` (`/etc/passwd`, LDAP, ... through NSS).
#[cfg(unix)]
fn user_name(uid: libc::uid_t) -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value to be filled in.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call: `buffer` for its length, `entry` and
    // `found` for one passwd; the strings getpwuid_r stores point into `buffer`.
    let status = unsafe {
        libc::getpwuid_r(
            uid,
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if status != 0 || found.is_null() || entry.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name is a NUL-terminated string inside `buffer`, which is still alive.
    let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
    Some(name.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_user_comes_from_the_user_database_whatever_the_environment_says() {
        // uid 0 is root in every user database.
        assert_eq!(user_name(0).as_deref(), Some("root"));
        // SAFETY: geteuid cannot fail.
        let me = user_name(unsafe { libc::geteuid() });
        assert!(me.is_some());
        assert_eq!(Invocation::current(None, None).user, me.unwrap());
        // A uid no database knows has no name (the caller then says `uid N`).
        assert_eq!(user_name(3_999_999_999), None);
    }

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
